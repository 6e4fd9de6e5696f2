"""Cohen's kappa (mcptrials.stats.agreement.cohen_kappa) on small cases computed by hand."""

import pytest

from mcptrials.stats.agreement import cohen_kappa


def test_kappa_by_hand():
    # 10 items; A: 6 x, 4 y; B: 5 x, 5 y; the same on 7 (x,x 4 times, y,y 3 times).
    a = ["x"] * 6 + ["y"] * 4
    b = ["x", "x", "x", "x", "y", "y", "x", "y", "y", "y"]
    r = cohen_kappa(a, b)
    # p_o = 7/10; p_e = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    assert r["p_o"] == pytest.approx(0.7)
    assert r["p_e"] == pytest.approx(0.5)
    assert r["kappa"] == pytest.approx(0.4)
    assert r["n"] == 10


def test_kappa_three_categories_and_limits():
    # A: x x y z; B: x y y z -> p_o = 3/4; p_e = (2/4)(1/4) + (1/4)(2/4) + (1/4)(1/4) = 5/16
    r = cohen_kappa(["x", "x", "y", "z"], ["x", "y", "y", "z"])
    assert r["kappa"] == pytest.approx((3 / 4 - 5 / 16) / (1 - 5 / 16))  # 7/11
    assert cohen_kappa("xy", "xy")["kappa"] == pytest.approx(1.0)
    assert cohen_kappa("xy", "yx")["kappa"] == pytest.approx(-1.0)
    assert cohen_kappa("xx", "xx")["kappa"] is None  # p_e = 1
    with pytest.raises(ValueError):
        cohen_kappa("x", "xy")
