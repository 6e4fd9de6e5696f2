"""Every formula of mcptrials.stats against a small case worked out by hand in the comments."""

import json
import math

import pytest

from mcptrials.stats.adoption import adoption
from mcptrials.stats.agreement import cohen_kappa, icc, judge_spread, spearman_with_ci
from mcptrials.stats.fairness import (
    efficiency_part,
    efficiency_reference,
    fairness,
    fairness_without,
    relative_efficiency,
)
from mcptrials.stats.intervals import bounded_mean_ci, mean_ci
from mcptrials.stats.paired import holm_adjust, paired_difference, practical_verdict
from mcptrials.stats.pass_k import mean_pass_at_k, mean_pass_hat_k, pass_at_k, pass_hat_k
from mcptrials.stats.power import min_detectable_effect, scenarios_needed, variance_components

approx = pytest.approx


# ---------------------------------------------------------------- pass@k, pass^k


def test_pass_at_k_hand_case():
    # n=5, c=2, k=2: C(3,2)/C(5,2) = 3/10, so pass@2 = 1 - 0.3 = 0.7
    assert pass_at_k(5, 2, 2) == approx(0.7)
    # k = n with a single pass: C(3,4) = 0, so pass@4 = 1
    assert pass_at_k(4, 1, 4) == 1.0
    # no pass: C(5,2)/C(5,2) = 1, so pass@2 = 0
    assert pass_at_k(5, 0, 2) == 0.0


def test_pass_hat_k_hand_case():
    # n=5, c=2, k=2: C(2,2)/C(5,2) = 1/10
    assert pass_hat_k(5, 2, 2) == approx(0.1)
    # n=4, c=3, k=4: C(3,4) = 0
    assert pass_hat_k(4, 3, 4) == 0.0
    # all pass: C(4,3)/C(4,3) = 1
    assert pass_hat_k(4, 4, 3) == 1.0


@pytest.mark.parametrize("n,c", [(1, 0), (1, 1), (5, 2), (7, 3), (10, 10)])
def test_pass_at_1_equals_pass_hat_1_equals_c_over_n(n, c):
    # C(n-c,1)/C(n,1) = (n-c)/n, so pass@1 = c/n; C(c,1)/C(n,1) = c/n
    assert pass_at_k(n, c, 1) == approx(c / n)
    assert pass_hat_k(n, c, 1) == approx(c / n)


@pytest.mark.parametrize("fn", [pass_at_k, pass_hat_k])
@pytest.mark.parametrize("n,c,k", [(3, 1, 4), (0, 0, 1), (3, 4, 1), (3, -1, 1), (3, 1, 0), (3.0, 1, 1), (3, 1, True)])
def test_pass_k_rejects_bad_inputs(fn, n, c, k):
    with pytest.raises(ValueError):
        fn(n, c, k)


def test_pass_k_large_n_is_finite():
    # exact integer binomials: no overflow; pass@1 still c/n
    assert pass_at_k(2000, 700, 1) == approx(0.35)
    assert 0.0 < pass_hat_k(2000, 1990, 100) < 1.0


def test_mean_pass_k_over_tasks_skips_short_tasks():
    tasks = {"t1": (5, 2), "t2": (3, 3), "t3": (1, 1)}
    # k=2: t1 -> 0.7 (above); t2 -> 1 - C(0,2)/C(3,2) = 1; t3 has n=1 < 2: skipped
    # mean pass@2 = (0.7 + 1) / 2 = 0.85
    at = mean_pass_at_k(tasks, 2)
    assert at == {"mean": approx(0.85), "k": 2, "n_tasks": 2, "skipped": ["t3"]}
    # pass^2: t1 -> 0.1; t2 -> C(3,2)/C(3,2) = 1; mean = 0.55
    hat = mean_pass_hat_k(tasks, 2)
    assert hat == {"mean": approx(0.55), "k": 2, "n_tasks": 2, "skipped": ["t3"]}
    # nothing has 6 trials: mean None, every task listed
    assert mean_pass_at_k(tasks, 6) == {"mean": None, "k": 6, "n_tasks": 0, "skipped": ["t1", "t2", "t3"]}


# ---------------------------------------------------------------- mean_ci


def test_mean_ci_naive_hand_case():
    # scores 1,2,3,4: m = 2.5; sum (s-m)^2 = 2.25+0.25+0.25+2.25 = 5
    # SE = sqrt(5 / (4*3)) = sqrt(0.416667) = 0.645497
    # t(0.975, df=3) = 3.182446 (table); half width = 3.182446 * 0.645497 = 2.054259
    # -> [0.445741, 4.554259]
    r = mean_ci([1, 2, 3, 4])
    assert r["mean"] == approx(2.5)
    assert r["se"] == approx(0.645497, abs=1e-6)
    assert r["lo"] == approx(0.445741, abs=1e-5)
    assert r["hi"] == approx(4.554259, abs=1e-5)
    assert (r["n"], r["n_clusters"]) == (4, None)
    assert "naive" in r["method"] and "df=3" in r["method"]


def test_mean_ci_clustered_hand_case_bigger_than_naive():
    # scores 1,1,0,0 in clusters a,a,b,b: m = 0.5
    # naive: sum (s-m)^2 = 4 * 0.25 = 1; SE = sqrt(1/12) = 0.288675
    # clustered: residual sums a: 0.5+0.5 = 1, b: -1; sum of squares = 2
    #   SE = sqrt(C/(C-1)) * sqrt(2) / n = sqrt(2) * 1.414214 / 4 = 0.5
    # df = C-1 = 1: t(0.975, 1) = tan(pi * 0.475) = 12.706205; interval 0.5 -/+ 6.353102
    naive = mean_ci([1, 1, 0, 0])
    clus = mean_ci([1, 1, 0, 0], clusters=["a", "a", "b", "b"])
    assert naive["se"] == approx(0.288675, abs=1e-6)
    assert clus["se"] == approx(0.5)
    assert clus["se"] > naive["se"]
    assert clus["lo"] == approx(0.5 - 6.353102, abs=1e-5)
    assert clus["hi"] == approx(0.5 + 6.353102, abs=1e-5)
    assert clus["n_clusters"] == 2
    assert "clustered" in clus["method"] and "C/(C-1)" in clus["method"] and "df=1" in clus["method"]


def test_mean_ci_clustered_anticorrelated_cancels():
    # 1,0 in a and 1,0 in b: each cluster's residual sum is 0.5 - 0.5 = 0, so clustered SE = 0
    r = mean_ci([1, 0, 1, 0], clusters=["a", "a", "b", "b"])
    assert r["se"] == 0.0
    assert r["lo"] == r["hi"] == r["mean"] == 0.5


def test_mean_ci_edge_cases():
    one = mean_ci([0.7])
    assert one["mean"] == 0.7 and one["se"] is None and one["lo"] is None and one["hi"] is None
    assert one["n"] == 1 and "n=1" in one["method"]
    single_cluster = mean_ci([1, 0, 1], clusters=["s", "s", "s"])
    assert single_cluster["se"] is None and single_cluster["n_clusters"] == 1
    constant = mean_ci([0.5, 0.5, 0.5])
    assert constant["se"] == 0.0 and constant["lo"] == constant["hi"] == 0.5
    with pytest.raises(ValueError):
        mean_ci([])
    with pytest.raises(ValueError, match="one cluster label per score"):
        mean_ci([1, 2], clusters=["a"])
    with pytest.raises(ValueError):
        mean_ci([1, float("nan")])
    json.dumps(one)  # None, not NaN: JSON-friendly


def test_mean_ci_level():
    # 90% interval for 1,2,3,4: t(0.95, 3) = 2.353363 (table); half = 2.353363 * 0.645497 = 1.519089
    r = mean_ci([1, 2, 3, 4], level=0.90)
    assert r["hi"] - r["mean"] == approx(1.519089, abs=1e-5)


# ---------------------------------------------------------------- bounded_mean_ci


def test_bounded_mean_ci_hand_case_three_scenarios():
    # fairness 0.2, 0.4, 0.9 in scenarios a, b, c (one trial each): m = 0.5
    # clustered SE = sqrt(3/2) * sqrt(0.3^2 + 0.1^2 + 0.4^2) / 3 = sqrt(1.5 * 0.26) / 3 = 0.208167
    # the plain t interval: 0.5 -/+ 4.302653 * 0.208167 = [-0.395669, 1.395669], outside 0-1
    # logit: u = 0.5, g = 0; SE_g = 0.208167 / (0.5 * 0.5) = 0.832666; half = 4.302653 * 0.832666 = 3.582660
    # lo = 1 / (1 + e^3.582660) = 1 / (1 + 35.9696) = 0.027049; hi = 1 - lo = 0.972951
    r = bounded_mean_ci([0.2, 0.4, 0.9], clusters=["a", "b", "c"])
    assert r["mean"] == approx(0.5) and r["se"] == approx(0.208167, abs=1e-6)
    assert r["lo"] == approx(0.027049, abs=1e-6)
    assert r["hi"] == approx(0.972951, abs=1e-6)
    assert mean_ci([0.2, 0.4, 0.9], clusters=["a", "b", "c"])["lo"] == approx(-0.395669, abs=1e-5)
    assert r["method"] == (
        "logit-transformed t interval on [0, 1], clustered SE over 3 clusters with C/(C-1) correction, df=2"
    )
    json.dumps(r)


def test_bounded_mean_ci_is_asymmetric_near_a_bound():
    # 0.7, 0.8, 0.9, 1.0 (naive): m = 0.85; sum (s-m)^2 = 0.05; SE = sqrt(0.05 / 12) = 0.0645497
    # u = 0.85, g = ln(0.85 / 0.15) = 1.734601; SE_g = 0.0645497 / (0.85 * 0.15) = 0.506272
    # half = t(0.975, 3) 3.182446 * 0.506272 = 1.611185
    # lo = expit(0.123417) = 0.530815; hi = expit(3.345786) = 1 / (1 + 0.035232) = 0.965967
    # (the plain t interval is 0.85 -/+ 0.205428 = [0.644572, 1.055428])
    r = bounded_mean_ci([0.7, 0.8, 0.9, 1.0])
    assert r["se"] == approx(0.0645497, abs=1e-6)
    assert r["lo"] == approx(0.530815, abs=1e-5)
    assert r["hi"] == approx(0.965967, abs=1e-5)
    assert r["mean"] - r["lo"] > r["hi"] - r["mean"]  # longer on the side away from the bound
    assert "naive SE" in r["method"] and "df=3" in r["method"]


def test_bounded_mean_ci_other_bounds_and_level():
    # on [-1, 1]: d = 0.9, 0.7, 0.3: m = 0.633333, SE = sd / sqrt(3) = 0.305505 / 1.732051 = 0.176383
    # u = (m + 1) / 2 = 0.816667; g = ln(0.816667 / 0.183333) = 1.493925
    # SE_g = 0.176383 / (2 * 0.816667 * 0.183333) = 0.589036; half = 4.302653 * 0.589036 = 2.534415
    # lo = -1 + 2 expit(-1.040490) = -1 + 2 * 0.261055 = -0.477889
    # hi = -1 + 2 expit(4.028340) = -1 + 2 * 0.982508 = 0.965015
    r = bounded_mean_ci([0.9, 0.7, 0.3], lower=-1, upper=1)
    assert r["lo"] == approx(-0.477889, abs=1e-5)
    assert r["hi"] == approx(0.965015, abs=1e-5)
    assert "on [-1, 1]" in r["method"]
    # 90%: t(0.95, 2) = 2.919986; on the 3-scenario case half = 2.919986 * 0.832666 = 2.431373
    # hi = expit(2.431373) = 0.919189
    assert bounded_mean_ci([0.2, 0.4, 0.9], level=0.90)["hi"] == approx(0.919189, abs=1e-5)


def test_bounded_mean_ci_stays_in_bounds_and_edge_cases():
    import numpy as np

    rng = np.random.default_rng(1)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        scores = np.clip(rng.choice([0.0, 1.0, rng.random()], size=n) * rng.random(n) ** 0.1, 0, 1).tolist()
        clusters = [f"s{i % 3}" for i in range(n)]
        for r in (bounded_mean_ci(scores), bounded_mean_ci(scores, clusters=clusters)):
            if r["lo"] is not None:
                assert 0.0 <= r["lo"] <= r["mean"] <= r["hi"] <= 1.0, (scores, r)
    # every score 0 (failed trials) or every score 1: SE 0, the interval is the point
    assert bounded_mean_ci([0.0, 0.0, 0.0], clusters=["a", "b", "c"])[("lo")] == 0.0
    top = bounded_mean_ci([1.0, 1.0])
    assert top["lo"] == top["hi"] == 1.0
    assert bounded_mean_ci([0.4])["lo"] is None  # one score: no interval
    assert bounded_mean_ci([0.4, 0.6], clusters=["a", "a"])["lo"] is None  # one cluster
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        bounded_mean_ci([0.5, 1.2])
    with pytest.raises(ValueError, match="lower bound"):
        bounded_mean_ci([0.5], lower=1, upper=0)


def test_paired_difference_bounded_interval():
    # a - b = 0.9, 0.7, 0.3 (the [-1, 1] case of test_bounded_mean_ci_other_bounds_and_level)
    # plain t: hi = 0.633333 + 4.302653 * 0.176383 = 1.392250, above 1
    a, b = {"x": 1.0, "y": 0.9, "z": 0.5}, {"x": 0.1, "y": 0.2, "z": 0.2}
    plain, bounded = paired_difference(a, b), paired_difference(a, b, bounds=(-1, 1))
    assert plain["hi"] == approx(1.392250, abs=1e-5)
    assert bounded["lo"] == approx(-0.477889, abs=1e-5) and bounded["hi"] == approx(0.965015, abs=1e-5)
    assert bounded["t_p"] == plain["t_p"] and bounded["wilcoxon_p"] == plain["wilcoxon_p"]
    assert plain["method"] == "paired t interval, df=2"
    assert bounded["method"] == "paired, logit-transformed t interval on [-1, 1], df=2"
    with pytest.raises(ValueError, match="outside"):
        paired_difference({"x": 2.0}, {"x": 0.0}, bounds=(-1, 1))


# ---------------------------------------------------------------- paired difference


def test_paired_difference_hand_case():
    # shared s1..s3: d = 1, 2, 3 (a - b); s4 only in a, s5 only in b: dropped
    a = {"s1": 1.5, "s2": 3.0, "s3": 3.5, "s4": 9.0}
    b = {"s1": 0.5, "s2": 1.0, "s3": 0.5, "s5": 0.0}
    # mean d = 2; sd(d) = 1; SE = 1/sqrt(3) = 0.577350
    # t(0.975, 2) = 0.95 / sqrt(2 * 0.975 * 0.025) = 4.302653 (closed form for df=2)
    # half = 2.484138 -> [-0.484138, 4.484138]
    # paired t = 2 / 0.577350 = 3.464102, df=2: two-sided p = 1 - t/sqrt(2 + t^2)
    #   = 1 - 3.464102/3.741657 = 0.074180
    # Wilcoxon: 3 positive differences, W- = 0; exact two-sided p = 2 * (1/2^3) = 0.25
    r = paired_difference(a, b)
    assert r["mean_diff"] == approx(2.0)
    assert r["se"] == approx(0.577350, abs=1e-6)
    assert r["lo"] == approx(-0.484138, abs=1e-5)
    assert r["hi"] == approx(4.484138, abs=1e-5)
    assert r["t_p"] == approx(0.074180, abs=1e-5)
    assert r["wilcoxon_p"] == approx(0.25)
    assert r["n"] == 3 and r["scenarios"] == ["s1", "s2", "s3"]
    assert r["dropped"] == {"only_a": ["s4"], "only_b": ["s5"]}
    json.dumps(r)


def test_paired_difference_wilcoxon_five_positive():
    # 5 positive differences of distinct size: exact two-sided p = 2/2^5 = 0.0625
    a = {f"s{i}": float(i) for i in range(1, 6)}
    b = {f"s{i}": 0.0 for i in range(1, 6)}
    assert paired_difference(a, b)["wilcoxon_p"] == approx(0.0625)


def test_paired_difference_edge_cases():
    same = {"s1": 0.4, "s2": 0.6, "s3": 0.9}
    r = paired_difference(same, dict(same))
    # every d = 0: SE 0, interval collapses, no t p, no Wilcoxon p
    assert r["mean_diff"] == 0.0 and r["se"] == 0.0 and r["lo"] == r["hi"] == 0.0
    assert r["t_p"] is None and r["wilcoxon_p"] is None
    one = paired_difference({"s1": 0.9}, {"s1": 0.4, "s2": 0.1})
    assert one["mean_diff"] == approx(0.5) and one["se"] is None and one["t_p"] is None
    assert one["wilcoxon_p"] is None and one["dropped"] == {"only_a": [], "only_b": ["s2"]}
    with pytest.raises(ValueError, match="share no scenario"):
        paired_difference({"x": 1.0}, {"y": 1.0})


# ---------------------------------------------------------------- Holm


def test_holm_hand_example():
    # sorted: a 0.01, c 0.03, b 0.04, m = 3
    # a: 3 * 0.01 = 0.03; c: max(0.03, 2 * 0.03) = 0.06; b: max(0.06, 1 * 0.04) = 0.06 (monotone)
    adj = holm_adjust({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adj == {"a": approx(0.03), "b": approx(0.06), "c": approx(0.06)}
    assert list(adj) == ["a", "b", "c"]  # input order kept


def test_holm_caps_at_one_and_keeps_none():
    # x: 2 * 0.5 = 1.0; y: max(1.0, 0.6) = 1.0; z has no p-value: not counted in m
    assert holm_adjust({"x": 0.5, "y": 0.6, "z": None}) == {"x": 1.0, "y": 1.0, "z": None}
    assert holm_adjust({}) == {}
    assert holm_adjust({"only": 0.02}) == {"only": 0.02}
    with pytest.raises(ValueError):
        holm_adjust({"bad": 1.5})


# ---------------------------------------------------------------- power

SCORES_A = {"s1": [1.0, 0.6], "s2": [0.4, 0.4], "s3": [0.9, 0.5]}
SCORES_B = {"s1": [0.5, 0.5], "s2": [0.2, 0.4], "s3": [0.1, 0.1], "s4": [1.0, 1.0]}


def test_variance_components_hand_case():
    # A: means .8 .4 .7; within variances (n-1): .08, 0, .08 -> sigma2_a = .16/3 = .053333
    # B: means .5 .3 .1; within variances: 0, .02, 0 -> sigma2_b = .02/3 = .006667 (s4 dropped)
    # d = .3, .1, .6; mean .333333; squared deviations .001111 + .054444 + .071111 = .126667
    # var_d = .126667 / 2 = .063333
    # omega2 = var_d - sigma2_a/2 - sigma2_b/2 = .063333 - .026667 - .003333 = .033333
    r = variance_components(SCORES_A, SCORES_B)
    assert r["sigma2_a"] == approx(0.16 / 3)
    assert r["sigma2_b"] == approx(0.02 / 3)
    assert r["var_d"] == approx(0.19 / 3)
    assert r["omega2"] == approx(0.1 / 3)
    assert (r["k_a"], r["k_b"], r["n"]) == (approx(2.0), approx(2.0), 3)
    assert r["dropped"] == {"only_a": [], "only_b": ["s4"]} and r["note"] is None
    json.dumps(r)


def test_variance_components_unbalanced_and_single_trial():
    # trials per scenario 1 and 3: harmonic mean 2 / (1 + 1/3) = 1.5
    r = variance_components({"s1": [1.0], "s2": [0.0, 0.5, 1.0]}, {"s1": [0.0], "s2": [0.0]})
    assert r["k_a"] == approx(1.5) and r["k_b"] == approx(1.0)
    # A: only s2 has 2+ trials, var(0, .5, 1) = .25; B: one trial everywhere -> 0 and a note
    assert r["sigma2_a"] == approx(0.25) and r["sigma2_b"] == 0.0
    assert "one trial per scenario" in r["note"]
    # d = 1 - 0 = 1 and .5 - 0 = .5: var_d = .125; omega2 = max(0, .125 - .25/1.5) = 0
    assert r["var_d"] == approx(0.125) and r["omega2"] == 0.0
    few = variance_components({"s1": [1.0, 0.0]}, {"s1": [0.5, 0.5]})
    assert few["omega2"] is None and few["var_d"] is None and few["n"] == 1


def test_min_detectable_effect_hand_case():
    # z(0.975) + z(0.8) = 1.959964 + 0.841621 = 2.801585
    # V = 0.02 + 0.04/2 + 0.02/2 = 0.05; sqrt(0.05/10) = 0.0707107; delta = 0.198101
    assert min_detectable_effect(0.02, 0.04, 0.02, 2, 2, 10) == approx(0.198101, abs=1e-6)


def test_min_detectable_effect_is_2_80_paired_se():
    # with the components above, V = omega2 + sigma2_a/2 + sigma2_b/2 = var_d = .063333, n = 3,
    # so delta = 2.801585 * sqrt(.021111) = 2.801585 * 0.1452966 = 0.407061 = 2.80 * SE_d
    vc = variance_components(SCORES_A, SCORES_B)
    delta = min_detectable_effect(vc["omega2"], vc["sigma2_a"], vc["sigma2_b"], vc["k_a"], vc["k_b"], vc["n"])
    assert delta == approx(0.407061, abs=1e-6)
    means = lambda s: {k: sum(v) / len(v) for k, v in s.items()}
    se_d = paired_difference(means(SCORES_A), means(SCORES_B))["se"]
    assert delta == approx(2.801585 * se_d, abs=1e-6)


def test_scenarios_needed_hand_case():
    # (2.801585)^2 = 7.848879; V = 0.05; delta = 0.1: 7.848879 * 0.05 / 0.01 = 39.24 -> 40
    assert scenarios_needed(0.1, 0.02, 0.04, 0.02, 2, 2) == 40
    # round trip: the MDE at the n we need is at most delta
    assert min_detectable_effect(0.02, 0.04, 0.02, 2, 2, 40) <= 0.1
    assert min_detectable_effect(0.02, 0.04, 0.02, 2, 2, 39) > 0.1
    # a huge effect still needs two scenarios
    assert scenarios_needed(10.0, 0.02, 0.04, 0.02, 2, 2) == 2
    for bad in ({"delta": 0}, {"alpha": 0}, {"power": 1.0}):
        args = {"delta": 0.1, "omega2": 0.02, "sigma2_a": 0.04, "sigma2_b": 0.02, "k_a": 2, "k_b": 2} | bad
        with pytest.raises(ValueError):
            scenarios_needed(**args)
    with pytest.raises(ValueError):
        min_detectable_effect(None, 0.04, 0.02, 2, 2, 10)


# ---------------------------------------------------------------- judge agreement


def test_judge_spread_hand_case():
    # item 1: .8 .6 .7 -> mean .7, squares .01+.01+0 = .02, var .01, sd .1, range .2
    # item 2: .5 .5 .5 -> sd 0, range 0
    # item 3: .2 .6   -> mean .4, squares .04+.04 = .08, var .08, sd .282843, range .4
    # mean sd = .382843/3 = .127614; mean range = .6/3 = .2
    r = judge_spread([[0.8, 0.6, 0.7], [0.5, 0.5, 0.5], [0.2, 0.6]])
    assert r["mean_sd"] == approx(0.127614, abs=1e-6)
    assert r["max_sd"] == approx(0.282843, abs=1e-6)
    assert r["mean_range"] == approx(0.2)
    assert r["max_range"] == approx(0.4)
    assert (r["n_items"], r["min_repeats"], r["max_repeats"]) == (3, 2, 3)
    single = judge_spread([[0.5], [0.9]])
    assert single["mean_sd"] is None and single["max_range"] == 0.0
    with pytest.raises(ValueError):
        judge_spread([[0.5], []])


def test_icc_hand_case():
    # items (1,2), (3,4), (5,6); k = 2, n = 3; item means 1.5 3.5 5.5, grand 3.5
    # MSB = 2 * (4 + 0 + 4) / 2 = 8; MSW = (6 * 0.25) / (3 * 1) = 0.5
    # ICC(1,1) = (8 - 0.5) / (8 + 1 * 0.5) = 7.5 / 8.5 = 0.882353
    assert icc([[1, 2], [3, 4], [5, 6]]) == approx(0.882353, abs=1e-6)


def test_icc_edge_cases():
    # perfect repeats: MSW = 0 -> 1
    assert icc([[0.2, 0.2], [0.9, 0.9]]) == approx(1.0)
    # everything equal: 0/0, documented as 1.0
    assert icc([[0.5, 0.5], [0.5, 0.5]]) == 1.0
    # repeats disagree, items equal on average: MSB = 0, MSW = (4 * .25) / 2 = .5 -> -.5/.5 = -1
    assert icc([[0, 1], [1, 0]]) == approx(-1.0)
    assert icc([[0.5], [0.7]]) is None  # k < 2
    assert icc([[0.5, 0.6]]) is None  # n < 2
    with pytest.raises(ValueError, match="same number of repeats"):
        icc([[0.5, 0.6], [0.7]])


def test_spearman_hand_case():
    # x = 1..5, y = 2 1 4 3 5: rank differences -1 1 -1 1 0, sum d^2 = 4
    # rho = 1 - 6*4 / (5 * 24) = 0.8
    # p (t approximation): t = .8 * sqrt(3 / .36) = 2.309401, df 3; for df=3,
    #   F(t) = 1/2 + (1/pi) (t/sqrt3 / (1 + t^2/3) + atan(t/sqrt3)) = 1/2 + (0.48 + 0.927295)/pi = 0.947960
    #   two-sided p = 2 (1 - 0.947960) = 0.104081
    r = spearman_with_ci([1, 2, 3, 4, 5], [2, 1, 4, 3, 5], n_boot=500)
    assert r["rho"] == approx(0.8)
    assert r["p"] == approx(0.104081, abs=1e-5)
    assert r["n"] == 5 and r["n_boot"] == 500
    assert -1 <= r["lo"] <= r["rho"] <= r["hi"] <= 1
    json.dumps(r)


def test_spearman_bootstrap_perfect_order_and_determinism():
    x, y = [0.1, 0.3, 0.2, 0.9, 0.5, 0.7], [1, 3, 2, 9, 5, 7]
    # same order: every defined resample has rho = 1, so the interval is [1, 1]
    r = spearman_with_ci(x, y, n_boot=400, seed=3)
    assert r["rho"] == approx(1.0) and r["lo"] == 1.0 and r["hi"] == 1.0
    # undefined resamples (one distinct pair drawn 6 times) are counted, not used
    assert 0 <= r["skipped"] < 400
    # a noisy relation: same seed -> same interval; another seed -> another interval
    x2, y2 = [1, 2, 3, 4, 5, 6, 7, 8], [2, 1, 4, 3, 7, 5, 8, 6]
    first = spearman_with_ci(x2, y2, n_boot=300, seed=7)
    assert spearman_with_ci(x2, y2, n_boot=300, seed=7) == first
    other = spearman_with_ci(x2, y2, n_boot=300, seed=8)
    assert (other["lo"], other["hi"]) != (first["lo"], first["hi"])


def test_spearman_skips_constant_resamples():
    # two distinct x values among 3 points: a resample is constant in x when it draws only the
    # two x=0 points or only the x=1 point; these are skipped and counted
    r = spearman_with_ci([0, 0, 1], [0, 1, 2], n_boot=1000, seed=0)
    # P(all from {p1,p2}) = (2/3)^3 = 8/27; P(all p3) = 1/27: expected 9/27 * 1000 = 333 skipped
    assert 250 < r["skipped"] < 420


def test_spearman_edge_cases():
    const = spearman_with_ci([1, 2, 3], [4, 4, 4])
    assert const["rho"] is None and const["lo"] is None and const["p"] is None
    short = spearman_with_ci([1, 2], [1, 2])
    assert short["rho"] is None and short["n"] == 2
    with pytest.raises(ValueError, match="one y per x"):
        spearman_with_ci([1, 2, 3], [1, 2])


# ---------------------------------------------------------------- scores


def test_relative_efficiency_hand_case():
    """Issue 33 item 1: 0.5 + clip(log2(reference / value), -3, 3) / 6 per part, the mean of cost and time."""
    # cost 2 vs reference 1: log2(1/2) = -1 -> 0.5 - 1/6 = 1/3; wall 10 vs 20: log2 2 = 1 -> 2/3; mean 0.5
    assert relative_efficiency(2.0, 10.0, 1.0, 20.0) == approx(0.5)
    # as cheap and as fast as the baseline's reference: 0.5 (the baseline's own trials average there)
    assert relative_efficiency(1.0, 5.0, 1.0, 5.0) == 0.5
    # 4x cost, 4x wall: 0.5 - 2/6 = 1/6 each
    assert relative_efficiency(4.0, 40.0, 1.0, 10.0) == approx(1 / 6)
    # 2x cheaper, 2x faster: 2/3 each; 16x faster is clipped at 8x: 1
    assert relative_efficiency(0.5, 5.0, 1.0, 10.0) == approx(2 / 3)
    assert relative_efficiency(1.0, 1.0, 1.0, 16.0) == approx(0.5 * 0.5 + 0.5 * 1.0)
    # symmetric: a doubling and a halving are equal and opposite around 0.5
    assert efficiency_part(2.0, 1.0) + efficiency_part(0.5, 1.0) == approx(1.0)
    assert efficiency_part(9.0, 1.0) == 0.0 and efficiency_part(1.0, 9.0) == 1.0


def test_efficiency_reference_is_the_geometric_mean():
    # exp(mean(log 1, log 4, log 16)) = exp(log 4) = 4 (the arithmetic mean would be 7)
    assert efficiency_reference([1.0, 4.0, 16.0]) == approx(4.0)
    assert efficiency_reference([2.0, None, 8.0]) == approx(4.0)  # not measured: left out
    assert efficiency_reference([None]) is None and efficiency_reference([]) is None
    assert efficiency_reference([0.0, 3.0]) == 0.0  # a free baseline
    with pytest.raises(ValueError):
        efficiency_reference([-1.0])
    # the baseline's own trials against their reference: log2(4/1) = 2, 0, -2 -> 5/6, 1/2, 1/6, mean 1/2
    ref = efficiency_reference([1.0, 4.0, 16.0])
    assert sum(efficiency_part(v, ref) for v in (1.0, 4.0, 16.0)) / 3 == approx(0.5)


def test_relative_efficiency_edge_cases():
    # unknown cost (no prices) or both zero: the cost part is 0.5 for every arm; wall 20 vs 10 -> 1/3
    assert relative_efficiency(None, 20.0, 1.0, 10.0) == approx(0.5 * 0.5 + 0.5 / 3)
    assert relative_efficiency(0.0, 20.0, 0.0, 10.0) == approx(0.5 * 0.5 + 0.5 / 3)
    assert relative_efficiency(1.0, 20.0, None, 10.0) == approx(0.5 * 0.5 + 0.5 / 3)
    # free baseline, paid trial: cost part 0; free trial, paid baseline: 1
    assert relative_efficiency(1.0, 10.0, 0.0, 10.0) == approx(0.25)
    assert relative_efficiency(0.0, 10.0, 1.0, 10.0) == approx(0.75)
    with pytest.raises(ValueError):
        relative_efficiency(-1.0, 10.0, 1.0, 10.0)


def _old_rule(cost, wall, base_cost, base_wall):
    """The rule before issue 33: min(1, base / value) per part against the arithmetic mean."""
    return 0.5 * min(1.0, base_cost / cost) + 0.5 * min(1.0, base_wall / wall)


def test_efficiency_cannot_be_tilted_by_noise_simulation():
    """Issue 33 item 1: two arms drawn from one distribution (lognormal times and costs, a
    scale per scenario, 30% spread between trials; 3,334 scenarios x 3 trials = 10,002 trials
    per arm), the baseline's reference made from its own trials as aggregate makes it. The
    rule's mean efficiency differs between the arms by less than the difference's standard
    error (paired over scenarios, which share their reference); the old rule shows the bias.
    The rule is exactly unbiased here (linear in log value, geometric-mean reference, no value
    beyond the 8x clip), so |difference| < 1 SE holds at about 68% of seeds: the seed is the
    first one tried, 0, not chosen; the old rule's bias is above 20 SE at every seed tried."""
    import numpy as np

    rng = np.random.default_rng(0)
    k, n = 3, 3334
    new_d, old_d = [], []
    for _ in range(n):
        time_scale, cost_scale = np.exp(rng.normal(np.log(30), 0.5)), np.exp(rng.normal(np.log(0.05), 0.5))
        arms = {
            a: list(zip(cost_scale * np.exp(rng.normal(0, 0.3, k)), time_scale * np.exp(rng.normal(0, 0.3, k))))
            for a in ("baseline", "tool")
        }
        costs, times = [c for c, _ in arms["baseline"]], [w for _, w in arms["baseline"]]
        ref = (efficiency_reference(costs), efficiency_reference(times))
        old_ref = (sum(costs) / k, sum(times) / k)
        new = {a: sum(relative_efficiency(c, w, *ref) for c, w in ts) / k for a, ts in arms.items()}
        old = {a: sum(_old_rule(c, w, *old_ref) for c, w in ts) / k for a, ts in arms.items()}
        new_d.append(new["tool"] - new["baseline"])
        old_d.append(old["tool"] - old["baseline"])
    new_diff, new_se = float(np.mean(new_d)), float(np.std(new_d, ddof=1) / np.sqrt(n))
    old_diff, old_se = float(np.mean(old_d)), float(np.std(old_d, ddof=1) / np.sqrt(n))
    print(
        f"\nsame distribution, {n * k} trials per arm: symmetric log-ratio tool - baseline = {new_diff:+.5f} "
        f"(SE {new_se:.5f}); old min(1, base/value) = {old_diff:+.5f} (SE {old_se:.5f})"
    )
    assert abs(new_diff) < new_se
    assert old_diff < -10 * old_se  # the old rule counts noise against the arm that is not the baseline


def test_practical_verdict_hand_made_intervals():
    """Issue 33 item 2: better / worse only beyond +-margin, no practical difference within it."""
    m = 0.05
    assert practical_verdict(0.06, 0.10, m) == "better"  # all above +0.05
    assert practical_verdict(-0.10, -0.06, m) == "worse"  # all below -0.05
    assert practical_verdict(-0.04, 0.03, m) == "no practical difference"
    assert practical_verdict(-0.05, 0.05, m) == "no practical difference"  # the bounds belong to the inside
    assert practical_verdict(0.01, 0.09, m) == "within noise"  # excludes 0, straddles +0.05
    assert practical_verdict(0.05, 0.09, m) == "within noise"  # lo on the margin: not beyond it
    assert practical_verdict(-0.20, 0.20, m) == "within noise"
    # the issue's `git`: -0.005 [-0.008, -0.002] was "worse" (the interval excludes 0); it does not matter
    assert practical_verdict(-0.008, -0.002, m) == "no practical difference"
    # margin 0: the plain significance verdicts
    assert practical_verdict(-0.008, -0.002, 0) == "worse" and practical_verdict(0.01, 0.09, 0) == "better"
    assert practical_verdict(-0.01, 0.01, 0) == "within noise"
    assert practical_verdict(0.0, 0.0, 0) == "no practical difference"
    assert practical_verdict(None, None, m) == "within noise"  # fewer than 2 scenarios: no interval
    with pytest.raises(ValueError, match="margin"):
        practical_verdict(0.1, 0.2, -0.01)


def test_fairness_hand_case():
    w = {"keyword": 0.10, "quality": 0.55, "citation": 0.15, "efficiency": 0.20}
    # .10*.5 + .55*.8 + .15*1 + .20*.75 = .05 + .44 + .15 + .15 = .79
    assert fairness(0.5, 0.8, 1.0, 0.75, w) == approx(0.79)
    # None counts as 0: .55*.8 + .20*.75 = .44 + .15 = .59
    assert fairness(None, 0.8, None, 0.75, w) == approx(0.59)
    # other weights: .25 each -> (.5 + .8 + 1 + .75) / 4 = .7625
    w4 = {"keyword": 0.25, "quality": 0.25, "citation": 0.25, "efficiency": 0.25}
    assert fairness(0.5, 0.8, 1.0, 0.75, w4) == approx(0.7625)
    # the weights come whole from the config (its schema fills the defaults): no key is guessed here
    with pytest.raises(ValueError, match="give exactly"):
        fairness(1, 1, 1, 1, {"speed": 1.0})
    with pytest.raises(ValueError, match="give exactly"):
        fairness(1, 1, 1, 1, {"quality": 1.0})


def test_fairness_without_hand_case():
    w = {"keyword": 0.10, "quality": 0.55, "citation": 0.15, "efficiency": 0.20}
    # citation missing: 0.85 left -> keyword .10/.85, quality .55/.85, efficiency .20/.85
    rest = fairness_without(w, {"citation"})
    assert rest == {
        "keyword": approx(0.117647, abs=1e-6),
        "quality": approx(0.647059, abs=1e-6),
        "citation": 0.0,
        "efficiency": approx(0.235294, abs=1e-6),
    }
    assert sum(rest.values()) == approx(1.0)
    # citation and quality missing: 0.30 left -> keyword 1/3, efficiency 2/3; with keyword .5,
    # efficiency .75: fairness 1/3 * .5 + 2/3 * .75 = .1667 + .5 = .6667
    rest = fairness_without(w, {"citation", "quality"})
    assert (rest["keyword"], rest["efficiency"]) == (approx(1 / 3), approx(2 / 3))
    assert fairness(0.5, None, None, 0.75, rest) == approx(2 / 3)
    # nothing missing: the weights as they are; every weighted part missing: no weights left
    assert fairness_without(w, set()) == approx(w)
    assert fairness_without({"keyword": 0.0, "quality": 1.0, "citation": 0.0, "efficiency": 0.0}, {"quality"}) is None


def test_adoption_hand_case():
    # .60*.5 + .40*1 = .3 + .4 = .7
    assert adoption(0.5, 1.0) == approx(0.7)
    assert adoption(0.5, None) == approx(0.3)  # missing discoverability counts as 0
    assert adoption(None, 1.0) is None  # the baseline has no tool to adopt
    assert adoption(1.0, 0.0, {"fluency": 0.5, "discoverability": 0.5}) == approx(0.5)


def test_module_import_is_light():
    # importing mcptrials.stats must not pull in scipy (imported inside the functions)
    import subprocess
    import sys

    code = (
        "import sys, mcptrials.stats.pass_k, mcptrials.stats.intervals, mcptrials.stats.paired, mcptrials.stats.power, "
        "mcptrials.stats.agreement, mcptrials.stats.fairness, mcptrials.stats.adoption; print('scipy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_math_constants_used_in_comments():
    # the hand values above rest on these; check them once against closed forms
    assert math.tan(math.pi * 0.475) == approx(12.706205, abs=1e-5)
    assert 0.95 / math.sqrt(2 * 0.975 * 0.025) == approx(4.302653, abs=1e-5)
    assert 0.90 / math.sqrt(2 * 0.95 * 0.05) == approx(2.919986, abs=1e-5)  # t(0.95, 2), same closed form


# Cohen's kappa (mcptrials.stats.agreement.cohen_kappa) on small cases computed by hand.


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
