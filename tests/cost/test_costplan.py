"""The cost plan (mcptrials.cost.plan): the upper bound by hand, the expected cost from measured
usage at today's pricing, "no history" at the upper bound, free models, the budget's refusal
before a run (dag.preflight.check_budget), `mcptrials plan --cost` and the pilot's command."""

from __future__ import annotations

import json

import pytest

from matrix_helpers import write_matrix
from mcptrials.cost.budget import Ledger, ledger_path
from mcptrials.cli import main
from mcptrials.dag.preflight import check_budget
from mcptrials.matrix.config import load_matrix
from mcptrials.cli.cost import pilot_command
from mcptrials.cost.plan import cost_plan, format_plan, plan_line, upper_bound_usd

PRICE = {"input": 3.0, "output": 15.0}  # cache_write defaults to 3.75, cache_read to 0.30


def test_upper_bound_hand_computed():
    # 2 steps x 3 turns = 6 calls; each reads 10,000 input tokens at the dearest input rate
    # (cache write, 1.25 x 3 = 3.75) and writes 1,000 output tokens at 15:
    # 6 x (10,000 x 3.75 + 1,000 x 15) / 1e6 = 6 x 52,500 / 1e6 = 0.315
    assert upper_bound_usd(PRICE, 2, 3, 1000, 10_000) == pytest.approx(0.315)
    # the model's max_tokens (500) caps each reply below the step's 1,000: 6 x (37,500 + 7,500) / 1e6
    assert upper_bound_usd(PRICE, 2, 3, 1000, 10_000, max_tokens=500) == pytest.approx(0.27)
    # a max_tokens above the limit does not raise it
    assert upper_bound_usd(PRICE, 2, 3, 1000, 10_000, max_tokens=8000) == pytest.approx(0.315)
    # explicit cache prices no dearer than input: input's 3.0 is the dearest: 6 x (30,000 + 15,000) / 1e6
    assert upper_bound_usd(dict(PRICE, cache_write=3.0, cache_read=0.3), 2, 3, 1000, 10_000) == pytest.approx(0.27)


def project(tmp_path, budget=None, pricing=True, trials=2):
    extra = {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
            "reference": {"provider": "reference"},
        },
        "limits": {"max_turns": 3, "max_output_tokens": 1000},
        "budget": dict({"input_tokens_per_call": 10_000}, **(budget or {})),
    }
    if pricing:
        extra["pricing"] = {"claude-sonnet-4-6": PRICE}
    return write_matrix(tmp_path, trials=trials, extra=extra)


# one step, 3 turns x (10,000 x 3.75 + 1,000 x 15) / 1e6 = 0.1575 a trial
UB_TRIAL = 3 * (10_000 * 3.75 + 1_000 * 15) / 1e6


def transcript(trial, outcome="completed", input_tokens=1000, output_tokens=100, model_id="claude-sonnet-4-6"):
    return {
        "cell": {
            "model": "claude",
            "host": "loop",
            "tool": "baseline",
            "repo": "tiny",
            "scenario": "find-helper",
            "trial": trial,
        },
        "model_id": model_id,
        "outcome": outcome,
        "outcome_detail": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cost_usd": 99.0,
        },
    }


def put(results, t):
    d = results / "runs" / "claude" / "loop" / "baseline" / "tiny" / "find-helper" / str(t["cell"]["trial"])
    d.mkdir(parents=True, exist_ok=True)
    (d / "transcript.json").write_text(json.dumps(t))


def by_model(plan):
    return {c.model: c for c in plan.cells}


def test_no_history_is_expected_at_the_upper_bound_and_reference_is_free(tmp_path):
    m = load_matrix(project(tmp_path))
    plan = cost_plan(m, tmp_path / "results")
    c = by_model(plan)
    assert c["claude"].basis == "no history" and c["claude"].upper_per_trial == pytest.approx(UB_TRIAL)
    assert c["claude"].expected == pytest.approx(2 * UB_TRIAL) == pytest.approx(c["claude"].upper)
    assert c["reference"].basis == "free" and c["reference"].expected == 0 and c["reference"].upper == 0
    assert plan.expected == pytest.approx(0.315) and plan.to_run == 4 and plan.to_spend == pytest.approx(0.315)
    text = format_plan(plan)
    assert "no history: upper bound for 1 of 1 scenario(s)" in text and "free (no model call)" in text
    assert "$0.3150" in text
    assert plan_line(plan).startswith("expected cost $0.3150 (upper bound $0.3150; 1 cell(s) with no history")


def test_history_is_priced_at_todays_pricing_and_not_run_is_left_out(tmp_path):
    cfg = project(tmp_path)
    results = tmp_path / "results"
    put(results, transcript(1))  # (1000 x 3 + 100 x 15) / 1e6 = 0.0045, not its cost_usd 99
    put(results, transcript(2, outcome="not_run", input_tokens=0, output_tokens=0))
    c = by_model(cost_plan(load_matrix(cfg), results))["claude"]
    assert c.basis == "history" and c.measured == 1
    assert c.per_trial == pytest.approx(0.0045) and c.expected == pytest.approx(0.009)
    assert c.to_run == 1 and c.to_spend == pytest.approx(0.0045)  # trial 2 (not_run) is still to run
    # today's pricing, not the one the trial ran with
    data = cfg.read_text().replace("input: 3.0", "input: 6.0")
    cfg.write_text(data)
    c = by_model(cost_plan(load_matrix(cfg), results))["claude"]
    assert c.per_trial == pytest.approx((1000 * 6 + 100 * 15) / 1e6)


def test_budget_refuses_a_run_above_it_with_both_figures_and_the_fix(tmp_path):
    results = tmp_path / "results"
    m = load_matrix(project(tmp_path, budget={"max_cost_usd": 0.1}))
    [msg] = check_budget(m, results)
    assert "field budget.max_cost_usd" in msg and "$0.3150" in msg and "$0.10" in msg
    assert "no history" in msg and "mcptrials pilot" in msg and "at least 0.32" in msg
    assert check_budget(load_matrix(project(tmp_path / "b", budget={"max_cost_usd": 0.5})), results) == []
    assert check_budget(load_matrix(project(tmp_path / "c")), results) == []  # no budget: no check


def test_budget_counts_what_the_ledger_has_spent(tmp_path):
    results = tmp_path / "results"
    cfg = project(tmp_path, budget={"max_cost_usd": 0.006})
    put(results, transcript(1))  # measured 0.0045 a trial; trial 2 still to run
    assert check_budget(load_matrix(cfg), results) == []
    Ledger(ledger_path(results)).append({"trial": "x", "cost_usd": 0.004})  # 0.004 + 0.0045 > 0.006
    [msg] = check_budget(load_matrix(cfg), results)
    assert "$0.0085" in msg and "already spent" in msg and "$0.0040" in msg


def test_budget_without_a_price_is_refused(tmp_path):
    m = load_matrix(project(tmp_path, budget={"max_cost_usd": 1}, pricing=False))
    [msg] = check_budget(m, tmp_path / "results")
    assert "claude" in msg and "`pricing` entry" in msg
    assert by_model(cost_plan(m, tmp_path / "results"))["claude"].expected is None


def test_plan_cost_command(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = project(tmp_path, budget={"max_cost_usd": 0.1})
    assert main(["plan", "--cost", "--config", str(cfg), "--results", str(tmp_path / "results")]) == 0
    out = capsys.readouterr().out
    assert "= 4 trials" in out and "total" in out and "$0.3150" in out and "budget: max_cost_usd $0.10" in out
    assert main(["validate", "--config", str(cfg)]) == 2  # validate refuses it too (from the cwd's results/: none)
    assert "budget.max_cost_usd" in capsys.readouterr().err


def test_pilot_runs_trial_1_of_every_cell_through_an_overlay(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cmd = pilot_command("config.yaml", tmp_path / "results", ["-j", "2"])
    overlay = tmp_path / "results" / "budget" / "pilot.yaml"
    assert cmd[cmd.index("--configfile") + 1 : cmd.index("--until")] == ["config.yaml", str(overlay)]
    assert cmd[cmd.index("--until") + 1] == "transcript" and cmd[-2:] == ["-j", "2"]
    import yaml

    assert yaml.safe_load(overlay.read_text()) == {"trials": 1}


def test_judge_bound_and_floor_by_hand():
    from mcptrials.cost.plan import floor_usd, judge_upper_bound_usd

    # 2 steps x 3 repeats x (10,000 x 3.75 + 2,048 x 15) / 1e6 = 6 x 68,220 / 1e6
    assert judge_upper_bound_usd(PRICE, 2, 3, 10_000) == pytest.approx(0.40932)
    # 2 steps x 3,000 tokens x 3 / 1e6
    assert floor_usd(PRICE, 2, 3000) == pytest.approx(0.018)


def judged(trial, input_tokens=2000, output_tokens=200):
    return {
        "judge": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 1,
        },
    }


def test_a_paid_judge_is_planned_apart(tmp_path):
    cfg = project(tmp_path)
    data = load_matrix(cfg).config
    judge = {"provider": "anthropic", "model": "claude-sonnet-4-6", "repeats": 2}
    text = cfg.read_text() + "judge: " + json.dumps(judge) + "\n"
    cfg.write_text(text)
    m = load_matrix(cfg)
    c = by_model(cost_plan(m, tmp_path / "results"))
    # no judged.json yet: 1 step x 2 repeats x (10,000 x 3.75 + 2,048 x 15) / 1e6 = 0.13644 a trial, for
    # every trial of every model (the reference model's answers are judged by the paid judge too)
    jb = 2 * (10_000 * 3.75 + 2_048 * 15) / 1e6
    assert c["claude"].judge_per_trial == pytest.approx(jb) and c["reference"].judge_per_trial == pytest.approx(jb)
    assert c["claude"].expected == pytest.approx(2 * (UB_TRIAL + jb)) and c["reference"].expected == pytest.approx(
        2 * jb
    )
    # one judged trial: its judge cost (2,000 x 3 + 200 x 15) / 1e6 = 0.009 is the cell's judge history
    results = tmp_path / "results"
    put(results, transcript(1))
    (results / "runs/claude/loop/baseline/tiny/find-helper/1/judged.json").write_text(json.dumps(judged(1)))
    c = by_model(cost_plan(m, results))["claude"]
    assert c.judge_per_trial == pytest.approx(0.009) and c.to_judge == 1 and c.judge_to_spend == pytest.approx(0.009)
    plan_text = format_plan(cost_plan(m, results))
    assert "of which judge" in plan_text
    assert data["judge"]["provider"] == "reference"  # the project's own default judge costs nothing


def test_a_plan_with_no_history_says_how_wide_it_is_and_points_to_the_pilot(tmp_path):
    text = format_plan(cost_plan(load_matrix(project(tmp_path)), tmp_path / "results"))
    line = next(ln for ln in text.splitlines() if ln.startswith("no history for 1 cell(s)"))
    assert "the least such a trial can cost" in line and "x that" in line and "`mcptrials pilot`" in line


def test_a_recorded_judge_costs_nothing_in_the_plan(tmp_path):
    """Judgements recorded elsewhere call no model: a run of recorded trials and judgements is
    planned at $0, not 'unknown' for want of a judge pricing entry."""
    from matrix_helpers import write_matrix
    from mcptrials.cost.plan import cost_plan, judge_bound
    from mcptrials.matrix.config import load_matrix

    write_matrix(tmp_path, extra={"judge": {"provider": "recorded", "path": "judged/{scenario}.json"}})
    m = load_matrix(str(tmp_path / "config.yaml"))
    assert judge_bound(m, "find-helper") == 0.0
    plan = cost_plan(m, tmp_path / "results")
    assert plan.expected == 0.0 and plan.upper == 0.0


def test_the_ablation_arms_are_planned_apart(tmp_path):
    from matrix_helpers import faulty_tool

    path = project(tmp_path)
    import yaml

    cfg = yaml.safe_load(path.read_text())
    cfg["tools"] = {"baseline": {"transport": "none"}, "faulty": faulty_tool(ablate={"leave_one_out": ["echo", "big"]})}
    path.write_text(yaml.safe_dump(cfg))
    plan = cost_plan(load_matrix(path), tmp_path / "results")
    assert plan.ablation == {"faulty-without-echo": "faulty", "faulty-without-big": "faulty"}
    line = next(ln for ln in format_plan(plan).splitlines() if ln.startswith("of which ablation"))
    # 2 arms x 1 scenario x 2 trials x 2 models = 8 trials; claude's 4 at the upper bound, reference free
    assert line.startswith("of which ablation of tools.faulty (2 arm(s)): 8 trial(s), expected $0.6300")
    assert 4 * UB_TRIAL == pytest.approx(0.63) and "still to run 8 ($0.6300)" in line


def test_the_confirmation_on_held_out_is_planned_apart(tmp_path):
    import yaml

    from matrix_helpers import faulty_tool

    path = project(tmp_path)
    cfg = yaml.safe_load(path.read_text())
    ablate = {"leave_one_out": ["echo", "big"], "confirm": ["faulty-without-echo"]}
    cfg["tools"] = {"baseline": {"transport": "none"}, "faulty": faulty_tool(ablate=ablate)}
    path.write_text(yaml.safe_dump(cfg))
    held = path.parent / "scenarios" / "held.yaml"
    sc = yaml.safe_load(next(p for p in held.parent.glob("*.yaml")).read_text())
    held.write_text(yaml.safe_dump(dict(sc, split="held-out")))
    lines = format_plan(cost_plan(load_matrix(path), tmp_path / "results")).splitlines()
    # baseline, faulty and the arm on 1 held-out scenario x 2 trials x 2 models = 12 trials
    line = next(ln for ln in lines if ln.startswith("of which the confirmation"))
    assert line.startswith("of which the confirmation on 1 held-out scenario(s) (3 tool(s)): 12 trial(s)")
    # the arms' own line counts their train trials only, as without confirm
    arms = next(ln for ln in lines if ln.startswith("of which ablation"))
    assert arms.startswith("of which ablation of tools.faulty (2 arm(s)): 8 trial(s), expected $0.6300")
