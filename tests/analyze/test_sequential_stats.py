"""mcptrials.stats.sequential: the confidence sequences against cases worked out by hand in the
comments, the decision, and a simulation that shows the sequence holds where peeking at a
fixed-n t interval does not."""

import math

import numpy as np
import pytest

from mcptrials.stats import sequential
from mcptrials.stats.intervals import t_quantile
from mcptrials.stats.sequential import (
    BERNSTEIN,
    BETTER,
    EQUIVALENT,
    UNDECIDED,
    WORSE,
    confidence_sequence,
    sequential_decision,
)

approx = pytest.approx


def test_bernstein_constant_values_hand_case():
    # Ten values 0.5 on [0, 1], alpha 0.05. mu_t stays 1/2, so every v_i = 4 (0.5 - 0.5)^2 = 0;
    # sigma2_{t-1} = 0.25 / t, so lambda_t = sqrt(2 ln 40 / (0.25/t * t * ln(1+t))) = sqrt(29.5 / ln(1+t))
    # >= 2.8 for t <= 10: every lambda is truncated at c = 0.75. Then centre = 0.5 and
    # radius_t = ln 40 / (0.75 t) = 3.688879 / (0.75 t): at t = 10, 0.491851 -> [0.008149, 0.991851].
    cs = confidence_sequence([0.5] * 10, 0, 1, 0.05, method=BERNSTEIN)
    assert len(cs) == 10
    assert cs[9] == approx((0.5 - 0.491851, 0.5 + 0.491851), abs=1e-6)
    # t = 4: radius 3.688879 / 3 = 1.2296 > 0.5: clipped to [0, 1]
    assert cs[3] == approx((0.0, 1.0))
    # The same on [-1, 1] (values 0 rescale to 0.5): the interval doubles, +/- 0.983702.
    assert confidence_sequence([0.0] * 10, -1, 1, 0.05, method=BERNSTEIN)[9] == approx((-0.983702, 0.983702), abs=1e-6)


def test_bernstein_variance_term_hand_case():
    # Values [1, 0] on [0, 1], alpha 0.05, before clipping (the formula itself):
    # lambda_1 = min(sqrt(2 ln 40 / (0.25 * 1 * ln 2)), 0.75) = min(6.525, 0.75) = 0.75;
    # v_1 = 4 (1 - mu_0)^2 = 4 (0.5)^2 = 1; psi_E(0.75) = (-ln 0.25 - 0.75) / 4 = 0.159074.
    # t = 1: centre 1, radius (3.688879 + 1 * 0.159074) / 0.75 = 5.130604.
    # mu_1 = (0.5 + 1) / 2 = 0.75, sigma2_1 = (0.25 + 0.25^2) / 2 = 0.15625,
    # lambda_2 = min(sqrt(7.377759 / (0.15625 * 2 * ln 3)), 0.75) = min(4.6357, 0.75) = 0.75;
    # v_2 = 4 (0 - 0.75)^2 = 2.25.
    # t = 2: centre (0.75 * 1 + 0.75 * 0) / 1.5 = 0.5,
    #        radius (3.688879 + 0.159074 + 2.25 * 0.159074) / 1.5 = 4.205870 / 1.5 = 2.803913.
    x, lam, mu_prev = sequential._prepare([1, 0], 0, 1, 0.05, 1)
    assert lam == approx([6.524985, 4.635696], abs=1e-5)
    lows, highs = sequential._bernstein(x, lam, mu_prev, 0.05, 1)
    assert list(lows) == approx([1 - 5.130604, 0.5 - 2.803913], abs=1e-5)
    assert list(highs) == approx([1 + 5.130604, 0.5 + 2.803913], abs=1e-5)


def test_betting_two_ones_hand_case():
    # Values [1, 1] on [0, 1], alpha 0.05: lambda_1 = 6.524985, lambda_2 = 4.635696 (as above).
    # Since x = 1 >= m, K-(m) = prod (1 - l (1 - m)) <= 1: only K+ can reach 2/alpha = 40.
    # t = 1: K+(m) = 1 + min(6.525, 0.75/m)(1 - m) <= 1 + 6.525 = 7.525 < 40: C_1 = [0, 1].
    # t = 2: where both bets are untruncated (m < 0.75/6.525 = 0.1149), with u = 1 - m,
    #   K+ = (1 + 6.524985 u)(1 + 4.635696 u) = 40  <=>  30.24785 u^2 + 11.16068 u - 39 = 0
    #   u = (-11.16068 + sqrt(124.5608 + 4718.664)) / 60.4957 = 0.965897, m = 0.034103;
    #   above 0.1149, K+ <= (0.25 + 0.75/m)(1 + 4.6357 (1 - m)) <= 6.775 * 5.103 = 34.6 < 40.
    # So C_2 = [0.034103, 1]; the grid reports the point one step (0.001) below the first inside.
    cs = confidence_sequence([1, 1], 0, 1, 0.05)
    assert cs[0] == approx((0.0, 1.0))
    lo, hi = cs[1]
    assert 0.034103 - 0.001 - 1e-9 <= lo <= 0.034103 and hi == 1.0
    # On [-1, 1] the same values 1 give -1 + 2 * 0.034 (mirrored for -1: 1 - 2 * 0.034).
    assert confidence_sequence([1, 1], -1, 1, 0.05)[1][0] == approx(-1 + 2 * lo)
    assert confidence_sequence([-1, -1], -1, 1, 0.05)[1][1] == approx(1 - 2 * lo)


def test_blocks_read_at_block_ends_with_the_bets_held():
    # Two blocks of two: lambda of observation 2 is that of observation 1 (the block's start):
    # the bet is fixed before the block, so one (lo, hi) per block.
    x, lam, _ = sequential._prepare([1, 1, 0, 0], -1, 1, 0.05, 2)
    assert lam[0] == lam[1] and lam[2] == lam[3] and lam[2] != lam[0]
    assert len(confidence_sequence([1, 1, 0, 0], -1, 1, 0.05, block=2)) == 2
    with pytest.raises(ValueError, match="whole blocks"):
        confidence_sequence([1, 1, 0], -1, 1, 0.05, block=2)


def test_running_intersection_and_refusals():
    rng = np.random.default_rng(3)
    values = rng.uniform(-0.2, 0.6, 60)
    for method in ("betting", BERNSTEIN):
        cs = confidence_sequence(values, -1, 1, 0.05, method=method)
        assert all(a[0] <= b[0] and a[1] >= b[1] for a, b in zip(cs, cs[1:]))  # never widens
        assert cs[-1][0] > 0  # sixty values around 0.2 decide it is above 0
    assert confidence_sequence([], -1, 1, 0.05) == []
    with pytest.raises(ValueError, match=r"lie in \[-1, 1\]"):
        confidence_sequence([1.5], -1, 1, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        confidence_sequence([0.1], -1, 1, 1.5)
    with pytest.raises(ValueError, match="method"):
        confidence_sequence([0.1], -1, 1, 0.05, method="t")


def test_decision_against_the_margin():
    assert sequential_decision(0.06, 0.4, 0.05) == BETTER
    assert sequential_decision(-0.4, -0.06, 0.05) == WORSE
    assert sequential_decision(-0.05, 0.04, 0.05) == EQUIVALENT
    assert sequential_decision(0.04, 0.4, 0.05) == UNDECIDED  # straddles +margin
    assert sequential_decision(0.001, 0.2, 0.0) == BETTER
    with pytest.raises(ValueError, match="margin"):
        sequential_decision(0, 1, -0.1)


def _simulate(delta: float, margin: float, runs: int = 1000, scenarios: int = 10, waves: int = 10, first: int = 2):
    """`runs` sequential runs of `scenarios` scenarios up to `waves` waves, looking after every
    wave from `first` (the config's min) on. Per scenario a mean fairness m_s ~ U(0.2, 0.65); a
    trial's fairness is uniform on m_s +/- 0.15 for the baseline and m_s + delta +/- 0.15 for the
    tool (no clipping: the true difference is exactly delta). Returns the share of runs whose
    sequence ever declares better or worse, the same for a 95% t interval of the wave means
    computed as if n were fixed, and the median wave the sequence stops at (waves + 1: never)."""
    rng = np.random.default_rng(20240136)
    q = {w: t_quantile(0.95, w - 1) for w in range(2, waves + 1)}
    ever_cs = ever_t = 0
    stops = []
    for _ in range(runs):
        m = rng.uniform(0.2, 0.65, scenarios)
        d = (m + delta + rng.uniform(-0.15, 0.15, (waves, scenarios))) - (
            m + rng.uniform(-0.15, 0.15, (waves, scenarios))
        )
        cs = confidence_sequence(d.ravel(), -1, 1, 0.05, block=scenarios)
        decided = [w for w in range(first, waves + 1) if sequential_decision(*cs[w - 1], margin) in (BETTER, WORSE)]
        stops.append(decided[0] if decided else waves + 1)
        ever_cs += bool(decided)
        means = d.mean(axis=1)
        ever_t += any(
            abs(means[:w].mean()) > q[w] * means[:w].std(ddof=1) / math.sqrt(w) for w in range(first, waves + 1)
        )
    return ever_cs / runs, ever_t / runs, float(np.median(stops))


def test_simulation_holds_under_peeking_where_a_t_interval_does_not():
    # No difference, margin 0 (any declared difference is false), 1,000 runs of up to 10 waves.
    cs_rate, t_rate, _ = _simulate(0.0, 0.0)
    print(
        f"\nno difference, 1,000 runs looked at after waves 2..10: the confidence sequence declares a "
        f"difference in {cs_rate:.3f}, the fixed-n t interval in {t_rate:.3f} (alpha 0.05)"
    )
    assert cs_rate <= 0.05 < t_rate
    # A true difference of 0.15, the config's default margin 0.05: most runs stop well before max.
    _, _, median_stop = _simulate(0.15, 0.05)
    print(f"true difference 0.15, margin 0.05: the median run stops at wave {median_stop:g} of 10")
    assert median_stop < 10
