"""A trial's fairness score: the weighted sum of its keyword, quality, citation and efficiency
components (the weights: the config's `weights:`), and the efficiency component relative to
the baseline of the same scenario and model (a symmetric log-ratio to the baseline's geometric
mean, the baseline's own trials measured alike: issue 33 item 1).
Source: the reference bench (luuuc/sense bench/), see shared/notes/field.md; issue 6 item 2.
"""

from __future__ import annotations


EFFICIENCY_SPAN = (
    3  # doublings: a part scores 1 at 2**3 = 8 times cheaper (faster) than the reference, 0 at 8 times dearer
)
EFFICIENCY_EQUAL = 0.5  # a part's score when it equals the reference, or cannot be measured (the same for every arm)


def efficiency_reference(values) -> float | None:
    """The baseline's per-scenario reference of one part (cost or working time): the geometric
    mean of its completed trials' values, exp(mean(log v)); 0 when any value is 0 (a free
    baseline); None when no value is measured (None values are left out).

    The geometric mean is the reference because efficiency_part is linear in log(value): with
    log(reference) = mean(log v), every trial's log-ratio has expectation E[log v] - E[log v] = 0
    whatever the distribution, the baseline's own trials (which enter their reference) included.
    Source: this project, issue 33 item 1.
    """
    import math

    got = [float(v) for v in values if v is not None]
    if not got:
        return None
    if any(v < 0 for v in got):
        raise ValueError(f"efficiency reference: cost and time must be >= 0 (got {min(got)})")
    if any(v == 0 for v in got):
        return 0.0
    return math.exp(sum(math.log(v) for v in got) / len(got))


def efficiency_part(value, reference, name: str = "value") -> float:
    """One part (cost or working time) of a trial's efficiency against the baseline's reference
    of the same scenario and model (efficiency_reference), in [0, 1]:

        part = 0.5 + clip(log2(reference / value), -S, S) / (2 S),   S = EFFICIENCY_SPAN = 3

    0.5 = as cheap (fast) as the reference; each halving adds 1/6, each doubling takes 1/6 away
    (2x cheaper 0.667, 2x dearer 0.333); 8x cheaper or more scores 1, 8x dearer or more 0.
    EFFICIENCY_EQUAL (0.5) when the value or the reference is None (not measured, e.g. a model
    without prices: every arm alike) or both are 0; 1 when only the value is 0, 0 when only the
    reference is.

    Why: every arm's trials, the baseline's own included, are measured by this same rule
    against the baseline's reference, never pooled over arms (adding a tool would then move the
    others' scores). The log-ratio is the symmetric measure of relative change (a halving and
    a doubling are equal and opposite; Tornqvist, Vartia & Vartia 1985, "How should relative
    changes be measured?", The American Statistician 39(1):43-46), and the score is linear in
    it, so with the geometric-mean reference two arms whose values have the same distribution
    have the same expected part exactly, unless values lie beyond 8x of the reference, where
    the clip makes a tail bias (a factor 8 leaves the working range of real arms linear). The
    former rule, min(1, reference / value) against the arithmetic mean, counted noise only
    against an arm (a faster trial earned 1, a slower one less) and less so for the baseline,
    whose trials pull its own mean: the same server came out worse (issue 33 item 1).
    Source: this project, issue 33 item 1.
    """
    import math

    if value is None or reference is None:
        return EFFICIENCY_EQUAL
    if value < 0 or reference < 0:
        raise ValueError(f"{name}: cost and working time must be >= 0 (got {value} and reference {reference})")
    if value == 0 or reference == 0:
        return EFFICIENCY_EQUAL if value == reference else (1.0 if value == 0 else 0.0)
    r = max(-EFFICIENCY_SPAN, min(EFFICIENCY_SPAN, math.log2(reference / value)))
    return EFFICIENCY_EQUAL + r / (2 * EFFICIENCY_SPAN)


def relative_efficiency(cost, wall, base_cost, base_wall) -> float:
    """Efficiency of a trial relative to the baseline of the same scenario and model, in [0, 1]:
    the mean of its two parts (efficiency_part), each against the baseline's reference
    (efficiency_reference: the geometric mean of its completed trials' values),

        efficiency = 0.5 * part(cost, base_cost) + 0.5 * part(wall, base_wall),

    so 0.5 = as cheap and as fast as the baseline, above = cheaper or faster, below = dearer or
    slower; the baseline's own trials are scored the same way and average 0.5 by construction.
    Replaces min(1, base/value) per part (issue 33 item 1) and, before it, the reference
    bench's hand-set per-repo ceilings, 0.5 max(0, 1 - tokens/ceiling) + 0.5 max(0, 1 - wall/ceiling)
    (luuuc/sense bench/, see shared/notes/field.md, shortcoming 7).
    Source: this project, issue 33 item 1.
    """
    return 0.5 * efficiency_part(cost, base_cost, "cost") + 0.5 * efficiency_part(wall, base_wall, "wall")


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
        raise ValueError(
            f"weights: keys {sorted(weights)}; give exactly {sorted(FAIRNESS_KEYS)} "
            "(the config's weights, with the schema's defaults filled in)"
        )
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
