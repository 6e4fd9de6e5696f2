"""The mean of a set of scores with its standard error and a t interval (naive or clustered by
scenario), and the logit-transformed interval of a bounded score that stays in its bounds.
Sources: Miller 2024 (arXiv 2411.00640); Inspect AI, scorer/_metrics/std.py; StataCorp,
Stata Reference Manual, [R] proportion; Cameron, Gelbach & Miller 2008.
"""

from __future__ import annotations

import math


def t_quantile(level: float, df: float) -> float:
    """Student t quantile t_{(1+level)/2, df}: the multiplier of a two-sided interval at `level`."""
    from scipy import stats

    return float(stats.t.ppf(0.5 + level / 2, df))


def check_level(level: float) -> None:
    """Refuse an interval level outside (0, 1)."""
    if not 0 < level < 1:
        raise ValueError(f"level={level}: the interval level must be between 0 and 1, e.g. 0.95")


def mean_ci(scores, clusters=None, level: float = 0.95) -> dict:
    """Mean of scores with its standard error and a t interval.

    Naive (independent scores): SE = sqrt( sum_i (s_i - m)^2 / (n (n - 1)) ), df = n - 1.
    Clustered (clusters = one label per score, e.g. the scenario of each trial, C clusters):
        SE = sqrt(C / (C - 1)) * (1/n) * sqrt( sum_c ( sum_{i in c} (s_ic - m) )^2 ),  df = C - 1.
    Interval: m +/- t_{(1+level)/2, df} * SE (Student t, not 1.96, because n is small);
    `method` says which SE and which df were used.
    Sources: Miller 2024 (arXiv 2411.00640), the Central-Limit-Theorem standard error and the
    "clustered standard errors" section with its appendix A; the C/(C-1) small-cluster correction
    is Inspect AI's (scorer/_metrics/std.py, "a finite cluster correction (unlike the paper)").
    Edge cases: n = 1 (or C = 1 when clustered) -> se, lo, hi are None (a spread needs two
    units); SE = 0 gives lo = hi = mean. Empty scores raise ValueError.
    Note: for 0/1 scores this is sqrt(m (1 - m) / (n - 1)), the unbiased form, not / n.
    """
    import numpy as np

    check_level(level)
    s = np.asarray(list(scores), dtype=float)
    n = int(s.size)
    if n == 0:
        raise ValueError("scores is empty: mean_ci needs at least one score")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores contains NaN or inf: fix or drop those trials before aggregating")
    m = float(s.mean())
    out = {"mean": m, "se": None, "lo": None, "hi": None, "n": n, "n_clusters": None, "method": ""}

    if clusters is None:
        if n < 2:
            out["method"] = "n=1: no standard error"
            return out
        se = math.sqrt(float(((s - m) ** 2).sum()) / (n * (n - 1)))
        df = n - 1
        out["method"] = f"naive SE, t interval df={df}"
    else:
        labels = list(clusters)
        if len(labels) != n:
            raise ValueError(f"clusters has {len(labels)} labels for {n} scores: give one cluster label per score")
        sums: dict = {}
        for label, v in zip(labels, s):
            sums[label] = sums.get(label, 0.0) + (v - m)  # within-cluster sum of residuals
        C = len(sums)
        out["n_clusters"] = C
        if C < 2:
            out["method"] = "1 cluster: no clustered standard error"
            return out
        se = math.sqrt(C / (C - 1)) * math.sqrt(sum(r * r for r in sums.values())) / n
        df = C - 1
        out["method"] = f"clustered SE over {C} clusters with C/(C-1) correction, t interval df={df}"

    half = t_quantile(level, df) * se
    out.update(se=se, lo=m - half, hi=m + half)
    return out


def _expit(x: float) -> float:
    """1 / (1 + e^-x), written so that neither branch overflows."""
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def check_bounds(values, lower: float, upper: float, name: str) -> None:
    """Refuse bounds that are not ordered and values outside [lower, upper]."""
    if not lower < upper:
        raise ValueError(f"bounds [{lower}, {upper}]: the lower bound must be below the upper one")
    bad = [v for v in values if not lower <= v <= upper]
    if bad:
        raise ValueError(
            f"{name} has {len(bad)} value(s) outside [{lower:g}, {upper:g}] (e.g. {bad[0]}): "
            "a bounded interval needs every value inside its bounds"
        )


def logit_interval(m: float, se: float, df: float, level: float, lower: float, upper: float):
    """The t interval m +/- t * se computed on the logit scale of [lower, upper] and mapped back."""
    u = (m - lower) / (upper - lower)
    # A mean at a bound means every value is at it, hence se = 0: the interval is the point.
    # (`not 0 < u < 1` with se > 0 can only be float rounding of such a case.)
    if se == 0 or not 0 < u < 1:
        return m, m
    g = math.log(u / (1 - u))
    half = t_quantile(level, df) * se / ((upper - lower) * u * (1 - u))
    return lower + (upper - lower) * _expit(g - half), lower + (upper - lower) * _expit(g + half)


def bounded_mean_ci(scores, clusters=None, level: float = 0.95, lower: float = 0.0, upper: float = 1.0) -> dict:
    """Mean of a bounded score (fairness, quality: 0-1) with an interval that stays in its bounds.

    The logit-transformed t interval: with m, SE and df from mean_ci (clustered by scenario when
    `clusters` is given: the C/(C-1)-corrected clustered SE, df = C - 1; naive otherwise, df = n - 1),
        u = (m - L) / (U - L),   g = logit(u) = ln(u / (1 - u)),
        SE_g = SE / ((U - L) u (1 - u))          (delta method: dg/dm = 1 / ((U - L) u (1 - u))),
        lo, hi = L + (U - L) expit(g -/+ t_{(1+level)/2, df} SE_g),   expit(x) = 1 / (1 + e^-x),
    so L < lo <= m <= hi < U always, and the interval is asymmetric near a bound.
    Source: the logit-transform interval for a proportion estimated with a design-based
    (clustered) standard error and a t quantile with (clusters - 1) degrees of freedom, the
    default interval of Stata's `proportion` / `svy: proportion` (StataCorp, Stata Reference
    Manual, [R] proportion, Methods and formulas); delta method e.g. Agresti 2013, Categorical
    Data Analysis, 3rd ed., section 16.1.
    Why not a cluster (scenario) bootstrap: with 3 scenarios it has only 10 distinct resamples and
    its percentile interval never reaches past the range of the scenario means, so it is far too
    narrow with few clusters (Cameron, Gelbach & Miller 2008, Rev. Econ. Stat. 90(3):414-427);
    the transformed t interval keeps the small-sample t quantile (df = C - 1) and so stays
    honestly wide, needs no seed and can be checked by hand.
    Edge cases as mean_ci (one score or one cluster -> no interval; SE = 0 -> lo = hi = m, which
    also covers a mean at a bound: every score is then at it). Scores outside [lower, upper] raise
    ValueError. For a paired difference of 0-1 scores use lower=-1, upper=1
    (then g = 2 atanh(d), Fisher's z up to the factor).
    Returns mean_ci's dict with lo, hi replaced and `method` naming the interval.
    """
    check_level(level)
    values = [float(v) for v in scores]
    check_bounds(values, lower, upper, "scores")
    out = mean_ci(values, clusters, level)
    if out["se"] is None:
        return out
    n_clusters = out["n_clusters"]
    df = out["n"] - 1 if n_clusters is None else n_clusters - 1
    out["lo"], out["hi"] = logit_interval(out["mean"], out["se"], df, level, lower, upper)
    se_kind = "naive SE" if n_clusters is None else f"clustered SE over {n_clusters} clusters with C/(C-1) correction"
    out["method"] = f"logit-transformed t interval on [{lower:g}, {upper:g}], {se_kind}, df={df}"
    return out


def wilson_interval(k: int, n: int, level: float = 0.95) -> dict:
    """The Wilson score interval of a proportion k/n (Wilson 1927, JASA 22:209-212; Agresti &
    Coull 1998, Am. Stat. 52:119-126): with p = k/n and z the normal quantile at (1+level)/2,
        centre = (p + z^2 / (2n)) / (1 + z^2 / n),
        half   = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / (4 n^2)).
    It stays in [0, 1] and is not empty at p = 0 or 1, where the normal interval collapses.
    Returns {"p", "lo", "hi", "k", "n"}; p, lo and hi are None when n = 0."""
    from statistics import NormalDist

    check_level(level)
    if not 0 <= k <= n:
        raise ValueError(f"k={k}, n={n}: a proportion needs 0 <= k <= n")
    if n == 0:
        return {"p": None, "lo": None, "hi": None, "k": 0, "n": 0}
    z = NormalDist().inv_cdf(0.5 + level / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return {"p": p, "lo": max(0.0, centre - half), "hi": min(1.0, centre + half), "k": k, "n": n}
