"""The prediction-powered estimate (stats.ppi) and the Wilson interval (stats.intervals) by hand."""

import math

import pytest

from mcptrials.stats.intervals import wilson_interval
from mcptrials.stats.ppi import ppi_mean


def test_ppi_mean_hand_case():
    # N = 10 items, the grader calls 6 verified: mean 0.6, s_f^2 = 10 * 0.6 * 0.4 / 9 = 0.26667
    grader_all = [1] * 6 + [0] * 4
    # 4 labelled: grader 1,1,0,0; reader 1,0,1,1 -> rectifier 0,-1,1,1: mean 0.25,
    # s_r^2 = ((-0.25)^2 + (-1.25)^2 + 0.75^2 + 0.75^2) / 3 = (0.0625 + 1.5625 + 0.5625 + 0.5625) / 3 = 0.91667
    got = ppi_mean(grader_all, [1, 1, 0, 0], [1, 0, 1, 1])
    assert got["grader_rate"] == pytest.approx(0.6) and got["rectifier"] == pytest.approx(0.25)
    assert got["estimate"] == pytest.approx(0.85)
    # se = sqrt(0.26667 / 10 + 0.91667 / 4) = sqrt(0.026667 + 0.229167) = sqrt(0.255833) = 0.505800
    assert got["se"] == pytest.approx(0.505800, abs=1e-6)
    # 0.85 - 1.959964 * 0.5058 = -0.1413 -> clipped to 0; 0.85 + 0.9913 -> clipped to 1
    assert (got["lo"], got["hi"]) == (0.0, 1.0)
    assert (got["N"], got["n"]) == (10, 4)


def test_ppi_mean_unclipped_hand_case():
    # N = 4: grader 1,1,1,0 (mean 0.75, s_f^2 = 0.25); 3 labelled, grader 1,1,0, reader 1,0,0
    # rectifier 0,-1,0: mean -1/3, s_r^2 = ((1/3)^2 + (2/3)^2 + (1/3)^2) / 2 = (6/9) / 2 = 1/3
    got = ppi_mean([1, 1, 1, 0], [1, 1, 0], [1, 0, 0], level=0.5)
    assert got["estimate"] == pytest.approx(0.75 - 1 / 3)
    se = math.sqrt(0.25 / 4 + (1 / 3) / 3)  # = sqrt(0.0625 + 0.11111) = 0.416667
    assert got["se"] == pytest.approx(se) and se == pytest.approx(0.416667, abs=1e-6)
    z = 0.6744898  # the normal quantile at 0.75 (a 50% interval)
    assert got["lo"] == pytest.approx(0.416667 - z * se, abs=1e-6)
    assert got["hi"] == pytest.approx(0.416667 + z * se, abs=1e-6)


def test_ppi_mean_small_and_bad_inputs():
    assert ppi_mean([1, 0], [], [])["estimate"] is None
    one = ppi_mean([1, 0], [1], [0])  # one label: an estimate (0.5 - 1 = -0.5 -> 0), no interval
    assert one["estimate"] == 0.0 and one["lo"] is None and one["se"] is None
    with pytest.raises(ValueError, match="one of each per label"):
        ppi_mean([1], [1, 0], [1])


def test_wilson_hand_case():
    # k = 8 of n = 10 at 95%: z = 1.959964, z^2 = 3.841459; centre = (0.8 + 0.192073) / 1.384146 = 0.716740;
    # half = 1.959964 / 1.384146 * sqrt(0.016 + 0.009604) = 1.416010 * 0.160012 = 0.226579
    w = wilson_interval(8, 10)
    assert w["p"] == 0.8
    assert w["lo"] == pytest.approx(0.716740 - 0.226579, abs=1e-5) and w["hi"] == pytest.approx(
        0.716740 + 0.226579, abs=1e-5
    )
    # all agree, the interval is not empty: centre = 1.192073 / 1.384146 = 0.861233,
    # half = 1.416010 * sqrt(0.0096036) = 0.138766, lo = 0.722467
    w = wilson_interval(10, 10)
    assert w["hi"] == 1.0 and w["lo"] == pytest.approx(0.722467, abs=1e-5)
    assert wilson_interval(0, 0)["p"] is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
