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
   with stats.paired_difference at GATE_LEVEL (90% two-sided; 0-1 figures on [-1, 1], the
   logit-transformed t interval, df = scenarios - 1). Missing trials are left out and counted.
3. Findings first (deterministic failures, each a regression whatever the interval), per tool:
   HEAD's server did not start or has no snapshot; a server tool that BASE's trials called is
   gone (or renamed: another name with the same input schema) from HEAD's tools/list; the share
   of trials ending server_crashed or timed_out rose; the server tools' error rate (errored
   calls / calls, pooled over the trials) rose by more than DEFAULT_ERROR_RISE (absolute).
4. Then the decision rule on fairness (stats.margin_test, the headline score): regression when
   the upper bound of the 90% interval of HEAD - BASE is below -margin (the one-sided level-0.05
   test of H0 "HEAD is at most `margin` worse" rejects it); non-inferior when the lower bound is
   above -margin; else inconclusive, and an inconclusive result whose point estimate is below
   -margin is a "probable regression" (fails unless --lenient). Every inconclusive verdict says
   how many scenarios would make it conclusive (scenarios_to_decide). --strict also fails every
   inconclusive one. Exit 1 on any failure, 2 when refused (the runs differ, HEAD's results are
   stale for its config, or a tool is in one run only), else 0.
5. Beside the numbers, each tool's tools/list diff: tools added and removed, changed
   descriptions and changed input schemas (properties added, removed, changed; required).
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from mcptrials import __version__
from mcptrials.analyze.trial_rows import ERROR_KINDS
from mcptrials.matrix.config import ConfigError, canonical_hash
from mcptrials.gate.output import refuse, write_outputs

DEFAULT_MARGIN = 0.05   # fairness points (0-1 scale): the --margin default, its only definition
DEFAULT_ERROR_RISE = 0.2   # absolute rise of the server tools' error rate that fails: the --error-rise default
ENDED_BADLY = ("server_crashed", "timed_out")   # trial outcomes whose rising share is a finding
PROBABLE = "probable regression"
DECISION_RULE = ("a tool fails on any finding (server did not start, a called tool gone, more trials crashed "
                 "or timed out, server tool errors up by more than the error rise), on a regression (90% "
                 "interval of HEAD - BASE fairness entirely below -margin) and on a probable regression "
                 "(inconclusive, point estimate below -margin; passes with --lenient); --strict also fails "
                 "every inconclusive one; it passes when non-inferior (lower bound above -margin) or "
                 "inconclusive with the point estimate at or above -margin")
GATE_LEVEL = 0.90       # two-sided level of the gate's interval: a one-sided test at 0.05
TEST_NAME = ("non-inferiority of HEAD against BASE in fairness: one-sided test at alpha 0.05 via the "
             "two-sided 90% paired interval of HEAD - BASE over scenarios (logit-transformed t, df = scenarios - 1); "
             "regression when its upper bound < -margin, non-inferior when its lower bound > -margin")
MARKDOWN_LIMIT = 60000  # GitHub refuses comments over 65,536 characters
DESCRIPTION_CHARS = 160


class Refused(Exception):
    """The two runs cannot be compared; `reasons` says why, each with the fix."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


# --- reading a results folder ---------------------------------------------------------


def load_results(folder) -> dict:
    """{"folder", "summary", "snapshots": {(tool, repo): tools.json}} of a results/ folder."""
    root = Path(folder)
    path = root / "aggregate" / "summary.json"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; give a results/ folder that holds aggregate/summary.json "
                          "(run the workflow, or `mcptrials aggregate`, there first)")
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); rerun `mcptrials aggregate`") from None
    snaps = {}
    for p in sorted((root / "snapshots").glob("*/*/tools.json")):
        try:
            snaps[(p.parent.parent.name, p.parent.name)] = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}: not valid JSON ({e}); rerun its tools_snapshot job") from None
    return {"folder": str(root), "summary": summary, "snapshots": snaps}


# --- comparable or not ----------------------------------------------------------------


def _diff_keys(what: str, base: dict, head: dict) -> list[str]:
    out = []
    if set(base) - set(head):
        out.append(f"{what} only in BASE: {', '.join(sorted(set(base) - set(head)))}")
    if set(head) - set(base):
        out.append(f"{what} only in HEAD: {', '.join(sorted(set(head) - set(base)))}")
    changed = sorted(k for k in set(base) & set(head) if base[k] != head[k])
    if changed:
        out.append(f"{what} changed: {', '.join(changed)}")
    return out


def refusal_reasons(base: dict, head: dict) -> list[str]:
    """Why two summaries cannot be compared (empty: they can). Each reason names the fix."""
    bi, hi = base["identity"], head["identity"]
    reasons = []
    diffs = _diff_keys("scenarios", {k: v["sha256"] for k, v in bi["scenarios"].items()},
                       {k: v["sha256"] for k, v in hi["scenarios"].items()})
    if diffs:
        reasons.append("the scenario sets differ (" + "; ".join(diffs) + "): run both with the same pack "
                       "and splits, or refresh BASE's stored results after changing the scenarios")
    diffs = _diff_keys("repos", {k: v["commit"] for k, v in bi["repos"].items()},
                       {k: v["commit"] for k, v in hi["repos"].items()})
    if diffs:
        shown = "; ".join(diffs) + "".join(
            f" ({k}: {bi['repos'][k]['commit'][:12]} -> {hi['repos'][k]['commit'][:12]})"
            for k in sorted(set(bi["repos"]) & set(hi["repos"])) if bi["repos"][k]["commit"] != hi["repos"][k]["commit"])
        reasons.append(f"the repository commits differ ({shown}): pin the same commits in both configs")
    bg, hg = bi.get("grading"), hi.get("grading")
    if bg is None or hg is None:
        side = "BASE" if bg is None else "HEAD"
        reasons.append(f"{side} records no grader version (aggregated by an older mcptrials): rerun "
                       "`mcptrials aggregate` there")
    else:
        if bg["grader_versions"] != hg["grader_versions"]:
            reasons.append(f"the grader versions differ (BASE {', '.join(bg['grader_versions'])}, HEAD "
                           f"{', '.join(hg['grader_versions'])}): rescore BASE with the same mcptrials version")
        for part, what in (("grading_sha256", "grading (checks, citations, exact answers)"),
                           ("rubric_sha256", "rubrics")):
            changed = sorted(k for k in set(bg[part]) & set(hg[part]) if bg[part][k] != hg[part][k])
            if changed:
                reasons.append(f"the scenarios' {what} differ for {', '.join(changed)}: grade both runs with the "
                               "same scenario files")
    judge_keys = ("provider", "model", "repeats", "prompt_sha256", "settings_hash")
    bj = {k: bi["judge"].get(k) for k in judge_keys}
    hj = {k: hi["judge"].get(k) for k in judge_keys}
    if bj != hj:
        changed = [k for k in judge_keys if bj[k] != hj[k]]
        reasons.append(f"the judge differs ({', '.join(changed)}): judge both runs with the same judge settings")
    if bi["weights"] != hi["weights"]:
        reasons.append(f"the fairness weights differ (BASE {bi['weights']}, HEAD {hi['weights']}): use the same "
                       "`weights:`")
    return reasons


# --- tools/list diff -------------------------------------------------------------------------


def _props(schema) -> dict:
    return (schema or {}).get("properties") or {} if isinstance(schema, dict) else {}


def schema_change(old, new) -> str:
    """A short account of how an input schema changed: properties added, removed, changed, required."""
    po, pn = _props(old), _props(new)
    parts = []
    if set(pn) - set(po):
        parts.append("added " + ", ".join(sorted(set(pn) - set(po))))
    if set(po) - set(pn):
        parts.append("removed " + ", ".join(sorted(set(po) - set(pn))))
    changed = sorted(k for k in set(po) & set(pn) if canonical_hash(po[k]) != canonical_hash(pn[k]))
    if changed:
        parts.append("changed " + ", ".join(changed))
    ro, rn = sorted((old or {}).get("required") or []), sorted((new or {}).get("required") or [])
    if ro != rn:
        parts.append(f"required {ro} -> {rn}")
    return "; ".join(parts) or "changed (outside its properties)"


def tools_list_diff(base_snap: dict | None, head_snap: dict | None) -> dict:
    """What changed in one tool's tools/list between two snapshots (tools.json of snapshot.py):
    added and removed tool names, changed descriptions (old, new), changed input schemas, the
    server version and tools_sha256 of each side, and a server that did not start."""
    b = {t["name"]: t for t in (base_snap or {}).get("tools", [])}
    h = {t["name"]: t for t in (head_snap or {}).get("tools", [])}
    both = sorted(set(b) & set(h))
    return {
        "added": sorted(set(h) - set(b)), "removed": sorted(set(b) - set(h)),
        "descriptions": [{"tool": n, "base": b[n].get("description") or "", "head": h[n].get("description") or ""}
                         for n in both if (b[n].get("description") or "") != (h[n].get("description") or "")],
        "schemas": [{"tool": n, "change": schema_change(b[n].get("input_schema"), h[n].get("input_schema"))}
                    for n in both if canonical_hash(b[n].get("input_schema")) != canonical_hash(h[n].get("input_schema"))],
        "server_version": [(base_snap or {}).get("server_version"), (head_snap or {}).get("server_version")],
        "tools_sha256": [(base_snap or {}).get("tools_sha256"), (head_snap or {}).get("tools_sha256")],
        "error": [(base_snap or {}).get("error"), (head_snap or {}).get("error")],
        "snapshot": [base_snap is not None, head_snap is not None],
    }


# --- paired figures --------------------------------------------------------------------------


# figure -> (how one trial's value is read, the bounds of a per-scenario difference: 0-1 figures
# on [-1, 1], so their interval never leaves it; cost is unbounded, a plain paired t interval)
METRICS = {
    "fairness": (lambda r: r["fairness"], (-1, 1)),
    "pass_rate": (lambda r: None if r["passed"] is None else float(bool(r["passed"])), (-1, 1)),
    "cost_usd": (lambda r: r["cost_usd"], None),
    "error_rate": (lambda r: float(any(int(r.get(k) or 0) for k in ERROR_KINDS)), (-1, 1)),
}


def _per_scenario(rows: list[dict], metric: str) -> dict:
    read = METRICS[metric][0]
    out: dict = {}
    for r in rows:
        v = read(r)
        if v is not None:
            out.setdefault(r["scenario"], []).append(float(v))
    return {k: sum(v) / len(v) for k, v in out.items()}


def paired_figures(base_rows: list[dict], head_rows: list[dict], level: float = GATE_LEVEL) -> dict:
    """metric -> {base, head (means over the paired scenarios' means), paired_difference's dict}
    of HEAD minus BASE, for the trials that count (missing ones left out)."""
    from mcptrials.stats import paired_difference

    out = {}
    for metric, (_, bounds) in METRICS.items():
        b, h = _per_scenario(base_rows, metric), _per_scenario(head_rows, metric)
        shared = sorted(set(b) & set(h))
        if not shared:
            out[metric] = None
            continue
        d = paired_difference(h, b, level=level, bounds=bounds)
        out[metric] = {"base": sum(b[k] for k in shared) / len(shared), "head": sum(h[k] for k in shared) / len(shared),
                       **d}
    return out


def _counted(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r.get("missing")]


# --- deterministic findings ------------------------------------------------------------------


def _share_ended_badly(rows: list[dict]) -> float | None:
    return sum(r.get("outcome") in ENDED_BADLY for r in rows) / len(rows) if rows else None


def _server_error_rate(rows: list[dict]) -> float | None:
    """Errored server-tool calls / server-tool calls, pooled over the trials (None without calls).
    A summary made before the per-trial count (server_tool_errors) falls back to tool_error_rate."""
    calls = sum(int(r.get("tool_calls_mcp") or 0) for r in rows)
    if not calls:
        return None
    if all("server_tool_errors" in r for r in rows):
        return sum(int(r["server_tool_errors"] or 0) for r in rows) / calls
    rates = [r["tool_error_rate"] for r in rows if r.get("tool_error_rate") is not None]
    return sum(rates) / len(rates) if rates else None


def renamed_to(name: str, base_snap: dict, head_snap: dict) -> str | None:
    """The HEAD tool that a removed BASE tool probably became: a new name with the same input schema."""
    b = {t["name"]: t for t in base_snap.get("tools", [])}
    h = {t["name"]: t for t in head_snap.get("tools", [])}
    if name not in b:
        return None
    same = [n for n in sorted(set(h) - set(b)) if canonical_hash(h[n].get("input_schema")) == canonical_hash(b[name].get("input_schema"))]
    return same[0] if len(same) == 1 else None


def findings(tool: str, has_server: bool, b_rows: list[dict], h_rows: list[dict], snaps: dict,
             error_rise: float = DEFAULT_ERROR_RISE) -> list[dict]:
    """The deterministic failures of one tool, HEAD against BASE, in the order a reader needs them:
    [{kind, message}]; kinds: did_not_start, tool_gone, ended_badly, server_errors.
    snaps: repo -> (BASE tools.json or None, HEAD tools.json or None)."""
    out = []
    started = {}
    if has_server:
        for repo, (bs, hs) in snaps.items():
            if hs is None and bs is None:
                continue   # neither side kept its snapshots: nothing to compare
            if hs is None:
                out.append({"kind": "did_not_start", "message": f"HEAD has no tools snapshot of {tool} for {repo}: its "
                            "tools_snapshot job failed (see results/logs/snapshot/)"})
            elif hs.get("error"):
                out.append({"kind": "did_not_start", "message": f"HEAD's server did not start ({repo}): "
                            + _cut(hs["error"])})
            else:
                started[repo] = hs
        called = sorted({n for r in b_rows for n in (r.get("server_tools_used") or [])})
        known = all("server_tools_used" in r for r in b_rows)
        for repo, hs in started.items():
            bs = snaps[repo][0] or {}
            # a BASE summary made before server_tools_used: every tool BASE offered counts as called
            names = called if known else sorted(t["name"] for t in bs.get("tools", []))
            live = {t["name"] for t in hs.get("tools", [])}
            for name in names:
                if name not in live:
                    new = renamed_to(name, bs, hs)
                    out.append({"kind": "tool_gone", "message": f"{name}, which BASE's trials called, is "
                                + (f"renamed to {new} (same input schema)" if new else "gone")
                                + f" in HEAD's tools/list ({repo})"})
    bb, hb = _share_ended_badly(_counted(b_rows)), _share_ended_badly(_counted(h_rows))
    if bb is not None and hb is not None and hb > bb:
        out.append({"kind": "ended_badly", "message": f"trials ending server_crashed or timed_out rose from "
                    f"{bb:.0%} to {hb:.0%}"})
    be, he = _server_error_rate(_counted(b_rows)), _server_error_rate(_counted(h_rows))
    if be is not None and he is not None and he - be > error_rise:
        out.append({"kind": "server_errors", "message": f"the server tools' error rate rose from {be:.0%} to "
                    f"{he:.0%} (more than {error_rise:g} absolute)"})
    return out


# --- the decision rule --------------------------------------------------------------------


def _trial_scores(rows: list[dict]) -> dict:
    out: dict = {}
    for r in rows:
        if r.get("fairness") is not None:
            out.setdefault(r["scenario"], []).append(float(r["fairness"]))
    return out


def scenarios_to_decide(b_rows: list[dict], h_rows: list[dict], diff: dict, margin: float) -> dict:
    """How many scenarios would make an inconclusive gate conclusive, with the spread as measured:
    stats.scenarios_to_decide_margin at alpha 0.05 one-sided (the gate's 90% interval), 80% power,
    delta = |mean_diff + margin| (the estimate's distance from -margin), the variance of the paired
    difference from stats.variance_components over the trials' fairness (as the report's power).
    Returns {scenarios, trials_per_scenario, note}; scenarios None with the reason in note."""
    from mcptrials.stats import scenarios_to_decide_margin, variance_components

    vc = variance_components(_trial_scores(h_rows), _trial_scores(b_rows))
    k = round(vc["k_a"]) if vc["k_a"] else None
    if vc["omega2"] is None:
        return {"scenarios": None, "trials_per_scenario": k,
                "note": "an interval needs at least 2 paired scenarios; add scenarios"}
    delta = abs(diff["mean_diff"] + margin)
    if delta < 1e-9:
        return {"scenarios": None, "trials_per_scenario": k,
                "note": "the estimate sits on -margin: no number of scenarios decides it"}
    variance = vc["omega2"] + vc["sigma2_a"] / vc["k_a"] + vc["sigma2_b"] / vc["k_b"]
    n = scenarios_to_decide_margin(delta, variance)
    if n is None:
        return {"scenarios": None, "trials_per_scenario": k, "note": "more than 10,000 scenarios would be needed"}
    return {"scenarios": n, "trials_per_scenario": k,
            "note": f"about {n} scenarios at {k} trial(s) each would make it conclusive (80% power, the spread "
                    f"as measured; {vc['n']} now)"}


def decide(gate: dict, diff: dict | None, found: list, strict: bool, lenient: bool) -> tuple[str, str]:
    """(verdict, status) of one tool: findings first, then the margin test and the rule above."""
    from mcptrials.stats import INCONCLUSIVE, NON_INFERIOR, REGRESSION

    if found:
        return "deterministic failure", "fail"
    v = gate["verdict"]
    if v == INCONCLUSIVE and diff and diff.get("mean_diff") is not None and diff["mean_diff"] < -gate["margin"]:
        v = PROBABLE
    failed = (v == REGRESSION or (v == PROBABLE and not lenient) or (strict and v != NON_INFERIOR))
    return v, "fail" if failed else "pass"


# --- stale or one-sided HEAD --------------------------------------------------------------------


def head_config(head_folder, identity: dict, given: str | None) -> str:
    """The config files HEAD was run with (joined by os.pathsep): --config, else the ones its
    summary.json names, from HEAD's project (the folder holding results/). Refused when not found."""
    import os

    if given:
        return given
    project = Path(head_folder).resolve().parent
    files = identity.get("config_files") or ([identity["config"]] if identity.get("config") else [])
    paths = [p if os.path.isabs(p) else str(project / p) for p in files]
    missing = [p for p in paths if not Path(p).is_file()]
    if not paths or missing:
        raise Refused([f"HEAD's config ({', '.join(missing or ['unnamed'])}) is not found, so HEAD's results cannot be "
                       "checked against it: pass --config FILE[:FILE] (the config HEAD was run with), or "
                       "--no-config-check to compare without that check"])
    return os.pathsep.join(paths)


def stale_reasons(head: dict, config: str, tools: list[str]) -> list[str]:
    """Why HEAD's results are not those of its config (empty: they are): summary.json or a
    tools.json made for another version of a tool, the scenarios or the commits, e.g. left in
    place by a stage that failed. Compares the content hashes the stages record."""
    from mcptrials.matrix.config import load_matrix

    m = load_matrix(config)
    ident = head["summary"]["identity"]
    reasons = []
    for tool in tools:
        if tool not in m.tools:
            reasons.append(f"tools.{tool} is in HEAD's summary.json but not in its config")
            continue
        want = m.tool_hash(tool)
        got = (ident.get("tools") or {}).get(tool, {}).get("spec_sha256")
        if got != want:
            reasons.append(f"summary.json was made for another tools.{tool} (spec {str(got)[:12]}, the config's "
                           f"{want[:12]})")
        for (t, repo), snap in head["snapshots"].items():
            if t == tool and snap.get("tool_spec_sha256") not in (None, want):
                reasons.append(f"snapshots/{tool}/{repo}/tools.json was made for another tools.{tool} "
                               f"(spec {snap['tool_spec_sha256'][:12]}, the config's {want[:12]})")
    scen = {s.id: s.sha256 for s in m.run_scenarios()}
    got = {k: v["sha256"] for k, v in ident["scenarios"].items()}
    if scen != got:
        reasons.append("summary.json was made for other scenarios (" + "; ".join(_diff_keys("scenarios", got, scen)) + ")")
    for name, r in ident["repos"].items():
        if name in m.repos and m.repos[name]["commit"] != r["commit"]:
            reasons.append(f"summary.json was made at another commit of {name} ({r['commit'][:12]}, the config's "
                           f"{m.repos[name]['commit'][:12]})")
    if reasons:
        return [f"HEAD's results are stale for its config ({config}): " + "; ".join(reasons) + ": a stage failed "
                "and left older files in place; see results/logs/, fix it and rerun the workflow"]
    return []


def compare_runs(base: dict, head: dict, margin: float = DEFAULT_MARGIN, tools: list[str] | None = None,
                 strict: bool = False, lenient: bool = False, error_rise: float = DEFAULT_ERROR_RISE,
                 head_config_path: str | None = None) -> dict:
    """The whole comparison of two loaded results folders (load_results). Raises Refused.
    head_config_path: HEAD's config, to refuse results that are stale for it (None: not checked)."""
    from mcptrials.stats import margin_test

    reasons = refusal_reasons(base["summary"], head["summary"])
    if reasons:
        raise Refused(reasons)
    key = lambda r: (r.get("model_name") or r["model"], r.get("host") or "loop", r["tool"])  # noqa: E731
    groups = {"base": {}, "head": {}}
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
    one_sided = [f"{k[2]} ({k[0]}@{k[1]}) is only in {'HEAD' if k not in groups['base'] else 'BASE'}" for k in keys
                 if k not in groups["base"] or k not in groups["head"]]
    if one_sided:
        raise Refused(["; ".join(one_sided) + ": a tool BASE never ran (a first pull request, a renamed tool) or one "
                       "HEAD no longer runs cannot be gated; refresh BASE's stored results with it (push to main), "
                       "or gate the tools both ran with --tool"])
    if head_config_path:
        stale = stale_reasons(head, head_config_path, sorted({k[2] for k in keys}))
        if stale:
            raise Refused(stale)
    repos = sorted(base["summary"]["identity"]["repos"])
    transports = {**{t: v.get("transport") for t, v in (base["summary"]["identity"].get("tools") or {}).items()},
                  **{t: v.get("transport") for t, v in (head["summary"]["identity"].get("tools") or {}).items()}}
    rows = []
    for k in keys:
        model, host, tool = k
        b_all, h_all = groups["base"][k], groups["head"][k]
        used_repos = sorted({r.get("repo") for r in b_all + h_all if r.get("repo")}) or repos
        has_server = transports.get(tool, "stdio") != "none"
        row = {"model": model, "host": host, "tool": tool,
               "n_base": len(_counted(b_all)), "n_head": len(_counted(h_all)),
               "missing_base": len(b_all) - len(_counted(b_all)), "missing_head": len(h_all) - len(_counted(h_all)),
               "tools_list": {repo: tools_list_diff(base["snapshots"].get((tool, repo)),
                                                    head["snapshots"].get((tool, repo))) for repo in repos}}
        snaps = {repo: (base["snapshots"].get((tool, repo)), head["snapshots"].get((tool, repo))) for repo in used_repos}
        row["findings"] = findings(tool, has_server, b_all, h_all, snaps, error_rise)
        figs = paired_figures(_counted(b_all), _counted(h_all))
        row["figures"] = figs
        gate = margin_test(figs["fairness"] or {}, margin)
        gate["verdict"], row["status"] = decide(gate, figs["fairness"], row["findings"], strict, lenient)
        if gate["verdict"] in ("inconclusive", PROBABLE) and figs["fairness"]:
            gate["to_decide"] = scenarios_to_decide(_counted(b_all), _counted(h_all), figs["fairness"], margin)
        row["gate"] = gate
        rows.append(row)
    bi, hi = base["summary"]["identity"], head["summary"]["identity"]
    return {"test": TEST_NAME, "rule": DECISION_RULE, "margin": margin, "level": GATE_LEVEL, "strict": strict,
            "lenient": lenient, "error_rise": error_rise, "harness_version": __version__,
            "config_checked": head_config_path,
            "base": {"folder": base["folder"], "harness_versions": bi.get("harness_versions"), "started": bi.get("started")},
            "head": {"folder": head["folder"], "harness_versions": hi.get("harness_versions"), "started": hi.get("started")},
            "scenarios": sorted(bi["scenarios"]), "repos": {r: bi["repos"][r]["commit"] for r in repos},
            "rows": rows, "failed": [r for r in rows if r["status"] == "fail"]}


# --- writing it ------------------------------------------------------------------------------


def _f(v, signed=False, usd=False) -> str:
    if v is None:
        return "–"
    if usd:
        return f"{v:+.4f}" if signed else f"{v:.4f}"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _interval(d: dict | None, usd=False) -> str:
    if not d:
        return "–"
    text = f"{_f(d['base'], usd=usd)} → {_f(d['head'], usd=usd)}, Δ {_f(d['mean_diff'], True, usd)}"
    if d["lo"] is not None:
        text += f" [{_f(d['lo'], True, usd)}, {_f(d['hi'], True, usd)}]"
    return text


def _label(r: dict) -> str:
    return f"{r['tool']} ({r['model']}@{r['host']})"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1] + "…"


def diff_lines(row: dict) -> list[str]:
    """The tools/list diff of one row, as plain lines (repo-prefixed when the run has several repos)."""
    out = []
    many = len(row["tools_list"]) > 1
    for repo, d in row["tools_list"].items():
        pre = f"{repo}: " if many else ""
        for side, err in zip(("BASE", "HEAD"), d["error"]):
            if err:
                out.append(f"{pre}{side}: the server did not start: {_cut(err)}")
        if d["server_version"][0] != d["server_version"][1]:
            out.append(f"{pre}server version {d['server_version'][0]} → {d['server_version'][1]}")
        if d["added"]:
            out.append(f"{pre}added: {', '.join(d['added'])}")
        if d["removed"]:
            out.append(f"{pre}removed: {', '.join(d['removed'])}")
        for c in d["descriptions"]:
            out.append(f"{pre}description of {c['tool']}: \"{_cut(c['base'])}\" → \"{_cut(c['head'])}\"")
        for c in d["schemas"]:
            out.append(f"{pre}input schema of {c['tool']}: {c['change']}")
        if not out and not all(d["snapshot"]):
            out.append(f"{pre}no snapshot on {'BASE' if not d['snapshot'][0] else 'HEAD'}")
    return out or ["tools/list unchanged"]


def _hashes(r: dict, changed: bool) -> str:
    """'unchanged 5bf3ef2602cd' or 'changed 5bf3ef2602cd → 0d1e...': the tools_sha256 of each side
    (the hash every run_meta.json records), per repo when they differ between repos."""
    pairs = list(dict.fromkeys(tuple((h or "none")[:12] for h in d["tools_sha256"]) for d in r["tools_list"].values()))
    shown = "; ".join(b if b == h else f"{b} → {h}" for b, h in pairs)
    return f"{'changed' if changed else 'unchanged'} {shown}".strip()


def _verdict(r: dict) -> str:
    """'regression', 'inconclusive: about 9 scenarios ... would make it conclusive', ..."""
    g = r["gate"]
    extra = f"; {g['to_decide']['note']}" if g.get("to_decide") else ""
    return g["verdict"] + extra


def _row_line(r: dict) -> str:
    g, f = r["gate"], r["figures"]
    return (f"{_label(r)}: {r['status'].upper()} ({_verdict(r)}); fairness {_interval(f['fairness'])}; "
            f"pass rate {_interval(f['pass_rate'])}; cost {_interval(f['cost_usd'], usd=True)}; "
            f"errors {_interval(f['error_rate'])}; trials {r['n_base']} → {r['n_head']}"
            + (f" (missing {r['missing_base']} → {r['missing_head']})" if r["missing_base"] or r["missing_head"] else ""))


def _mode(result: dict) -> str:
    return ("; strict: inconclusive fails too" if result["strict"] else "") + \
        ("; lenient: a probable regression passes" if result["lenient"] else "")


def text_report(result: dict) -> str:
    lines = [f"test: {result['test']}; margin {result['margin']:g}; error rise {result['error_rise']:g}" + _mode(result),
             f"rule: {result['rule']}"]
    if not result.get("config_checked"):
        lines.append("note: HEAD's results were not checked against its config (--no-config-check)")
    for r in result["rows"]:
        lines += [f"{_label(r)}: FINDING {x['kind']}: {x['message']}" for x in r["findings"]]
        lines.append(_row_line(r))
        lines += [f"  tools/list: {x}" for x in diff_lines(r)]
    n = len(result["failed"])
    lines.append(f"result: {n} regression(s): " + ", ".join(_label(r) for r in result["failed"]) if n
                 else "result: no regression")
    return "\n".join(lines) + "\n"


def markdown(result: dict) -> str:
    """A pull-request comment: verdict line, the findings, one table row per tool, the tools/list diffs folded."""
    n = len(result["failed"])
    head = (f"### mcptrials: {'❌ ' + str(n) + ' regression(s)' if n else '✅ no regression'}\n\n")
    found = [f"- ❌ **{html.escape(_label(r), quote=False)}**: {x['kind']}: {html.escape(x['message'], quote=False)}"
             for r in result["rows"] for x in r["findings"]]
    if found:
        head += "Deterministic failures (regressions whatever the interval):\n\n" + "\n".join(found) + "\n\n"
    head += (f"Test: {result['test']}; margin **{result['margin']:g}**" + _mode(result) + ". "
             f"Rule: {result['rule']}. "
             f"Scenarios: {len(result['scenarios'])}; repos: "
             + ", ".join(f"{k}@{v[:12]}" for k, v in result["repos"].items())
             + f". mcptrials {result['harness_version']}.\n\n")
    t = ["| tool | model@host | gate | Δ fairness [90% CI] | Δ pass rate | Δ cost / trial (USD) | Δ error rate | trials BASE → HEAD | tools/list |",
         "|---|---|---|---|---|---|---|---|---|"]
    details = []
    for r in result["rows"]:
        dl = diff_lines(r)
        changed = dl != ["tools/list unchanged"]
        f = r["figures"]
        mark = "❌" if r["status"] == "fail" else "✅"
        t.append(f"| {r['tool']} | {r['model']}@{r['host']} | {mark} {html.escape(_verdict(r), quote=False)} | "
                 f"{_interval(f['fairness'])} | {_interval(f['pass_rate'])} | {_interval(f['cost_usd'], usd=True)} | "
                 f"{_interval(f['error_rate'])} | {r['n_base']} → {r['n_head']}"
                 + (f" (missing {r['missing_base']} → {r['missing_head']})" if r["missing_base"] or r["missing_head"] else "")
                 + f" | {_hashes(r, changed)} |")
        if changed:
            details.append(f"<details><summary>{_label(r)}: tools/list diff</summary>\n\n"
                           + "\n".join(f"- {html.escape(x, quote=False)}" for x in dl) + "\n\n</details>\n")
    text = head + "\n".join(t) + "\n\n" + "\n".join(details)
    if len(text) > MARKDOWN_LIMIT:
        text = text[:MARKDOWN_LIMIT] + "\n\n… (cut to fit a comment; run `mcptrials compare` for the rest)\n"
    return text


def refusal_markdown(reasons: list[str]) -> str:
    return ("### mcptrials: ⚠️ not compared\n\nThe two runs cannot be compared:\n\n"
            + "\n".join(f"- {r}" for r in reasons) + "\n")


def junit(result: dict | None, reasons: list[str] | None = None) -> str:
    """JUnit XML: one testcase per (tool, model@host), a failure on a regression; a refusal is one
    errored testcase `comparability`; a finding fails its tool's testcase, named first."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="mcptrials compare")
    props = ET.SubElement(suite, "properties")   # what produced it
    facts = {"mcptrials": __version__}
    if result:
        facts.update(test=result["test"], margin=f"{result['margin']:g}", base=result["base"]["folder"],
                     head=result["head"]["folder"], scenarios=" ".join(result["scenarios"]),
                     repos=" ".join(f"{k}@{v}" for k, v in result["repos"].items()))
    for name, value in facts.items():
        ET.SubElement(props, "property", name=name, value=str(value))
    cases = failures = errors = skipped = 0
    if reasons:
        case = ET.SubElement(suite, "testcase", classname="mcptrials.compare", name="comparability")
        ET.SubElement(case, "error", message="the runs cannot be compared").text = "\n".join(reasons)
        cases, errors = 1, 1
    for r in (result or {}).get("rows", []):
        cases += 1
        case = ET.SubElement(suite, "testcase", classname=f"mcptrials.compare.{r['model']}@{r['host']}", name=r["tool"])
        body = "\n".join([f"FINDING {x['kind']}: {x['message']}" for x in r["findings"]] + [_row_line(r)]
                         + [f"tools/list: {x}" for x in diff_lines(r)])
        if r["status"] == "fail":
            failures += 1
            g = r["gate"]
            if r["findings"]:
                message = f"{r['findings'][0]['kind']}: {r['findings'][0]['message']}"
            else:
                message = (f"{g['verdict']}: 90% interval of Δ fairness [{_f(g['lo'], True)}, {_f(g['hi'], True)}], "
                           f"Δ {_f((r['figures']['fairness'] or {}).get('mean_diff'), True)}, against -margin {-g['margin']:g}")
            ET.SubElement(case, "failure", message=message).text = body
        ET.SubElement(case, "system-out").text = body + "\n" + (result or {}).get("test", "")
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- the command -----------------------------------------------------------------------------


def cmd_compare(args) -> int:
    if args.margin < 0:
        raise ConfigError(f"--margin {args.margin:g}: the margin must be >= 0 (fairness points, e.g. 0.05)")
    if not 0 <= args.error_rise <= 1:
        raise ConfigError(f"--error-rise {args.error_rise:g}: give a share between 0 and 1 (e.g. 0.2)")
    if args.strict and args.lenient:
        raise ConfigError("--strict and --lenient: choose one (strict fails every inconclusive tool, lenient passes a "
                          "probable regression)")
    base, head = load_results(args.base), load_results(args.head)
    try:
        config = None if args.no_config_check else head_config(args.head, head["summary"]["identity"], args.config)
        result = compare_runs(base, head, args.margin, args.tool, args.strict, args.lenient, args.error_rise, config)
    except Refused as e:
        return refuse("compare", "refused: the two runs cannot be compared", e.reasons, args,
                      refusal_markdown(e.reasons), junit(None, e.reasons))
    print(text_report(result), end="")
    write_outputs(args, markdown(result), junit(result))
    return 1 if result["failed"] else 0


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare two results folders (BASE, HEAD) paired by model, host, tool and "
                                       "scenario; exit 1 on a regression or a deterministic failure, 2 when not comparable")
    p.add_argument("base", metavar="BASE_RESULTS", help="the reference results/ folder (e.g. main's stored results)")
    p.add_argument("head", metavar="HEAD_RESULTS", help="the results/ folder under test (e.g. the pull request's)")
    p.add_argument("--tool", action="append", help="compare only this tool (repeatable; default: every tool)")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                   help=f"non-inferiority margin in fairness points, 0-1 (default {DEFAULT_MARGIN})")
    p.add_argument("--error-rise", type=float, default=DEFAULT_ERROR_RISE,
                   help=f"fail when the server tools' error rate rises by more than this share (default {DEFAULT_ERROR_RISE})")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--strict", action="store_true",
                      help="also fail a tool whose non-inferiority is not shown (inconclusive)")
    mode.add_argument("--lenient", action="store_true",
                      help="pass a probable regression (inconclusive, point estimate below -margin)")
    p.add_argument("--config", help="the config HEAD was run with (files joined by ':'; default: the ones HEAD's "
                                    "summary.json names, from HEAD's project); stale results are refused")
    p.add_argument("--no-config-check", action="store_true",
                   help="do not check HEAD's results against its config (e.g. hand-copied folders)")
    p.add_argument("--junit", help="write a JUnit XML report here (one testcase per tool)")
    p.add_argument("--markdown", help="write a pull-request comment (Markdown) here")
    p.set_defaults(func=cmd_compare)
