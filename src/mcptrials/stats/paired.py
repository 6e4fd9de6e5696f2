"""Comparing two tools on the scenarios they share: the paired difference with its interval
and tests, Holm's adjustment over several comparisons, and the non-inferiority margin test.
Sources: Miller 2024 (arXiv 2411.00640); Holm 1979; Schuirmann 1987; ICH E9 (1998).
"""

from __future__ import annotations

import math
from typing import Any

from mcptrials.stats.intervals import check_bounds, check_level, logit_interval, t_quantile
from mcptrials.core.keys import ONLY_A, ONLY_B, T_P, WILCOXON_P


def paired_difference(a: dict, b: dict, level: float = 0.95, bounds: tuple | None = None) -> dict:
    """Paired difference of two tools over the scenarios they share (a minus b).

    d_i = a[i] - b[i] for each shared scenario i (a, b: scenario -> mean score over its trials);
    mean_diff = mean(d); SE_d = sd(d) / sqrt(n) (sd with n - 1);
    interval mean_diff +/- t_{(1+level)/2, n-1} * SE_d;
    t_p = two-sided paired t test (scipy.stats.ttest_rel);
    wilcoxon_p = two-sided Wilcoxon signed-rank test (scipy.stats.wilcoxon, zero differences
    dropped, exact distribution when small and untied).
    Source: Miller 2024 (arXiv 2411.00640), the section on comparing two models by paired differences.
    bounds=(L, U): the differences live in [L, U] (of 0-1 scores: (-1, 1)), and lo, hi are the
    logit-transformed t interval on [L, U] with the same SE_d and df (see bounded_mean_ci), so
    they never leave it; t_p and wilcoxon_p are unchanged. `method` names the interval.
    Scenarios present in only one side are left out and listed in `dropped`.
    Edge cases: n = 0 raises ValueError; n = 1 -> se, lo, hi, t_p, wilcoxon_p None;
    sd(d) = 0 -> se = 0, lo = hi = mean_diff and t_p None (t is 0/0 or infinite);
    wilcoxon_p None when every difference is zero (nothing to rank) or n < 2. With 5 or fewer
    non-zero differences the exact Wilcoxon p cannot go below 0.0625.
    """
    import numpy as np

    check_level(level)
    shared = sorted(set(a) & set(b))
    dropped = {ONLY_A: sorted(set(a) - set(b)), ONLY_B: sorted(set(b) - set(a))}
    n = len(shared)
    if n == 0:
        raise ValueError("paired_difference: the two tools share no scenario; pair them on the same scenarios")
    xa = np.array([a[k] for k in shared], dtype=float)
    xb = np.array([b[k] for k in shared], dtype=float)
    d = xa - xb
    if bounds is not None:
        check_bounds(d.tolist(), bounds[0], bounds[1], "the differences")
    out: dict[str, Any] = {
        "mean_diff": float(d.mean()),
        "se": None,
        "lo": None,
        "hi": None,
        T_P: None,
        WILCOXON_P: None,
        "n": n,
        "scenarios": shared,
        "dropped": dropped,
        "method": "n=1: no interval",
    }
    if n < 2:
        return out
    from scipy import stats

    se = float(d.std(ddof=1)) / math.sqrt(n)
    if bounds is None:
        half = t_quantile(level, n - 1) * se
        lo, hi = out["mean_diff"] - half, out["mean_diff"] + half
        out["method"] = f"paired t interval, df={n - 1}"
    else:
        lo, hi = logit_interval(out["mean_diff"], se, n - 1, level, bounds[0], bounds[1])
        out["method"] = f"paired, logit-transformed t interval on [{bounds[0]:g}, {bounds[1]:g}], df={n - 1}"
    out.update(se=se, lo=lo, hi=hi)
    if se > 0:
        out[T_P] = float(stats.ttest_rel(xa, xb).pvalue)
    if np.any(d != 0):
        out[WILCOXON_P] = float(stats.wilcoxon(d).pvalue)
    return out


def holm_adjust(pvalues: dict) -> dict:
    """Holm step-down adjusted p-values (family-wise error), e.g. several tools vs one baseline.

    Sort p ascending: p_(1) <= ... <= p_(m). Adjusted
        p~_(i) = max_{j <= i} min(1, (m - j + 1) p_(j)),
    so the adjusted values are monotone in the raw ones and capped at 1.
    Source: Holm 1979, Scand. J. Statist. 6:65-70. None values are kept as None and not
    counted in m (a comparison without a p-value is not a test).
    """
    for name, p in pvalues.items():
        if p is not None and not 0 <= p <= 1:
            raise ValueError(f"p-value of {name!r} is {p}: p-values must be between 0 and 1")
    tested = sorted((p, name) for name, p in pvalues.items() if p is not None)
    m = len(tested)
    out: dict[str, float | None] = {name: None for name, p in pvalues.items() if p is None}
    running = 0.0
    for j, (p, name) in enumerate(tested):  # j is 0-based, so the multiplier is m - j
        running = max(running, min(1.0, (m - j) * p))
        out[name] = running
    return {name: out[name] for name in pvalues}


REGRESSION, NON_INFERIOR, INCONCLUSIVE = "regression", "non-inferior", "inconclusive"


def margin_test(diff: dict, margin: float) -> dict:
    """Non-inferiority of HEAD against BASE with a margin, read off a two-sided (1 - 2 alpha)
    interval [lo, hi] of the paired difference HEAD - BASE (paired_difference with level 1 - 2 alpha;
    0.90 for alpha = 0.05):
        non-inferior  when lo > -margin   (rejects H0: delta <= -margin, one-sided, level alpha),
        regression    when hi < -margin   (rejects H0: delta >= -margin, one-sided, level alpha:
                                           worse by more than the margin, beyond the noise),
        inconclusive  otherwise, or when there is no interval (fewer than 2 paired scenarios).
    A two-sided 1 - 2 alpha interval excluding a bound is the one-sided level-alpha test of that bound.
    Source: Schuirmann 1987, "A comparison of the two one-sided tests procedure and the power
    approach for assessing the equivalence of average bioavailability", J. Pharmacokinet. Biopharm.
    15(6):657-680 (the 1 - 2 alpha interval = two one-sided tests); ICH E9 (1998), "Statistical
    Principles for Clinical Trials", section 3.3.2 (non-inferiority by a confidence bound against a margin).
    Returns {verdict, margin, lo, hi}. margin must be >= 0.
    """
    if margin is None or margin < 0:
        raise ValueError(
            f"margin={margin}: the non-inferiority margin must be >= 0 (0.05 = five points of a 0-1 score)"
        )
    lo, hi = diff.get("lo"), diff.get("hi")
    if lo is None or hi is None:
        v = INCONCLUSIVE
    elif hi < -margin:
        v = REGRESSION
    elif lo > -margin:
        v = NON_INFERIOR
    else:
        v = INCONCLUSIVE
    return {"verdict": v, "margin": margin, "lo": lo, "hi": hi}


BETTER, WORSE, NO_PRACTICAL_DIFFERENCE, WITHIN_NOISE = "better", "worse", "no practical difference", "within noise"


def practical_verdict(lo, hi, margin: float) -> str:
    """The verdict on a difference A - B from its interval [lo, hi] and the smallest difference
    that matters, `margin` (>= 0; the config's `margin:`):
        better                   when lo > +margin       (the whole interval above the margin),
        worse                    when hi < -margin       (the whole interval below -margin),
        no practical difference  when -margin <= lo and hi <= +margin (the whole interval inside),
        within noise             otherwise (the interval straddles a bound), or when there is no
                                 interval (fewer than 2 paired scenarios).
    With margin 0 better / worse are "the interval excludes 0". The rule of a region of practical
    equivalence: Kruschke 2018, "Rejecting or accepting parameter values in Bayesian estimation",
    Advances in Methods and Practices in Psychological Science 1(2):270-280 (an interval entirely
    outside the region: a difference; entirely inside: equivalence; else undecided); read off a
    confidence interval it is the equivalence test by an interval inside the margins (Schuirmann
    1987, J. Pharmacokinet. Biopharm. 15(6):657-680; with a 95% interval, each one-sided test at
    0.025) and the superiority test against a margin (ICH E9 (1998), section 3.3.2).
    Source: this project, issue 33 item 2.
    """
    if margin is None or margin < 0:
        raise ValueError(f"margin={margin}: the smallest difference that matters must be >= 0 (0.05 = five points)")
    if lo is None or hi is None:
        return WITHIN_NOISE
    if lo > margin:
        return BETTER
    if hi < -margin:
        return WORSE
    if -margin <= lo and hi <= margin:
        return NO_PRACTICAL_DIFFERENCE
    return WITHIN_NOISE
