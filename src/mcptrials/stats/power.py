"""Power of a paired comparison: the variance components of a design, the smallest difference
it detects, and the scenarios needed to detect a difference or to decide a margin.
Sources: Miller 2024 (arXiv 2411.00640), the power-analysis section; Julious 2004.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from mcptrials.core.keys import ONLY_A, ONLY_B


def variance_components(scores_a: dict, scores_b: dict) -> dict:
    """Variance components of a paired comparison, for the power formula.

    For each shared scenario i: x_A_i, x_B_i = means of its trial scores; d_i = x_A_i - x_B_i.
    sigma2_a = mean over scenarios of the within-scenario variance of A's trials (n - 1 in the
    denominator; scenarios with one trial carry no within information and are left out); same for B.
    k_a = trials per scenario of A (harmonic mean over scenarios, so sigma2_a / k_a is the mean
    of sigma2_a / K_i; equals K in a balanced design); same for B.
    var_d = sample variance of d across scenarios (n - 1). Its expectation is
    omega^2 + sigma_A^2/K_A + sigma_B^2/K_B, so the between-scenario component is estimated as
        omega2 = max(0, var_d - sigma2_a/k_a - sigma2_b/k_b)   (method of moments),
    i.e. omega^2 = Var(x_A - x_B) of the expected scores, without the sampling noise.
    Source: Miller 2024 (arXiv 2411.00640), the variance of the mean with K samples per question
    (Var(x) + E[sigma_i^2]/K) and the power-analysis section.
    Edge cases: fewer than 2 shared scenarios -> var_d and omega2 None. When no scenario of a
    tool has 2 trials its sigma2 is 0.0 and `note` says so: omega2 then holds that noise too,
    which keeps min_detectable_effect right for this design but not for a different K.
    Returns {omega2, var_d, sigma2_a, sigma2_b, k_a, k_b, n, dropped, note}.
    """
    import numpy as np

    shared = sorted(set(scores_a) & set(scores_b))
    dropped = {ONLY_A: sorted(set(scores_a) - set(scores_b)), ONLY_B: sorted(set(scores_b) - set(scores_a))}
    for side, scores in (("scores_a", scores_a), ("scores_b", scores_b)):
        for k in shared:
            if len(scores[k]) == 0:
                raise ValueError(f"{side}[{k!r}] has no trial scores: drop the scenario or give its scores")
    notes = []

    def side_stats(scores, label):
        within = [float(np.var(scores[k], ddof=1)) for k in shared if len(scores[k]) >= 2]
        if not within:
            notes.append(f"{label}: one trial per scenario, within-scenario variance not estimable")
        sigma2 = float(np.mean(within)) if within else 0.0
        k_eff = len(shared) / sum(1.0 / len(scores[k]) for k in shared) if shared else None
        return sigma2, k_eff

    sigma2_a, k_a = side_stats(scores_a, "a")
    sigma2_b, k_b = side_stats(scores_b, "b")
    n = len(shared)
    var_d = omega2 = None
    if n >= 2:
        d = np.array([np.mean(scores_a[k]) - np.mean(scores_b[k]) for k in shared])
        var_d = float(np.var(d, ddof=1))
        omega2 = max(0.0, var_d - sigma2_a / k_a - sigma2_b / k_b)
    return {
        "omega2": omega2,
        "var_d": var_d,
        "sigma2_a": sigma2_a,
        "sigma2_b": sigma2_b,
        "k_a": k_a,
        "k_b": k_b,
        "n": n,
        "dropped": dropped,
        "note": "; ".join(notes) or None,
    }


def _z_sum(alpha: float, power: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"alpha={alpha}: the significance level must be between 0 and 1, e.g. 0.05")
    if not 0 < power < 1:
        raise ValueError(f"power={power}: power must be between 0 and 1, e.g. 0.8")
    z = NormalDist().inv_cdf
    return z(1 - alpha / 2) + z(power)


def _paired_variance(omega2, sigma2_a, sigma2_b, k_a, k_b) -> float:
    for name, v in (("omega2", omega2), ("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b)):
        if v is None or v < 0:
            raise ValueError(f"{name}={v}: variance components must be numbers >= 0 (see variance_components)")
    for name, v in (("k_a", k_a), ("k_b", k_b)):
        if v is None or v <= 0:
            raise ValueError(f"{name}={v}: trials per scenario must be > 0")
    return omega2 + sigma2_a / k_a + sigma2_b / k_b


def min_detectable_effect(omega2, sigma2_a, sigma2_b, k_a, k_b, n, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest paired difference this design detects with the given power (two-sided test).

    delta = (z_{1-alpha/2} + z_{power}) * sqrt( (omega^2 + sigma_A^2/K_A + sigma_B^2/K_B) / n ),
    n scenarios, K trials per scenario; (1.96 + 0.84) = 2.80 for alpha 0.05 and 80% power.
    Normal quantiles (statistics.NormalDist), as in the source.
    Source: Miller 2024 (arXiv 2411.00640), the power-analysis section.
    """
    if n is None or n < 1:
        raise ValueError(f"n={n}: the number of scenarios must be at least 1")
    return _z_sum(alpha, power) * math.sqrt(_paired_variance(omega2, sigma2_a, sigma2_b, k_a, k_b) / n)


def scenarios_needed(delta, omega2, sigma2_a, sigma2_b, k_a, k_b, alpha: float = 0.05, power: float = 0.8) -> int:
    """Scenarios needed to detect a paired difference delta with the given power (two-sided).

    n = ceil( (z_{1-alpha/2} + z_{power})^2 * (omega^2 + sigma_A^2/K_A + sigma_B^2/K_B) / delta^2 ),
    and at least 2 (a paired standard error needs two scenarios). (1.96 + 0.84)^2 = 7.85.
    Source: Miller 2024 (arXiv 2411.00640), the power-analysis section.
    """
    if delta is None or delta <= 0:
        raise ValueError(f"delta={delta}: the effect to detect must be > 0")
    raw = _z_sum(alpha, power) ** 2 * _paired_variance(omega2, sigma2_a, sigma2_b, k_a, k_b) / delta**2
    return max(2, math.ceil(raw - 1e-9))  # the tolerance keeps 40.0000000001 from becoming 41


def scenarios_to_decide_margin(
    delta, variance, alpha: float = 0.05, power: float = 0.8, max_n: int = 10000
) -> int | None:
    """Scenarios a one-sided paired t test at level alpha needs to tell the mean difference from
    a bound (here -margin) that lies delta away, with the given power:

        the smallest n >= 2 with (t_{1-alpha, n-1} + t_{power, n-1}) * sqrt(variance / n) <= delta,

    variance = omega^2 + sigma_A^2/K_A + sigma_B^2/K_B (variance_components), the per-scenario
    variance of the difference. It is scenarios_needed with t quantiles at df = n - 1 in place of
    normal ones (found by counting up), because the gate's interval is a t interval and with few
    scenarios the normal formula promises too few. None when even max_n does not reach it.
    Source: Julious 2004, "Sample sizes for clinical trials with Normal data", Stat. Med.
    23:1921-1986, section 3 (the iterative t-based sample size of a one-sample / paired test);
    Miller 2024 (arXiv 2411.00640), the power-analysis section (the variance of the paired mean).
    """
    from scipy import stats

    if delta is None or delta <= 0:
        raise ValueError(f"delta={delta}: the distance to decide must be > 0")
    if variance is None or variance < 0:
        raise ValueError(f"variance={variance}: must be a number >= 0")
    for n in range(2, max_n + 1):
        q = stats.t.ppf(1 - alpha, n - 1) + stats.t.ppf(power, n - 1)
        if q * math.sqrt(variance / n) <= delta:
            return n
    return None
