"""Each tool's contribution, from the ablation arms (mcptrials.matrix.ablation), per model and host.

- leave one out: per tool t of an ablated server, the paired difference of fairness, the full
  server minus the arm without t, over the scenarios both ran (stats.paired.paired_difference
  on [-1, 1], 95%, the same as a tool against the baseline), Holm-adjusted across the tools
  of that server and model (stats.paired.holm_adjust), with the practical verdict against the
  config's margin; the instructions arm is one more row (left out: `instructions`). Beside
  it the calls to t in the full server's trials and in the arm's (0: the proxy refused it).
  A tool never called in the full server's trials contributes nothing by construction.
- Shapley (with subsets): v(S) = the mean over scenarios of the per-scenario mean fairness of
  the arm offering exactly S (the full server for all of them), and each tool's value
  (stats.shapley): exact over all subsets, or the permutation-sampling estimate with its SE
  over the orders the config drew (matrix.ablation.sample_orders, the same seed).
- confirmation (`ablate.confirm`): each confirmed arm's difference from its full server (arm minus
  full) on the train scenarios and on the held-out ones, and whether the choice held there; every
  other arm's leave-one-out row says it was not confirmed on held-out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcptrials.analyze.tables import per_scenario, used
from mcptrials.analyze.trial_rows import mean
from mcptrials.core.keys import (
    DIFF_HI,
    DIFF_LO,
    DIFF_SE,
    FAIRNESS,
    FAIRNESS_HI,
    FAIRNESS_LO,
    HOLM_T_P,
    HOLM_WILCOXON_P,
    N_SCENARIOS,
    T_P,
    WILCOXON_P,
)
from mcptrials.matrix.ablation import ablation_of, sample_orders

if TYPE_CHECKING:
    import pandas as pd

    from mcptrials.matrix.matrix import Matrix

INSTRUCTIONS = "instructions"  # the left-out name of the instructions arm
LOO_FIELDS = (
    "model",
    "tool",
    "left_out",
    "arm",
    "fairness_full",
    "fairness_arm",
    "diff",
    DIFF_SE,
    DIFF_LO,
    DIFF_HI,
    N_SCENARIOS,
    T_P,
    WILCOXON_P,
    HOLM_T_P,
    HOLM_WILCOXON_P,
    "verdict",
    "calls_full",
    "calls_arm",
    "note",
    "held_out",
)
SHAPLEY_FIELDS = ("model", "tool", "name", "shapley", "se", "method", "v_full", "v_empty", "calls_full")
METHOD = (
    "leave one out: full server minus the arm without the tool, paired over scenarios (per-scenario mean "
    "fairness), logit-transformed t interval on [-1, 1], 95%; Holm across the tools of one server and model. "
    "Shapley: v(S) = mean fairness of the arm offering S; exact (Shapley 1953) or permutation sampling with "
    "its SE (Castro, Gomez & Tejada 2009); the values sum to v(full) - v(empty)."
)


def call_counts(records: list[dict]) -> dict[tuple[str, str], dict[str, int]]:
    """(model label, tool) -> the server tool's name -> calls over those trials (scored adoption.per_tool)."""
    out: dict[tuple[str, str], dict[str, int]] = {}
    for rec in records:
        key = (rec["key"]["model"], rec["key"]["tool"])
        mine = out.setdefault(key, {})
        for name, st in ((rec.get("scored") or {}).get("adoption", {}).get("per_tool") or {}).items():
            mine[name] = mine.get(name, 0) + int(st.get("calls") or 0)
    return out


def contribution_view(
    m: Matrix,
    trials: pd.DataFrame,
    records: list[dict],
    margin: float,
    tool_rows: list | None = None,
    costs: dict | None = None,
    every_trial: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """summary.json `contribution`: {leave_one_out, shapley, surface, confirmation: rows, method};
    empty lists without arms. `tool_rows`: the summary's tool rows (fairness with its interval);
    `costs`: tool -> its definition tokens (analyze.records_summary.definition_costs);
    `every_trial`: the run's trials and the confirmation's on held-out scenarios (default `trials`)."""
    arms = {t: a for t, spec in m.tools.items() if (a := ablation_of(spec))}
    out: dict[str, Any] = {"leave_one_out": [], "shapley": [], "surface": [], "confirmation": [], "method": METHOD}
    if not arms:
        return out
    out["surface"] = surface_rows(arms, tool_rows or [], costs or {}, margin)
    out["confirmation"] = confirmation_rows(m, trials if every_trial is None else every_trial, margin)
    calls = call_counts(records)
    for model, of_model in trials.groupby("model", sort=False):
        means = {
            t: {sc: mean(v) for sc, v in per_scenario(used(of_model[of_model["tool"] == t])).items()} for t in m.tools
        }
        for base in dict.fromkeys(a["of"] for a in arms.values()):
            mine = {arm: a for arm, a in arms.items() if a["of"] == base}
            out["leave_one_out"] += leave_one_out_rows(m, str(model), base, mine, means, calls, margin)
            subsets = [a for a in mine.values() if a["kind"] == "subsets"]
            if subsets:
                out["shapley"] += shapley_rows(m, str(model), base, subsets[0], means, calls)
    held = {(r["model"], r["arm"]): r["verdict"] for r in out["confirmation"]}
    for r in out["leave_one_out"]:
        r["held_out"] = held.get((r["model"], r["arm"]), NOT_CONFIRMED)
    return out


NOT_CONFIRMED = "not confirmed on held-out"
CONFIRM_FIELDS = (
    "model",
    "tool",
    "arm",
    "train_diff",
    "train_lo",
    "train_hi",
    "train_n",
    "heldout_diff",
    "heldout_lo",
    "heldout_hi",
    "heldout_n",
    "verdict",
)


def held_out_verdict(heldout_diff: float | None, margin: float) -> str:
    """Whether an arm chosen on train held on the held-out scenarios, from its held-out difference
    (arm minus full server, mean over scenarios of fairness): "did not hold" when it is below
    -margin (the arm lost more than the smallest difference that matters), "held" otherwise, and
    NOT_CONFIRMED without held-out trials: a choice is never called an improvement from train alone.
    Source: this project, issue 37 item 4."""
    if heldout_diff is None:
        return NOT_CONFIRMED
    return "did not hold" if heldout_diff < -margin else "held"


def confirmation_rows(m, trials: pd.DataFrame, margin: float) -> list[dict]:
    """Per model and confirmed arm (`ablate.confirm`): the paired difference of fairness, arm minus its
    full server, on the train scenarios and on the held-out ones side by side, and the verdict."""
    from mcptrials.stats.paired import paired_difference

    split = {sc: s.split for sc, s in m.scenarios.items()}
    out: list[dict] = []
    for model, of_model in trials.groupby("model", sort=False):
        for arm, base in m.confirmed.items():
            row: dict[str, Any] = {"model": str(model), "tool": base, "arm": arm, "train_n": 0, "heldout_n": 0}
            for part, name in (("train", "train"), ("heldout", "held-out")):
                mine = of_model[of_model["scenario"].map(split) == name]
                a, b = (
                    {sc: mean(v) for sc, v in per_scenario(used(mine[mine["tool"] == t])).items()} for t in (arm, base)
                )
                if set(a) & set(b):
                    d = paired_difference(a, b, bounds=(-1, 1))
                    row |= {f"{part}_diff": d["mean_diff"], f"{part}_lo": d["lo"], f"{part}_hi": d["hi"]}
                    row[f"{part}_n"] = d["n"]
            out.append(dict(dict.fromkeys(CONFIRM_FIELDS), **row))
            out[-1]["verdict"] = held_out_verdict(out[-1]["heldout_diff"], margin)
    return out


def leave_one_out_rows(m, model: str, base: str, arms: dict, means: dict, calls: dict, margin: float) -> list[dict]:
    from mcptrials.analyze.tables import holm_columns
    from mcptrials.stats.paired import paired_difference, practical_verdict

    rows: list[dict] = []
    full_calls = calls.get((model, base), {})
    for arm, a in arms.items():
        if a["kind"] not in ("leave_one_out", INSTRUCTIONS):
            continue
        name = INSTRUCTIONS if a["kind"] == INSTRUCTIONS else m.tools[arm]["overrides"]["hide"][0]
        row: dict[str, Any] = dict.fromkeys(LOO_FIELDS)
        row.update(model=model, tool=base, left_out=name, arm=arm, verdict="within noise")
        row[N_SCENARIOS] = 0
        row["fairness_full"] = _v(means.get(base))
        row["fairness_arm"] = _v(means.get(arm))
        if name != INSTRUCTIONS:
            row["calls_full"] = full_calls.get(name, 0)
            row["calls_arm"] = calls.get((model, arm), {}).get(name, 0)
            if not row["calls_full"]:
                row["note"] = "never called in the full server's trials: contributes nothing by construction"
        a_means, b_means = means.get(base) or {}, means.get(arm) or {}
        if set(a_means) & set(b_means):
            d = paired_difference(a_means, b_means, bounds=(-1, 1))
            row.update(
                {
                    "diff": d["mean_diff"],
                    DIFF_SE: d["se"],
                    DIFF_LO: d["lo"],
                    DIFF_HI: d["hi"],
                    N_SCENARIOS: d["n"],
                    T_P: d[T_P],
                    WILCOXON_P: d[WILCOXON_P],
                }
            )
            row["verdict"] = practical_verdict(d["lo"], d["hi"], margin)
        rows.append(row)
    holm_columns(rows)  # type: ignore[arg-type]  # the same two columns as a tool row's
    return rows


def _v(per_sc: dict | None) -> float | None:
    """v of one arm: the mean over scenarios of its per-scenario mean fairness (None if it has none)."""
    vals = [x for x in (per_sc or {}).values() if x is not None]
    return sum(vals) / len(vals) if vals else None


def shapley_rows(m, model: str, base: str, meta: dict, means: dict, calls: dict) -> list[dict]:
    """Each player's Shapley value for one server and model; no rows when an arm it needs has no trial."""
    from mcptrials.stats.shapley import shapley_exact, shapley_sampled

    players = list(meta["tools"])
    arm_of = {
        frozenset(players) - frozenset(spec["overrides"]["hide"]): t
        for t, spec in m.tools.items()
        if (a := ablation_of(spec)) and a["of"] == base and a["kind"] == "subsets"
    }
    arm_of[frozenset(players)] = base
    values = {s: _v(means.get(t)) for s, t in arm_of.items()}
    if any(x is None for x in values.values()):
        return []

    def v(s: frozenset[str]) -> float:
        return float(values[s])  # type: ignore[arg-type]  # all set (checked above)

    full_calls = calls.get((model, base), {})
    common = {"model": model, "tool": base, "v_full": v(frozenset(players)), "v_empty": v(frozenset())}
    if meta["subsets"] == "all":
        exact = shapley_exact(players, v)
        return [
            dict(common, name=p, shapley=exact[p], se=None, method="exact", calls_full=full_calls.get(p, 0))
            for p in players
        ]
    how = meta["subsets"]
    est = shapley_sampled(sample_orders(players, how["sample"], how["seed"]), v)
    return [
        dict(
            common,
            name=p,
            shapley=est[p]["value"],
            se=est[p]["se"],
            method=f"permutation sampling, {how['sample']} orders (seed {how['seed']})",
            calls_full=full_calls.get(p, 0),
        )
        for p in players
    ]


SURFACE_FIELDS = (
    "model",
    "tool",
    "arm",
    "definition_tokens",
    FAIRNESS,
    FAIRNESS_LO,
    FAIRNESS_HI,
    "pareto",
    "smallest_within_margin",
)


def pareto_front(points: list[tuple[float, float]]) -> list[bool]:
    """Whether each (tokens, fairness) point is on the Pareto front: no other point has at most its
    tokens and at least its fairness, with one of the two strictly (fewer tokens, more fairness)."""
    return [
        not any(t2 <= t and f2 >= f and (t2 < t or f2 > f) for j, (t2, f2) in enumerate(points) if j != i)
        for i, (t, f) in enumerate(points)
    ]


def surface_rows(arms: dict, tool_rows: list, costs: dict, margin: float) -> list[dict]:
    """Tokens against fairness per model and ablated server: the full server and each arm with its
    definition tokens (tools + instructions) and fairness, on the Pareto front or not, and the
    smallest surface (fewest tokens) whose fairness is within `margin` of the full server's
    (point estimates: fairness >= full - margin)."""
    out: list[dict] = []
    by = {(r["model"], r["tool"]): r for r in tool_rows}
    for model in dict.fromkeys(r["model"] for r in tool_rows):
        for base in dict.fromkeys(a["of"] for a in arms.values()):
            names = [base, *(t for t, a in arms.items() if a["of"] == base)]
            rows: list[dict[str, Any]] = []
            for t in names:
                r = by.get((model, t))
                tokens = (costs.get(t) or {}).get("tokens")
                if r is None or r.get(FAIRNESS) is None or tokens is None:
                    continue
                rows.append(
                    dict[str, Any](dict.fromkeys(SURFACE_FIELDS))
                    | {
                        "model": model,
                        "tool": base,
                        "arm": t,
                        "definition_tokens": tokens,
                        FAIRNESS: r[FAIRNESS],
                        FAIRNESS_LO: r.get(FAIRNESS_LO),
                        FAIRNESS_HI: r.get(FAIRNESS_HI),
                        "smallest_within_margin": False,
                    }
                )
            for r, on in zip(rows, pareto_front([(r["definition_tokens"], r[FAIRNESS]) for r in rows])):
                r["pareto"] = on
            full = next((r for r in rows if r["arm"] == base), None)
            near = [r for r in rows if full is not None and r[FAIRNESS] >= full[FAIRNESS] - margin]
            if near:
                min(near, key=lambda r: (r["definition_tokens"], -r[FAIRNESS]))["smallest_within_margin"] = True
            out += rows
    return out
