"""mcptrials compare on two runs in waves (issue 36 item 5): the gate reads HEAD - BASE off a
confidence sequence (mcptrials.gate.sequential), not the fixed-n t interval, when both runs
went in waves; a run with trials: N on either side keeps the t interval."""

import copy

import pytest

from mcptrials.gate.compare import compare_runs
from mcptrials.gate.sequential import sequential_fairness
from mcptrials.stats.sequential import confidence_sequence
from test_compare import IDENTITY


def rows(fair: float, trials: int, scenarios=("s1", "s2", "s3")) -> list[dict]:
    return [
        {
            "model": "m",
            "model_name": "m",
            "host": "loop",
            "tool": "git",
            "scenario": s,
            "trial": k,
            "fairness": fair,
            "passed": True,
            "cost_usd": 0.01,
            "tool_error": 0,
            "protocol_error": 0,
            "api_error": 0,
            "harness_error": 0,
            "missing": False,
        }
        for s in scenarios
        for k in range(1, trials + 1)
    ]


def results(fair: float, trials: int, sequential: bool) -> dict:
    summary = {"identity": copy.deepcopy(IDENTITY), "trials": rows(fair, trials)}
    if sequential:
        summary["sequential"] = {"min": 2, "max": 8, "tools": []}
    return {"folder": "x", "summary": summary, "snapshots": {}}


def test_the_gate_reads_the_confidence_sequence_when_both_runs_went_in_waves():
    # HEAD 0.1 below BASE in every trial: the t interval has no spread (lo = hi = -0.1: regression
    # against margin 0.05); BASE ran 4 trials, HEAD 6: trial numbers 1-4 pair, 3 differences each.
    base, head = results(0.7, 4, True), results(0.6, 6, True)
    seq = sequential_fairness(base["summary"]["trials"], head["summary"]["trials"])
    assert seq["trials"] == [1, 2, 3, 4] and seq["n"] == 12 and seq["mean_diff"] == pytest.approx(-0.1)
    # the betting sequence of twelve -0.1s in blocks of 3 at error 0.1 (its hand-checked formula:
    # tests/analyze/test_sequential_stats.py): wide enough to straddle -0.05
    lo, hi = confidence_sequence([-0.1] * 12, -1, 1, 0.1, block=3)[-1]
    assert (seq["lo"], seq["hi"]) == pytest.approx((lo, hi)) and lo < -0.05 < hi
    row = compare_runs(base, head, margin=0.05)["rows"][0]
    assert row["figures"]["fairness"]["lo"] == pytest.approx(-0.1)  # still shown
    assert row["gate"]["lo"] == pytest.approx(lo) and row["gate"]["interval"].startswith("betting confidence")
    # the estimate -0.1 is below -margin but the sequence is not: a probable regression, not a proven one
    assert row["gate"]["verdict"] == "probable regression"


def test_one_run_with_a_fixed_number_of_trials_keeps_the_t_interval():
    row = compare_runs(results(0.7, 4, False), results(0.6, 6, True), margin=0.05)["rows"][0]
    assert "fairness_sequential" not in row["figures"] and row["gate"]["verdict"] == "regression"
    assert row["gate"]["interval"].startswith("paired")
