"""Agreement: the judge's spread over repeated scores, ICC(1,1) of repeated judgements,
Spearman's rho with a bootstrap interval (e.g. our scores against the held-out anchor), and
Cohen's kappa of two readers' categorical labels.
Sources: Shrout & Fleiss 1979; Spearman 1904; Efron & Tibshirani 1993; Miller 2024; Cohen 1960.
"""

from __future__ import annotations

from typing import Any

from mcptrials.stats.intervals import check_level


def judge_spread(repeats) -> dict:
    """Spread of R repeated judge scores per item (answer, step or criterion).

    Per item j with scores r_j1..r_jR: sd_j = sample SD (R - 1 in the denominator),
    range_j = max - min. Returns {mean_sd, max_sd, mean_range, max_range, n_items,
    min_repeats, max_repeats}. Items with one score have range 0 and no SD; mean_sd and
    max_sd are None when no item has 2 scores. A difference smaller than this spread is
    inside the judge's noise.
    Source: Miller 2024 (arXiv 2411.00640) on measurement noise; the bench's judge-variance
    requirement (issue 5, item 4).
    """
    import numpy as np

    items = [list(r) for r in repeats]
    if not items or any(len(r) == 0 for r in items):
        raise ValueError("judge_spread needs at least one item and at least one score per item")
    sds = [float(np.std(r, ddof=1)) for r in items if len(r) >= 2]
    ranges = [float(max(r) - min(r)) for r in items]
    return {
        "mean_sd": float(np.mean(sds)) if sds else None,
        "max_sd": max(sds) if sds else None,
        "mean_range": float(np.mean(ranges)),
        "max_range": max(ranges),
        "n_items": len(items),
        "min_repeats": min(len(r) for r in items),
        "max_repeats": max(len(r) for r in items),
    }


def icc(ratings) -> float | None:
    """ICC(1,1), one-way random effects, single rating: agreement of repeated judgements.

    ratings: n items x k repeats (every item the same k).
    MSB = k * sum_i (mean_i - grand)^2 / (n - 1)          (between items)
    MSW = sum_i sum_j (x_ij - mean_i)^2 / (n (k - 1))      (within items)
    ICC(1,1) = (MSB - MSW) / (MSB + (k - 1) MSW)
    Source: Shrout & Fleiss 1979, Psychol. Bull. 86(2), case 1, ICC(1,1).
    Edge cases: k < 2 or n < 2 -> None (no within or no between spread to compare);
    all ratings identical (MSB = MSW = 0) -> 1.0, because the repeats agree exactly and the
    question asked here is the judge's consistency. Not clipped: may be negative when repeats
    disagree more than items differ. Unequal repeats per item raise ValueError.
    """
    import numpy as np

    rows = [list(r) for r in ratings]
    if not rows:
        raise ValueError("icc needs at least one item")
    k = len(rows[0])
    if any(len(r) != k for r in rows):
        raise ValueError("icc needs the same number of repeats for every item; drop incomplete items")
    n = len(rows)
    if k < 2 or n < 2:
        return None
    x = np.asarray(rows, dtype=float)
    means = x.mean(axis=1)
    msb = k * float(((means - x.mean()) ** 2).sum()) / (n - 1)
    msw = float(((x - means[:, None]) ** 2).sum()) / (n * (k - 1))
    denom = msb + (k - 1) * msw
    if denom == 0:
        return 1.0
    return (msb - msw) / denom


def spearman_with_ci(x, y, level: float = 0.95, n_boot: int = 2000, seed: int = 0) -> dict:
    """Spearman's rho with a percentile bootstrap interval over (x, y) pairs.

    rho, p = scipy.stats.spearmanr(x, y) (p from the t approximation with n - 2 df).
    Bootstrap: n_boot resamples of the n pairs with replacement (numpy default_rng(seed), so
    the same seed gives the same interval); rho of each = Pearson correlation of the ranks
    (average ranks for ties); lo, hi = the (1-level)/2 and (1+level)/2 percentiles.
    Resamples where rho is undefined (x or y constant) are skipped and counted in `skipped`.
    Source: Spearman 1904; percentile bootstrap, Efron & Tibshirani 1993, ch. 13;
    Miller 2024 (arXiv 2411.00640) on reporting n with a correlation over few points.
    Edge cases: n < 3 or constant x or y -> rho (and p) None when undefined, lo, hi None.
    Returns {rho, lo, hi, n, p, n_boot, skipped, method}.
    """
    import numpy as np
    from scipy import stats

    check_level(level)
    xa = np.asarray(list(x), dtype=float)
    ya = np.asarray(list(y), dtype=float)
    if xa.size != ya.size:
        raise ValueError(f"x has {xa.size} values and y has {ya.size}: give one y per x")
    n = int(xa.size)
    out: dict[str, Any] = {
        "rho": None,
        "lo": None,
        "hi": None,
        "n": n,
        "p": None,
        "n_boot": n_boot,
        "skipped": None,
        "method": f"scipy.stats.spearmanr; percentile bootstrap over pairs, {n_boot} resamples, seed {seed}",
    }
    if n < 3 or np.ptp(xa) == 0 or np.ptp(ya) == 0:
        return out
    res = stats.spearmanr(xa, ya)
    out["rho"], out["p"] = float(res.statistic), float(res.pvalue)

    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    rx = stats.rankdata(xa[idx], axis=1)
    ry = stats.rankdata(ya[idx], axis=1)
    rx -= rx.mean(axis=1, keepdims=True)
    ry -= ry.mean(axis=1, keepdims=True)
    sxx, syy = (rx * rx).sum(axis=1), (ry * ry).sum(axis=1)
    ok = (sxx > 0) & (syy > 0)
    rhos = (rx * ry).sum(axis=1)[ok] / np.sqrt(sxx[ok] * syy[ok])
    out["skipped"] = int(n_boot - ok.sum())
    if rhos.size:
        lo, hi = np.percentile(rhos, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
        # clip float fuzz (1.0000000000000002) so a perfect rank order reads as 1.0
        out["lo"], out["hi"] = float(np.clip(lo, -1, 1)), float(np.clip(hi, -1, 1))
    return out


def cohen_kappa(a, b) -> dict:
    """Cohen's kappa of two readers' categorical labels of the same items.

    p_o = share of items both readers label the same; p_e = sum over categories k of
    (share of items reader A labels k) * (share reader B labels k), from each reader's own
    marginal shares; kappa = (p_o - p_e) / (1 - p_e). kappa is None when p_e = 1 (both readers
    use one and the same category for every item: chance explains all agreement).
    Returns {kappa, p_o, p_e, n}.
    Source: Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20(1), 37-46.
    """
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise ValueError("cohen_kappa needs two equally long, non-empty label lists")
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    cats = set(a) | set(b)
    p_e = sum((a.count(k) / n) * (b.count(k) / n) for k in cats)
    kappa = None if p_e == 1 else (p_o - p_e) / (1 - p_e)
    return {"kappa": kappa, "p_o": p_o, "p_e": p_e, "n": n}
