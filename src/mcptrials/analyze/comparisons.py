"""Paired differences beside the baseline's: the config's `compare:` pairs of tools, and the
models x hosts view (the same tools under every model and host), from the trial frame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from mcptrials.analyze.tables import holm_columns, interval, missing_counts, per_scenario, used, verdict
from mcptrials.analyze.trial_rows import mean
from mcptrials.core.rows import ComparisonRow
from mcptrials.core.keys import (
    COST_PER_TRIAL,
    DIFF_HI,
    DIFF_LO,
    DIFF_METHOD,
    DIFF_SE,
    FAIRNESS,
    FAIRNESS_HI,
    FAIRNESS_LO,
    HOLM_T_P,
    HOLM_WILCOXON_P,
    MISSING_REASONS,
    MODEL_NAME,
    N_MISSING,
    N_SCENARIOS,
    N_TOTAL,
    N_TRIALS,
    ONLY_A,
    ONLY_B,
    PASS_AT_1,
    T_P,
    WALL_PER_TRIAL,
    WILCOXON_P,
)

if TYPE_CHECKING:  # pandas is imported where a frame is made (trial_rows.trial_frame)
    import pandas as pd

COMPARISON_FIELDS = tuple(ComparisonRow.__annotations__)  # comparisons.csv's header, in the row's order


def comparison_rows(trials: pd.DataFrame, pairs: list, noise: float | None, margin: float) -> list[ComparisonRow]:
    """One row per (model, configured `compare:` pair [A, B]): the paired difference A minus B of
    fairness, computed exactly as a tool against the baseline in tables.tool_rows (stats.paired_difference
    over per-scenario means on [-1, 1], 95%, df = shared scenarios - 1), t and Wilcoxon p-values
    Holm-adjusted (stats.holm_adjust) across the configured pairs of that model, and `verdict`
    (tables.verdict against the smallest difference that matters, `margin`: better = A above B by
    more than it, worse, no practical difference, within noise). Missing trials are left out and
    counted per side."""
    out: list[ComparisonRow] = []
    for model, of_model in trials.groupby("model", sort=False):
        mine = [comparison(model, of_model, a, b, noise, margin) for a, b in pairs]
        holm_columns(mine)
        out += mine
    return out


def comparison(model: str, of_model: pd.DataFrame, a: str, b: str, noise: float | None, margin: float) -> ComparisonRow:
    """The row of one pair [a, b] for one model (its Holm columns None until holm_columns); a
    dict until it is whole, its sided keys made from the side's name."""
    from mcptrials.stats.paired import paired_difference

    every = {t: of_model[of_model["tool"] == t] for t in (a, b)}
    means = {t: {sc: mean(v) for sc, v in per_scenario(every[t]).items()} for t in (a, b)}
    row: dict[str, Any] = {"model": model, "a": a, "b": b, N_SCENARIOS: 0}
    for side, t in (("a", a), ("b", b)):
        lost = missing_counts(every[t])
        row.update(
            {
                f"n_trials_{side}": len(used(every[t])),
                f"n_missing_{side}": lost[N_MISSING],
                f"missing_reasons_{side}": lost[MISSING_REASONS],
                f"fairness_{side}": mean(used(every[t])[FAIRNESS]),
            }
        )
    row.update({k: None for k in ("diff", DIFF_SE, DIFF_LO, DIFF_HI, T_P, WILCOXON_P, HOLM_T_P, HOLM_WILCOXON_P)})
    row.update(
        {
            DIFF_METHOD: "no shared scenario with trials on both sides",
            "verdict": "within noise",
            ONLY_A: sorted(set(means[a]) - set(means[b])),
            ONLY_B: sorted(set(means[b]) - set(means[a])),
        }
    )
    if set(means[a]) & set(means[b]):
        d = paired_difference(means[a], means[b], bounds=(-1, 1))
        row.update(
            {
                N_SCENARIOS: d["n"],
                "diff": d["mean_diff"],
                DIFF_SE: d["se"],
                DIFF_LO: d["lo"],
                DIFF_HI: d["hi"],
                DIFF_METHOD: d["method"],
                T_P: d[T_P],
                WILCOXON_P: d[WILCOXON_P],
            }
        )
        row["verdict"] = verdict(cast(ComparisonRow, row), noise, margin)
    return cast(ComparisonRow, row)


# --- models x hosts --------------------------------------------------------------------


def model_host_view(trials: pd.DataFrame, hosts: list[str], models: list[str]) -> dict:
    """The same tools and scenarios under every (model, host) pair, side by side.

    cells: one per (tool, model, host) that ran: fairness with its 95% interval clustered by
    scenario (stats.bounded_mean_ci), pass@1 (share of passed trials), cost and time per trial.
    pairs: paired differences of fairness (stats.paired_difference on [-1, 1] over per-scenario means,
    the scenarios both sides ran) for each tool: every other host against the first host of
    the config (its `loop` by default) for the same model, and every other model against the
    first model for the same host. Empty when the run has one host and one model."""
    if len(hosts) < 2 and len(models) < 2:
        return {"hosts": hosts, "models": models, "cells": [], "pairs": []}
    groups = dict(list(trials.groupby(["tool", MODEL_NAME, "host"], sort=False)))
    cells, per_sc = [], {}
    for tool in dict.fromkeys(trials["tool"]):
        for model in models:
            for host in hosts:
                if (tool, model, host) not in groups:
                    continue
                every = groups[tool, model, host]
                rs = used(every)
                ci = interval(rs[FAIRNESS], clusters=rs["scenario"])
                cells.append(
                    {
                        "tool": tool,
                        "model": model,
                        "host": host,
                        N_TRIALS: len(rs),
                        N_TOTAL: len(every),
                        **missing_counts(every),
                        FAIRNESS: ci["mean"],
                        FAIRNESS_LO: ci["lo"],
                        FAIRNESS_HI: ci["hi"],
                        PASS_AT_1: sum(bool(p) for p in rs["passed"]) / len(rs) if len(rs) else None,
                        COST_PER_TRIAL: mean(rs["cost_usd"]),
                        WALL_PER_TRIAL: mean(rs["wall_seconds"]),
                    }
                )
                sc = {s: mean(g[FAIRNESS]) for s, g in rs.groupby("scenario", sort=False)}
                if sc:
                    per_sc[tool, model, host] = sc
    return {
        "hosts": hosts,
        "models": models,
        "cells": cells,
        "pairs": host_and_model_pairs(cells, per_sc, hosts, models),
    }


def host_and_model_pairs(cells: list[dict], per_sc: dict, hosts: list[str], models: list[str]) -> list[dict]:
    """model_host_view's pairs, from the per-scenario fairness means of each (tool, model, host)."""
    from mcptrials.stats.paired import paired_difference

    pairs = []

    def pair(compare, tool, fixed, a, b, sa, sb):
        if sa is None or sb is None or not set(sa) & set(sb):
            return
        d = paired_difference(sa, sb, bounds=(-1, 1))
        pairs.append(
            {
                "compare": compare,
                "tool": tool,
                "fixed": fixed,
                "a": a,
                "b": b,
                "diff": d["mean_diff"],
                DIFF_LO: d["lo"],
                DIFF_HI: d["hi"],
                T_P: d[T_P],
                WILCOXON_P: d[WILCOXON_P],
                "n": d["n"],
            }
        )

    for tool in dict.fromkeys(c["tool"] for c in cells):
        for model in models:
            ran = [h for h in hosts if (tool, model, h) in per_sc]
            for host in ran[1:]:
                pair("hosts", tool, model, host, ran[0], per_sc[tool, model, host], per_sc[tool, model, ran[0]])
        for host in hosts:
            ran = [mo for mo in models if (tool, mo, host) in per_sc]
            for model in ran[1:]:
                pair("models", tool, host, model, ran[0], per_sc[tool, model, host], per_sc[tool, ran[0], host])
    return pairs
