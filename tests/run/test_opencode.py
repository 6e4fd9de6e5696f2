"""Host `opencode`: the real Opencode CLI (installed by the workflow's own command into
.tools/_hosts/opencode/) against the streaming chat-completions fake (tests/fakes/openai_api.py),
sandboxed, with the fault-injecting test server and the hostile server. Its transcript
validates against the transcript schema and is graded."""

import hashlib
import json
import re
import tempfile

import pytest

from fakes.openai_api import FakeOpenAIAPI, error, hang, reply, tool_call
from host_helpers import install_host, started_apis
from matrix_helpers import BASE_PYTHON, SCENARIO, faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.scoring import score_trial
from mcptrials.run.hosts.opencode import parse_stream, server_tool_names, step_outcome
from mcptrials.run.runner import run_trial
from mcptrials.run.trial import Recorder

pytestmark = pytest.mark.slow

KEY = "fake-key-test-opencode-0123456789abcdef"
MODEL = "qwen3-coder"
WS_RE = re.compile(re.escape(tempfile.gettempdir()) + r"/mcptrials-trial-[^/\\\"]+/workspace")


@pytest.fixture
def chat_api(tmp_path):
    yield from started_apis(FakeOpenAIAPI, tmp_path, "chat")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Opencode for host `opencode`, installed as the workflow does (reused when there)."""
    return install_host(
        tmp_path_factory.mktemp("install"), "opencode", "opencode", {"provider": "openai", "model": MODEL}
    )


def matrix(tmp_path, api, tools, scenarios=None, limits=None, sandbox=None, max_retries=0):
    extra = {
        "models": {"q": {"provider": "openai", "model": MODEL, "base_url": api.url, "max_retries": max_retries}},
        "hosts": {"opencode": {"kind": "opencode"}},
        "pricing": {MODEL: {"input": 0.4, "output": 1.6, "cache_read": 0.04}},
    }
    if limits:
        extra["limits"] = limits
    if sandbox:
        extra["sandbox"] = sandbox
    m = load_matrix(write_matrix(tmp_path, tools=tools, scenarios=scenarios, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def ws(body) -> str:
    """The trial's workspace, as Opencode tells the model."""
    return WS_RE.search(json.dumps(body)).group(0)


def offered(body) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


def test_install_record(installed):
    assert installed["kind"] == "opencode" and installed["version"] == "1.18.33"
    assert installed["reported_version"] == "1.18.33"
    assert installed["binary"].endswith(".tools/_hosts/opencode/node_modules/.bin/opencode")


def test_builtin_tools_of_opencode_are_checked(tmp_path):
    cfg = write_matrix(
        tmp_path,
        extra={
            "models": {"q": {"provider": "openai", "model": "m"}},
            "hosts": {"opencode": {"kind": "opencode", "builtin_tools": ["Read"]}},
        },
    )
    with pytest.raises(ConfigError, match=r"hosts\.opencode\.builtin_tools"):
        load_matrix(cfg)


def test_trial_with_the_faulty_server_records_tools_usage_and_grades(tmp_path, installed, chat_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sc = dict(
        SCENARIO,
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
    api = chat_api(
        [
            lambda b: reply(
                "Let me look.",
                tool_call("faulty_text_echo", {"text": "hi"}, id="call_e1"),
                tool_call("read", {"filePath": ws(b) + "/src/util.py"}, id="call_r1"),
            ),
            reply(
                "`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument.",
                usage={"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1000},
            ),
            reply("`main` calls `helper` at `src/app.py:5`.\n\nFeedback on the tools: echo echoed."),
        ]
    )
    m, co = matrix(
        tmp_path, api, {"faulty": faulty_tool("ok", env={"FAULT_TOOL_PREFIX": "text."})}, scenarios={"two": sc}
    )
    snap = {"tools": [{"name": n} for n in ("text.echo", "text.big", "text.fail")], "server_name": "faulty"}
    t, meta = run_trial(m, "q", "faulty", "two", 1, co, snap, None, tmp_path / "out", host="opencode")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "completed", t["outcome_detail"]
    assert t["host"] == "opencode" and meta["host_kind"] == "opencode" and meta["host_version"] == "1.18.33"
    assert meta["sandbox"]["mechanism"] == "bubblewrap" and meta["host_session_id"].startswith("ses_")
    calls = {c["id"]: c for c in t["tool_calls"]}
    e, r = calls["call_e1"], calls["call_r1"]
    # the server's own name, as the loop records it (Opencode offered faulty_text_echo)
    assert (e["source"], e["tool"], e["name"], e["result_text"], e["is_error"]) == (
        "mcp",
        "text.echo",
        "faulty_text_echo",
        "hi",
        False,
    )
    assert (r["source"], r["tool"], r["name"]) == ("builtin", "read_file", "read") and "return x * 2" in r[
        "result_text"
    ]
    s0, s1 = t["steps"]
    assert s0["answer_text"].startswith("`helper` is defined at `src/util.py:1`") and s0["turns"] == 2
    assert s0["reasoning_text"] == "Let me look." and s1["answer_text"] == "`main` calls `helper` at `src/app.py:5`."
    assert t["feedback_text"].startswith("Feedback on the tools")
    u = t["usage"]
    assert u["api_calls"] == 3 and u["cache_read_input_tokens"] == 1000 and u["input_tokens"] >= 200
    reqs = api.completion_requests()
    assert len(reqs) == 3  # no title call: every request is the agent's
    # one session: step 2's request carries step 1's conversation
    assert len(reqs[2]["body"]["messages"]) > len(reqs[1]["body"]["messages"])
    names = offered(reqs[0]["body"])
    assert {"faulty_text_echo", "read", "grep", "glob"} <= set(names)
    assert not {"bash", "edit", "write", "apply_patch", "webfetch", "task", "skill", "todowrite"} & set(names)
    assert reqs[0]["body"]["max_tokens"] == 4096  # the reply cap
    assert "feedback" in json.dumps(reqs[0]["body"]["messages"][0]).lower()  # our system prompt is in
    assert {q["auth_sha256"] for q in reqs} == {hashlib.sha256(KEY.encode()).hexdigest()}
    sc_ = score_trial(
        t, m.scenarios["two"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], m.config["pricing"], None
    )
    assert sc_["passed"] is True, sc_["failures"]


def test_server_sees_only_its_environment_and_tool_errors(tmp_path, installed, chat_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    dump = tmp_path / "server_env.json"
    tool = faulty_tool(
        "is_error", env={"FAULT_MODE": "is_error", "FAULT_ENV_DUMP": str(dump), "KEEP": "me"}, sandbox="none"
    )
    api = chat_api(
        [
            reply(None, tool_call("faulty_echo", {"text": "hi"}, id="call_x")),
            reply("The tool failed; `helper` is in `src/util.py:1`."),
        ]
    )
    m, co = matrix(tmp_path, api, {"faulty": tool})
    t, _ = run_trial(m, "q", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    env = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in env and not any(KEY in v for v in env.values())
    assert env["KEEP"] == "me" and not any(k.startswith("OPENCODE") for k in env)
    assert t["outcome"] == "completed", t["outcome_detail"]
    (c,) = t["tool_calls"]
    assert (c["source"], c["tool"], c["is_error"], c["error_kind"]) == ("mcp", "echo", True, "tool_error")


def test_outcomes_crash_at_start_crash_during_call_api_error_max_turns_timeout(
    tmp_path, installed, chat_api, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    api = chat_api([reply("never asked")], exhausted="repeat")
    m, co = matrix(tmp_path / "a", api, {"faulty": faulty_tool("crash_at_start")})
    t, _ = run_trial(m, "q", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "server_crashed" and "did not start" in t["outcome_detail"]
    assert t["errors"]["protocol_error"] == 1

    api = chat_api([reply(None, tool_call("faulty_echo", {"text": "x"})), reply("after the crash")])
    m, co = matrix(tmp_path / "b", api, {"faulty": faulty_tool("crash_during_call")})
    t, _ = run_trial(m, "q", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "server_crashed", t["outcome_detail"]
    (c,) = t["tool_calls"]
    assert c["error_kind"] == "protocol_error" and c["error_code"] == -32000

    # Opencode retries a failing API without end: the proxy gives up after max_retries + 1
    api = chat_api([error(500)], exhausted="repeat")
    m, co = matrix(tmp_path / "c", api, {"baseline": {"transport": "none"}}, max_retries=1)
    t, _ = run_trial(m, "q", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "api_failed" and t["errors"]["api_error"] == 1
    assert t["error_events"][0]["status"] == 500 and t["usage"]["api_calls"] == 0
    assert len(api.completion_requests()) == 2

    api = chat_api([reply(None, tool_call("glob", {"pattern": "*"}))], exhausted="repeat")
    m, co = matrix(tmp_path / "d", api, {"baseline": {"transport": "none"}}, limits={"max_turns": 2})
    t, _ = run_trial(m, "q", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "max_turns" and t["steps"][0]["turns"] == 2
    assert len(api.completion_requests()) == 2

    api = chat_api([hang()])
    m, co = matrix(tmp_path / "e", api, {"baseline": {"transport": "none"}}, limits={"max_seconds": 4})
    t, _ = run_trial(m, "q", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "timed_out"

    api = chat_api([reply("`helper` is in `src/util.py:1` and ret", finish_reason="length")])
    m, co = matrix(tmp_path / "f", api, {"baseline": {"transport": "none"}})
    t, _ = run_trial(m, "q", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "budget_exceeded" and t["steps"][0]["answer_text"].startswith("`helper` is in")


def test_parse_stream_groups_by_message_and_names_server_tools():
    def part(kind, mid, **p):
        return {"type": kind, "sessionID": "ses_1", "part": dict(p, messageID=mid)}

    events = [
        part("step_start", "m1"),
        part("text", "m1", text="Two calls."),
        part(
            "tool_use",
            "m1",
            tool="git_git_log",
            callID="a",
            state={
                "status": "error",
                "input": {},
                "error": "MCP error -32001: timed out",
                "time": {"start": 1000, "end": 1250},
            },
        ),
        part(
            "tool_use",
            "m1",
            tool="glob",
            callID="b",
            state={"status": "completed", "input": {"pattern": "*"}, "output": "a.py", "time": {"start": 1, "end": 2}},
        ),
        part("step_finish", "m1", reason="tool-calls", tokens={"input": 10, "output": 2, "cache": {"read": 5}}),
        part("text", "m2", text="Done."),
        part("step_finish", "m2", reason="stop", tokens={"input": 3, "output": 1}),
    ]
    s = parse_stream(events, 0, server_tool_names("git", [{"name": "git.log"}]), "git")
    assert s.session_id == "ses_1" and [m["role"] for m in s.messages] == ["assistant", "user", "assistant"]
    a, b = s.calls
    assert (a["tool"], a["source"], a["error_kind"], a["error_code"], a["latency_ms"]) == (
        "git.log",
        "mcp",
        "protocol_error",
        -32001,
        250.0,
    )
    assert (b["tool"], b["source"], b["turn"]) == ("list_files", "builtin", 1)
    assert s.replies == [(["Two calls."], True), (["Done."], False)]
    assert step_outcome(s, Recorder(), 0) == ("completed", None)


def _hostile_trial(tmp_path, chat_api, sandbox):
    """The hostile server under Opencode, and Opencode's own read of the gold by absolute path."""
    from matrix_helpers import HOSTILE, MARKER

    gold = tmp_path / "gold.json"
    gold.write_text('{"items": {"secret-item": {"quality": 0.9}}}')
    tool = {
        "command": BASE_PYTHON,
        "read_only": [str(HOSTILE)],
        "args": [str(HOSTILE), "--read", str(gold), "--marker", MARKER],
    }
    api = chat_api(
        [
            reply(
                None,
                tool_call("read", {"filePath": str(gold)}, id="call_r"),
                tool_call("hostile_probe", {}, id="call_p"),
            ),
            reply("`src/util.py:1`"),
        ]
    )
    m, co = matrix(tmp_path, api, {"hostile": tool}, sandbox=sandbox)
    t, meta = run_trial(m, "q", "hostile", "find-helper", 1, co, None, None, tmp_path / "out", host="opencode")
    assert t["outcome"] == "completed", t["outcome_detail"]
    calls = {c["id"]: c for c in t["tool_calls"]}
    probe = json.loads(calls["call_p"]["result_text"].replace("[redacted]", KEY))
    return calls["call_r"], probe, meta, api


def test_under_opencode_the_server_and_the_cli_stay_in_the_sandbox(tmp_path, installed, chat_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    read, probe, meta, api = _hostile_trial(tmp_path, chat_api, "bubblewrap")
    assert "secret-item" not in read["result_text"]  # Opencode's read cannot reach it
    assert probe["read"] == {str(tmp_path / "gold.json"): None}  # nor can the server
    assert KEY not in probe["keys"] and probe["keys"]  # only the proxy's stand-in token
    assert all(k.startswith("mcptrials-proxy-") for k in probe["keys"])
    assert meta["sandbox"]["network"] is True
    reqs = api.completion_requests()
    assert reqs and {q["auth_sha256"] for q in reqs} == {hashlib.sha256(KEY.encode()).hexdigest()}


def test_under_opencode_sandbox_none_reaches_the_gold(tmp_path, installed, chat_api, monkeypatch):
    """The control: unsandboxed, Opencode reads the gold and the server finds the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    read, probe, _, _ = _hostile_trial(tmp_path, chat_api, "none")
    assert "secret-item" in read["result_text"]
    assert "secret-item" in probe["read"][str(tmp_path / "gold.json")]
    assert KEY in probe["keys"]
