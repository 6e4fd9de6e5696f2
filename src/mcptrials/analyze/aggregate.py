"""Every trial's records into tables: one row per trial, per (model, tool, scenario) cell
and per (model, tool), plus summary.json with everything the report needs.

Reads only files (results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/transcript.json,
run_meta.json, scored.json, judged.json) and only the trials of the config's current matrix
(`Matrix.cells()`): leftovers of an older matrix in results/runs are ignored. Nothing is
rerun. Every formula is in mcptrials.stats; this module only picks the inputs:

- fairness   = stats.fairness(keyword coverage, judge quality, citation grounding,
               efficiency, config weights); 0 for a trial whose attributable outcome is not
               `completed` (it counts as a fail, it is never dropped);
- missing    = a trial whose outcome is an infrastructure one (mcptrials.core.outcomes: api_failed,
               harness_failed, not_run): `missing` true with `missing_reason`, every score None
               (never 0), left out of every mean, pass@k and interval; every table counts it
               (`n_missing`, `missing_reasons`) beside the trials used (`n`, `n_trials`);
- cost       = recomputed here from the recorded token usage at the config's current
               `pricing` (graders.cost: trial_cost on transcript.json `usage`, judge_cost on
               judged.json `usage`), never the cost_usd frozen in the records at run time, so a
               new pricing needs only aggregate and report;
- efficiency = stats.relative_efficiency against the mean (recomputed) cost and working time
               (the steps' wall time, `work_seconds`, graders.usage.work_seconds; server start-up
               is reported apart, `server_startup_seconds`) of the completed `baseline` trials of the same model
               and scenario (1.0 when there is no baseline tool, said in summary.json `notes`);
- adoption   = stats.adoption(tool fluency, discoverability): reported apart, never in
               fairness; None for the baseline (it has no server to adopt).
- intervals  of 0-1 scores (fairness, adoption) = stats.bounded_mean_ci, and paired
               differences of fairness = stats.paired_difference(bounds=(-1, 1)): they never
               leave the score's range (INTERVAL_METHOD names them in summary.json).
- citation grounding = the strict grounding, (grounded - strict mismatch) / all citations
  (scored.citations.rates.strict_grounded_rate; the lenient grounded / all beside it as
  citation_grounding_lenient, the strict verified share as verified_rate_strict);
  an answer without citations has no grounding (None, which fairness counts as 0).
- citation composition (summary.json `citation_composition`, per model and tool): the trials'
  citations pooled, strict beside lenient, by form and the ungrounded kinds
  (citation_composition; formulas in graders.composition);
- citations verified = verified / (verified + mismatch) (scored.citations.rates.verified_rate),
  per cell and tool the mean over the trials that have one; shown beside grounding, never in
  fairness.
- discoverability = 1 when the trial called a server tool within the first
  `window_turns` model calls, else 0 (scored.adoption.discoverability.used_within_window).
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from pathlib import Path

from mcptrials.core.identity import TrialKey
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.core.outcomes import COMPLETED, OUTCOMES, is_missing, missing_reason, read_attempts

ERROR_KINDS = ("tool_error", "protocol_error", "api_error", "harness_error")
# the figures of a trial that are scores: None for a missing trial (never 0)
SCORE_FIELDS = ("passed", "keyword_coverage", "citation_grounding", "verified_rate", "cited_recall", "exact_passed",
                "state_passed", "quality", "efficiency", "fairness", "tool_fluency", "discoverability", "adoption")
FILES = ("transcript.json", "run_meta.json", "scored.json", "judged.json")
INTERVAL_METHOD = ("95% logit-transformed t interval (stats.bounded_mean_ci): fairness and adoption of a tool "
                   "with standard errors clustered by scenario (df = scenarios - 1), of a cell over its trials "
                   "(df = trials - 1); paired differences over per-scenario means on [-1, 1] (df = scenarios - 1); "
                   "bounds always inside the score's range")
COST_METHOD = "recomputed from usage with the config's pricing"
EFFICIENCY_METHOD = ("stats.relative_efficiency of cost and the agent's working time (work_seconds: the steps' "
                     "wall time, graders.usage.work_seconds) against the same model and scenario's baseline; "
                     "server start-up (server_startup_seconds) and the harness's set-up are reported apart and "
                     "never count against efficiency")


def trial_dir(runs, model, host, tool, repo, scenario, trial) -> Path:
    return TrialKey(model, host, tool, repo, scenario, trial).dir(runs)


def model_label(m: Matrix, model: str, host: str) -> str:
    """The unit every table compares within: the model, or model@host when the run has
    several hosts (a host changes what the model sees, so each pair has its own baseline)."""
    return model if len(m.hosts) == 1 else f"{model}@{host}"


def trial_page(model, tool, scenario, trial) -> str:
    """The trial's page, relative to the report folder."""
    return f"trials/{model}/{tool}/{scenario}/{trial}.html"


def _read(path: Path) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); delete it and rerun its stage (snakemake rebuilds it)") from None


def load_records(m: Matrix, runs) -> list[dict]:
    """The four records of every trial of the current matrix, in matrix order.
    A missing file is an error naming it: a trial is never silently dropped."""
    out, missing = [], []
    for model, host, tool, repo, scenario, trial in m.cells():
        d = trial_dir(runs, model, host, tool, repo, scenario, trial)
        paths = {name: d / name for name in FILES}
        gone = [p for p in paths.values() if not p.is_file()]
        if gone:
            missing += gone
            continue
        rec = {name.removesuffix(".json"): _read(p) for name, p in paths.items()}
        rec["key"] = {"model": model_label(m, model, host), "model_name": model, "host": host, "tool": tool,
                      "repo": repo, "scenario": scenario, "trial": trial}
        rec["attempts"] = read_attempts(d)
        out.append(rec)
    if missing:
        shown = "\n  ".join(str(p) for p in missing[:10])
        more = f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise ConfigError(f"{runs}: {len(missing)} record file(s) of the current matrix are missing:\n  {shown}{more}\n"
                          "Run the workflow first (make demo, or snakemake) so every trial is run, scored and judged.")
    return out


def _mean(values):
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


# --- one row per trial ----------------------------------------------------------


def raw_row(rec: dict, m: Matrix) -> dict:
    """Every figure of one trial that needs no other trial (efficiency and fairness come later).
    Costs come from the recorded usage at the config's pricing, not from the records' cost_usd."""
    from mcptrials.cost.pricing import judge_cost, trial_cost
    from mcptrials.cost.work_time import work_seconds
    from mcptrials.stats.adoption import adoption

    k, t, s, j, meta = rec["key"], rec["transcript"], rec["scored"], rec["judged"], rec["run_meta"]
    eff, ad, cit = s["efficiency"], s["adoption"], s["citations"]
    outcome = t["outcome"]
    used = ad["discoverability"].get("used_within_window")
    disc = None if used is None else float(bool(used))
    fluency = None if k["tool"] == BASELINE else ad.get("tool_fluency")
    pricing = m.config["pricing"]
    cost, priced_as = trial_cost(pricing, t)
    row = dict(k)
    row.update({
        "suite": m.scenarios[k["scenario"]].data["suite"],
        "provider": t.get("provider"), "model_id": t.get("model_id"),
        "outcome": outcome, "completed": outcome == COMPLETED,
        "passed": bool(s["passed"]) and outcome == COMPLETED,
        "keyword_coverage": s["keywords"]["coverage"],
        # fairness's citation part is the strict grounding (graders.citations.citation_rates)
        "citation_grounding": cit["rates"].get("strict_grounded_rate", cit["rates"]["grounded_rate"]),
        "citation_grounding_lenient": cit["rates"]["grounded_rate"],
        "verified_rate_strict": cit["rates"].get("strict_verified_rate"),
        "citations": cit["counts"]["total"], "grounded": cit["counts"]["grounded"],
        "hallucinated": cit["counts"]["hallucinated"], "unresolved": cit["counts"]["unresolved"],
        "verified_rate": cit["rates"]["verified_rate"], "cited_recall": cit["rates"]["cited_recall"],
        "exact_steps": s["exact"]["steps"], "exact_passed": s["exact"]["passed"],
        "state_steps": s["state"]["steps"], "state_passed": s["state"]["passed"],
        "quality": j["quality_mean"], "quality_repeats": len(j["quality"]),
        "efficiency": None, "fairness": None,
        "tool_fluency": fluency, "discoverability": disc, "adoption": adoption(fluency, disc),
        "cost_usd": cost, "priced_as": priced_as,
        "tokens_input_uncached": eff["tokens"]["input_uncached"], "tokens_cache_write": eff["tokens"]["cache_write"],
        "tokens_cache_read": eff["tokens"]["cache_read"], "tokens_output": eff["tokens"]["output"],
        "tokens_total": eff["tokens"]["total"],
        "turns": eff["turns"], "api_calls": eff.get("api_calls"), "retries": eff.get("retries"),
        "wall_seconds": eff["wall_seconds"],
        "work_seconds": work_seconds(t),   # the steps' wall time: what efficiency compares
        "tool_calls": eff["tool_calls"], "tool_calls_mcp": eff["tool_calls_mcp"],
        "tool_calls_builtin": eff["tool_calls_builtin"],
        **{k2: int(t["errors"].get(k2, 0)) for k2 in ERROR_KINDS},
        "tool_error_rate": ad.get("tool_error_rate"),
        # which server tools the trial called and how many of those calls failed (compare's gate)
        "server_tools_used": sorted(ad.get("per_tool") or {}),
        "server_tool_errors": sum(int(v.get("errors") or 0) for v in (ad.get("per_tool") or {}).values()),
        **expected_tools_means(ad),
        "judge_cost_usd": judge_cost(pricing, j),
        "server_startup_seconds": meta.get("server_startup_seconds"),
        "server_peak_rss_kb": meta.get("server_peak_rss_kb"),
        "page": trial_page(k["model"], k["tool"], k["scenario"], k["trial"]),  # model = model@host when several
    })
    if s.get("citations_not_checked"):   # no checkout: the citation figures are missing, never zero
        row.update({k: None for k in ("citation_grounding", "citations", "grounded", "hallucinated", "unresolved",
                                      "verified_rate", "cited_recall")})
    row["citations_not_checked"] = s.get("citations_not_checked")
    row["not_judged"] = j.get("not_judged")
    row.update(gold_recall_columns(s.get("gold_recall")))
    att = rec.get("attempts")
    row.update(missing=is_missing(outcome), missing_reason=missing_reason(outcome, t.get("outcome_detail")),
               attempts=int(att["runs"]) if att else 1)
    if row["missing"]:  # neither a pass nor a fail nor a zero: no score at all
        row.update({f: None for f in (*SCORE_FIELDS, *(k for k in row if k.startswith(GOLD_PREFIXES)))})
    return row


GOLD_PREFIXES = ("cited_recall_", "mention_recall")


def gold_recall_columns(gold: dict | None) -> dict:
    """A scenario with gold rows (scenario `gold:`): its cited_recall (which then replaces the
    steps' gold locations' figure), mention_recall and cited_recall_<group> per row group."""
    if not gold:
        return {}
    return {"cited_recall": gold["cited_recall"], "mention_recall": gold["mention_recall"],
            "gold_rows": gold["total"],
            **{f"cited_recall_{g}": v["cited_recall"] for g, v in sorted(gold["groups"].items())}}


def used(rows: list[dict]) -> list[dict]:
    """The trials that count: every trial but the missing ones."""
    return [r for r in rows if not r.get("missing")]


def missing_counts(rs: list[dict]) -> dict:
    """{n_missing, missing_reasons ('api_failed=1;not_run: budget=2', '' when none)} of some trials."""
    gone = [r["missing_reason"] for r in rs if r.get("missing")]
    return {"n_missing": len(gone),
            "missing_reasons": ";".join(f"{why}={gone.count(why)}" for why in dict.fromkeys(gone))}


def baseline_means(rows: list[dict]) -> dict:
    """(model, scenario) -> (mean cost, mean working time) of its completed baseline trials.
    Working time is graders.usage.work_seconds (the steps' wall time), so a server is not
    judged by its start-up. Failed baseline trials are left out: a crash is
    quick and cheap, not efficient."""
    out = {}
    for key in {(r["model"], r["scenario"]) for r in rows if r["tool"] == BASELINE}:
        done = [r for r in rows if r["tool"] == BASELINE and (r["model"], r["scenario"]) == key and r["completed"]]
        if done:
            out[key] = (_mean(r["cost_usd"] for r in done), _mean(r.get("work_seconds", r["wall_seconds"]) for r in done))
    return out


def efficiency_basis(cost, work, base_cost, base_work) -> str:
    """Which parts a trial's efficiency measured (stats.relative_efficiency counts a ratio it
    cannot form as 1): "cost and time", "time only, no cost", "cost only, no time" or "none, 1.0"."""
    has_cost = cost is not None and base_cost is not None
    has_time = work is not None and base_work is not None
    if has_cost and has_time:
        return "cost and time"
    if has_time:
        return "time only, no cost"
    return "cost only, no time" if has_cost else "none, 1.0"


def bases(rs: list[dict]) -> str | None:
    """The distinct efficiency bases of some trials, '; '-joined (None when none was scored)."""
    found = sorted({r["efficiency_basis"] for r in rs if r.get("efficiency_basis")})
    return "; ".join(found) or None


def score_rows(rows: list[dict], weights: dict, has_baseline: bool) -> list[str]:
    """Fill efficiency and fairness in place; returns notes for the summary."""
    from mcptrials.stats.fairness import fairness, relative_efficiency

    notes = []
    base = baseline_means(rows)
    lacking = set()
    for r in rows:
        r["efficiency_basis"] = None
        if r["missing"]:
            continue  # efficiency and fairness stay None
        if not has_baseline:
            r["efficiency"], r["efficiency_basis"] = 1.0, "none: no baseline, 1.0"
        elif (r["model"], r["scenario"]) in base:
            bc, bw = base[(r["model"], r["scenario"])]
            work = r.get("work_seconds", r["wall_seconds"])
            r["efficiency"] = relative_efficiency(r["cost_usd"], work, bc, bw)
            r["efficiency_basis"] = efficiency_basis(r["cost_usd"], work, bc, bw)
        else:
            lacking.add((r["model"], r["scenario"]))
            r["efficiency"], r["efficiency_basis"] = 1.0, "none: no completed baseline trial, 1.0"
        # a part that is missing, not zero (citations not checked: no checkout; quality not judged:
        # no recorded judgement): the other parts' weights are scaled to sum to 1
        gone = {k: why for k, why in (("citation", r.get("citations_not_checked") and "not checked"),
                                      ("quality", r.get("not_judged") and "not judged")) if why and weights[k]}
        if r["completed"] and gone and sum(w for k, w in weights.items() if k not in gone) > 0:
            left = sum(w for k, w in weights.items() if k not in gone)
            rest = {k: (0.0 if k in gone else w / left) for k, w in weights.items()}
            r["fairness"] = fairness(r["keyword_coverage"], r["quality"], r["citation_grounding"], r["efficiency"], rest)
            r["fairness_without"] = "; ".join(f"{k} ({why})" for k, why in gone.items())
        elif r["completed"]:
            r["fairness"] = fairness(r["keyword_coverage"], r["quality"], r["citation_grounding"], r["efficiency"],
                                     weights)
        else:
            r["fairness"] = 0.0  # a failed (attributable) trial scores 0 and counts as a fail
    if not has_baseline:
        notes.append("no tool named `baseline` in the config: efficiency is 1.0 for every trial and there are "
                     "no paired differences")
    for model, scenario in sorted(lacking):
        notes.append(f"model {model}, scenario {scenario}: no completed baseline trial, so efficiency is 1.0 there")
    return notes


# --- cells and tools ------------------------------------------------------------------


MEAN_FIELDS = ("fairness", "quality", "keyword_coverage", "citation_grounding", "efficiency", "adoption",
               "tool_fluency", "discoverability", "cost_usd", "wall_seconds", "tokens_total", "turns", "tool_calls",
               "cited_recall", "verified_rate")


# wall time split: the agent's working time (what efficiency compares) and the server's start-up
TIME_SPLIT = ("work_seconds", "server_startup_seconds")
# expected tools against the tools called (graders/usage.py): reported, never scored
EXPECTED_TOOLS_FIELDS = ("expected_tools_precision", "expected_tools_recall")


def expected_tools_means(ad: dict) -> dict:
    """A trial's mean precision and recall of tools over its steps with expected_tools
    (a step where it is null, e.g. no tool called, is left out; null when none is left)."""
    steps = ad.get("expected_tools") or []
    return {f"expected_tools_{k}": _mean(st.get(k) for st in steps) for k in ("precision", "recall")}


def cell_rows(rows: list[dict], k: int) -> list[dict]:
    """One row per (model, tool, scenario): means, the fairness interval over its trials,
    pass counts and pass@1 / pass@k / pass^k with k = trials per cell."""
    from mcptrials.stats.pass_k import pass_at_k, pass_hat_k

    out = []
    keys = list(dict.fromkeys((r["model"], r["tool"], r["scenario"]) for r in rows))
    for model, tool, scenario in keys:
        every = [r for r in rows if (r["model"], r["tool"], r["scenario"]) == (model, tool, scenario)]
        rs = used(every)  # `n` counts the trials used; the missing ones are counted apart
        n, c = len(rs), sum(r["passed"] for r in rs)
        ci = _ci([r["fairness"] for r in rs])
        kk = min(k, n)
        row = {"model": model, "tool": tool, "scenario": scenario, "repo": every[0]["repo"],
               "suite": every[0]["suite"], "n": n, "n_total": len(every), **missing_counts(every),
               "passes": c, "completed": sum(r["completed"] for r in rs),
               "fairness_se": ci["se"], "fairness_lo": ci["lo"], "fairness_hi": ci["hi"],
               "pass_at_1": pass_at_k(n, c, 1) if n else None, "k": kk,
               "pass_at_k": pass_at_k(n, c, kk) if n else None, "pass_hat_k": pass_hat_k(n, c, kk) if n else None}
        row.update({f: _mean(r[f] for r in rs) for f in MEAN_FIELDS})
        row["efficiency_basis"] = bases(rs)
        row["citations"] = sum(int(r.get("citations") or 0) for r in rs)   # the n of the citation rates
        row.update({f: _mean(r.get(f) for r in rs) for f in TIME_SPLIT})
        row.update({f: _mean(r.get(f) for r in rs) for f in EXPECTED_TOOLS_FIELDS})
        row.update({e: sum(r[e] for r in every) for e in ERROR_KINDS})
        row["outcomes"] = ";".join(f"{o}={sum(r['outcome'] == o for r in every)}" for o in OUTCOMES
                                   if any(r["outcome"] == o for r in every))
        row["pages"] = " ".join(r["page"] for r in every)
        out.append(row)
    return out


def _ci(values, clusters=None) -> dict:
    """stats.bounded_mean_ci, or an empty interval when no trial is left (all missing)."""
    from mcptrials.stats.intervals import bounded_mean_ci

    if not values:
        return {"mean": None, "se": None, "lo": None, "hi": None, "n": 0, "n_clusters": None,
                "method": "no trials: every trial is missing"}
    return bounded_mean_ci(values, clusters=clusters)


def per_scenario(rows, model, tool, field="fairness") -> dict:
    """scenario -> list of the trials' values (None kept out)."""
    out: dict = {}
    for r in rows:
        if r["model"] == model and r["tool"] == tool and r[field] is not None:
            out.setdefault(r["scenario"], []).append(r[field])
    return out


def tool_rows(rows: list[dict], k: int, noise: float | None, has_baseline: bool) -> list[dict]:
    """One row per (model, tool): fairness with a 95% interval clustered by scenario, the paired
    difference against the baseline (interval, t and Wilcoxon p, Holm-adjusted across the tools
    of a model), pass@1 / pass@k / pass^k averaged over scenarios, cost and time per trial,
    adoption apart, and the minimum detectable effect of this design.

    `noise` is the judge's spread in fairness units (w_quality x mean SD of repeated judgements),
    or None when the judge ran once. A difference whose interval contains 0 or whose size is below
    that spread is `within noise` and not ranked; `rank` orders only the tools that are better
    than the baseline (1 = the largest difference), so a worse tool has none."""
    from mcptrials.stats.intervals import bounded_mean_ci
    from mcptrials.stats.paired import holm_adjust, paired_difference
    from mcptrials.stats.pass_k import mean_pass_at_k, mean_pass_hat_k
    from mcptrials.stats.power import min_detectable_effect, variance_components

    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        tools = list(dict.fromkeys(r["tool"] for r in rows if r["model"] == model))
        base_fair = per_scenario(rows, model, BASELINE)
        for tool in tools:
            every = [r for r in rows if r["model"] == model and r["tool"] == tool]
            rs = used(every)  # missing trials are left out of every figure below, and counted
            scen = list(dict.fromkeys(r["scenario"] for r in rs))
            fair = _ci([r["fairness"] for r in rs], clusters=[r["scenario"] for r in rs])
            ad_vals = [(r["adoption"], r["scenario"]) for r in rs if r["adoption"] is not None]
            ad = bounded_mean_ci([a for a, _ in ad_vals], clusters=[s for _, s in ad_vals]) if ad_vals else None
            tasks = {s: (sum(1 for r in rs if r["scenario"] == s), sum(r["passed"] for r in rs if r["scenario"] == s))
                     for s in scen}
            kk = min(min(n for n, _ in tasks.values()), k) if tasks else k
            row = {"model": model, "tool": tool, "n_scenarios": len(scen), "n_trials": len(rs),
                   "n_total": len(every), **missing_counts(every),
                   "passes": sum(r["passed"] for r in rs), "failed_outcomes": sum(not r["completed"] for r in rs),
                   "fairness": fair["mean"], "fairness_se": fair["se"], "fairness_lo": fair["lo"],
                   "fairness_hi": fair["hi"], "fairness_method": fair["method"],
                   "diff": None, "diff_se": None, "diff_lo": None, "diff_hi": None, "diff_method": None,
                   "t_p": None, "wilcoxon_p": None,
                   "holm_t_p": None, "holm_wilcoxon_p": None, "diff_n": None, "mde": None, "variance": None, "verdict": "",
                   "rank": None,
                   "pass_at_1": mean_pass_at_k(tasks, 1)["mean"], "k": kk,
                   "pass_at_k": mean_pass_at_k(tasks, kk)["mean"], "pass_hat_k": mean_pass_hat_k(tasks, kk)["mean"],
                   "cost_per_trial": _mean(r["cost_usd"] for r in rs),
                   "wall_per_trial": _mean(r["wall_seconds"] for r in rs),
                   "work_per_trial": _mean(r.get("work_seconds") for r in rs),
                   "startup_per_trial": _mean(r.get("server_startup_seconds") for r in rs),
                   "tokens_per_trial": _mean(r["tokens_total"] for r in rs),
                   "adoption": ad["mean"] if ad else None, "adoption_lo": ad["lo"] if ad else None,
                   "adoption_hi": ad["hi"] if ad else None}
            row.update({f: _mean(r[f] for r in rs) for f in ("quality", "keyword_coverage", "citation_grounding",
                                                               "verified_rate", "efficiency", "tool_fluency",
                                                               "discoverability")})
            row["efficiency_basis"] = bases(rs)
            row["citations"] = sum(int(r.get("citations") or 0) for r in rs)   # the n of the citation rates
            row.update({f: _mean(r.get(f) for r in rs) for f in EXPECTED_TOOLS_FIELDS})
            row.update({e: sum(r[e] for r in every) for e in ERROR_KINDS})
            if tool == BASELINE:
                row["verdict"] = "baseline"
            elif has_baseline and base_fair and set(per_scenario(rows, model, tool)) & set(base_fair):
                # (a tool whose every trial is missing, or none on the baseline's scenarios, has no pair)
                mine = per_scenario(rows, model, tool)
                pd_ = paired_difference({s: _mean(v) for s, v in mine.items()},
                                        {s: _mean(v) for s, v in base_fair.items()}, bounds=(-1, 1))
                row.update(diff=pd_["mean_diff"], diff_se=pd_["se"], diff_lo=pd_["lo"], diff_hi=pd_["hi"],
                           diff_method=pd_["method"], t_p=pd_["t_p"], wilcoxon_p=pd_["wilcoxon_p"], diff_n=pd_["n"])
                vc = variance_components(mine, base_fair)
                if vc["omega2"] is not None:
                    row["variance"] = {k2: vc[k2] for k2 in ("omega2", "sigma2_a", "sigma2_b", "k_a", "k_b", "n")}
                    row["mde"] = min_detectable_effect(vc["omega2"], vc["sigma2_a"], vc["sigma2_b"], vc["k_a"],
                                                       vc["k_b"], vc["n"])
                row["verdict"] = verdict(row, noise)
            out.append(row)
        # Holm across the tools compared with this model's baseline.
        mine = [r for r in out if r["model"] == model and r["tool"] != BASELINE]
        for pkey, hkey in (("t_p", "holm_t_p"), ("wilcoxon_p", "holm_wilcoxon_p")):
            adj = holm_adjust({r["tool"]: r[pkey] for r in mine})
            for r in mine:
                r[hkey] = adj[r["tool"]]
        rank_better(mine)
    return out


def rank_better(rows: list[dict]) -> None:
    """Set `rank` 1, 2, ... on the rows whose verdict is `better`, largest difference first.
    Only those: a tool judged worse is never "1", even when it is the only one outside the noise."""
    for i, r in enumerate(sorted((r for r in rows if r["verdict"] == "better"), key=lambda r: -r["diff"]), 1):
        r["rank"] = i


COMPARISON_FIELDS = ("model", "a", "b", "n_scenarios", "n_trials_a", "n_missing_a", "missing_reasons_a",
                     "n_trials_b", "n_missing_b", "missing_reasons_b", "fairness_a", "fairness_b", "diff", "diff_se",
                     "diff_lo", "diff_hi", "diff_method", "t_p", "wilcoxon_p", "holm_t_p", "holm_wilcoxon_p",
                     "verdict", "only_a", "only_b")


def comparison_rows(rows: list[dict], pairs: list, noise: float | None) -> list[dict]:
    """One row per (model, configured `compare:` pair [A, B]): the paired difference A minus B of
    fairness, computed exactly as a tool against the baseline in tool_rows (stats.paired_difference
    over per-scenario means on [-1, 1], 95%, df = shared scenarios - 1), t and Wilcoxon p-values
    Holm-adjusted (stats.holm_adjust) across the configured pairs of that model, and `verdict`
    (better: A above B, worse, within noise). Missing trials are left out and counted per side."""
    from mcptrials.stats.paired import holm_adjust, paired_difference

    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = []
        for a, b in pairs:
            every = {t: [r for r in rows if r["model"] == model and r["tool"] == t] for t in (a, b)}
            means = {t: {sc: _mean(v) for sc, v in per_scenario(rows, model, t).items()} for t in (a, b)}
            row = {"model": model, "a": a, "b": b, "n_scenarios": 0}
            for side, t in (("a", a), ("b", b)):
                lost = missing_counts(every[t])
                row.update({f"n_trials_{side}": len(used(every[t])), f"n_missing_{side}": lost["n_missing"],
                            f"missing_reasons_{side}": lost["missing_reasons"],
                            f"fairness_{side}": _mean(r["fairness"] for r in used(every[t]))})
            row.update({k: None for k in ("diff", "diff_se", "diff_lo", "diff_hi", "t_p", "wilcoxon_p",
                                          "holm_t_p", "holm_wilcoxon_p")})
            row.update(diff_method="no shared scenario with trials on both sides", verdict="within noise",
                       only_a=sorted(set(means[a]) - set(means[b])), only_b=sorted(set(means[b]) - set(means[a])))
            if set(means[a]) & set(means[b]):
                d = paired_difference(means[a], means[b], bounds=(-1, 1))
                row.update(n_scenarios=d["n"], diff=d["mean_diff"], diff_se=d["se"], diff_lo=d["lo"], diff_hi=d["hi"],
                           diff_method=d["method"], t_p=d["t_p"], wilcoxon_p=d["wilcoxon_p"])
                row["verdict"] = verdict(row, noise)
            mine.append(row)
        for pkey, hkey in (("t_p", "holm_t_p"), ("wilcoxon_p", "holm_wilcoxon_p")):
            adj = holm_adjust({i: r[pkey] for i, r in enumerate(mine)})
            for i, r in enumerate(mine):
                r[hkey] = adj[i]
        out += mine
    return out


def write_comparisons_csv(path: Path, rows: list[dict]) -> None:
    """comparisons.csv, with its header even when the config compares nothing (a stable file)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COMPARISON_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r[k] is None else json.dumps(r[k]) if isinstance(r[k], list) else r[k])
                        for k in COMPARISON_FIELDS})


def verdict(row: dict, noise: float | None) -> str:
    """better / worse than the baseline, or `within noise` (not ranked): the interval contains 0
    or cannot be computed, or |difference| is below the judge's spread."""
    if row["diff_lo"] is None or row["diff_hi"] is None:
        return "within noise"
    if row["diff_lo"] <= 0 <= row["diff_hi"]:
        return "within noise"
    if noise is not None and abs(row["diff"]) < noise:
        return "within noise"
    return "better" if row["diff"] > 0 else "worse"


# --- models x hosts --------------------------------------------------------------------


def model_host_view(rows: list[dict], hosts: list[str], models: list[str]) -> dict:
    """The same tools and scenarios under every (model, host) pair, side by side.

    cells: one per (tool, model, host) that ran: fairness with its 95% interval clustered by
    scenario (stats.bounded_mean_ci), pass@1 (share of passed trials), cost and time per trial.
    pairs: paired differences of fairness (stats.paired_difference on [-1, 1] over per-scenario means,
    the scenarios both sides ran) for each tool: every other host against the first host of
    the config (its `loop` by default) for the same model, and every other model against the
    first model for the same host. Empty when the run has one host and one model."""
    from mcptrials.stats.intervals import bounded_mean_ci
    from mcptrials.stats.paired import paired_difference

    if len(hosts) < 2 and len(models) < 2:
        return {"hosts": hosts, "models": models, "cells": [], "pairs": []}
    cells, per_sc = [], {}
    for tool in dict.fromkeys(r["tool"] for r in rows):
        for model in models:
            for host in hosts:
                every = [r for r in rows if (r["tool"], r["model_name"], r["host"]) == (tool, model, host)]
                if not every:
                    continue
                rs = used(every)
                ci = _ci([r["fairness"] for r in rs], clusters=[r["scenario"] for r in rs])
                cells.append({"tool": tool, "model": model, "host": host, "n_trials": len(rs),
                              "n_total": len(every), **missing_counts(every),
                              "fairness": ci["mean"], "fairness_lo": ci["lo"], "fairness_hi": ci["hi"],
                              "pass_at_1": sum(r["passed"] for r in rs) / len(rs) if rs else None,
                              "cost_per_trial": _mean(r["cost_usd"] for r in rs),
                              "wall_per_trial": _mean(r["wall_seconds"] for r in rs)})
                sc: dict = {}
                for r in rs:
                    sc.setdefault(r["scenario"], []).append(r["fairness"])
                if sc:
                    per_sc[tool, model, host] = {k: _mean(v) for k, v in sc.items()}
    pairs = []

    def pair(compare, tool, fixed, a, b, sa, sb):
        if sa is None or sb is None or not set(sa) & set(sb):
            return
        d = paired_difference(sa, sb, bounds=(-1, 1))
        pairs.append({"compare": compare, "tool": tool, "fixed": fixed, "a": a, "b": b, "diff": d["mean_diff"],
                      "diff_lo": d["lo"], "diff_hi": d["hi"], "t_p": d["t_p"], "wilcoxon_p": d["wilcoxon_p"],
                      "n": d["n"]})

    for tool in dict.fromkeys(c["tool"] for c in cells):
        for model in models:
            ran = [h for h in hosts if (tool, model, h) in per_sc]
            for host in ran[1:]:
                pair("hosts", tool, model, host, ran[0], per_sc[tool, model, host], per_sc[tool, model, ran[0]])
        for host in hosts:
            ran = [mo for mo in models if (tool, mo, host) in per_sc]
            for model in ran[1:]:
                pair("models", tool, host, model, ran[0], per_sc[tool, model, host], per_sc[tool, ran[0], host])
    return {"hosts": hosts, "models": models, "cells": cells, "pairs": pairs}


# --- judge noise, errors, server profile, scenarios -------------------------------------


def judge_noise(records: list[dict], w_quality: float) -> dict:
    """The judge's spread and ICC (mcptrials.judge.variance.judge_variance) over all trials, per scenario
    (with its steps) and per criterion; `fairness_noise` = w_quality x the mean SD of repeated
    scenario-quality judgements (None with one repeat: the noise was not measured)."""
    from mcptrials.judge.variance import judge_variance

    records = [r for r in records if r["judged"]["quality"]]   # a trial not judged (recorded judge) has no spread
    judged = [r["judged"] for r in records]
    overall = judge_variance(judged)
    by_scenario = {}
    for sc in dict.fromkeys(r["key"]["scenario"] for r in records):
        sub = [r["judged"] for r in records if r["key"]["scenario"] == sc]
        v = judge_variance(sub)
        steps = {}
        for name in dict.fromkeys(s["name"] for j in sub for s in j["steps"]):
            steps[name] = judge_variance([dict(j, steps=[s for s in j["steps"] if s["name"] == name]) for j in sub])["step"]
        by_scenario[sc] = {"scenario": v["scenario"], "steps": steps}
    sd = (overall["scenario"] or {}).get("mean_sd")
    repeats = sorted({len(j["quality"]) for j in judged})
    return {"repeats": repeats, "overall": overall, "by_scenario": by_scenario,
            "fairness_noise": None if sd is None else w_quality * sd,
            "note": None if sd is not None else "the judge ran once per answer (judge.repeats: 1): its spread "
                                                "is not measured; set judge.repeats >= 2 to measure it"}


def _percentile(values, q):
    import numpy as np

    return float(np.percentile(values, q)) if values else None


def definition_costs(m: Matrix, snapshots) -> dict:
    """tool -> what its tool definitions add to every request, from its snapshots
    (<snapshots>/<tool>/<repo>/tools.json, mcptrials.prepare.definition_tokens): `tokens` (the
    largest over the run's repos; None with no snapshot), `methods`, and `per_repo`."""
    out = {}
    for tool in m.tools:
        per_repo = {}
        for repo in m.run_repos():
            path = Path(snapshots) / tool / repo / "tools.json"
            snap = _read(path) if path.is_file() else {}
            if snap.get("definition_tokens") is not None:
                per_repo[repo] = {k: snap.get(k) for k in (
                    "definition_tokens", "definition_tokens_method", "definition_tokens_model",
                    "definition_tokens_error", "definition_tokens_estimate", "builtin_definition_tokens",
                    "definition_tools")}
        vals = [r["definition_tokens"] for r in per_repo.values()]
        out[tool] = {"tokens": max(vals) if vals else None, "tokens_min": min(vals) if vals else None,
                     "methods": sorted({r["definition_tokens_method"] for r in per_repo.values()}),
                     "builtin_tokens": max((r["builtin_definition_tokens"] for r in per_repo.values()
                                            if r["builtin_definition_tokens"] is not None), default=None),
                     "per_repo": per_repo}
    return out


def server_profile(records: list[dict], definitions: dict | None = None) -> list[dict]:
    """Per tool: server name/version, start-up time, tool-call latency p50/p95, result sizes,
    peak memory (run_meta and the transcripts' tool calls), and what its tool definitions
    add to every request (`definition_tokens`, from definition_costs)."""
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
        out.append({
            "tool": tool,
            "server_name": sorted({str(m.get("server_name")) for m in metas if m.get("server_name")}),
            "server_version": sorted({str(m.get("server_version")) for m in metas if m.get("server_version")}),
            "version_label": sorted({str(m.get("tool_version_label")) for m in metas if m.get("tool_version_label")}),
            "tools_sha256": sorted({m["tools_sha256"] for m in metas if m.get("tools_sha256")}),
            "calls_measured": source, "calls": len(calls),
            "startup_median_s": statistics.median(starts) if starts else None,
            "startup_max_s": max(starts) if starts else None,
            "latency_p50_ms": _percentile(lat, 50), "latency_p95_ms": _percentile(lat, 95),
            "result_chars_mean": _mean(sizes), "result_chars_p95": _percentile(sizes, 95),
            "result_chars_max": max(sizes) if sizes else None,
            "truncated_results": sum(1 for c in calls if c.get("truncated")),
            "peak_rss_kb_max": max(rss) if rss else None,
            "definition_tokens": (definitions or {}).get(tool),
        })
    return out


def error_taxonomy(rows: list[dict]) -> list[dict]:
    """Per (model, tool): each error kind summed and each outcome counted."""
    out = []
    for model, tool in dict.fromkeys((r["model"], r["tool"]) for r in rows):
        rs = [r for r in rows if (r["model"], r["tool"]) == (model, tool)]
        row = {"model": model, "tool": tool, "trials": len(rs), **missing_counts(rs)}
        row.update({e: sum(r[e] for r in rs) for e in ERROR_KINDS})
        row["trials_with_errors"] = sum(1 for r in rs if any(r[e] for e in ERROR_KINDS))
        row["outcomes"] = {o: sum(r["outcome"] == o for r in rs) for o in OUTCOMES if any(r["outcome"] == o for r in rs)}
        out.append(row)
    return out


def scenario_flags(rows: list[dict], m: Matrix) -> list[dict]:
    """Per scenario: saturated (every trial of every tool and model passes: ready for the
    regression suite) or never passed (no trial passes: likely a defect in the task or grader)."""
    out = []
    for sc in dict.fromkeys(r["scenario"] for r in rows):
        every = [r for r in rows if r["scenario"] == sc]
        rs = used(every)
        passes = sum(r["passed"] for r in rs)
        flag = None if not rs else "saturated" if passes == len(rs) else "never_passed" if passes == 0 else None
        data = m.scenarios[sc].data
        out.append({"scenario": sc, "title": data.get("title"), "suite": data["suite"],
                    "split": data["split"], "repo": data["repo"], "steps": len(data["steps"]),
                    "sha256": m.scenarios[sc].sha256, "trials": len(rs), **missing_counts(every), "passes": passes,
                    "flag": flag})
    return out


def pass_hat_curve(rows: list[dict], k_max: int) -> list[dict]:
    """pass^k for k = 1..K per (model, tool), averaged over scenarios (for the plot)."""
    from mcptrials.stats.pass_k import mean_pass_hat_k

    out = []
    for model, tool in dict.fromkeys((r["model"], r["tool"]) for r in rows):
        rs = used(r for r in rows if (r["model"], r["tool"]) == (model, tool))
        tasks = {}
        for r in rs:
            n, c = tasks.get(r["scenario"], (0, 0))
            tasks[r["scenario"]] = (n + 1, c + int(r["passed"]))
        out.append({"model": model, "tool": tool,
                    "points": [[k, mean_pass_hat_k(tasks, k)["mean"]] for k in range(1, k_max + 1)]})
    return out


# --- identity -----------------------------------------------------------------------------


REFERENCE_MODEL_LABEL = "reference (deterministic agent, no language model)"
REFERENCE_JUDGE_LABEL = "reference (deterministic judge: key points and gold citations, no language model)"


def gold_recall_view(rows: list[dict]) -> list[dict]:
    """Per (model, tool), over the trials that count of scenarios with gold rows: the mean cited
    recall, mention recall and cited recall of each row group (issue 23: beside the headline)."""
    out = []
    gold = [r for r in used(rows) if r.get("gold_rows")]
    for key in dict.fromkeys((r["model"], r["tool"]) for r in gold):
        rs = [r for r in gold if (r["model"], r["tool"]) == key]
        groups = sorted({k[len("cited_recall_"):] for r in rs for k in r if k.startswith("cited_recall_")})
        out.append({"model": key[0], "tool": key[1], "n": len(rs),
                    "cited_recall": _mean(r["cited_recall"] for r in rs),
                    "mention_recall": _mean(r["mention_recall"] for r in rs),
                    "groups": {g: {"mean": _mean(r.get(f"cited_recall_{g}") for r in rs),
                                   "n": sum(1 for r in rs if r.get(f"cited_recall_{g}") is not None)} for g in groups}})
    return out


def recorded_judge_label(judged: list[dict]) -> str:
    """The recorded judge in the identity: whose judgements they are (every record names its model)."""
    models = sorted({str(j["judge"].get("model")) for j in judged if j["judge"].get("model")})
    missing = sum(1 for j in judged if j.get("not_judged"))
    return (f"recorded judgements by {', '.join(models) or 'an unnamed judge'} (read from each run's judged.json; "
            f"no call made here)" + (f"; {missing} trial(s) not judged" if missing else ""))


def recorded_identity(spec: dict, records: list[dict], tool: str) -> dict:
    """A recorded arm's identity: its source, each recording's sha256 (by trial), and where its
    tools/list came from (the recordings' init events, or unknown)."""
    recs = [r for r in records if r["key"]["tool"] == tool]
    lists = [r["run_meta"].get("recorded_tools") or {"from": "unknown"} for r in recs]
    return {"source": spec.get("source"),
            "recordings": {"/".join(str(r["key"][k]) for k in ("model", "host", "scenario", "trial")):
                           r["run_meta"].get("recorded_sha256") for r in recs},
            "tools_list_from": sorted({x["from"] for x in lists}),
            "tools_list": sorted({n for x in lists for n in (x.get("names") or [])})}


def _sandbox_label(rec: dict | None) -> str:
    """'bubblewrap 0.8.0', 'bubblewrap 0.8.0 with network', 'none', or 'unrecorded'."""
    if not rec:
        return "unrecorded"
    if rec.get("mechanism") == "none":
        return "none"
    return f"{rec.get('mechanism')} {rec.get('version') or ''}".strip() + (" with network" if rec.get("network") else "")


def identity(m: Matrix, records: list[dict]) -> dict:
    """Who and what ran: models, hosts, tools and versions, repos and commits, scenarios and
    the hash of the set, trials, judge, weights, and the pricing the costs were computed with."""
    from mcptrials.core.records import project_path

    models = {}
    for name, spec in m.models.items():
        if spec["provider"] == "reference":
            label = REFERENCE_MODEL_LABEL
        elif spec["provider"] == "recorded":   # runs made elsewhere, converted: say so, and from what
            label = f"recorded runs ({spec['format']}{', ' + spec['model'] if spec.get('model') else ''})"
        else:
            label = f"{spec.get('model')} ({spec['provider']})"
        models[name] = {"provider": spec["provider"], "model_id": spec.get("model"), "label": label}
    tools = {}
    for name, spec in m.tools.items():
        metas = [r["run_meta"] for r in records if r["key"]["tool"] == name]
        tools[name] = {"transport": spec["transport"], "version_label": spec.get("version"),
                       "server_name": sorted({str(x.get("server_name")) for x in metas if x.get("server_name")}),
                       "server_version": sorted({str(x.get("server_version")) for x in metas if x.get("server_version")}),
                       "tools_sha256": sorted({x["tools_sha256"] for x in metas if x.get("tools_sha256")}),
                       "spec_sha256": m.tool_hash(name),
                       # a description variant: its base's server behind our proxy (run_meta says so too)
                       "variant_of": spec.get("variant_of"),
                       "overrides_sha256": sorted({x["overrides_sha256"] for x in metas if x.get("overrides_sha256")}),
                       # how its processes ran, as the trials recorded it (run_meta.sandbox)
                       "sandbox": sorted({_sandbox_label(x.get("sandbox")) for x in metas})}
        if spec["transport"] == "recorded":   # no server: what it is known from, recording by recording
            tools[name].update(recorded_identity(spec, records, name))
    repos = {}
    for name in m.run_repos():  # only the repos the run's scenarios use
        spec = m.repos[name]
        seen = sorted({r["run_meta"].get("commit") for r in records if r["key"]["repo"] == name} - {None})
        repos[name] = {"url": spec["url"], "commit": spec["commit"], "commits_seen": seen}
    scen = {s.id: {"sha256": s.sha256, "suite": s.data["suite"], "split": s.split,
                   "repo": s.repo, "title": s.data.get("title")} for s in m.run_scenarios()}
    jcfg = m.config["judge"]
    judge_recs = [r["judged"]["judge"] for r in records]
    # No threshold here: the held-out verdict is the report's (judge.threshold reruns only the report).
    judge = {"provider": jcfg["provider"], "model": jcfg.get("model"), "repeats": jcfg["repeats"],
             "label": (REFERENCE_JUDGE_LABEL if jcfg["provider"] == "reference" else recorded_judge_label([r["judged"] for r in records])
                       if jcfg["provider"] == "recorded" else f"{jcfg.get('model')} ({jcfg['provider']})"),
             "prompt_sha256": sorted({j["prompt_sha256"] for j in judge_recs}),
             "settings_hash": sorted({j["settings_hash"] for j in judge_recs}),
             "temperature": sorted({str(j.get("temperature")) for j in judge_recs})}
    return {
        "config": project_path(m.path), "config_files": [project_path(f) for f in m.sources or (m.path,)],
        "models": models,
        "hosts": sorted({str(r["run_meta"].get("host")) for r in records if r["run_meta"].get("host")}),
        "harness_versions": sorted({str(r["run_meta"].get("harness_version")) for r in records
                                    if r["run_meta"].get("harness_version")}),
        "tools": tools, "repos": repos, "scenarios": scen,
        "scenario_set_sha256": m.scenario_set_sha256(),
        "splits": m.config["splits"], "trials": m.trials, "judge": judge, "weights": m.config["weights"],
        "sandbox": m.config["sandbox"],
        "costs": {"method": COST_METHOD, "pricing_sha256": canonical_hash(m.config["pricing"]),
                  "priced_models": sorted(m.config["pricing"])},
        # what scored the trials, so that `mcptrials compare` refuses runs graded differently
        "grading": grading_identity(records),
        "baseline": BASELINE if BASELINE in m.tools else None,
        "started": min((r["run_meta"].get("started_at") or "" for r in records), default=None),
        "ended": max((r["run_meta"].get("ended_at") or "" for r in records), default=None),
    }


def grading_identity(records: list[dict]) -> dict:
    """The deterministic graders' version (scored.json grader_version) and, per scenario, the hashes
    of what graded and judged it (scored grading_sha256, judged scenario.rubric_hash), as recorded."""
    scen = dict.fromkeys(r["key"]["scenario"] for r in records)
    return {"grader_versions": sorted({str(r["scored"].get("grader_version")) for r in records}),
            "grading_sha256": {sc: sorted({str(r["scored"].get("grading_sha256")) for r in records
                                           if r["key"]["scenario"] == sc}) for sc in scen},
            "rubric_sha256": {sc: sorted({str(r["judged"]["scenario"].get("rubric_hash")) for r in records
                                          if r["key"]["scenario"] == sc}) for sc in scen}}


POWER_TARGET = 0.05  # the difference the power line says how many scenarios would detect


def power_line(model: str, tools: list[dict], n: int, trials: int) -> dict:
    """The report's power sentence for one model, from the tools' minimum detectable effects
    (stats.min_detectable_effect) and, for the noisiest tool, stats.scenarios_needed for
    POWER_TARGET with the same variance components."""
    from mcptrials.stats.power import scenarios_needed

    rows = [r for r in tools if r["model"] == model and r["mde"] is not None]
    text = f"with {n} scenario(s) and {trials} trial(s) the smallest difference this run can detect is "
    needed = None
    if rows:
        lo, hi = min(rows, key=lambda r: r["mde"]), max(rows, key=lambda r: r["mde"])
        text += f"{hi['mde']:.3f}" if lo is hi else f"{lo['mde']:.3f} ({lo['tool']}) to {hi['mde']:.3f} ({hi['tool']})"
        text += " in fairness (0-1; alpha 0.05 two-sided, 80% power)"
        vc = hi["variance"]
        if vc["omega2"] + vc["sigma2_a"] + vc["sigma2_b"] > 0:
            needed = scenarios_needed(POWER_TARGET, vc["omega2"], vc["sigma2_a"], vc["sigma2_b"], vc["k_a"], vc["k_b"])
            text += f"; detecting a difference of {POWER_TARGET} would need about {needed} scenarios"
    else:
        text += "not estimable (needs a baseline and at least 2 scenarios)"
    return {"model": model, "n_scenarios": n, "trials": trials, "text": text,
            "mde": {r["tool"]: r["mde"] for r in rows}, "target": POWER_TARGET, "scenarios_needed": needed}


# --- everything ---------------------------------------------------------------------------


def aggregate(m: Matrix, runs) -> dict:
    """Read every trial of the matrix and compute the tables and the summary (no writing)."""
    records = load_records(m, runs)
    rows = [raw_row(r, m) for r in records]
    findings = add_patterns(rows, records, Path(runs).parent / "snapshots")  # row["patterns"]: {name: count}
    has_baseline = BASELINE in m.tools
    weights = m.config["weights"]
    notes = score_rows(rows, weights, has_baseline)
    notes += pricing_notes(rows)
    missing = missing_summary(rows, m.config["retries"]["max_attempts"])
    if missing["note"]:
        notes.append(missing["note"])
    # the judge's spread over the trials that count (a missing trial's answer is not judged work)
    noise = judge_noise([r for r in records if not is_missing(r["transcript"]["outcome"])] or records,
                        weights["quality"])
    if noise["note"]:
        notes.append(noise["note"])
    tools = tool_rows(rows, m.trials, noise["fairness_noise"], has_baseline)
    from mcptrials.core.failures import failed_stages

    failed = failed_stages(Path(runs).parent)   # checkouts, installs, server starts that failed
    dead = did_not_start(failed, {(t, s.repo) for t in m.tools for s in m.run_scenarios() if t != BASELINE},
                         {t: m.server_of(t) for t in m.tools})
    for r in tools:
        if r["tool"] in dead:   # no verdict for a server that never ran
            r.update(verdict="did not start", rank=None)
    comparisons = comparison_rows(rows, m.config["compare"], noise["fairness_noise"])
    cells = cell_rows(rows, m.trials)
    labels = list(dict.fromkeys(r["model"] for r in rows))  # model, or model@host with several hosts
    power = [power_line(model, tools, len(m.run_scenarios()), m.trials) for model in labels]
    return {
        "schema": "mcptrials/summary/1",
        "identity": identity(m, records),
        "methods": {"interval": INTERVAL_METHOD, "costs": COST_METHOD, "efficiency": EFFICIENCY_METHOD},
        "notes": notes,
        "failed_stages": failed,
        "missing": missing,
        "trials": rows, "cells": cells, "tools": tools,
        "comparisons": comparisons,
        "judge_noise": noise, "errors": error_taxonomy(rows),
        "server_profile": server_profile(records, definition_costs(m, Path(runs).parent / "snapshots")),
        "scenarios": scenario_flags(rows, m), "pass_hat_curve": pass_hat_curve(rows, m.trials), "power": power,
        "model_host": model_host_view(rows, list(m.hosts), list(m.models)),
        "gold_recall": gold_recall_view(rows),
        "patterns": pattern_summary(rows, findings),
        "feedback": feedback_table(records, rows, Path(runs).parent / "snapshots"),
        "citation_composition": citation_composition(records),
    }


def did_not_start(failed: list[dict], used: set[tuple[str, str]], install_of: dict[str, str]) -> set[str]:
    """The tools whose server started on none of the repos the run uses: every (tool, repo)
    snapshot failed, or a checkout or the install (install_of: a variant's is its base's)
    before it did (mcptrials.core.failures.failed_stages)."""
    bad_snap = {tuple(f["name"].split("/", 1)) for f in failed if f["stage"] == "snapshot"}
    bad_repo = {f["name"] for f in failed if f["stage"] == "checkout"}
    bad_tool = {f["name"] for f in failed if f["stage"] == "install"}
    tools = {t for t, _ in used}
    return {t for t in tools if all((t, r) in bad_snap or r in bad_repo or install_of.get(t, t) in bad_tool
                                    for tt, r in used if tt == t)}


def citation_composition(records: list[dict]) -> list[dict]:
    """Per (model, tool): the completed-or-failed trials' citations pooled
    (graders.citations.pool: counts summed, then the same rates) and composed
    (graders.composition.view: strict beside lenient, by form, the ungrounded kinds). A
    missing trial, and one scored before the composition existed, are left out."""
    from mcptrials.grade.citations import pool
    from mcptrials.grade.composition import view

    groups: dict[tuple, list] = {}
    for rec in records:
        cit = rec["scored"]["citations"]
        if is_missing(rec["transcript"]["outcome"]) or "by_form" not in cit["counts"]:
            continue
        groups.setdefault((rec["key"]["model"], rec["key"]["tool"]), []).append(cit)
    return [{"model": model, "tool": tool, "n_trials": len(cits), **view(pool(cits))}
            for (model, tool), cits in groups.items()]


def missing_summary(rows: list[dict], max_attempts: int) -> dict:
    """summary.json `missing`: how many trials are missing and why, which ones, and a note."""
    gone = [r for r in rows if r["missing"]]
    counts = missing_counts(rows)
    by_reason = {why: sum(r["missing_reason"] == why for r in gone) for why in dict.fromkeys(r["missing_reason"] for r in gone)}
    note = None
    if gone:
        spent = sum(1 for r in gone if r["attempts"] >= max_attempts and not r["outcome"] == "not_run")
        note = (f"{len(gone)} of {len(rows)} trial(s) are missing ("
                + ", ".join(f"{why} {n}" for why, n in by_reason.items())
                + "): an infrastructure failure, not the tool's; they are left out of every score, mean, pass@k "
                  f"and interval (never counted as 0), and the next snakemake invocation retries them (up to "
                  f"retries.max_attempts = {max_attempts} attempts"
                + (f"; {spent} have used them up" if spent else "") + ")")
    return {"n_trials": len(rows), "n_used": len(rows) - counts["n_missing"], "n_missing": counts["n_missing"],
            "by_reason": by_reason, "max_attempts": max_attempts, "note": note,
            "trials": [{k: r[k] for k in ("model", "tool", "scenario", "trial", "outcome", "missing_reason", "attempts")}
                       for r in gone]}


def pricing_notes(rows: list[dict]) -> list[str]:
    """A note per model whose trials have token usage but no price: cost unknown, efficiency
    then rests on working time alone (stats.relative_efficiency counts an unknown ratio as 1)."""
    out = []
    for model in dict.fromkeys(r["model"] for r in rows):
        rs = [r for r in rows if r["model"] == model]
        if rs[0]["provider"] != "reference" and all(r["cost_usd"] is None for r in rs):
            out.append(f"model {model} ({rs[0]['model_id']}): no entry in `pricing`, so its cost is unknown "
                       "and its efficiency compares working time only")
    return out


def write_csv(path: Path, rows: list[dict]) -> None:
    fields = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else json.dumps(v) if isinstance(v, (dict, list)) else v)
                        for k, v in r.items()})


def write_aggregate(result: dict, out_dir) -> dict[str, Path]:
    from mcptrials.core.records import write_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"trials": out / "trials.csv", "cells": out / "cells.csv", "tools": out / "tools.csv",
             "summary": out / "summary.json"}
    write_csv(paths["trials"], result["trials"])
    write_csv(paths["cells"], result["cells"])
    write_csv(paths["tools"], result["tools"])
    if "patterns" in result:   # one row per (model, tool, pattern)
        paths["patterns"] = out / "patterns.csv"
        write_csv(paths["patterns"], pattern_csv_rows(result["patterns"]))
    paths["comparisons"] = out / "comparisons.csv"
    write_comparisons_csv(paths["comparisons"], result.get("comparisons", []))
    write_json(paths["summary"], result)
    return paths


# --- patterns and the agent's feedback on the tools ------------------------------------------


def snapshot_of(snapshots, tool: str, repo: str, cache: dict) -> dict | None:
    """The tools snapshot a trial's server offered (<snapshots>/<tool>/<repo>/tools.json), read
    once per (tool, repo); None when there is none (a run aggregated without its snapshots)."""
    if (tool, repo) not in cache:
        path = Path(snapshots) / tool / repo / "tools.json"
        cache[tool, repo] = _read(path) if path.is_file() else None
    return cache[tool, repo]


def add_patterns(rows: list[dict], records: list[dict], snapshots) -> list[list[dict]]:
    """mcptrials.grade.patterns.detect over each record's transcript and scored.json (the records
    load_records already read; nothing is rerun), with the tools its snapshot offered. Sets each
    row's `patterns` ({name: count}, patterns.counts) and returns the findings, aligned with rows."""
    from mcptrials.grade.patterns import counts, detect

    cache: dict = {}
    out = [detect(r["transcript"], r["scored"], snapshot_of(snapshots, r["key"]["tool"], r["key"]["repo"], cache))
           for r in records]
    for row, found in zip(rows, out):
        row["patterns"] = counts(found)
    return out


def pattern_summary(rows: list[dict], findings: list[list[dict]]) -> dict:
    """summary.json `patterns`: the patterns' definitions; per (model, tool) and pattern, how many
    trials show it, how many findings, and the pages of those trials; the server tools no trial of
    that (model, tool) called though the server ran through (patterns.RAN_THROUGH); and every
    trial's findings by its page (the trial page marks them). rows and findings align."""
    from mcptrials.grade.patterns import PATTERNS, RAN_THROUGH, THRESHOLDS

    by_page = {r["page"]: f for r, f in zip(rows, findings)}
    out = []
    for model, tool in dict.fromkeys((r["model"], r["tool"]) for r in rows):
        rs = [r for r in rows if (r["model"], r["tool"]) == (model, tool)]
        counts = {}
        for name in PATTERNS:
            hit = [r for r in rs if r["patterns"].get(name)]
            counts[name] = {"trials": len(hit), "findings": sum(r["patterns"][name] for r in hit),
                            "pages": [r["page"] for r in hit]}
        ran = [r for r in rs if r["outcome"] in RAN_THROUGH]
        unused = [{name for f in by_page[r["page"]] if f["pattern"] == "unused_tool" for name in f["tools"]} for r in ran]
        never = sorted(set.intersection(*unused)) if unused else []
        out.append({"model": model, "tool": tool, "trials": len(rs), "patterns": counts, "never_used_tools": never})
    return {"definitions": {name: p.description for name, p in PATTERNS.items()}, "thresholds": THRESHOLDS,
            "by_tool": out, "findings": {page: f for page, f in by_page.items() if f}}


def pattern_csv_rows(patterns: dict) -> list[dict]:
    """patterns.csv: one row per (model, tool, pattern), zero counts included."""
    return [{"model": t["model"], "tool": t["tool"], "pattern": name, "trials_showing": c["trials"],
             "trials": t["trials"], "findings": c["findings"], "pages": " ".join(c["pages"])}
            for t in patterns["by_tool"] for name, c in t["patterns"].items()]


def feedback_names(text: str, tool: str, snapshot: dict | None, calls: list[dict]) -> list[str]:
    """The tools a feedback paragraph names, by the server's own names (and the built-ins'):
    as the model saw them (mcp__<tool>__<name>, tooldefs.model_tool_name) or bare."""
    from mcptrials.prepare.tooldefs import model_tool_name

    seen = {c["name"]: c["tool"] for c in calls}
    for b in (snapshot or {}).get("builtin_tools") or []:
        name = b if isinstance(b, str) else b["name"]
        seen.setdefault(name, name)
    for t in (snapshot or {}).get("tools") or []:
        seen.setdefault(model_tool_name(tool, t["name"]), t["name"])
        seen.setdefault(t["name"], t["name"])
    for own in list(seen.values()):
        seen.setdefault(own, own)
    named = {own for said, own in seen.items() if re.search(rf"(?<![\w.-]){re.escape(said)}(?![\w-])", text)}
    return [own for own in dict.fromkeys(seen.values()) if own in named]


FEEDBACK_START = re.compile(r"feedback on the tools\s*:", re.I)


def feedback_table(records: list[dict], rows: list[dict], snapshots) -> dict:
    """summary.json `feedback`: per tool, every trial's closing feedback on the tools
    (transcript feedback_text, split off the answer by trial.split_feedback), with the tools it names."""
    cache: dict = {}
    out: dict = {}
    for rec, r in zip(records, rows):
        text = (rec["transcript"].get("feedback_text") or "").strip()
        start = FEEDBACK_START.search(text)
        text = text[start.start():] if start else text   # records where the split kept a line of markup before it
        if not text:
            continue
        snap = snapshot_of(snapshots, r["tool"], r["repo"], cache)
        out.setdefault(r["tool"], []).append(
            {"model": r["model"], "scenario": r["scenario"], "trial": r["trial"], "outcome": r["outcome"],
             "page": r["page"], "text": text,
             "names": feedback_names(text, r["tool"], snap, rec["transcript"].get("tool_calls") or [])})
    return out
