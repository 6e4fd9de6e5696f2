"""The prediction-powered estimate of a rate: an automatic grader's rate over every item,
corrected by what a reader found on a labelled sample (Angelopoulos, Bates, Fannjiang, Jordan
& Zrnic 2023, "Prediction-powered inference", Science 382:669-674, the mean estimator of
section "Mean estimation" with its normal-approximation interval)."""

from __future__ import annotations

import math
from statistics import NormalDist, fmean, variance

from mcptrials.stats.intervals import check_level


def ppi_mean(grader_all, grader_labelled, reader_labelled, level: float = 0.95) -> dict:
    """theta_PP = (1/N) sum_{i=1..N} f_i + (1/n) sum_{j=1..n} (y_j - f_j), where f is the
    grader's 0/1 on each of the N items and (f_j, y_j) the grader's and the reader's 0/1 on the
    n labelled ones (the second mean, the rectifier, removes the grader's bias).
    Interval: theta_PP -/+ z_{(1+level)/2} * sqrt(s_f^2 / N + s_r^2 / n), with s_f^2 the sample
    variance (n - 1 in the denominator) of f over the N items and s_r^2 that of (y_j - f_j)
    over the n labelled ones; clipped to [0, 1], the range of a rate (the estimate too).
    Here the labelled items are a random sample of the N, as the paper's unlabelled set is of
    the population: the small overlap is ignored, as the paper does for n << N.
    Returns {"estimate", "lo", "hi", "se", "rectifier", "grader_rate", "N", "n", "level"};
    estimate needs n >= 1 (else None), the interval n >= 2 and N >= 2 (else lo = hi = None)."""
    check_level(level)
    f_all, f_lab, y_lab = [float(v) for v in grader_all], [float(v) for v in grader_labelled], list(reader_labelled)
    if len(f_lab) != len(y_lab):
        raise ValueError(f"{len(f_lab)} grader verdicts but {len(y_lab)} reader verdicts: one of each per label")
    big_n, n = len(f_all), len(f_lab)
    rate = fmean(f_all) if f_all else None
    out: dict = {"estimate": None, "lo": None, "hi": None, "se": None, "rectifier": None, "level": level}
    out.update(grader_rate=rate, N=big_n, n=n)
    if rate is None or not n:
        return out
    rect = [float(y) - f for y, f in zip(y_lab, f_lab)]
    theta = rate + fmean(rect)
    out.update(estimate=min(1.0, max(0.0, theta)), rectifier=fmean(rect))
    if n >= 2 and big_n >= 2:
        se = math.sqrt(variance(f_all) / big_n + variance(rect) / n)
        z = NormalDist().inv_cdf(0.5 + level / 2)
        out.update(se=se, lo=max(0.0, theta - z * se), hi=min(1.0, theta + z * se))
    return out
