"""Run against run: `mcptrials compare BASE_RESULTS HEAD_RESULTS`, the regression gate for CI.

Inputs are two `results/` folders (e.g. main's stored results and a pull request's), of which
only `aggregate/summary.json` (its identity and its trial rows) and `snapshots/<tool>/<repo>/tools.json`
(what `tools/list` offered) are read; nothing is rerun.

1. Comparable or refused (exit 2, every reason said): the same scenario files (ids and sha256),
   the same repository commits, and the same grading (graders.GRADER_VERSION and the per-scenario
   grading and rubric hashes as scored.json / judged.json recorded them, the judge's provider,
   model, prompt and settings, and the fairness weights). A different number would otherwise
   be read as the server's doing.
2. Paired: trials are matched by (model, host, tool, scenario); each side's trials of a scenario
   are averaged (trials are exchangeable repeats, so their index carries no pairing), and
   HEAD - BASE is paired over the scenarios both sides ran, for fairness, pass rate (share of
   trials passed), cost per trial (USD) and error rate (share of trials with any error event),
   with stats.paired.paired_difference at GATE_LEVEL (90% two-sided; 0-1 figures on [-1, 1], the
   logit-transformed t interval, df = scenarios - 1). Missing trials are left out and counted.
3. Findings first (deterministic failures, each a regression whatever the interval), per tool:
   HEAD's server did not start or has no snapshot; a server tool that BASE's trials called is
   gone (or renamed: another name with the same input schema) from HEAD's tools/list; the share
   of trials ending server_crashed or timed_out rose; the server tools' error rate (errored
   calls / calls, pooled over the trials) rose by more than DEFAULT_ERROR_RISE (absolute).
4. Then the decision rule on fairness (stats.paired.margin_test, the headline score): regression when
   the upper bound of the 90% interval of HEAD - BASE is below -margin (the one-sided level-0.05
   test of H0 "HEAD is at most `margin` worse" rejects it); non-inferior when the lower bound is
   above -margin; else inconclusive, and an inconclusive result whose point estimate is below
   -margin is a "probable regression" (fails unless --lenient). The margin: --margin, else the
   config's `margin:` as HEAD's summary.json records it (the headline's smallest difference that
   matters; decision.default_margin). When both runs went in waves (`trials: {min, max, until:
   decided}`) the interval is a confidence sequence's instead (gate.sequential: the trials a
   tool ran depended on its scores). Every inconclusive verdict says
   how many scenarios would make it conclusive (scenarios_to_decide). --strict also fails every
   inconclusive one. Exit 1 on any failure, 2 when refused (the runs differ, HEAD's results are
   stale for its config, or a tool is in one run only), else 0.
5. Beside the numbers, each tool's tools/list diff: tools added and removed, changed
   descriptions and changed input schemas (properties added, removed, changed; required).

The steps live in comparable (1), decision (2, 4), findings (3), tools_diff (5) and
compare_report (the text, Markdown and JUnit); this module runs them (compare_runs).
"""

from __future__ import annotations

from typing import Any

from mcptrials import __version__
from mcptrials.gate.comparable import Refused, refusal_reasons, stale_reasons
from mcptrials.gate.decision import (
    DECISION_RULE,
    GATE_LEVEL,
    PROBABLE,
    TEST_NAME,
    decide,
    default_margin,
    paired_figures,
    scenarios_to_decide,
)
from mcptrials.gate.findings import DEFAULT_ERROR_RISE, counted, findings
from mcptrials.gate.sequential import both_sequential, sequential_fairness
from mcptrials.gate.tools_diff import tools_list_diff
from mcptrials.matrix.errors import ConfigError
from mcptrials.core.rows import TrialRow
from mcptrials.core.keys import FAIRNESS, MODEL_NAME


def compare_runs(
    base: dict,
    head: dict,
    margin: float | None = None,
    tools: list[str] | None = None,
    strict: bool = False,
    lenient: bool = False,
    error_rise: float = DEFAULT_ERROR_RISE,
    head_config_path: str | None = None,
) -> dict:
    """The whole comparison of two loaded results folders (load_results). Raises Refused.
    head_config_path: HEAD's config, to refuse results that are stale for it (None: not checked).
    margin None: the config's `margin:` as HEAD's summary.json records it (decision.default_margin)."""
    from mcptrials.stats.paired import margin_test

    reasons = refusal_reasons(base["summary"], head["summary"])
    if reasons:
        raise Refused(reasons)
    margin, margin_from = (margin, "--margin") if margin is not None else default_margin(head["summary"])
    key = lambda r: (r.get(MODEL_NAME) or r["model"], r.get("host") or "loop", r["tool"])  # noqa: E731
    groups: dict[str, dict[tuple[str, str, str], list[TrialRow]]] = {"base": {}, "head": {}}
    for side, res in (("base", base), ("head", head)):
        for r in res["summary"]["trials"]:
            groups[side].setdefault(key(r), []).append(r)
    wanted = set(tools) if tools else None
    known = {k[2] for g in groups.values() for k in g}
    if wanted:
        unknown = sorted(wanted - known)
        if unknown:
            raise ConfigError(f"--tool {unknown[0]}: neither run has that tool; use one of: {', '.join(sorted(known))}")
    keys = [k for k in dict.fromkeys(list(groups["base"]) + list(groups["head"])) if not wanted or k[2] in wanted]
    one_sided = [
        f"{k[2]} ({k[0]}@{k[1]}) is only in {'HEAD' if k not in groups['base'] else 'BASE'}"
        for k in keys
        if k not in groups["base"] or k not in groups["head"]
    ]
    if one_sided:
        raise Refused(
            [
                "; ".join(one_sided) + ": a tool BASE never ran (a first pull request, a renamed tool) or one "
                "HEAD no longer runs cannot be gated; refresh BASE's stored results with it (push to main), "
                "or gate the tools both ran with --tool"
            ]
        )
    notes: list[str] = []  # what could not be checked (results older than a record)
    if head_config_path:
        stale = stale_reasons(head, head_config_path, sorted({k[2] for k in keys}), notes)
        if stale:
            raise Refused(stale)
    repos = sorted(base["summary"]["identity"]["repos"])
    transports = {
        **{t: v.get("transport") for t, v in (base["summary"]["identity"].get("tools") or {}).items()},
        **{t: v.get("transport") for t, v in (head["summary"]["identity"].get("tools") or {}).items()},
    }
    rows = []
    for k in keys:
        model, host, tool = k
        b_all, h_all = groups["base"][k], groups["head"][k]
        used_repos = sorted({r["repo"] for r in b_all + h_all if r.get("repo")}) or repos
        has_server = transports.get(tool, "stdio") != "none"
        row: dict[str, Any] = {
            "model": model,
            "host": host,
            "tool": tool,
            "n_base": len(counted(b_all)),
            "n_head": len(counted(h_all)),
            "missing_base": len(b_all) - len(counted(b_all)),
            "missing_head": len(h_all) - len(counted(h_all)),
            "tools_list": {
                repo: tools_list_diff(base["snapshots"].get((tool, repo)), head["snapshots"].get((tool, repo)))
                for repo in repos
            },
        }
        snaps = {
            repo: (base["snapshots"].get((tool, repo)), head["snapshots"].get((tool, repo))) for repo in used_repos
        }
        row["findings"] = findings(tool, has_server, b_all, h_all, snaps, error_rise)
        figs = paired_figures(counted(b_all), counted(h_all))
        if both_sequential(base, head):  # trials stopped by their scores: the confidence sequence's interval
            figs["fairness_sequential"] = sequential_fairness(counted(b_all), counted(h_all))
        row["figures"] = figs
        gate = margin_test(figs.get("fairness_sequential") or figs[FAIRNESS] or {}, margin)
        gate["interval"] = (figs.get("fairness_sequential") or figs[FAIRNESS] or {}).get("method")
        gate["verdict"], row["status"] = decide(gate, figs[FAIRNESS], row["findings"], strict, lenient)
        if gate["verdict"] in ("inconclusive", PROBABLE) and figs[FAIRNESS]:
            gate["to_decide"] = scenarios_to_decide(counted(b_all), counted(h_all), figs[FAIRNESS], margin)
        row["gate"] = gate
        rows.append(row)
    bi, hi = base["summary"]["identity"], head["summary"]["identity"]
    return {
        "test": TEST_NAME,
        "rule": DECISION_RULE,
        "margin": margin,
        "margin_from": margin_from,
        "level": GATE_LEVEL,
        "strict": strict,
        "lenient": lenient,
        "error_rise": error_rise,
        "harness_version": __version__,
        "config_checked": head_config_path,
        "notes": notes,
        "base": {
            "folder": base["folder"],
            "harness_versions": bi.get("harness_versions"),
            "started": bi.get("started"),
        },
        "head": {
            "folder": head["folder"],
            "harness_versions": hi.get("harness_versions"),
            "started": hi.get("started"),
        },
        "scenarios": sorted(bi["scenarios"]),
        "repos": {r: bi["repos"][r]["commit"] for r in repos},
        "rows": rows,
        "failed": [r for r in rows if r["status"] == "fail"],
    }


# --- the command -----------------------------------------------------------------------------
