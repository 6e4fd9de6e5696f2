"""mcptrials.stats.shapley against a three-tool game worked out by hand."""

import itertools

import pytest

from mcptrials.stats.shapley import shapley_exact, shapley_sampled

approx = pytest.approx

# v(S): the mean fairness of the arm offering exactly S
GAME = {
    "": 0.0,
    "a": 0.2,
    "b": 0.1,
    "c": 0.0,
    "ab": 0.5,
    "ac": 0.2,
    "bc": 0.3,
    "abc": 0.6,
}


def v(s: frozenset) -> float:
    return GAME["".join(sorted(s))]


def test_exact_shapley_of_a_three_tool_game():
    # weights for n = 3: |S| = 0 -> 0!2!/3! = 1/3, |S| = 1 -> 1!1!/3! = 1/6, |S| = 2 -> 2!0!/3! = 1/3
    # a: 0.2/3 + (0.5-0.1)/6 + (0.2-0)/6 + (0.6-0.3)/3 = 2/30 + 2/30 + 1/30 + 3/30 = 8/30
    # b: 0.1/3 + (0.5-0.2)/6 + (0.3-0)/6 + (0.6-0.2)/3 = 1/30 + 1.5/30 + 1.5/30 + 4/30 = 8/30
    # c: 0/3 + (0.2-0.2)/6 + (0.3-0.1)/6 + (0.6-0.5)/3 = 0 + 0 + 1/30 + 1/30 = 2/30
    phi = shapley_exact(["a", "b", "c"], v)
    assert phi == {"a": approx(8 / 30), "b": approx(8 / 30), "c": approx(2 / 30)}
    assert sum(phi.values()) == approx(GAME["abc"] - GAME[""])  # efficiency


def test_sampled_over_every_order_is_exact_with_its_standard_error():
    orders = list(itertools.permutations("abc"))
    est = shapley_sampled(orders, v)
    # a's marginals over abc acb bac bca cab cba: 0.2 0.2 0.4 0.3 0.2 0.3, mean 1.6/6 = 8/30;
    # squared deviations sum 3 x (1/15)^2 + (2/15)^2 + 2 x (1/30)^2 = 1/30, /5 = 1/150,
    # sd = sqrt(1/150), SE = sd / sqrt(6) = sqrt(1/900) = 1/30
    assert est["a"]["value"] == approx(8 / 30) and est["a"]["se"] == approx(1 / 30) and est["a"]["orders"] == 6
    assert {p: e["value"] for p, e in est.items()} == approx(shapley_exact(["a", "b", "c"], v))
    # one order: its marginals sum to v(N) - v(empty) exactly, and there is no SE
    one = shapley_sampled([("c", "a", "b")], v)
    assert (one["c"]["value"], one["a"]["value"], one["b"]["value"]) == approx((0.0, 0.2, 0.4))
    assert sum(e["value"] for e in one.values()) == approx(0.6) and one["a"]["se"] is None
    with pytest.raises(ValueError, match="no order"):
        shapley_sampled([], v)
