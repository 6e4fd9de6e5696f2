"""Each tool's share of a server's value: the Shapley value over the server's tools.

The game: the players are the server's tools, v(S) the mean fairness of the arm that offers
exactly the tools S (mcptrials.matrix.ablation; v(N) the full server, v(empty) the arm
without all of them). Efficiency: the values sum to v(N) - v(empty).

Sources:
  Shapley 1953, "A value for n-person games", Contributions to the Theory of Games II
    (Annals of Mathematics Studies 28), 307-317: the exact value.
  Castro, Gomez & Tejada 2009, "Polynomial calculation of the Shapley value based on
    sampling", Computers & Operations Research 36(5):1726-1730: the permutation-sampling
    estimate and its standard error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def shapley_exact(players: Sequence[str], v: Callable[[frozenset[str]], float]) -> dict[str, float]:
    """phi_i = sum over S subset of N minus {i} of |S|! (n - |S| - 1)! / n! * (v(S + {i}) - v(S)),
    with n = |N| (Shapley 1953). `v` must know every subset of `players` (2^n values)."""
    n = len(players)
    out = {}
    for p in players:
        others = [q for q in players if q != p]
        total = 0.0
        for mask in range(1 << len(others)):
            s = frozenset(q for j, q in enumerate(others) if mask >> j & 1)
            weight = math.factorial(len(s)) * math.factorial(n - len(s) - 1) / math.factorial(n)
            total += weight * (v(s | {p}) - v(s))
        out[p] = total
    return out


def shapley_sampled(
    orders: Sequence[Sequence[str]], v: Callable[[frozenset[str]], float]
) -> dict[str, dict[str, float | None]]:
    """The permutation-sampling estimate (Castro, Gomez & Tejada 2009): over m orders pi_k of the
    players, x_ik = v(Pre_i(pi_k) + {i}) - v(Pre_i(pi_k)) with Pre_i(pi) the players before i;
    phi_i = mean_k x_ik, SE_i = sd(x_i) / sqrt(m) (sd with m - 1; None for m = 1). Each order's
    marginals sum to v(N) - v(empty), so the estimates do too (efficiency holds exactly)."""
    if not orders:
        raise ValueError("shapley_sampled: no order of the players; sample at least one")
    marginals: dict[str, list[float]] = {p: [] for p in orders[0]}
    for order in orders:
        before: frozenset[str] = frozenset()
        for p in order:
            marginals[p].append(v(before | {p}) - v(before))
            before = before | {p}
    out: dict[str, dict[str, float | None]] = {}
    for p, xs in marginals.items():
        m = len(xs)
        mean = sum(xs) / m
        sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (m - 1)) if m > 1 else None
        out[p] = {"value": mean, "se": None if sd is None else sd / math.sqrt(m), "orders": m}
    return out
