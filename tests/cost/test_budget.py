"""The budget (mcptrials.cost.budget, dag.preflight.check_budget) through the real workflow and the fake
Messages API: a budget below the estimate refuses the run before any job; a ledger that reaches
the budget stops the trials that have not started (outcome not_run, "budget: spent $S of $X"),
which the aggregate counts as missing; a larger budget picks them up; the ledger under
concurrent appends of two processes stays whole."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import write_matrix
from mcptrials.cost.budget import Ledger, gate, ledger_path, results_dir_of, stop_detail
from workflow_helpers import MessagesServer, copy_workflow, run_snakemake, workflow_env

PRICE = {"input": 3.0, "output": 15.0}


def test_results_dir_and_gate(tmp_path):
    out = tmp_path / "results" / "runs" / "m" / "loop" / "t" / "r" / "s" / "1" / "transcript.json"
    assert results_dir_of(out) == tmp_path / "results"
    assert results_dir_of(tmp_path / "x" / "transcript.json") == tmp_path / "x"
    cfg = {"budget": {"max_cost_usd": 0.5}}
    assert gate({"budget": {}}, "anthropic", out) == (None, None, None)  # no budget: no ledger
    assert gate(cfg, "reference", out) == (None, None, None)  # spends nothing: never stopped
    ledger, rid, stopped = gate(cfg, "anthropic", out, "x", 0.0)
    assert ledger.path == ledger_path(tmp_path / "results") and stopped is None and rid
    ledger.append({"trial": "x", "cost_usd": 0.0, "settles": rid})
    ledger.append({"trial": "a", "cost_usd": 0.25})
    ledger.append({"trial": "b", "cost_usd": 0.25})
    assert (
        gate(cfg, "anthropic", out, "c", 0.01)[2]
        == stop_detail(0.5, 0.5, 0, 0.01)
        == "budget: spent $0.5000 of $0.5000; this trial may cost up to $0.0100"
    )


def test_reservations_by_hand(tmp_path):
    """cap 1.0: 0.3 spent; trial t1 reserves 0.4 (0.7 committed), t2 asking 0.4 is refused
    (0.3 + 0.4 + 0.4 = 1.1 > 1.0) while t2 asking 0.3 fits exactly; settling t1 at 0.1 frees 0.3;
    a rerun of t1 replaces its own older reservation; a dead process's reservation is void."""
    led = Ledger(tmp_path / "ledger.jsonl")
    led.append({"trial": "old", "cost_usd": 0.3})
    r1, why = led.reserve("t1", 0.4, 1.0)
    assert r1 and why is None and led.total() == pytest.approx(0.7) and led.reserved() == pytest.approx(0.4)
    assert led.reserve("t2", 0.4, 1.0) == (
        None,
        "budget: spent $0.3000, reserved $0.4000 by trials in flight, of $1.0000; this trial may cost up to $0.4000",
    )
    r2, _ = led.reserve("t2", 0.3, 1.0)
    assert r2 and led.total() == pytest.approx(1.0)
    led.append({"trial": "t1", "cost_usd": 0.1, "settles": r1})
    assert led.spent() == pytest.approx(0.4) and led.reserved() == pytest.approx(0.3)
    # t2 rerun (its first attempt died): its new reservation replaces the old one
    r3, _ = led.reserve("t2", 0.5, 1.0)
    assert r3 and led.reserved() == pytest.approx(0.5)
    # a reservation of a process that is gone (on this machine) no longer counts
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    led.append({"kind": "reserve", "id": "zz", "trial": "t9", "reserve_usd": 5.0, "pid": int(dead.stdout)})
    assert led.reserved() == pytest.approx(0.5)


APPENDER = textwrap.dedent("""
    import sys
    from mcptrials.cost.budget import Ledger
    ledger, who, n = Ledger(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    totals = []
    for i in range(n):
        ledger.append({"trial": f"{who}/{i}", "cost_usd": 0.001, "filler": "x" * 5000})
        totals.append(ledger.total())
    # what this process read never went down, and always counted its own lines
    assert all(b >= a for a, b in zip(totals, totals[1:])), totals
    assert all(t >= 0.001 * (i + 1) - 1e-9 for i, t in enumerate(totals))
""")


def test_ledger_stays_whole_under_concurrent_appends(tmp_path):
    path = tmp_path / "results" / "budget" / "ledger.jsonl"
    n = 150
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), who, str(n)]) for who in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    lines = path.read_text().splitlines()
    assert len(lines) == 2 * n
    recs = [json.loads(line) for line in lines]  # every line whole (5 kB each, no interleaving)
    for who in ("a", "b"):
        assert [r["trial"] for r in recs if r["trial"].startswith(who)] == [f"{who}/{i}" for i in range(n)]
    assert Ledger(path).total() == pytest.approx(0.001 * 2 * n)


def test_a_torn_last_line_is_skipped(tmp_path):
    path = tmp_path / "ledger.jsonl"
    Ledger(path).append({"trial": "a", "cost_usd": 0.5})
    with open(path, "a") as f:
        f.write('{"trial": "b", "cost_')
    assert Ledger(path).total() == 0.5


# --- the real workflow ---------------------------------------------------------------------


def claude_project(wd, url, trials, budget=None):
    extra = {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": url, "max_retries": 0}
        },
        "limits": {"max_turns": 2, "max_output_tokens": 200},
        "pricing": {"claude-sonnet-4-6": PRICE},
        "budget": dict({"input_tokens_per_call": 1000}, **(budget or {})),
    }
    write_matrix(wd, trials=trials, extra=extra)
    copy_workflow(wd)


def set_budget(wd, **budget):
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["budget"].update(budget)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


def run_pilot(wd):
    """`mcptrials pilot`: trial 1 of every cell, nothing downstream."""
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "pilot",
            "--config",
            "config.yaml",
            "--",
            "-j",
            "1",
            "--scheduler",
            "greedy",
        ],
        cwd=wd,
        capture_output=True,
        text=True,
        env=workflow_env(wd),
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]


ANSWER = "`helper` is defined at `src/util.py:1`; it returns x * 2."


@pytest.mark.slow
def test_a_budget_below_the_estimate_refuses_the_run_before_any_job(tmp_path):
    wd = tmp_path / "project"
    wd.mkdir()
    # no history: each trial at its upper bound, 1 step x 2 turns x (1,000 x 3.75 + 200 x 15) / 1e6
    # = $0.0135; 2 trials = $0.027 > $0.02
    claude_project(wd, "http://127.0.0.1:9", trials=2, budget={"max_cost_usd": 0.02})
    dry = run_snakemake(wd, "-n")
    assert "expected cost $0.0270 (upper bound $0.0270; 1 cell(s) with no history" in dry.stderr
    p = run_snakemake(wd, "-j", "1", check=False)
    assert p.returncode != 0
    assert "field budget.max_cost_usd: this run is expected to cost $0.0270" in p.stderr
    assert "above the budget of $0.02" in p.stderr and "mcptrials pilot" in p.stderr
    assert not (wd / "results" / "runs").exists() and not (wd / "results" / "checkouts").exists()
    v = subprocess.run(
        [sys.executable, "-m", "mcptrials.cli", "validate", "--config", "config.yaml"],
        cwd=wd,
        capture_output=True,
        text=True,
        env=workflow_env(wd),
    )
    assert v.returncode == 2 and "$0.0270" in v.stderr


@pytest.mark.slow
def test_a_small_budget_stops_a_run_mid_way_and_a_larger_one_picks_it_up(tmp_path):
    # The pilot's trial is cheap: one reply, 100 input + 10 output tokens = $0.00045.
    # Every later trial: a tool call and an answer, each 1,000 input tokens written to the cache
    # (x 3.75) and 90 output: 2 x (0.00375 + 0.00135) = $0.0102 (its upper bound, 1 step x 2
    # turns of 1,000 input and 200 output tokens, is $0.0135).
    cheap = reply(text(ANSWER), usage={"input_tokens": 100, "output_tokens": 10})
    dear = {"input_tokens": 0, "cache_creation_input_tokens": 1000, "output_tokens": 90}
    call = reply(text("Searching."), tool_use("grep", {"pattern": "def helper"}), usage=dear)
    answer = reply(text(ANSWER), usage=dear)
    api = MessagesServer(tmp_path / "api", [cheap, call, answer, call, answer], "--exhausted", "repeat")
    try:
        wd = tmp_path / "project"
        wd.mkdir()
        claude_project(wd, api.url, trials=3)
        # the pilot: trial 1 of the one cell, nothing downstream
        run_pilot(wd)
        runs = wd / "results" / "runs" / "claude" / "loop" / "baseline" / "tiny" / "find-helper"
        assert sorted(d.name for d in runs.iterdir()) == ["1"]
        assert not (wd / "results" / "aggregate").exists()
        plan = subprocess.run(
            [sys.executable, "-m", "mcptrials.cli", "plan", "--cost", "--config", "config.yaml"],
            cwd=wd,
            capture_output=True,
            text=True,
            env=workflow_env(wd),
        )
        assert "measured: 1 earlier trial(s)" in plan.stdout and "$0.0014" in plan.stdout, (
            plan.stdout
        )  # 3 x 0.00045 = 0.00135

        # the run under $0.015: expected 2 x 0.00045, so it starts; the first of trials 2 and 3
        # (one by one, -j1) reserves its upper bound $0.0135 (0.00045 + 0.0135 <= 0.015) and spends
        # $0.0102; the other's bound no longer fits ($0.0102 spent + $0.0135 > $0.015): not run
        set_budget(wd, max_cost_usd=0.015)
        run_snakemake(wd, "-j", "1")
        outcomes = {k: json.loads((runs / str(k) / "transcript.json").read_text()) for k in (2, 3)}
        stopped = [t for t in outcomes.values() if t["outcome"] == "not_run"]
        assert sorted(t["outcome"] for t in outcomes.values()) == ["completed", "not_run"]
        assert stopped[0]["outcome_detail"] == "budget: spent $0.0102 of $0.0150; this trial may cost up to $0.0135"
        assert stopped[0]["usage"]["api_calls"] == 0
        lines = [json.loads(x) for x in (wd / "results" / "budget" / "ledger.jsonl").read_text().splitlines()]
        reserved = [x for x in lines if x.get("kind") == "reserve"]
        ledger = [x for x in lines if x.get("kind") != "reserve"]
        assert len(reserved) == 1 and reserved[0]["reserve_usd"] == pytest.approx(
            0.0135
        )  # the stopped one reserved nothing
        assert (
            len(ledger) == 1
            and ledger[0]["cost_usd"] == pytest.approx(0.0102)
            and ledger[0]["settles"] == reserved[0]["id"]
        )
        assert ledger[0]["trial"].startswith("claude/loop/baseline/tiny/find-helper/")
        assert len(api.requests()) == 3  # the pilot's 1 and one trial's 2: the stopped one called nothing
        rows = list(csv.DictReader(open(wd / "results" / "aggregate" / "trials.csv")))
        missing = [r for r in rows if r["missing"] == "True"]
        assert len(rows) == 3 and len(missing) == 1 and missing[0]["missing_reason"].startswith("not_run: budget")
        report = (wd / "results" / "report" / "report.md").read_text()
        assert "not_run: budget" in report

        # the same budget again: spent $0.0102 + the stopped trial's expected cost is above it,
        # so the retry is refused before any job (no not_run attempt after not_run attempt)
        again = run_snakemake(wd, "-j", "1", check=False)
        assert again.returncode != 0 and "already spent" in again.stderr and "$0.0102" in again.stderr
        assert len(api.requests()) == 3

        # a larger budget: the plan fits, and the next invocation runs exactly the stopped trial
        set_budget(wd, max_cost_usd=1.0)
        run_snakemake(wd, "-j", "1")
        assert all(
            json.loads((runs / str(k) / "transcript.json").read_text())["outcome"] == "completed" for k in (1, 2, 3)
        )
        assert len(api.requests()) == 5
        rows = list(csv.DictReader(open(wd / "results" / "aggregate" / "trials.csv")))
        assert [r["missing"] for r in rows] == ["False"] * 3
    finally:
        api.stop()


@pytest.mark.slow
def test_concurrent_trials_cannot_pass_the_cap_together(tmp_path):
    """-j 4, four trials at once, a cap that fits exactly three (issue 27 item 5).
    The pilot's trial costs $0.00045 (run before the budget is set: not in the ledger), so the plan
    (4 more trials expected at $0.00045) fits. Each later trial reserves its upper bound before it
    starts (1 step x 2 turns x (1,000 x 3.75 + 200 x 15) / 1e6 = $0.0135); the cap fits exactly three
    bounds (3 x 0.0135 = 0.0405 <= 0.04095 < 0.054), so the fourth is not run. The fake API holds
    every reply until the test releases it, after the fourth trial has decided (its not_run
    transcript exists), so no trial settles before all four have asked: the outcome never depends
    on the machine's speed. Each released reply (1,000 cache-write + 200 output tokens, the whole
    output budget: budget_exceeded) costs $0.00675. Without reservations all four would call the
    API; the wait for a not_run trial would end at its bound and four trials would run."""
    release = tmp_path / "release"
    cheap = reply(text(ANSWER), usage={"input_tokens": 100, "output_tokens": 10})
    dear = dict(
        reply(
            text("Searching."),
            tool_use("grep", {"pattern": "def helper"}),
            usage={"input_tokens": 0, "cache_creation_input_tokens": 1000, "output_tokens": 200},
        ),
        hold_until=str(release),
    )
    api = MessagesServer(tmp_path / "api", [cheap, dear], "--exhausted", "repeat")
    try:
        wd = tmp_path / "project"
        wd.mkdir()
        claude_project(wd, api.url, trials=5)
        run_pilot(wd)
        cap = 0.00045 + 3 * 0.0135
        set_budget(wd, max_cost_usd=cap)
        runs = wd / "results" / "runs" / "claude" / "loop" / "baseline" / "tiny" / "find-helper"
        from workflow_helpers import snakemake_cmd

        run = subprocess.Popen(
            snakemake_cmd(wd, "-j", "4"),
            env=workflow_env(wd),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        decided = False
        for _ in range(1200):  # at most 120 s: every trial has reserved or been refused
            done = [json.loads(p.read_text()) for p in runs.glob("[2-5]/transcript.json")]
            if any(t["outcome"] == "not_run" for t in done):
                decided = True
                break
            if run.poll() is not None:
                break
            time.sleep(0.1)
        release.touch()
        out, _ = run.communicate(timeout=600)
        assert run.returncode == 0, out[-3000:]
        assert decided, "no trial was refused while the others were in flight"
        trials = {k: json.loads((runs / str(k) / "transcript.json").read_text()) for k in range(2, 6)}
        assert sorted(t["outcome"] for t in trials.values()) == ["budget_exceeded"] * 3 + ["not_run"]
        ledger = Ledger(wd / "results" / "budget" / "ledger.jsonl")
        assert ledger.spent() == pytest.approx(3 * 0.00675) and ledger.reserved() == 0
        assert len([r for r in ledger.records() if r.get("kind") == "reserve"]) == 3
        stopped = next(t for t in trials.values() if t["outcome"] == "not_run")
        assert stopped["outcome_detail"] == (
            "budget: spent $0.0000, reserved $0.0405 by trials in flight, of $0.0410; this trial may cost up to $0.0135"
        )
    finally:
        api.stop()


@pytest.mark.slow
def test_a_paid_judge_is_planned_reserved_and_settled(tmp_path):
    """A model judge (the same fake Messages API) under a budget: `plan --cost` shows its part apart,
    the trial reserves its own bound plus its judging's, keeps the judging's part reserved when it
    ends, and `mcptrials judge` settles it; nothing stays reserved and the spend is both costs.
    Bounds: the trial 1 step x 2 turns x (1,000 x 3.75 + 200 x 15) / 1e6 = $0.0135; the judge
    1 step x 1 repeat x (1,000 x 3.75 + 2,048 x 15) / 1e6 = $0.03447."""
    judged = json.dumps(
        {
            "criteria": [
                {"name": "map_quality", "score": 1, "rationale": "names util.py"},
                {"name": "specificity", "score": 0.5, "rationale": "says it doubles"},
            ]
        }
    )
    answer = reply(text(ANSWER), usage={"input_tokens": 100, "output_tokens": 10})  # $0.00045
    judge = reply(text(judged), usage={"input_tokens": 1000, "output_tokens": 100})  # $0.0045
    api = MessagesServer(tmp_path / "api", [answer, judge])
    try:
        wd = tmp_path / "project"
        wd.mkdir()
        claude_project(wd, api.url, trials=1, budget={"max_cost_usd": 1.0})
        cfg = yaml.safe_load((wd / "config.yaml").read_text())
        cfg["judge"] = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "repeats": 1}
        (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        plan = subprocess.run(
            [sys.executable, "-m", "mcptrials.cli", "plan", "--cost", "--config", "config.yaml"],
            cwd=wd,
            capture_output=True,
            text=True,
            env=workflow_env(wd),
        )
        assert plan.returncode == 0, plan.stderr
        row = next(ln for ln in plan.stdout.splitlines() if ln.startswith("claude"))
        assert "$0.0480" in row and "$0.0345" in row, plan.stdout  # 0.0135 + 0.03447 expected, of which judge
        run_snakemake(wd, "-j", "1")
        ledger = Ledger(wd / "results" / "budget" / "ledger.jsonl")
        recs = ledger.records()
        reserves = [r for r in recs if r.get("kind") == "reserve"]
        assert [round(r["reserve_usd"], 5) for r in reserves] == [0.04797, 0.03447]
        assert reserves[1]["trial"].endswith("/judge")
        settles = [r for r in recs if r.get("settles")]
        assert [r["settles"] for r in settles] == [reserves[0]["id"], reserves[1]["id"]]
        assert ledger.reserved() == 0
        assert ledger.spent() == pytest.approx(0.00045 + 0.0045)
        assert len(api.requests()) == 2
    finally:
        api.stop()
