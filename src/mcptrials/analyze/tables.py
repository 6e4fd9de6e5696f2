"""The tables of the trial frame (trial_rows.trial_frame): per (model, tool, scenario) cell,
per (model, tool) with its paired difference against the baseline, and the small per-group
views of summary.json (errors, scenarios, pass^k curve, gold recall, missing trials).

Each table is the frame grouped (`groupby(..., sort=False)`: groups in order of first
appearance, as the matrix ran them) with the statistics of mcptrials.stats applied to each
group. The statistics are called on the groups' Python values rather than pandas' own
reductions (`mean`, `sum`), so every figure is the float the formula returns, summed in the
records' order, and None (never NaN) where nothing is left to measure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from mcptrials.analyze.trial_rows import ERROR_KINDS, absent, mean
from mcptrials.core.outcomes import OUTCOMES
from mcptrials.core.rows import CellRow, ComparisonRow, ToolRow
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.core.keys import (
    ADOPTION_HI,
    ADOPTION_LO,
    CITATION_GROUNDING,
    CITED_RECALL,
    COST_PER_TRIAL,
    DIFF_HI,
    DIFF_LO,
    DIFF_METHOD,
    DIFF_N,
    DIFF_SE,
    EFFICIENCY_BASIS,
    EXPECTED_TOOLS_PRECISION,
    EXPECTED_TOOLS_RECALL,
    FAILED_OUTCOMES,
    FAIRNESS,
    FAIRNESS_HI,
    FAIRNESS_LO,
    FAIRNESS_METHOD,
    FAIRNESS_SE,
    GOLD_ROWS,
    HOLM_T_P,
    HOLM_WILCOXON_P,
    KEYWORD_COVERAGE,
    MDE,
    MENTION_RECALL,
    MISSING_REASON,
    MISSING_REASONS,
    N_MISSING,
    N_SCENARIOS,
    N_TOTAL,
    N_TRIALS,
    PAGES,
    PASSES,
    PASS_AT_1,
    PASS_AT_K,
    PASS_HAT_K,
    RANK,
    STARTUP_PER_TRIAL,
    TOKENS_PER_TRIAL,
    TOKENS_TOTAL,
    T_P,
    VARIANCE,
    VERIFIED_RATE,
    WALL_PER_TRIAL,
    WILCOXON_P,
    WORK_PER_TRIAL,
)

if TYPE_CHECKING:  # pandas is imported where a frame is made (trial_rows.trial_frame)
    import pandas as pd

MEAN_FIELDS = (
    FAIRNESS,
    "quality",
    KEYWORD_COVERAGE,
    CITATION_GROUNDING,
    "efficiency",
    "adoption",
    "tool_fluency",
    "discoverability",
    "cost_usd",
    "wall_seconds",
    TOKENS_TOTAL,
    "turns",
    "tool_calls",
    CITED_RECALL,
    VERIFIED_RATE,
)
# wall time split: the agent's working time (what efficiency compares) and the server's start-up
TIME_SPLIT = ("work_seconds", "server_startup_seconds")
# expected tools against the tools called (grade/usage.py): reported, never scored
EXPECTED_TOOLS_FIELDS = (EXPECTED_TOOLS_PRECISION, EXPECTED_TOOLS_RECALL)
TOOL_MEAN_FIELDS = (
    "quality",
    KEYWORD_COVERAGE,
    CITATION_GROUNDING,
    VERIFIED_RATE,
    "efficiency",
    "tool_fluency",
    "discoverability",
)
INTERVAL_METHOD = (
    "95% logit-transformed t interval (stats.bounded_mean_ci): fairness and adoption of a tool "
    "with standard errors clustered by scenario (df = scenarios - 1), of a cell over its trials "
    "(df = trials - 1); paired differences over per-scenario means on [-1, 1] (df = scenarios - 1); "
    "bounds always inside the score's range"
)


# --- per group: the helpers every table uses ---------------------------------------------


def per_group(trials: pd.DataFrame, keys: list[str], figures: Callable[[pd.DataFrame], dict]) -> list[dict]:
    """One row per group of the trials by keys, in order of first appearance: the keys'
    values, then figures(group)."""
    return [dict(zip(keys, key), **figures(g)) for key, g in trials.groupby(keys, sort=False)]


def used(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials that count: every trial but the missing ones."""
    return trials[~trials["missing"]]


def column(trials: pd.DataFrame, name: str) -> list:
    """A column's values (None for a column no trial has)."""
    return trials[name].tolist() if name in trials else [None] * len(trials)


def having(trials: pd.DataFrame, name: str, test: Callable = lambda v: not absent(v)) -> pd.DataFrame:
    """The trials whose value of a column passes test (by default: it is there)."""
    if name not in trials:
        return trials.iloc[0:0]
    return trials[trials[name].map(lambda v: bool(test(v))).astype(bool)]


def count(values) -> int:
    """How many of the values are true (passes, completed trials)."""
    return sum(1 for v in values if not absent(v) and v)


def total(values) -> int:
    """The sum of integer counts, a missing count as 0."""
    return sum(int(v) for v in values if not absent(v))


def missing_counts(trials: pd.DataFrame) -> dict:
    """{n_missing, missing_reasons ('api_failed=1;not_run: budget=2', '' when none)} of some trials."""
    gone = column(trials[trials["missing"]], MISSING_REASON)
    return {
        N_MISSING: len(gone),
        MISSING_REASONS: ";".join(f"{why}={gone.count(why)}" for why in dict.fromkeys(gone)),
    }


def bases(trials: pd.DataFrame) -> str | None:
    """The distinct efficiency bases of some trials, '; '-joined (None when none was scored)."""
    found = sorted({b for b in column(trials, EFFICIENCY_BASIS) if not absent(b) and b})
    return "; ".join(found) or None


def interval(values, clusters=None) -> dict:
    """stats.bounded_mean_ci, or an empty interval when no trial is left (all missing)."""
    from mcptrials.stats.intervals import bounded_mean_ci

    values = list(values)
    if not values:
        return {
            "mean": None,
            "se": None,
            "lo": None,
            "hi": None,
            "n": 0,
            "n_clusters": None,
            "method": "no trials: every trial is missing",
        }
    return bounded_mean_ci(values, clusters=None if clusters is None else list(clusters))


def per_scenario(trials: pd.DataFrame, field: str = FAIRNESS) -> dict:
    """scenario -> list of the trials' values (None kept out)."""
    there = having(trials, field)
    return {sc: g[field].tolist() for sc, g in there.groupby("scenario", sort=False)}


def tasks(trials: pd.DataFrame) -> dict:
    """scenario -> (trials, passes): the tasks of stats.mean_pass_at_k and mean_pass_hat_k."""
    return {sc: (len(g), count(g["passed"])) for sc, g in trials.groupby("scenario", sort=False)}


# --- cells ---------------------------------------------------------------------------------


def cell_rows(trials: pd.DataFrame, k: int) -> list[CellRow]:
    """One row per (model, tool, scenario): means, the fairness interval over its trials,
    pass counts and pass@1 / pass@k / pass^k with k = trials per cell."""
    return cast(list[CellRow], per_group(trials, ["model", "tool", "scenario"], lambda every: cell_figures(every, k)))


def cell_figures(every: pd.DataFrame, k: int) -> dict:
    from mcptrials.stats.pass_k import pass_at_k, pass_hat_k

    rs = used(every)  # `n` counts the trials used; the missing ones are counted apart
    n, c = len(rs), count(rs["passed"])
    ci = interval(rs[FAIRNESS])
    kk = min(k, n)
    row = {
        "repo": every["repo"].iat[0],
        "suite": every["suite"].iat[0],
        "n": n,
        N_TOTAL: len(every),
        **missing_counts(every),
        PASSES: c,
        "completed": count(rs["completed"]),
        FAIRNESS_SE: ci["se"],
        FAIRNESS_LO: ci["lo"],
        FAIRNESS_HI: ci["hi"],
        PASS_AT_1: pass_at_k(n, c, 1) if n else None,
        "k": kk,
        PASS_AT_K: pass_at_k(n, c, kk) if n else None,
        PASS_HAT_K: pass_hat_k(n, c, kk) if n else None,
    }
    row.update({f: mean(rs[f]) for f in MEAN_FIELDS})
    row[EFFICIENCY_BASIS] = bases(rs)
    row["citations"] = total(rs["citations"])  # the n of the citation rates
    row.update({f: mean(column(rs, f)) for f in (*TIME_SPLIT, *EXPECTED_TOOLS_FIELDS)})
    row.update({e: total(every[e]) for e in ERROR_KINDS})
    row["outcomes"] = outcome_counts(every["outcome"])
    row[PAGES] = " ".join(every["page"])
    return row


def outcome_counts(outcomes: pd.Series) -> str:
    """'completed=3;server_crashed=1': each outcome that occurs, in mcptrials.core.outcomes order."""
    seen = outcomes.tolist()
    return ";".join(f"{o}={seen.count(o)}" for o in OUTCOMES if o in seen)


# --- tools ---------------------------------------------------------------------------------


def tool_rows(trials: pd.DataFrame, k: int, noise: float | None, has_baseline: bool, margin: float) -> list[ToolRow]:
    """One row per (model, tool): fairness with a 95% interval clustered by scenario, the paired
    difference against the baseline (interval, t and Wilcoxon p, Holm-adjusted across the tools
    of a model), pass@1 / pass@k / pass^k averaged over scenarios, cost and time per trial,
    adoption apart, and the minimum detectable effect of this design.

    `noise` is the judge's spread in fairness units (w_quality x mean SD of repeated judgements),
    or None when the judge ran once; `margin` the smallest difference that matters (the config's
    `margin:`). The verdict is `verdict`'s (better / worse beyond the margin, no practical
    difference within it, else within noise); `rank` orders only the tools that are better
    than the baseline (1 = the largest difference), so a worse tool has none."""
    out: list[ToolRow] = []
    for _, of_model in trials.groupby("model", sort=False):
        base_fair = per_scenario(of_model[of_model["tool"] == BASELINE])
        rows = cast(list[ToolRow], per_group(of_model, ["model", "tool"], lambda every: tool_figures(every, k)))
        for row in rows:
            mine = per_scenario(of_model[of_model["tool"] == row["tool"]])
            if row["tool"] == BASELINE:
                row["verdict"] = "baseline"
            elif has_baseline and base_fair and set(mine) & set(base_fair):
                # (a tool whose every trial is missing, or none on the baseline's scenarios, has no pair)
                against_baseline(row, mine, base_fair, noise, margin)
        # Holm across the tools compared with this model's baseline.
        holm_columns([r for r in rows if r["tool"] != BASELINE])
        rank_better([r for r in rows if r["tool"] != BASELINE])
        out += rows
    return out


def tool_figures(every: pd.DataFrame, k: int) -> dict:
    """The figures of one (model, tool) that need no baseline; the paired ones are None here."""
    from mcptrials.stats.intervals import bounded_mean_ci
    from mcptrials.stats.pass_k import mean_pass_at_k, mean_pass_hat_k

    rs = used(every)  # missing trials are left out of every figure below, and counted
    fair = interval(rs[FAIRNESS], clusters=rs["scenario"])
    adopted = having(rs, "adoption")
    ad = bounded_mean_ci(adopted["adoption"].tolist(), clusters=adopted["scenario"].tolist()) if len(adopted) else None
    per_task = tasks(rs)
    kk = min(min(n for n, _ in per_task.values()), k) if per_task else k
    row = {
        N_SCENARIOS: len(per_task),
        N_TRIALS: len(rs),
        N_TOTAL: len(every),
        **missing_counts(every),
        PASSES: count(rs["passed"]),
        FAILED_OUTCOMES: count(not c for c in rs["completed"]),
        FAIRNESS: fair["mean"],
        FAIRNESS_SE: fair["se"],
        FAIRNESS_LO: fair["lo"],
        FAIRNESS_HI: fair["hi"],
        FAIRNESS_METHOD: fair["method"],
        "diff": None,
        DIFF_SE: None,
        DIFF_LO: None,
        DIFF_HI: None,
        DIFF_METHOD: None,
        T_P: None,
        WILCOXON_P: None,
        HOLM_T_P: None,
        HOLM_WILCOXON_P: None,
        DIFF_N: None,
        MDE: None,
        VARIANCE: None,
        "verdict": "",
        RANK: None,
        PASS_AT_1: mean_pass_at_k(per_task, 1)["mean"],
        "k": kk,
        PASS_AT_K: mean_pass_at_k(per_task, kk)["mean"],
        PASS_HAT_K: mean_pass_hat_k(per_task, kk)["mean"],
        COST_PER_TRIAL: mean(rs["cost_usd"]),
        WALL_PER_TRIAL: mean(rs["wall_seconds"]),
        WORK_PER_TRIAL: mean(column(rs, "work_seconds")),
        STARTUP_PER_TRIAL: mean(column(rs, "server_startup_seconds")),
        TOKENS_PER_TRIAL: mean(rs[TOKENS_TOTAL]),
        "adoption": ad["mean"] if ad else None,
        ADOPTION_LO: ad["lo"] if ad else None,
        ADOPTION_HI: ad["hi"] if ad else None,
    }
    row.update({f: mean(rs[f]) for f in TOOL_MEAN_FIELDS})
    row[EFFICIENCY_BASIS] = bases(rs)
    row["citations"] = total(rs["citations"])  # the n of the citation rates
    row.update({f: mean(column(rs, f)) for f in EXPECTED_TOOLS_FIELDS})
    row.update({e: total(every[e]) for e in ERROR_KINDS})
    return row


def against_baseline(row: ToolRow, mine: dict, base_fair: dict, noise: float | None, margin: float) -> None:
    """Fill a tool row's paired difference of per-scenario fairness means against the baseline
    (stats.paired_difference on [-1, 1]), its variance components and minimum detectable
    effect (stats.variance_components, min_detectable_effect), and its verdict."""
    from mcptrials.stats.paired import paired_difference
    from mcptrials.stats.power import min_detectable_effect, variance_components

    d = paired_difference(
        {s: mean(v) for s, v in mine.items()}, {s: mean(v) for s, v in base_fair.items()}, bounds=(-1, 1)
    )
    row.update(
        {
            "diff": d["mean_diff"],
            DIFF_SE: d["se"],
            DIFF_LO: d["lo"],
            DIFF_HI: d["hi"],
            DIFF_METHOD: d["method"],
            T_P: d[T_P],
            WILCOXON_P: d[WILCOXON_P],
            DIFF_N: d["n"],
        }
    )
    vc = variance_components(mine, base_fair)
    if vc["omega2"] is not None:
        row[VARIANCE] = {k: vc[k] for k in ("omega2", "sigma2_a", "sigma2_b", "k_a", "k_b", "n")}
        row[MDE] = min_detectable_effect(vc["omega2"], vc["sigma2_a"], vc["sigma2_b"], vc["k_a"], vc["k_b"], vc["n"])
    row["verdict"] = verdict(row, noise, margin)


def holm_columns(rows: list[ToolRow] | list[ComparisonRow]) -> None:
    """holm_t_p and holm_wilcoxon_p: stats.holm_adjust of t_p and wilcoxon_p across the rows."""
    from mcptrials.stats.paired import holm_adjust

    t_p = holm_adjust({i: r[T_P] for i, r in enumerate(rows)})
    wilcoxon_p = holm_adjust({i: r[WILCOXON_P] for i, r in enumerate(rows)})
    for i, r in enumerate(rows):
        r[HOLM_T_P], r[HOLM_WILCOXON_P] = t_p[i], wilcoxon_p[i]


def rank_better(rows: list[ToolRow]) -> None:
    """Set `rank` 1, 2, ... on the rows whose verdict is `better`, largest difference first.
    Only those: a tool judged worse is never "1", even when it is the only one outside the noise."""
    better = [r for r in rows if r["verdict"] == "better"]  # a better one has its difference
    for i, r in enumerate(sorted(better, key=lambda r: -(r["diff"] or 0.0)), 1):
        r[RANK] = i


VERDICT_METHOD = (
    "better / worse: the 95% interval of the paired difference lies entirely above +margin / "
    "below -margin (and the difference is at least the judge's spread); no practical difference: "
    "it lies entirely within [-margin, +margin]; within noise: otherwise (stats.practical_verdict; "
    "margin = the config's `margin:`, the smallest difference in fairness that matters)"
)


def verdict(row: ToolRow | ComparisonRow, noise: float | None, margin: float) -> str:
    """A paired difference's verdict: stats.practical_verdict of its interval against the smallest
    difference that matters, `margin` (better, worse, no practical difference, within noise), a
    better or worse whose |difference| is below the judge's spread `noise` (None: the judge ran
    once) being `within noise` too. Only `better` is ranked."""
    from mcptrials.stats.paired import BETTER, WITHIN_NOISE, WORSE, practical_verdict

    v = practical_verdict(row[DIFF_LO], row[DIFF_HI], margin)
    if v in (BETTER, WORSE) and noise is not None and abs(row["diff"] or 0.0) < noise:
        return WITHIN_NOISE
    return v


POWER_TARGET = 0.05  # the difference the power line says how many scenarios would detect


def scenarios_with_data(trials: pd.DataFrame, model: str) -> int:
    """How many scenarios have at least one trial of the model that counts (not missing): the
    scenarios the power line's figures rest on."""
    return int(used(trials[trials["model"] == model])["scenario"].nunique())


def power_line(model: str, tools: list[ToolRow], n: int, trials: int, planned: int | None = None) -> dict:
    """The report's power sentence for one model, from the tools' minimum detectable effects
    (stats.min_detectable_effect) and, for the noisiest tool, stats.scenarios_needed for
    POWER_TARGET with the same variance components. `n` = the scenarios with data
    (scenarios_with_data), `planned` = the run's scenarios, named beside it when more."""
    from mcptrials.stats.power import scenarios_needed

    rows = [r for r in tools if r["model"] == model and r[MDE] is not None]
    counted = f"{n} scenario(s)" + (f" with data (of {planned})" if planned is not None and planned != n else "")
    text = f"with {counted} and {trials} trial(s) the smallest difference this run can detect is "
    needed = None
    if rows:
        lo, hi = min(rows, key=lambda r: r[MDE] or 0.0), max(rows, key=lambda r: r[MDE] or 0.0)  # all have one
        text += f"{hi[MDE]:.3f}" if lo is hi else f"{lo[MDE]:.3f} ({lo['tool']}) to {hi[MDE]:.3f} ({hi['tool']})"
        text += " in fairness (0-1; alpha 0.05 two-sided, 80% power)"
        vc = hi[VARIANCE]
        if vc is not None and vc["omega2"] + vc["sigma2_a"] + vc["sigma2_b"] > 0:
            needed = scenarios_needed(POWER_TARGET, vc["omega2"], vc["sigma2_a"], vc["sigma2_b"], vc["k_a"], vc["k_b"])
            text += f"; detecting a difference of {POWER_TARGET} would need about {needed} scenarios"
    else:
        text += "not estimable (needs a baseline and at least 2 scenarios)"
    return {
        "model": model,
        N_SCENARIOS: n,
        "n_scenarios_planned": n if planned is None else planned,
        "trials": trials,
        "text": text,
        MDE: {r["tool"]: r[MDE] for r in rows},
        "target": POWER_TARGET,
        "scenarios_needed": needed,
    }


# --- the small views ------------------------------------------------------------------------


def error_taxonomy(trials: pd.DataFrame) -> list[dict]:
    """Per (model, tool): each error kind summed and each outcome counted."""

    def figures(rs):
        seen = rs["outcome"].tolist()
        return {
            "trials": len(rs),
            **missing_counts(rs),
            **{e: total(rs[e]) for e in ERROR_KINDS},
            "trials_with_errors": count(any(v) for v in zip(*(rs[e] for e in ERROR_KINDS))),
            "outcomes": {o: seen.count(o) for o in OUTCOMES if o in seen},
        }

    return per_group(trials, ["model", "tool"], figures)


def scenario_flags(trials: pd.DataFrame, m: Matrix) -> list[dict]:
    """Per scenario: saturated (every trial of every tool and model passes: ready for the
    regression suite) or never passed (no trial passes: likely a defect in the task or grader)."""

    def figures(every):
        rs = used(every)
        passes = count(rs["passed"])
        flag = None if not len(rs) else "saturated" if passes == len(rs) else "never_passed" if passes == 0 else None
        sc = m.scenarios[every["scenario"].iat[0]]
        return {
            "title": sc.data.get("title"),
            "suite": sc.data["suite"],
            "split": sc.data["split"],
            "repo": sc.data["repo"],
            "steps": len(sc.data["steps"]),
            "sha256": sc.sha256,
            "trials": len(rs),
            **missing_counts(every),
            PASSES: passes,
            "flag": flag,
        }

    return per_group(trials, ["scenario"], figures)


def pass_hat_curve(trials: pd.DataFrame, k_max: int) -> list[dict]:
    """pass^k for k = 1..K per (model, tool), averaged over scenarios (for the plot)."""
    from mcptrials.stats.pass_k import mean_pass_hat_k

    def figures(every):
        per_task = tasks(used(every))
        return {"points": [[k, mean_pass_hat_k(per_task, k)["mean"]] for k in range(1, k_max + 1)]}

    return per_group(trials, ["model", "tool"], figures)


def gold_recall_view(trials: pd.DataFrame) -> list[dict]:
    """Per (model, tool), over the trials that count of scenarios with gold rows: the mean cited
    recall, mention recall and cited recall of each row group (issue 23: beside the headline)."""
    rs = used(trials)
    gold = having(rs, GOLD_ROWS, lambda v: not absent(v) and bool(v))

    def figures(g):
        # a group's column is NaN for the trials whose scenario lacks it (None: there, not measured)
        groups = sorted(
            c[len("cited_recall_") :]
            for c in g
            if c.startswith("cited_recall_") and any(v is None or not absent(v) for v in g[c])
        )
        return {
            "n": len(g),
            CITED_RECALL: mean(g[CITED_RECALL]),
            MENTION_RECALL: mean(g[MENTION_RECALL]),
            "groups": {
                name: {
                    "mean": mean(g[f"cited_recall_{name}"]),
                    "n": sum(1 for v in g[f"cited_recall_{name}"] if not absent(v)),
                }
                for name in groups
            },
        }

    return per_group(gold, ["model", "tool"], figures)


def missing_summary(trials: pd.DataFrame, max_attempts: int) -> dict:
    """summary.json `missing`: how many trials are missing and why, which ones, and a note."""
    gone = trials[trials["missing"]]
    reasons = gone[MISSING_REASON]
    by_reason = {why: int(n) for why, n in reasons.groupby(reasons, sort=False).size().items()}
    note = None
    if len(gone):
        spent = sum(
            1 for att, out in zip(gone["attempts"], gone["outcome"]) if att >= max_attempts and out != "not_run"
        )
        note = (
            f"{len(gone)} of {len(trials)} trial(s) are missing ("
            + ", ".join(f"{why} {n}" for why, n in by_reason.items())
            + "): an infrastructure failure, not the tool's; they are left out of every score, mean, pass@k "
            f"and interval (never counted as 0), and the next snakemake invocation retries them (up to "
            f"retries.max_attempts = {max_attempts} attempts" + (f"; {spent} have used them up" if spent else "") + ")"
        )
    return {
        N_TRIALS: len(trials),
        "n_used": len(trials) - len(gone),
        N_MISSING: len(gone),
        "by_reason": by_reason,
        "max_attempts": max_attempts,
        "note": note,
        "trials": gone[["model", "tool", "scenario", "trial", "outcome", MISSING_REASON, "attempts"]].to_dict(
            "records"
        ),
    }


def pricing_notes(trials: pd.DataFrame) -> list[str]:
    """A note per model whose trials have token usage but no price: cost unknown, efficiency
    then rests on working time alone (stats.relative_efficiency counts an unknown part as 0.5 in every arm)."""
    return [
        f"model {model} ({rs['model_id'].iat[0]}): no entry in `pricing`, so its cost is unknown "
        "and its efficiency compares working time only"
        for (model,), rs in trials.groupby(["model"], sort=False)
        if rs["provider"].iat[0] != "reference" and all(absent(c) for c in rs["cost_usd"])
    ]
