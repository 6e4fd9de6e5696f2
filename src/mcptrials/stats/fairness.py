"""A trial's fairness score: the weighted sum of its keyword, quality, citation and efficiency
components (the weights: the config's `weights:`), and the efficiency component relative to
the baseline of the same scenario and model.
Source: the reference bench (luuuc/sense bench/), see shared/notes/field.md; issue 6 item 2.
"""

from __future__ import annotations


def _ratio(value, base, name) -> float:
    """min(1, base / value); 1 when value is None (not measured) or base is None, or both are 0."""
    if value is None or base is None:
        return 1.0
    if value < 0 or base < 0:
        raise ValueError(f"{name}: cost and wall time must be >= 0 (got {value} and baseline {base})")
    if value == 0:
        return 1.0  # free and at least as cheap as any baseline
    return min(1.0, base / value)


def relative_efficiency(cost, wall, base_cost, base_wall) -> float:
    """Efficiency of a trial relative to the baseline of the same scenario and model, in [0, 1].

    efficiency = 0.5 * min(1, base_cost / cost) + 0.5 * min(1, base_wall / wall)
    (as cheap or as fast as the baseline, or better, scores the full half). A ratio is 1 when
    the trial's value or the baseline's is None (not measured, e.g. a provider without prices)
    or when the trial's value is 0; it is 0 when the baseline's is 0 and the trial's is not.
    Replaces the reference bench's hand-set per-repo ceilings,
    0.5 max(0, 1 - tokens/ceiling) + 0.5 max(0, 1 - wall/ceiling) (luuuc/sense bench/, see
    shared/notes/field.md, shortcoming 7).
    """
    return 0.5 * _ratio(cost, base_cost, "cost") + 0.5 * _ratio(wall, base_wall, "wall")


FAIRNESS_KEYS = ("keyword", "quality", "citation", "efficiency")


def fairness(keyword, quality, citation, efficiency, weights: dict) -> float:
    """Fairness score of a trial: the weighted sum of its four components (each in [0, 1]).

    fairness = w_keyword * keyword + w_quality * quality + w_citation * citation
               + w_efficiency * efficiency,
    weights = the config's `weights:` (keys keyword, quality, citation, efficiency; the config
    schema holds their defaults, so every key is given). A None component counts as 0:
    a grader that produced nothing earns nothing (a failed trial scores 0 on every component).
    Source: the reference bench (luuuc/sense bench/), see shared/notes/field.md; issue 6 item 2.
    """
    if set(weights) != set(FAIRNESS_KEYS):
        raise ValueError(f"weights: keys {sorted(weights)}; give exactly {sorted(FAIRNESS_KEYS)} "
                         "(the config's weights, with the schema's defaults filled in)")
    parts = {"keyword": keyword, "quality": quality, "citation": citation, "efficiency": efficiency}
    return sum(weights[k] * (v or 0.0) for k, v in parts.items())


def fairness_without(weights: dict, missing) -> dict | None:
    """The fairness weights of a trial some of whose parts are missing, not zero (its citations
    not checked: no checkout; its quality not judged: no recorded judgement).

    w'_k = 0 for a missing part k, and w'_k = w_k / sum_{j not missing} w_j for the others,
    so the parts present keep their ratios and the weights again sum to 1 (the usual
    renormalisation of a weighted mean over the parts observed). None when no weight is left
    (every weighted part is missing): then the config's weights stand, the missing parts
    counting as 0 as fairness counts a None part. Source: this project, issue 23 items 2 and 4
    (citations not checked, quality not judged: fairness over the other parts), on the
    reference bench's weighted sum (luuuc/sense bench/).
    """
    left = sum(w for k, w in weights.items() if k not in missing)
    if left <= 0:
        return None
    return {k: (0.0 if k in missing else w / left) for k, w in weights.items()}
