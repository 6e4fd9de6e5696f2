"""A run in waves (issue 36): the config, the waves' trials, each wave's decisions and the next
wave's cells (mcptrials.analyze.sequential), the DAG's side (mcptrials.dag.waves) and the cost
of the waves (mcptrials.analyze.wave_cost), without Snakemake: the scores are made up."""

import json

import pytest

from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from mcptrials.analyze import sequential, wave_cost
from mcptrials.analyze.sequential import decide_wave, paired_values, ran_keys, wave_keys, wave_path
from mcptrials.dag.waves import planned_keys, waves_line
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError

TOOLS = {"baseline": {"transport": "none"}, **{t: faulty_tool() for t in ("good", "same", "bad")}}
WAVES = {"min": 2, "max": 8, "until": "decided"}
SCENARIOS = {f"s{i}": SCENARIO for i in range(4)}
EFFECT = {"baseline": 0.0, "good": 0.5, "same": 0.0, "bad": -0.5}


def project(tmp_path, trials=WAVES, **extra):
    write_matrix(tmp_path, tools=TOOLS, scenarios=SCENARIOS, extra={"trials": trials, **extra})
    return load_matrix(tmp_path / "config.yaml")


def fake_scores(monkeypatch, effect=EFFECT, missing=()):
    """fairness_table made up: 0.4 + the tool's effect, for every trial asked (None for `missing`)."""

    def table(m, results, keys):
        out = {}
        for k in keys:
            value = None if (k.tool, k.scenario, k.trial) in missing else 0.4 + effect[k.tool]
            out.setdefault(k.host, {})[k.tool, k.scenario, k.trial] = value
        return out

    monkeypatch.setattr(sequential, "fairness_table", table)


def run_waves(m, results, model="reference"):
    """Decide wave after wave, as the checkpoints do, until the record is done."""
    wave = 1
    while True:
        rec = decide_wave(m, results, model, wave)
        wave_path(results, model, wave).parent.mkdir(parents=True, exist_ok=True)
        wave_path(results, model, wave).write_text(json.dumps(rec))
        if rec["done"]:
            return rec
        wave += 1


def test_the_config_takes_waves_and_refuses_what_cannot_run(tmp_path):
    m = project(tmp_path)
    assert m.sequential == WAVES and m.trials == 8 and m.config["decide"] == {"alpha": 0.05}
    assert sequential.settings(m) == (0.05, 0.05)  # the top-level margin's default
    m2 = project(tmp_path / "b", decide={"margin": 0.1})
    assert sequential.settings(m2) == (0.05, 0.1)
    with pytest.raises(ConfigError, match="min 3 is above max 2"):
        project(tmp_path / "c", trials={"min": 3, "max": 2, "until": "decided"})
    with pytest.raises(ConfigError, match="field trials"):
        project(tmp_path / "d", trials={"min": 2, "until": "decided"})
    write_matrix(tmp_path / "e", extra={"trials": WAVES}, tools={"echo": faulty_tool()})
    with pytest.raises(ConfigError, match="against the baseline"):
        load_matrix(tmp_path / "e" / "config.yaml")
    assert project(tmp_path / "f", trials=3).sequential is None  # a number keeps its meaning


def test_paired_values_leave_out_a_trial_number_with_a_missing_pair():
    scores = {(t, s, k): 0.5 for t in ("a", "baseline") for s in ("x", "y") for k in (1, 2, 3)}
    scores["a", "y", 2] = None
    values, used, skipped = paired_values(scores, "a", "baseline", ["x", "y"], range(1, 4))
    assert values == [0.0] * 4 and used == [1, 3] and skipped == [2]


def test_waves_stop_the_clear_tools_and_run_the_equal_one_to_max(tmp_path, monkeypatch):
    m = project(tmp_path)
    fake_scores(monkeypatch)
    results = tmp_path / "results"
    first = decide_wave(m, results, "reference", 1)
    assert first["trials"] == [1, 2] and not first["done"]
    assert {e["tool"]: e["state"] for e in first["tools"]} == {"good": "running", "same": "running", "bad": "running"}
    assert first["next"] == {"loop": ["good", "same", "bad", "baseline"]}
    last = run_waves(m, results)
    by = {e["tool"]: e for e in last["tools"]}
    # constant differences of +/-0.5 over 4 scenarios: decided at trial 4 (the hand-checked case
    # of stats.sequential: [+0.288, +0.580] after 8 trials); the equal tool runs to max
    assert (by["good"]["state"], by["good"]["decision"], by["good"]["trials"]) == ("decided", "better", 4)
    assert (by["bad"]["state"], by["bad"]["decision"], by["bad"]["trials"]) == ("decided", "worse", 4)
    assert (by["same"]["state"], by["same"]["decision"], by["same"]["trials"]) == ("max", "undecided", 8)
    assert last["wave"] == 7 and last["baseline_trials"] == {"loop": 8}
    # the trials the waves ran: 4 of good and bad, 8 of same and the baseline, per scenario
    ran = ran_keys(m, results)
    count = {t: sum(1 for k in ran if k.tool == t) for t in TOOLS}
    assert count == {"baseline": 32, "good": 16, "same": 32, "bad": 16}
    assert planned_keys(m, results) == ran  # nothing more is planned
    assert "done after 7 wave(s)" in waves_line(m, results)


def test_the_summary_says_where_each_tool_stopped_in_typed_rows(tmp_path, monkeypatch):
    """summary.json `sequential` after the waves above: a row per tool and one for the baseline,
    each with the keys core.rows declares (SequentialRow, SequentialSummary), and what was not
    spent: (max 8 - trials) x 4 scenarios, at no cost for the reference model."""
    from mcptrials.core.rows import SequentialRow, SequentialSummary

    m = project(tmp_path)
    fake_scores(monkeypatch)
    run_waves(m, tmp_path / "results")
    seq = sequential.sequential_summary(m, tmp_path / "results")
    assert set(seq) == set(SequentialSummary.__annotations__)
    for r in seq["tools"]:
        assert SequentialRow.__required_keys__ <= set(r) <= set(SequentialRow.__annotations__), r["tool"]
    by = {r["tool"]: r for r in seq["tools"]}
    good, base = by["good"], by["baseline"]
    assert (good["stopped"], good["waves"], good["trials"], good["unspent_trials"]) == ("decided: better", 3, 4, 16)
    assert (by["same"]["stopped"], by["same"]["unspent_trials"]) == ("max", 0)
    assert (base["stopped"], base["waves"], base["trials"], base["lo"]) == ("with its last tool", 7, 8, None)
    assert "decision" not in base and good["model_name"] == "reference"
    assert seq["unspent_trials"] == 16 + 16 and seq["unspent_usd"] == 0.0


def test_a_wave_with_a_missing_pair_decides_on_the_others(tmp_path, monkeypatch):
    m = project(tmp_path)
    fake_scores(monkeypatch, missing={("good", "s1", 3)})
    rec = decide_wave(m, tmp_path / "results", "reference", 1)
    (tmp_path / "results" / "sequential" / "reference").mkdir(parents=True)
    wave_path(tmp_path / "results", "reference", 1).write_text(json.dumps(rec))
    rec2 = decide_wave(m, tmp_path / "results", "reference", 2)
    good = next(e for e in rec2["tools"] if e["tool"] == "good")
    assert good["skipped_trials"] == [3] and good["trials_used"] == 2


def test_the_next_wave_is_planned_from_the_record_and_the_plan_says_so(tmp_path, monkeypatch):
    m = project(tmp_path)
    results = tmp_path / "results"
    assert len(planned_keys(m, results)) == 4 * 4 * 2  # wave 1: every cell, trials 1 and 2
    assert "wave 1 of at most 7 planned (32 trial(s), trial 1-2 of their cells), 3 tool(s) undecided" in waves_line(
        m, results
    )
    fake_scores(monkeypatch, effect={"baseline": 0.0, "good": 0.5, "same": 0.0, "bad": 0.0})
    rec = decide_wave(m, results, "reference", 1)
    wave_path(results, "reference", 1).parent.mkdir(parents=True)
    wave_path(results, "reference", 1).write_text(json.dumps(rec))
    wave2 = wave_keys(m, "reference", 2, rec)
    assert {k.trial for k in wave2} == {3} and {k.tool for k in wave2} == {"good", "same", "bad", "baseline"}
    assert len(planned_keys(m, results)) == 32 + 16


def test_the_budget_stops_the_waves_before_a_wave_that_does_not_fit(tmp_path, monkeypatch):
    m = project(tmp_path, budget={"max_cost_usd": 1.0})
    fake_scores(monkeypatch)
    monkeypatch.setattr(sequential, "wave_cost", lambda m, results, model, plan: 0.6)
    (tmp_path / "results" / "budget").mkdir(parents=True)
    ledger = tmp_path / "results" / "budget" / "ledger.jsonl"
    ledger.write_text(json.dumps({"trial": "x", "cost_usd": 0.5}) + "\n")
    rec = decide_wave(m, tmp_path / "results", "reference", 1)
    assert rec["done"] and rec["next"] == {}
    assert {e["state"] for e in rec["tools"]} == {"budget"}
    assert rec["budget"] == {"cap": 1.0, "spent": 0.5, "next_wave_usd": 0.6, "fits": False}


def test_a_decision_for_a_wave_that_cannot_be_is_refused(tmp_path):
    m = project(tmp_path)
    with pytest.raises(ConfigError, match="waves 1 to 7"):
        decide_wave(m, tmp_path / "results", "reference", 8)
    with pytest.raises(ConfigError, match="no wave 1 to follow"):
        decide_wave(m, tmp_path / "results", "reference", 2)
    with pytest.raises(ConfigError, match="not finished"):
        ran_keys(m, tmp_path / "results")


def test_the_cost_of_the_waves_least_expected_most(tmp_path, monkeypatch):
    m = project(tmp_path)
    c = wave_cost.wave_costs(m, tmp_path / "results")
    # the reference model is free; 4 tools x 4 scenarios: 32 trials at least, 128 at most
    assert (c["least"], c["most"], c["trials_least"], c["trials_most"]) == (0.0, 0.0, 32, 128)
    assert c["expected"] is None and c["basis"].startswith("none: ")
    # a history of 2 trials per cell with constant differences: the replays stop good and bad at
    # trial 4 (as above) and run same and the baseline to 8: 4 x (4 + 8 + 4 + 8) = 96 trials
    monkeypatch.setattr(wave_cost, "history_keys", lambda m, results: [k for k in m.cells() if k.trial <= 2])
    fake_scores(monkeypatch)
    monkeypatch.setattr(wave_cost, "fairness_table", sequential.fairness_table)
    c = wave_cost.wave_costs(m, tmp_path / "results")
    assert c["trials_expected"] == 96 and c["expected"] == 0.0
    assert "expected $0 (96 trials; the decisions replayed 200 times" in wave_cost.wave_cost_line(
        m, tmp_path / "results"
    )


def test_the_budget_check_before_the_run_reserves_the_first_wave_not_max(tmp_path):
    # A paid model with no history: each trial at its upper bound, 1 step x 20 turns x
    # (200,000 input tokens x 3.75 + 4,096 output x 15) / 1e6 = $16.2288. Wave 1 is 4 tools x 4
    # scenarios x 2 trials = 32 trials, $519.32; all 8 trials would be 128, $2,077.29.
    from mcptrials.dag.preflight import check_budget

    paid = {
        "models": {"claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"}},
        "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
    }
    m = project(tmp_path, budget={"max_cost_usd": 600}, **paid)
    assert check_budget(m, tmp_path / "results") == []
    m = project(tmp_path / "b", budget={"max_cost_usd": 500}, **paid)
    (refusal,) = check_budget(m, tmp_path / "b" / "results")
    assert "$519.32" in refusal and "32 trial(s)" in refusal
    m = project(tmp_path / "c", trials=8, budget={"max_cost_usd": 600}, **paid)
    assert "128 trial(s)" in check_budget(m, tmp_path / "c" / "results")[0]
