"""Recorded runs as a model (mcptrials.run.recorded): a recorded file per cell, converted by the
`claude-code` host's own parser into the same transcript.json as a live trial.

Material: tests/fixtures/recorded/cc-*.jsonl is the stream-json of the real Claude Code CLI
2.1.328 as tests/run/test_claude_code.py runs it (against tests/fakes/messages_api.py and the
real git server; the sandbox's paths replaced by /tmp/recorded-run), with the live host's
own records of the same run beside it (cc-git-two-steps.expected.json); the other streams
are written here by hand, one per result subtype."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
import yaml

from matrix_helpers import ROOT, SCENARIO, faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import check_api_keys, load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.scoring import score_trial
from mcptrials.judge.judging import judge_trial
from mcptrials.core.records import write_json
from mcptrials.run.recorded import read_stream, sessions
from mcptrials.dag.rerun import recorded_trials, rule_params
from mcptrials.run.runner import run_trial

FIX = ROOT / "tests" / "fixtures" / "recorded"
PATTERN = "recorded/{tool}/{repo}/{scenario}/{trial}.jsonl"
PRICING = {
    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0},
    "claude-opus-4-7": {"input": 5.0, "output": 25.0, "cache_write": 6.25, "cache_read": 0.5},
}

TWO_STEPS = dict(
    copy.deepcopy(SCENARIO),
    steps=[
        SCENARIO["steps"][0],
        {
            "name": "callers",
            "prompt": "Which function calls `helper`? Cite file:line.",
            "checks": [{"type": "word", "value": "main"}],
            "citations": {"gold": ["src/app.py:4-5"]},
            "key_points": ["main calls helper"],
        },
    ],
)
ONE = dict(copy.deepcopy(TWO_STEPS), one_answer=True)
ONE["steps"][1]["answer_key"] = "who_calls"


def project(
    tmp_path: Path, fmt: str = "claude-code-stream-json", pattern: str = PATTERN, scenarios=None, models=None
) -> tuple:
    models = models or {"rec": {"provider": "recorded", "format": fmt, "path": pattern}}
    cfg = write_matrix(
        tmp_path,
        tools={"baseline": {"transport": "none"}, "git": faulty_tool("ok")},
        scenarios=scenarios or {"two": TWO_STEPS, "one": ONE},
        extra={"models": models, "pricing": PRICING},
    )
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def place(tmp_path: Path, rel: str, src: Path | None = None, events: list | None = None) -> Path:
    dest = tmp_path / rel
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src is not None:
        shutil.copy(src, dest)
    else:
        dest.write_text("".join(json.dumps(e) + "\n" for e in events))
    return dest


# --- hand-written stream-json, in the shapes the CLI writes ---------------------------------

CWD = "/home/u/bench/sense/tiny"


def init():
    return {
        "type": "system",
        "subtype": "init",
        "cwd": CWD,
        "session_id": "sess-1",
        "model": "claude-opus-4-7[1m]",
        "claude_code_version": "2.1.140",
        "mcp_servers": [{"name": "git", "status": "connected"}, {"name": "other", "status": "connected"}],
    }


def assistant(mid, *blocks, ts="2026-05-13T14:13:30.000Z"):
    return {
        "type": "assistant",
        "timestamp": ts,
        "message": {
            "id": mid,
            "model": "claude-opus-4-7",
            "role": "assistant",
            "content": list(blocks),
            "usage": {"input_tokens": 3, "output_tokens": 7},
        },
    }


def tool_result(tid, text, is_error=False, ts="2026-05-13T14:13:30.400Z"):
    return {
        "type": "user",
        "timestamp": ts,
        "message": {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": tid,
                    "is_error": is_error,
                    "content": [{"type": "text", "text": text}],
                }
            ],
        },
    }


def result(subtype="success", text=None, **extra):
    r = {
        "type": "result",
        "subtype": subtype,
        "is_error": subtype != "success",
        "duration_ms": 84402,
        "num_turns": 3,
        "stop_reason": "end_turn",
        "session_id": "sess-1",
        "total_cost_usd": 0.5585,
        "usage": {
            "input_tokens": 15,
            "cache_creation_input_tokens": 37134,
            "cache_read_input_tokens": 176755,
            "output_tokens": 6011,
        },
    }
    if text is not None:
        r["result"] = text
    r.update(extra)
    return r


ONE_ANSWER = (
    'I have enough context.\n\n```json\n{\n  "step1_locate": {"file": "src/util.py", "line": 1, '
    '"note": "helper doubles its argument"},\n  "who_calls": [{"file": "src/app.py", "line": 5, '
    '"caller": "main"}]\n}\n```'
)


def one_session(final=result(text=ONE_ANSWER)):
    return [
        init(),
        assistant(
            "m1",
            {"type": "text", "text": "Looking it up."},
            {"type": "tool_use", "id": "t1", "name": "mcp__git__git_log", "input": {"repo_path": CWD}},
            {"type": "tool_use", "id": "t2", "name": "mcp__other__search_code", "input": {"q": "helper"}},
        ),
        tool_result("t1", f"Commit history of {CWD}/src/util.py"),
        tool_result("t2", "MCP error -32602: bad params", is_error=True),
        assistant("m2", {"type": "tool_use", "id": "t3", "name": "Read", "input": {"file_path": f"{CWD}/src/app.py"}}),
        tool_result("t3", "5\t    return helper(2)", ts="2026-05-13T14:13:31.000Z"),
        assistant("m3", {"type": "text", "text": ONE_ANSWER}),
        final,
    ]


# --- the real CLI's stream --------------------------------------------------------------------


def test_real_cli_stream_gives_the_live_hosts_records(tmp_path):
    """One parser, two callers: the recording of a live claude-code trial converts into the
    records that trial had."""
    m, co = project(tmp_path)
    place(tmp_path, "recorded/git/tiny/two/1.jsonl", FIX / "cc-git-two-steps.jsonl")
    t, meta = run_trial(m, "rec", "git", "two", 1, co, None, None, tmp_path / "out")
    validate_against("transcript.schema.yaml", t, "transcript")
    live = json.loads((FIX / "cc-git-two-steps.expected.json").read_text())
    assert t["outcome"] == "completed", t["outcome_detail"]
    assert [s["answer_text"] for s in t["steps"]] == live["answers"]
    assert [s["turns"] for s in t["steps"]] == live["turns"] and t["feedback_text"] == live["feedback"]
    assert [[c["id"], c["tool"], c["source"], c["step"], c["turn"], c["is_error"]] for c in t["tool_calls"]] == live[
        "tool_calls"
    ]
    assert t["usage"] == live["usage"]  # tokens with cache fields, our cost, Claude Code's own
    assert "helper" in next(c for c in t["tool_calls"] if c["tool"] == "read_file")["result_text"]
    # answers and reasoning name repository paths, relative to the recorded cwd, as the live host's
    assert not any("/tmp/recorded-run" in s["answer_text"] + s["reasoning_text"] for s in t["steps"])
    assert t["provider"] == "recorded" and t["model_id"] == "claude-sonnet-4-6" and "one_answer" not in t
    assert t["cell"] == {"model": "rec", "host": "loop", "tool": "git", "repo": "tiny", "scenario": "two", "trial": 1}
    assert meta["provider"] == "recorded" and meta["recorded_format"] == "claude-code-stream-json"
    assert meta["recorded_path"] == "recorded/git/tiny/two/1.jsonl" and len(meta["recorded_sha256"]) == 64
    assert meta["host_reported_version"] == "2.1.328" and meta["server_startup_seconds"] is None
    s = score_trial(
        t, m.scenarios["two"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], m.config["pricing"], None
    )
    validate_against("scored.schema.yaml", s, "scored")
    assert s["passed"] is True and s["answer_mapping"]["method"] == "per_step", s["failures"]


def test_real_cli_max_turns(tmp_path):
    m, co = project(tmp_path)
    place(tmp_path, "recorded/baseline/tiny/find-helper/1.jsonl", FIX / "cc-max-turns.jsonl")
    m, co = project(
        tmp_path / "p",
        scenarios={"find-helper": SCENARIO},
        pattern=str(tmp_path / "recorded/{tool}/{repo}/{scenario}/{trial}.jsonl"),
    )
    t, meta = run_trial(m, "rec", "baseline", "find-helper", 1, co, None, None, tmp_path / "out")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "max_turns" and t["steps"][0]["answer_text"] == "" and t["steps"][0]["turns"] == 2
    assert [c["tool"] for c in t["tool_calls"]] == ["grep", "grep"]
    assert meta["recorded_path"].startswith("/")  # outside the project: named as it is


# --- every result subtype, by hand ------------------------------------------------------------


def test_one_session_one_answer(tmp_path):
    m, co = project(tmp_path)
    place(tmp_path, "recorded/git/tiny/one/1.jsonl", events=one_session())
    t, meta = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "completed" and t["one_answer"] is True
    (step,) = t["steps"]
    assert step["name"] == "one_answer" and step["answer_text"] == ONE_ANSWER and step["turns"] == 3
    assert "## locate" in step["prompt"] and "## callers" in step["prompt"]
    assert step["reasoning_text"] == "Looking it up." and step["wall_seconds"] == 84.402 == t["wall_seconds"]
    calls = {c["id"]: c for c in t["tool_calls"]}
    assert (calls["t1"]["tool"], calls["t1"]["source"]) == ("git_log", "mcp")
    assert calls["t1"]["result_text"] == f"Commit history of {CWD}/src/util.py"  # as the model saw it
    assert (calls["t2"]["tool"], calls["t2"]["error_kind"], calls["t2"]["error_code"]) == (
        "search_code",
        "protocol_error",
        -32602,
    )
    assert calls["t3"]["tool"] == "read_file" and calls["t3"]["latency_ms"] == 1000.0
    assert t["errors"]["protocol_error"] == 1
    u = t["usage"]
    assert (u["input_tokens"], u["output_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"]) == (
        15,
        6011,
        37134,
        176755,
    )
    assert u["api_calls"] == 3 and u["host_cost_usd"] == 0.5585
    # our pricing, by the model the recording names
    assert t["model_id"] == "claude-opus-4-7" and meta["model_id"] == "claude-opus-4-7"
    assert u["cost_usd"] == pytest.approx((15 * 5 + 6011 * 25 + 37134 * 6.25 + 176755 * 0.5) / 1e6, abs=1e-6)
    assert meta["recorded_session_id"] == "sess-1" and meta["host_reported_version"] == "2.1.140"
    s = score_trial(t, m.scenarios["one"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], None, None)
    assert s["answer_mapping"] == {"method": "json_keys", "keys": ["step1_locate", "who_calls"]}
    assert s["passed"] is True, s["failures"]
    j = judge_trial(t, m.scenarios["one"], {"provider": "reference"})
    assert all(x["answered"] and not x["empty"] for x in j["steps"])


def test_error_max_turns(tmp_path):
    m, co = project(tmp_path)
    place(
        tmp_path,
        "recorded/git/tiny/one/1.jsonl",
        events=one_session(result("error_max_turns", stop_reason="tool_use"))[:-2]
        + [result("error_max_turns", stop_reason="tool_use")],
    )
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "max_turns" and t["steps"][0]["answer_text"] == "" and t["one_answer"] is True


def test_error_max_budget_keeps_the_last_assistant_text(tmp_path):
    """The reference bench's budget stop: a result with no text; the answer is the last reply's."""
    m, co = project(tmp_path)
    place(tmp_path, "recorded/git/tiny/one/1.jsonl", events=one_session(result("error_max_budget_usd")))
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "budget_exceeded" and t["outcome_detail"] == "claude-code: error_max_budget_usd"
    assert t["steps"][0]["answer_text"] == ONE_ANSWER  # the partial answer is graded
    s = score_trial(t, m.scenarios["one"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], None, None)
    assert s["answer_mapping"]["method"] == "json_keys" and s["passed"] is False  # only a completed trial passes


def test_error_during_execution_and_a_cut_off_recording(tmp_path):
    m, co = project(tmp_path)
    place(
        tmp_path,
        "recorded/git/tiny/one/1.jsonl",
        events=one_session(result("error_during_execution", errors=["Tool permission stream closed"])),
    )
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "harness_failed" and "error_during_execution" in t["outcome_detail"]
    assert "Tool permission stream closed" in t["outcome_detail"] and t["errors"]["harness_error"] == 1
    assert t["steps"][0]["answer_text"] == ""
    # an API error after retries, as the live host maps it
    place(
        tmp_path,
        "recorded/git/tiny/one/1.jsonl",
        events=one_session(result("success", text="API Error: 529 overloaded", is_error=True, api_error_status=529)),
    )
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "api_failed" and t["error_events"][-1]["status"] == 529
    # no result event at all: the run was cut off
    place(tmp_path, "recorded/git/tiny/one/1.jsonl", events=one_session()[:-1])
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "harness_failed" and "without a result event" in t["outcome_detail"]
    assert len(t["tool_calls"]) == 3  # what it did is still recorded


def test_steps_and_results_must_agree(tmp_path):
    """A multi-step scenario recorded as one session with one result needs one_answer: true."""
    m, co = project(tmp_path)
    place(tmp_path, "recorded/git/tiny/two/1.jsonl", events=one_session())
    t, _ = run_trial(m, "rec", "git", "two", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "harness_failed" and "one_answer: true" in t["outcome_detail"]
    assert len(sessions(read_stream(FIX / "cc-git-two-steps.jsonl"))) == 2


def test_a_missing_recording_is_not_run_not_a_crash(tmp_path, capsys):
    """No recording of a trial (a cell run fewer times than `trials`): not run, missing with the
    reason `no recording`, never a failure."""
    from mcptrials.cli import main
    from mcptrials.core.outcomes import missing_reason

    m, co = project(tmp_path)
    t, meta = run_trial(m, "rec", "git", "two", 3, co, None, None, tmp_path / "out")
    assert t["outcome"] == "not_run" and "recorded/git/tiny/two/3.jsonl not found" in t["outcome_detail"]
    assert missing_reason(t["outcome"], t["outcome_detail"]) == "not_run: no recording"
    assert meta["recorded_sha256"] is None and t["errors"]["harness_error"] == 0
    validate_against("transcript.schema.yaml", t, "transcript")
    # the workflow's command: exit 0, the records written
    write_json(tmp_path / "co.json", co)
    out = tmp_path / "runs" / "transcript.json"
    assert (
        main(
            [
                "run-trial",
                "--config",
                str(m.path),
                "--model",
                "rec",
                "--tool",
                "git",
                "--scenario",
                "two",
                "--trial",
                "1",
                "--checkout",
                str(tmp_path / "co.json"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert json.loads(out.read_text())["outcome"] == "not_run"
    assert json.loads((out.parent / "run_meta.json").read_text())["provider"] == "recorded"


# --- format mcptrials -------------------------------------------------------------------


def test_format_mcptrials_is_taken_as_is_with_the_cell_rewritten(tmp_path):
    m, co = project(tmp_path)
    place(tmp_path, "recorded/git/tiny/two/1.jsonl", FIX / "cc-git-two-steps.jsonl")
    t0, _ = run_trial(m, "rec", "git", "two", 1, co, None, None, tmp_path / "out")
    t0["cell"] = dict(t0["cell"], model="elsewhere", trial=7)
    t0["provider"] = "anthropic"
    m2, co2 = project(tmp_path / "b", fmt="mcptrials", pattern="runs/{tool}/{repo}/{scenario}/{trial}/transcript.json")
    write_json(tmp_path / "b" / "runs/git/tiny/two/1/transcript.json", t0)
    t, meta = run_trial(m2, "rec", "git", "two", 1, co2, None, None, tmp_path / "out2")
    assert t["cell"] == {"model": "rec", "host": "loop", "tool": "git", "repo": "tiny", "scenario": "two", "trial": 1}
    assert {k: v for k, v in t.items() if k not in ("cell", "host")} == {
        k: v for k, v in t0.items() if k not in ("cell", "host")
    }
    assert meta["recorded_format"] == "mcptrials" and meta["recorded_path"] == "runs/git/tiny/two/1/transcript.json"
    # not one of ours: recorded, not a crash
    write_json(tmp_path / "b" / "runs/git/tiny/two/1/transcript.json", {"schema": "something else"})
    t, _ = run_trial(m2, "rec", "git", "two", 1, co2, None, None, tmp_path / "out2")
    assert t["outcome"] == "harness_failed" and "not a valid mcptrials transcript" in t["outcome_detail"]


# --- config ---------------------------------------------------------------------------


def test_config_of_a_recorded_model(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    m, _ = project(tmp_path)
    assert check_api_keys(m, environ={}) == []  # no key for a recording
    assert m.specs.models["rec"].format == "claude-code-stream-json" and m.specs.models["rec"].recorded

    def cfg_with(**models):
        c = yaml.safe_load(m.path.read_text())
        c["models"] = models
        return c

    def load(c):
        return load_matrix(m.path, overrides=c)

    with pytest.raises(ConfigError, match=r"models\.rec.*'path' is a required property"):
        load(cfg_with(rec={"provider": "recorded", "format": "mcptrials"}))
    with pytest.raises(ConfigError, match=r"models\.rec\.format.*only for provider recorded"):
        load(cfg_with(rec={"provider": "anthropic", "model": "x", "format": "mcptrials"}))
    with pytest.raises(ConfigError, match=r"models\.rec\.path: unknown placeholder\(s\) \{model\}"):
        load(cfg_with(rec={"provider": "recorded", "format": "mcptrials", "path": "{model}/{tool}.json"}))
    with pytest.raises(ConfigError, match=r"models\.rec\.format.*not allowed"):
        load(cfg_with(rec={"provider": "recorded", "format": "jsonl", "path": "x"}))
    # claude-code drives live anthropic models only: a recorded model runs under loop hosts
    c = cfg_with(
        rec={"provider": "recorded", "format": "mcptrials", "path": "x/{trial}.json"},
        claude={"provider": "anthropic", "model": "claude-sonnet-4-6"},
    )
    c["hosts"] = {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}}
    mm = load(c)
    assert {(mo, h) for mo, h, *_ in mm.cells()} == {("rec", "loop"), ("claude", "loop"), ("claude", "cc")}
    c["hosts"] = {"cc": {"kind": "claude-code"}}
    with pytest.raises(ConfigError, match=r"models\.rec: a recorded model runs under a loop host only"):
        load(c)


def test_the_recorded_files_sha256_is_a_rerun_key_of_its_trials(tmp_path):
    models = {
        "rec": {"provider": "recorded", "format": "claude-code-stream-json", "path": PATTERN},
        "reference": {"provider": "reference"},
    }
    m, _ = project(tmp_path, models=models)
    base, base_t = rule_params(m)["transcript"], recorded_trials(m)
    assert base_t == {("rec", "loop", t, s, "1"): None for t in ("baseline", "git") for s in ("one", "two")}
    f = place(tmp_path, "recorded/git/tiny/two/1.jsonl", events=one_session())
    after, after_t = rule_params(load_matrix(m.path))["transcript"], recorded_trials(load_matrix(m.path))
    # the recording is its own trial's key (issue 27 item 3), not its cell's
    assert after == base
    assert {k for k in base_t if base_t[k] != after_t[k]} == {("rec", "loop", "git", "two", "1")}
    f.write_text(f.read_text() + "\n")
    again_t = recorded_trials(load_matrix(m.path))
    assert {k for k in base_t if after_t[k] != again_t[k]} == {("rec", "loop", "git", "two", "1")}
    again = after
    # one_answer reaches the recorded model's trials only
    s = yaml.safe_load((tmp_path / "scenarios" / "two.yaml").read_text())
    s["one_answer"] = True
    (tmp_path / "scenarios" / "two.yaml").write_text(yaml.safe_dump(s))
    flipped = rule_params(load_matrix(m.path))["transcript"]
    assert {k for k in base if again[k] != flipped[k]} == {
        ("rec", "loop", "git", "two"),
        ("rec", "loop", "baseline", "two"),
    }


# --- the workflow -------------------------------------------------------------------------


@pytest.mark.slow
def test_workflow_builds_a_report_of_a_recorded_model(tmp_path):
    from workflow_helpers import copy_workflow, run_snakemake

    copy_workflow(tmp_path)
    wd = tmp_path
    write_matrix(
        wd,
        tools={"baseline": {"transport": "none"}, "sense": dict(ARM)},
        scenarios={"one": ONE},
        extra={
            "models": {
                "rec": {
                    "provider": "recorded",
                    "format": "claude-code-stream-json",
                    "path": "recorded/{tool}/{repo}/{scenario}/{trial}.jsonl",
                }
            },
            "pricing": PRICING,
            "trials": 2,
            "locked": None,
        },
    )
    place(wd, "recorded/baseline/tiny/one/1.jsonl", events=one_session())  # trial 2 has no recording
    place(wd, "recorded/sense/tiny/one/1.jsonl", events=one_session())
    place(wd, "recorded/sense/tiny/one/2.jsonl", events=one_session())
    run_snakemake(wd, "-j2")
    # the recorded arm: no snapshot job ran, its trials converted, the report names it
    assert not (wd / "results/snapshots/sense").exists() and (wd / "results/snapshots/baseline").is_dir()
    arm = json.loads((wd / "results/runs/rec/loop/sense/tiny/one/2/transcript.json").read_text())
    assert arm["outcome"] == "completed"
    assert "recorded runs of sense (source: a bench's results/sense" in (wd / "results/report/report.md").read_text()
    run = wd / "results/runs/rec/loop/baseline/tiny/one"
    t1 = json.loads((run / "1/transcript.json").read_text())
    t2 = json.loads((run / "2/transcript.json").read_text())
    assert t1["outcome"] == "completed" and t1["one_answer"] is True
    assert t2["outcome"] == "not_run" and "no recording" in t2["outcome_detail"]
    scored = json.loads((run / "1/scored.json").read_text())
    assert scored["answer_mapping"]["method"] == "json_keys" and scored["passed"] is True, scored["failures"]
    assert (wd / "results/report/index.html").exists()
    from workflow_helpers import planned

    assert planned(wd) == {}
    # a new recording reruns its own trial only (its sha256 is that trial's param) and what reads it
    place(wd, "recorded/baseline/tiny/one/2.jsonl", events=one_session())
    assert planned(wd) == {
        "all": 1,
        "transcript": 1,
        "scored": 1,
        "judged": 1,
        "aggregate": 1,
        "report": 1,
        "status": 1,
    }


def test_usage_is_claude_codes_own_count_over_the_session(tmp_path):
    """A result's `usage` can leave calls out; `modelUsage` (cumulative over the session, every
    model) is the count its total_cost_usd comes from, and ours then agrees with it."""
    m, co = project(tmp_path)
    model_usage = {
        "claude-opus-4-7[1m]": {
            "inputTokens": 21,
            "outputTokens": 6321,
            "cacheReadInputTokens": 192027,
            "cacheCreationInputTokens": 48705,
            "costUSD": 0.55854975,
        }
    }
    place(
        tmp_path,
        "recorded/git/tiny/one/1.jsonl",
        events=one_session(result(text=ONE_ANSWER, modelUsage=model_usage, total_cost_usd=0.55854975)),
    )
    t, _ = run_trial(m, "rec", "git", "one", 1, co, None, None, tmp_path / "out")
    u = t["usage"]
    assert (u["input_tokens"], u["output_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"]) == (
        21,
        6321,
        48705,
        192027,
    )
    assert u["cost_usd"] == pytest.approx(u["host_cost_usd"], abs=1e-6)


# --- a recorded arm (tools.<name>.transport: recorded, issue 27 item 3) -------------------------

ARM = {"transport": "recorded", "source": "a bench's results/sense"}


def arm_project(tmp_path: Path, models=None) -> tuple:
    models = models or {"rec": {"provider": "recorded", "format": "claude-code-stream-json", "path": PATTERN}}
    cfg = write_matrix(
        tmp_path,
        tools={"baseline": {"transport": "none"}, "sense": dict(ARM)},
        scenarios={"one": ONE},
        extra={"models": models, "pricing": PRICING},
    )
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def test_a_recorded_arm_has_no_server_and_only_recorded_models_run_it(tmp_path):
    m, _ = arm_project(tmp_path)
    assert m.server_tools() == [] and m.installed_tools() == [] and m.snapshot_tools() == ["baseline"]
    spec = m.specs.tools["sense"]
    assert spec.recorded and not spec.has_server and spec.source == ARM["source"]
    c = yaml.safe_load(m.path.read_text())

    def load(**tool):
        d = copy.deepcopy(c)
        d["tools"]["sense"] = tool
        return load_matrix(m.path, overrides=d)

    with pytest.raises(ConfigError, match=r"tools\.sense: a recorded arm has no server.*remove command, args"):
        load(transport="recorded", command="sense", args=["mcp"])
    with pytest.raises(ConfigError, match=r"tools\.sense: a recorded arm has no server.*remove install"):
        load(transport="recorded", install={"pip": ["x==1"]})
    d = copy.deepcopy(c)
    d["models"]["live"] = {"provider": "reference"}
    with pytest.raises(ConfigError, match=r"tools\.sense\.transport: recorded: only provider recorded models.*live"):
        load_matrix(m.path, overrides=d)
    d = copy.deepcopy(c)
    d["tools"]["baseline"] = {"transport": "recorded"}
    with pytest.raises(ConfigError, match=r"tools\.baseline.*built in"):
        load_matrix(m.path, overrides=d)


def test_a_recorded_arms_tools_list_comes_from_the_recording_else_unknown(tmp_path):
    m, co = arm_project(tmp_path)
    ev = one_session()
    ev[0] = dict(ev[0], tools=["Read", "Bash", "mcp__sense__sense_graph", "mcp__sense__sense_status"])
    f = place(tmp_path, "recorded/sense/tiny/one/1.jsonl", events=ev)
    t, meta = run_trial(m, "rec", "sense", "one", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "completed"
    assert meta["tool_transport"] == "recorded" and meta["recorded_source"] == ARM["source"]
    assert meta["recorded_tools"]["from"] == "the recording's init event"
    assert meta["recorded_tools"]["names"] == ["mcp__sense__sense_graph", "mcp__sense__sense_status"]
    assert meta["tools_sha256"] == meta["recorded_tools"]["sha256"] and meta["recorded_sha256"] == file_sha256(f)
    # a recording without an init event's tool list: unknown, never an empty list
    place(tmp_path, "recorded/sense/tiny/one/2.jsonl", events=one_session()[1:])
    _, meta2 = run_trial(m, "rec", "sense", "one", 2, co, None, None, tmp_path / "out2")
    assert meta2["recorded_tools"]["from"] == "unknown" and meta2["recorded_tools"]["names"] is None
    assert meta2["tools_sha256"] is None


def test_the_report_names_a_recorded_arm_by_its_source_and_recordings(tmp_path):
    from mcptrials.analyze.identity import recorded_identity
    from mcptrials.report.identity import recorded_tool_line

    recs = [
        {
            "key": {"model": "rec", "host": "loop", "tool": "sense", "scenario": "one", "trial": n},
            "run_meta": {"recorded_sha256": sha, "recorded_tools": lst},
        }
        for n, sha, lst in (
            (1, "a" * 64, {"from": "the recording's init event", "names": ["mcp__sense__x"]}),
            (2, None, {"from": "unknown", "names": None}),
        )
    ]
    ident = {"transport": "recorded", **recorded_identity(ARM, recs, "sense")}
    assert ident["recordings"] == {"rec/loop/one/1": "a" * 64, "rec/loop/one/2": None}
    line = recorded_tool_line("sense", ident)
    assert line.startswith("recorded runs of sense (source: a bench's results/sense; no server here)")
    assert "rec/loop/one/1 aaaaaaaaaaaa" in line and "rec/loop/one/2 missing" in line
    assert "tools/list from the recording's init event and unknown: mcp__sense__x" in line
    only_unknown = {"transport": "recorded", **recorded_identity(ARM, recs[1:], "sense")}
    assert "tools/list unknown" in recorded_tool_line("sense", only_unknown)


# --- a repository that cannot be checked out (issue 32 item 6) ----------------------------------


def test_a_recorded_trial_needs_no_checkout_a_live_one_does(tmp_path):
    """A checkout that failed (a repository out of reach) leaves a recorded trial's recording
    to convert and grade: its run_meta names the failed stage, and scoring leaves only its
    citations not checked (missing, with the reason), everything else graded. A live trial
    on the same failed checkout is still not run: it needs a workspace."""
    from mcptrials.core.failures import failed_record
    from mcptrials.grade.scoring import score_job
    from mcptrials.run.runner import run_trial_job

    models = {
        "rec": {"provider": "recorded", "format": "claude-code-stream-json", "path": PATTERN},
        "reference": {"provider": "reference"},
    }
    m, _ = project(tmp_path, models=models)
    commit = m.repos["tiny"]["commit"]
    co_json = tmp_path / "results/checkouts/tiny/checkout.json"
    error = "repos.tiny.url: cannot clone 'file:///nowhere/tiny.git': fatal: repository does not exist"
    write_json(co_json, failed_record("checkout", error, 1, repo="tiny", url="file:///nowhere/tiny.git", commit=commit))
    snap = tmp_path / "results/snapshots/git/tiny/tools.json"
    write_json(
        snap,
        {
            "tool": "git",
            "repo": "tiny",
            "unavailable": f"checkout failed: {error}",
            "error": f"checkout failed: {error}",
            "tools": [],
        },
    )
    place(tmp_path, "recorded/git/tiny/one/1.jsonl", events=one_session())
    out = tmp_path / "results/runs/rec/loop/git/tiny/one/1/transcript.json"
    t, state = run_trial_job(m, "rec", "loop", "git", "one", 1, co_json, snap, None, out)
    assert t["outcome"] == "completed" and state is None
    assert t["steps"][0]["answer_text"] == ONE_ANSWER and [c["tool"] for c in t["tool_calls"]] == [
        "git_log",
        "search_code",
        "read_file",
    ]
    assert t["usage"]["output_tokens"] == 6011
    meta = json.loads((out.parent / "run_meta.json").read_text())
    assert meta["commit"] == commit and meta["repo_url"] == "file:///nowhere/tiny.git"
    assert meta["converted_without"] == {
        "checkout": f"checkout failed: {error}",
        "snapshot": f"checkout failed: {error}",
    }
    # the tools/list: the snapshot's is unavailable, so the recording's own, said
    assert meta["recorded_tools"]["from"] == "unknown" and meta["tools_sha256"] is None
    validate_against("transcript.schema.yaml", t, "transcript")
    # graded without a checkout: citations not checked (null, never zero), the rest as usual
    scored = score_job(
        out, m.scenarios["one"].path, co_json.parent / "tree", commit, str(m.path), out.parent / "scored.json"
    )
    validate_against("scored.schema.yaml", scored, "scored")
    assert scored["citations_not_checked"] == f"checkout failed: {error}"
    assert scored["citations"]["counts"]["total"] == 0 and scored["citations"]["rates"]["grounded_rate"] is None
    assert scored["not_graded"] == {"citations": ["grounding", "verification (lenient)", "verification (strict)"]}
    assert scored["keywords"]["coverage"] is not None and scored["efficiency"]["tool_calls"] == 3
    assert scored["passed"] is True, scored["failures"]
    # a live trial on the same failed checkout: not run, missing with the reason
    out2 = tmp_path / "results/runs/reference/loop/git/tiny/one/1/transcript.json"
    t2, state2 = run_trial_job(m, "reference", "loop", "git", "one", 1, co_json, snap, None, out2)
    assert t2["outcome"] == "not_run" and t2["outcome_detail"] == f"checkout failed: {error}"
    assert state2["missing"]
