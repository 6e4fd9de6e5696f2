"""pass@k and pass^k: the chance that at least one (pass@k) or all (pass^k) of k trials of
a task pass, unbiased from n trials, and their means over tasks.
Sources: Chen et al. 2021 (arXiv 2107.03374); Yao et al. 2024, tau-bench (arXiv 2406.12045).
"""

from __future__ import annotations

import math


def _check_nck(n, c, k) -> None:
    for name, v in (("n", n), ("c", c), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name}={v!r}: n, c and k must be integers (trials, passes, k)")
    if n < 1:
        raise ValueError(f"n={n}: a task needs at least one trial")
    if not 0 <= c <= n:
        raise ValueError(f"c={c}: the number of passed trials must be between 0 and n={n}")
    if k < 1:
        raise ValueError(f"k={k}: k must be at least 1")
    if k > n:
        raise ValueError(f"k={k} > n={n}: pass@k and pass^k need at least k trials; lower k or run more trials")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task: the chance that at least one of k trials passes.

    pass@k = 1 - C(n - c, k) / C(n, k), from n trials of which c passed (k <= n).
    Source: Chen et al. 2021 (arXiv 2107.03374), section 2.1, equation 1.
    Raises ValueError for k > n, k < 1, n < 1, c outside 0..n or non-integers.
    """
    _check_nck(n, c, k)
    # Python ints are exact and int / int rounds once, so no product trick is needed.
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k of one task: the chance that all of k trials pass (estimates p^k).

    pass^k = C(c, k) / C(n, k), from n trials of which c passed (k <= n).
    Source: Yao et al. 2024, tau-bench (arXiv 2406.12045), the definition of the pass^k metric.
    Raises ValueError like pass_at_k.
    """
    _check_nck(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _mean_over_tasks(fn, tasks: dict, k: int) -> dict:
    values, skipped = [], []
    for task in sorted(tasks):
        n, c = tasks[task]
        if isinstance(n, int) and not isinstance(n, bool) and n < k:
            skipped.append(task)  # too few trials for this k: reported, not averaged
            continue
        values.append(fn(n, c, k))
    mean = sum(values) / len(values) if values else None
    return {"mean": mean, "k": k, "n_tasks": len(values), "skipped": skipped}


def mean_pass_at_k(tasks: dict, k: int) -> dict:
    """pass@k averaged over tasks: mean over tasks t of pass_at_k(n_t, c_t, k).

    `tasks` maps task -> (n, c). Tasks with fewer than k trials are skipped and listed
    in `skipped` (never silently dropped); `mean` is None when no task has k trials.
    Returns {mean, k, n_tasks (tasks averaged), skipped (sorted task names)}.
    Source: Chen et al. 2021 (arXiv 2107.03374), section 2.1.
    """
    return _mean_over_tasks(pass_at_k, tasks, k)


def mean_pass_hat_k(tasks: dict, k: int) -> dict:
    """pass^k averaged over tasks: mean over tasks t of pass_hat_k(n_t, c_t, k).

    Same contract as mean_pass_at_k (tasks with n < k are skipped and listed).
    Source: Yao et al. 2024, tau-bench (arXiv 2406.12045), the pass^k metric.
    """
    return _mean_over_tasks(pass_hat_k, tasks, k)
