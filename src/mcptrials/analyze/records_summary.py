"""The figures summary.json takes from the trials' records rather than their rows: the judge's
noise, the servers' profile and what their tool definitions cost, the servers that never
started, and the citations' composition."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from mcptrials.analyze.result_limits import over_host_limits, over_limits, result_tokens
from mcptrials.analyze.trial_rows import mean, read_json
from mcptrials.core.outcomes import is_missing
from mcptrials.core.rows import CompositionRow
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.core.keys import BY_FORM, MODEL_NAME, N_NOT_CHECKED, N_TRIALS


def judge_noise(records: list[dict], w_quality: float) -> dict:
    """The judge's spread and ICC (mcptrials.judge.judging.judge_variance) over all trials, per scenario
    (with its steps) and per criterion; `fairness_noise` = w_quality x the mean SD of repeated
    scenario-quality judgements (None with one repeat: the noise was not measured)."""
    from mcptrials.judge.variance import judge_variance

    records = [r for r in records if r["judged"]["quality"]]  # a trial not judged (recorded judge) has no spread
    judged = [r["judged"] for r in records]
    overall = judge_variance(judged)
    by_scenario = {}
    for sc in dict.fromkeys(r["key"]["scenario"] for r in records):
        sub = [r["judged"] for r in records if r["key"]["scenario"] == sc]
        v = judge_variance(sub)
        steps = {}
        for name in dict.fromkeys(s["name"] for j in sub for s in j["steps"]):
            steps[name] = judge_variance([dict(j, steps=[s for s in j["steps"] if s["name"] == name]) for j in sub])[
                "step"
            ]
        by_scenario[sc] = {"scenario": v["scenario"], "steps": steps}
    sd = (overall["scenario"] or {}).get("mean_sd")
    repeats = sorted({len(j["quality"]) for j in judged})
    return {
        "repeats": repeats,
        "overall": overall,
        "by_scenario": by_scenario,
        "fairness_noise": None if sd is None else w_quality * sd,
        "note": None
        if sd is not None
        else "the judge ran once per answer (judge.repeats: 1): its spread "
        "is not measured; set judge.repeats >= 2 to measure it",
    }


def _percentile(values, q):
    import numpy as np

    return float(np.percentile(values, q)) if values else None


def definition_costs(m: Matrix, snapshots) -> dict:
    """tool -> what its tool definitions add to every request, from its snapshots
    (<snapshots>/<tool>/<repo>/tools.json, mcptrials.prepare.definition_tokens): `tokens` (the
    largest over the run's repos; None with no snapshot), `methods`, and `per_repo`."""
    out = {}
    for tool in m.tools:
        per_repo: dict[str, dict[str, Any]] = {}
        for repo in m.run_repos():
            path = Path(snapshots) / tool / repo / "tools.json"
            snap = read_json(path) if path.is_file() else {}
            if snap.get("definition_tokens") is not None:
                per_repo[repo] = {
                    k: snap.get(k)
                    for k in (
                        "definition_tokens",
                        "definition_tokens_method",
                        "definition_tokens_model",
                        "definition_tokens_error",
                        "definition_tokens_estimate",
                        "builtin_definition_tokens",
                        "definition_tools",
                    )
                }
        vals = [r["definition_tokens"] for r in per_repo.values()]
        out[tool] = {
            "tokens": max(vals) if vals else None,
            "tokens_min": min(vals) if vals else None,
            "methods": sorted({r["definition_tokens_method"] for r in per_repo.values()}),
            "builtin_tokens": max(
                (
                    r["builtin_definition_tokens"]
                    for r in per_repo.values()
                    if r["builtin_definition_tokens"] is not None
                ),
                default=None,
            ),
            "per_repo": per_repo,
        }
    return out


def offered_names(m: Matrix, snapshots) -> dict[str, list[str]]:
    """tool -> the server tools its snapshots list (union over the run's repos, in listing order)."""
    out: dict[str, list[str]] = {}
    for tool in m.tools:
        names: dict[str, None] = {}
        for repo in m.run_repos():
            path = Path(snapshots) / tool / repo / "tools.json"
            for t in (read_json(path) if path.is_file() else {}).get("tools") or []:
                names.setdefault(str(t.get("name")))
        out[tool] = list(names)
    return out


def server_profile(
    records: list[dict],
    definitions: dict | None = None,
    offered: dict[str, list[str]] | None = None,
    limits: dict | None = None,
) -> list[dict]:
    """Per tool: server name/version, start-up time, tool-call latency p50/p95, result sizes,
    peak memory (run_meta and the transcripts' tool calls), what its tool definitions
    add to every request (`definition_tokens`, from definition_costs), and `never_called`: the
    server tools its snapshot offered that no trial of the run called (None: no snapshot known),
    and `over_host_limit`: per host, its server's results over that host's limit
    (analyze.result_limits; `limits`: host_limits of the config), with the trials that show them."""
    out = []
    for tool in dict.fromkeys(r["key"]["tool"] for r in records):
        rs = [r for r in records if r["key"]["tool"] == tool]
        metas = [r["run_meta"] for r in rs]
        source = "builtin" if tool == BASELINE else "mcp"
        calls = [c for r in rs for c in r["transcript"]["tool_calls"] if c["source"] == source]
        lat = [c["latency_ms"] for c in calls]
        sizes = [c["result_chars"] for c in calls]
        starts = [m["server_startup_seconds"] for m in metas if m.get("server_startup_seconds") is not None]
        rss = [m["server_peak_rss_kb"] for m in metas if m.get("server_peak_rss_kb") is not None]
        out.append(
            {
                "tool": tool,
                "server_name": sorted({str(m.get("server_name")) for m in metas if m.get("server_name")}),
                "server_version": sorted({str(m.get("server_version")) for m in metas if m.get("server_version")}),
                "version_label": sorted(
                    {str(m.get("tool_version_label")) for m in metas if m.get("tool_version_label")}
                ),
                "tools_sha256": sorted({m["tools_sha256"] for m in metas if m.get("tools_sha256")}),
                "calls_measured": source,
                "calls": len(calls),
                "startup_median_s": statistics.median(starts) if starts else None,
                "startup_max_s": max(starts) if starts else None,
                "latency_p50_ms": _percentile(lat, 50),
                "latency_p95_ms": _percentile(lat, 95),
                "result_chars_mean": mean(sizes),
                "result_chars_p95": _percentile(sizes, 95),
                "result_chars_max": max(sizes) if sizes else None,
                "truncated_results": sum(1 for c in calls if c.get("truncated")),
                "peak_rss_kb_max": max(rss) if rss else None,
                "definition_tokens": (definitions or {}).get(tool),
                "never_called": None
                if offered is None or tool == BASELINE
                else [n for n in offered.get(tool, []) if n not in {c["tool"] for c in calls}],
                "over_host_limit": over_host_limits(
                    [
                        (trial_path(r), c)
                        for r in rs
                        for c in r["transcript"]["tool_calls"]
                        if c["source"] == "mcp" and over_limits(result_tokens(c), limits or {})
                    ],
                    limits or {},
                ),
            }
        )
    return out


def trial_path(rec: dict) -> str:
    """A record's trial folder under results/runs: model/host/tool/repo/scenario/trial."""
    k = rec["key"]
    return "/".join(str(k[f]) for f in (MODEL_NAME, "host", "tool", "repo", "scenario", "trial"))


def did_not_start(failed: list[dict], used: set[tuple[str, str]], install_of: dict[str, str]) -> set[str]:
    """The tools whose server started on none of the repos the run uses: every (tool, repo)
    snapshot failed, or a checkout or the install (install_of: a variant's is its base's)
    before it did (mcptrials.core.failures.failed_stages)."""
    bad_snap = {tuple(f["name"].split("/", 1)) for f in failed if f["stage"] == "snapshot"}
    bad_repo = {f["name"] for f in failed if f["stage"] == "checkout"}
    bad_tool = {f["name"] for f in failed if f["stage"] == "install"}
    tools = {t for t, _ in used}
    return {
        t
        for t in tools
        if all((t, r) in bad_snap or r in bad_repo or install_of.get(t, t) in bad_tool for tt, r in used if tt == t)
    }


def trial_citations(scored: dict) -> dict:
    """A trial's citation counts with each of its answer's citations once: scored.json's own
    (the steps' counts summed), except for a one-answer transcript mapped `whole`
    (grade.answer_map: every step graded on the whole answer), where every step holds the
    same citations and the first step's counts are the trial's; summing them would weigh
    such an answer by its scenario's number of steps."""
    steps = [st.get("citations") for st in scored.get("steps") or []]
    if (
        (scored.get("answer_mapping") or {}).get("method") == "whole"
        and steps
        and steps[0]
        and BY_FORM in steps[0].get("counts", {})
    ):
        return {"counts": steps[0]["counts"], "rates": steps[0].get("rates")}
    return scored["citations"]


def citation_composition(records: list[dict]) -> list[CompositionRow]:
    """Per (model, tool): the completed-or-failed trials' citations pooled
    (grade.citations.grading.pool: counts summed, then the same rates) and composed
    (grade.citations.composition.view: strict beside lenient, by form, the ungrounded kinds). A
    missing trial, and one scored before the composition existed, are left out; so is a trial
    whose citations were not checked (no checkout of its commit: `citations_not_checked`),
    counted as `n_not_checked` (`n_trials` counts the trials pooled). A (model, tool) with no
    trial pooled has no row. Each trial's citations are counted once (trial_citations)."""
    from mcptrials.grade.citations.grading import pool
    from mcptrials.grade.citations.composition import view

    groups: dict[tuple, list] = {}
    unchecked: dict[tuple, int] = {}
    for rec in records:
        cit = trial_citations(rec["scored"])
        if is_missing(rec["transcript"]["outcome"]) or BY_FORM not in cit["counts"]:
            continue
        key = (rec["key"]["model"], rec["key"]["tool"])
        if rec["scored"].get("citations_not_checked"):
            unchecked[key] = unchecked.get(key, 0) + 1
            continue
        groups.setdefault(key, []).append(cit)
    return [
        {
            "model": model,
            "tool": tool,
            N_TRIALS: len(cits),
            N_NOT_CHECKED: unchecked.get((model, tool), 0),
            **view(pool(cits)),
        }
        for (model, tool), cits in groups.items()
    ]
