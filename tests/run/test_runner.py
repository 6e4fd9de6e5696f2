"""The agent loop through the real anthropic SDK against the test Messages-API server,
with the fault-injecting MCP server of tests/fixtures: every fault is recorded and
classified, none escapes the trial."""

import json

import pytest
import yaml

from fakes.messages_api import error, malformed, reply, text, tool_use
from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.run.runner import run_trial, scrub_secrets

KEY = "fake-key-test-0123456789abcdef"


def matrix(tmp_path, api, tools=None, scenarios=None, limits=None, model_extra=None):
    model = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 2}
    model.update(model_extra or {})
    extra = {"models": {"claude": model}, "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}}}
    if limits:
        extra["limits"] = limits
    cfg = write_matrix(tmp_path, tools=tools or {"baseline": {"transport": "none"}}, scenarios=scenarios, extra=extra)
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def run(m, co, tool, tmp_path, scenario="find-helper"):
    return run_trial(m, "claude", tool, scenario, 1, co, None, None, tmp_path / "out")


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def test_parallel_tool_calls_answered_in_one_turn(tmp_path, fake_api):
    api = fake_api(
        [
            reply(
                text("I will look for `helper`."),
                tool_use("grep", {"pattern": "def helper"}, id="a"),
                tool_use("mcp__echo__echo", {"text": "hi"}, id="b"),
            ),
            reply(text("`helper` is defined at `src/util.py:1` and doubles x.\n\nFeedback on the tools: grep helped.")),
        ]
    )
    m, co = matrix(tmp_path, api, tools={"echo": faulty_tool("ok")})
    t, meta = run(m, co, "echo", tmp_path)
    assert t["outcome"] == "completed", t["outcome_detail"]
    step = t["steps"][0]
    assert step["answer_text"] == "`helper` is defined at `src/util.py:1` and doubles x."
    assert t["feedback_text"].startswith("Feedback on the tools")
    assert step["reasoning_text"] == "I will look for `helper`."
    calls = {c["id"]: c for c in t["tool_calls"]}
    assert calls["a"]["source"] == "builtin" and "src/util.py:1" in calls["a"]["result_text"]
    assert calls["b"]["source"] == "mcp" and calls["b"]["tool"] == "echo" and calls["b"]["result_text"] == "hi"
    # both results went back in ONE user turn, in order
    second = api.message_requests()[1]["body"]
    last = second["messages"][-1]
    assert [b["tool_use_id"] for b in last["content"]] == ["a", "b"]
    # prompt caching: system, last tool, newest message block
    assert second["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert second["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert last["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "temperature" not in second
    names = [tl["name"] for tl in second["tools"]]
    assert names[:3] == ["read_file", "grep", "list_files"] and "mcp__echo__echo" in names
    u = t["usage"]
    assert u["api_calls"] == 2 and u["input_tokens"] > 0
    want = (u["input_tokens"] * 3.0 + u["output_tokens"] * 15.0) / 1e6
    assert u["cost_usd"] == pytest.approx(want)
    assert meta["server_protocol_version"] == "2025-11-25" and meta["server_peak_rss_kb"] > 0


def test_multi_step_is_one_conversation_and_empty_final_reply(tmp_path, fake_api):
    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"].append({"name": "callers", "prompt": "Who calls `helper`?"})
    api = fake_api([reply(text("In `src/util.py:1`.")), reply()])  # the second reply has no text at all
    m, co = matrix(tmp_path, api, scenarios={"two": sc})
    t, _ = run(m, co, "baseline", tmp_path, "two")
    assert t["outcome"] == "completed"
    assert [s["answer_text"] for s in t["steps"]] == ["In `src/util.py:1`.", ""]
    req2 = api.message_requests()[1]["body"]["messages"]
    assert [mm["role"] for mm in req2] == ["user", "assistant", "user"]
    assert "last step" in req2[-1]["content"][0]["text"]


def test_limits_max_turns_and_budget(tmp_path, fake_api):
    loop = reply(text("again"), tool_use("list_files", {"pattern": "*"}))
    api = fake_api([loop], exhausted="repeat")
    m, co = matrix(tmp_path, api, limits={"max_turns": 3})
    t, _ = run(m, co, "baseline", tmp_path)
    assert t["outcome"] == "max_turns" and t["steps"][0]["turns"] == 3
    api2 = fake_api(
        [reply(text("x"), tool_use("list_files", {}), usage={"input_tokens": 5, "output_tokens": 900})],
        exhausted="repeat",
    )
    m2, co2 = matrix(tmp_path / "b", api2, limits={"max_output_tokens": 1000})
    t2, _ = run(m2, co2, "baseline", tmp_path / "b")
    assert t2["outcome"] == "budget_exceeded" and t2["usage"]["output_tokens"] == 1800


def test_wall_time_limit(tmp_path, fake_api):
    api = fake_api([dict(reply(text("slow")), delay=5)])
    m, co = matrix(tmp_path, api, limits={"max_seconds": 1})
    t, _ = run(m, co, "baseline", tmp_path)
    assert t["outcome"] == "timed_out" and t["wall_seconds"] < 4


def test_a_call_the_time_limit_cuts_is_recorded_without_a_result(tmp_path, fake_api):
    """The step times out while a server's call runs: the call is in tool_calls all the same
    (answered false, no error kind: whose fault is not known), and the conversation on record
    closes the turn with the same words."""
    api = fake_api([reply(tool_use("mcp__f__echo", {"text": "a"}, id="toolu_s")), reply(text("never sent"))])
    m, co = matrix(
        tmp_path, api, tools={"f": faulty_tool("slow", env={"FAULT_SLOW_SECONDS": "6"})}, limits={"max_seconds": 2}
    )
    t, _ = run(m, co, "f", tmp_path)
    assert t["outcome"] == "timed_out"
    (call,) = t["tool_calls"]
    assert (call["id"], call["tool"], call["source"], call["answered"]) == ("toolu_s", "echo", "mcp", False)
    assert call["is_error"] and call["error_kind"] is None and sum(t["errors"].values()) == 0
    assert t["messages"][-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_s", "content": call["result_text"], "is_error": True}
    ]
    assert "no result" in call["result_text"] and len(api.message_requests()) == 1


def test_api_retry_then_success_and_failures(tmp_path, fake_api):
    api = fake_api([error(429, retry_after=0.1), reply(text("ok `src/util.py:1`"))])
    m, co = matrix(tmp_path, api)
    t, _ = run(m, co, "baseline", tmp_path)
    assert t["outcome"] == "completed" and t["usage"]["retries"] == 1 and t["errors"]["api_error"] == 0

    api2 = fake_api([error(529)], exhausted="repeat")
    m2, co2 = matrix(tmp_path / "b", api2, model_extra={"max_retries": 1})
    t2, _ = run(m2, co2, "baseline", tmp_path / "b")
    assert t2["outcome"] == "api_failed" and t2["errors"]["api_error"] == 1
    ev = t2["error_events"][0]
    assert ev["status"] == 529 and ev["retries"] == 1 and len(api2.message_requests()) == 2

    api3 = fake_api([malformed()])
    m3, co3 = matrix(tmp_path / "c", api3)
    t3, _ = run(m3, co3, "baseline", tmp_path / "c")
    assert t3["outcome"] == "api_failed" and "malformed" in t3["error_events"][0]["message"]


@pytest.mark.parametrize(
    "mode, script, outcome, kind, code",
    [
        ("crash_at_start", [reply(text("x"))], "server_crashed", "protocol_error", -32000),
        (
            "crash_during_call",
            [reply(tool_use("mcp__f__echo", {"text": "a"}))],
            "server_crashed",
            "protocol_error",
            -32000,
        ),
        ("invalid_schema", [reply(text("x"))], "server_crashed", "protocol_error", None),
        (
            "is_error",
            [reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))],
            "completed",
            "tool_error",
            None,
        ),
        (
            "hang",
            [reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))],
            "completed",
            "protocol_error",
            -32001,
        ),
        ("garbage", [reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))], "completed", None, None),
    ],
)
def test_server_faults_are_classified(tmp_path, fake_api, mode, script, outcome, kind, code):
    api = fake_api(script)
    m, co = matrix(tmp_path, api, tools={"f": faulty_tool(mode, call_timeout=1)})
    t, meta = run(m, co, "f", tmp_path)
    assert t["outcome"] == outcome, t["outcome_detail"]
    if kind:
        assert t["errors"][kind] >= 1
        ev = [e for e in t["error_events"] if e["kind"] == kind][0]
        assert ev["code"] == code
    else:
        assert sum(t["errors"].values()) == 0
        assert t["tool_calls"][0]["result_text"] == "a"
    if mode == "crash_at_start":
        assert "crash" in meta["server_stderr_tail"]


def test_huge_result_is_capped_and_recorded(tmp_path, fake_api):
    api = fake_api([reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))])
    m, co = matrix(tmp_path, api, tools={"f": faulty_tool("huge")}, limits={"max_result_tokens": 1000})
    t, _ = run(m, co, "f", tmp_path)
    call = t["tool_calls"][0]
    assert call["truncated"] and call["result_chars"] == 150_000 and call["result_tokens_est"] == 37_500
    sent = api.message_requests()[1]["body"]["messages"][-1]["content"][0]["content"]
    assert len(sent) < 4200 and "truncated by the harness" in sent


def test_api_key_never_reaches_server_or_records(tmp_path, fake_api):
    dump = tmp_path / "env.json"
    api = fake_api([reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))])
    # sandbox none: the dump is written outside the workspace (tests/prepare/test_sandbox.py covers the sandbox)
    tool = faulty_tool("ok", env={"FAULT_ENV_DUMP": str(dump), "PASSED": "literal"}, sandbox="none")
    m, co = matrix(tmp_path, api, tools={"f": tool})
    t, meta = run(m, co, "f", tmp_path)
    env = json.loads(dump.read_text())
    assert "ANTHROPIC_API_KEY" not in env and KEY not in json.dumps(env)
    assert env["PASSED"] == "literal" and env["HOME"].endswith("/home")
    assert KEY not in json.dumps(t) and KEY not in json.dumps(meta)
    assert api.message_requests()[0]["auth_present"]
    # and a key that slips into a record anyway is redacted before writing
    assert scrub_secrets({"a": f"x{KEY}y"}, [KEY]) == {"a": "x[redacted]y"}


def test_workspace_is_fresh_and_removed(tmp_path, fake_api, monkeypatch):
    import glob
    import tempfile

    # a temporary folder of this test's own: other runs on this machine make sandboxes at the same time
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    pattern = f"{private}/mcptrials-trial-*"
    api = fake_api([reply(tool_use("list_files", {"pattern": "**/*"})), reply(text("done"))])
    m, co = matrix(tmp_path, api)
    t, _ = run(m, co, "baseline", tmp_path)
    listing = t["tool_calls"][0]["result_text"]
    assert "src/util.py" in listing and "scenarios" not in listing and ".yaml" not in listing
    assert glob.glob(pattern) == []


def test_http_transport_server(tmp_path, fake_api):
    import sys
    from matrix_helpers import ROOT

    script = str(ROOT / "tests/fixtures/http_mcp_server.py")
    # an http server must be reached (network: true); it runs on the harness's venv (the mcp SDK)
    tool = {
        "transport": "http",
        "command": sys.executable,
        "args": [script, "{port}", "{workspace}"],
        "url": "http://127.0.0.1:{port}/mcp",
        "startup_timeout": 30,
        "network": True,
        "read_only": [sys.prefix, script],
    }
    api = fake_api(
        [
            reply(
                tool_use("mcp__web__find_text", {"text": "def helper"}, id="f"),
                tool_use("mcp__web__server_env", {"name": "ANTHROPIC_API_KEY"}, id="e"),
            ),
            reply(text("`src/util.py:1`")),
        ]
    )
    m, co = matrix(tmp_path, api, tools={"web": tool})
    t, meta = run(m, co, "web", tmp_path)
    assert t["outcome"] == "completed", t["outcome_detail"]
    calls = {c["id"]: c for c in t["tool_calls"]}
    assert calls["f"]["result_text"] == "src/util.py:1: def helper(x):"
    assert calls["e"]["result_text"] == "unset"
    system = api.message_requests()[0]["body"]["system"][0]["text"]
    assert "Use find_text to search the repository." in system  # server instructions, as a host adds them


def test_a_key_echoed_by_a_server_is_scrubbed_inside_run_trial(tmp_path, fake_api):
    """A server given the key's value (a literal in its env) echoes it in a tool result:
    run_trial itself returns records without it (not only the command that writes them)."""
    api = fake_api([reply(tool_use("mcp__f__echo", {"text": "a"}, id="e")), reply(text("done"))])
    m, co = matrix(tmp_path, api, tools={"f": faulty_tool("ok", env={"FAULT_LEAK": KEY})})
    t, meta = run(m, co, "f", tmp_path)
    assert t["outcome"] == "completed", t["outcome_detail"]
    sent = api.message_requests()[1]["body"]["messages"][-1]["content"][0]["content"]
    assert KEY in sent  # the server really echoed it
    assert KEY not in json.dumps(t) and KEY not in json.dumps(meta)
    assert t["tool_calls"][0]["result_text"] == "a\n(debug: token [redacted])"


def test_the_server_session_is_told_how_the_trial_body_ended(tmp_path):
    """TrialServer hands the body's exception to the session's __aexit__ (the SDK's clean-up
    sees the failure), and None when the body ended normally."""
    import asyncio
    import contextlib

    from mcptrials.prepare.servers import open_server
    from mcptrials.run.trial import Sandbox, TrialContext, TrialServer, step_limits

    cfg = write_matrix(tmp_path, tools={"f": faulty_tool("ok")})
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    seen = []

    @contextlib.asynccontextmanager
    async def opener(*args):  # the real server and session, watched
        async with open_server(*args) as session:
            try:
                yield session
            except BaseException as e:
                seen.append(e)
                raise
            seen.append(None)

    def ctx():
        sc = m.scenarios["find-helper"]
        return TrialContext(
            m=m,
            model=m.specs.models["reference"],
            host=m.specs.hosts["loop"],
            tool=m.specs.tools["f"],
            scenario=sc,
            trial=1,
            limits=step_limits(m, sc),
            snapshot=None,
            sandbox=Sandbox.create(co["tree"], None),
            out_dir=tmp_path / "out",
            system_text="",
            meta={},
        )

    async def body(c, fail):
        async with TrialServer(c, opener) as server:
            assert [t["name"] for t in server.tools] == ["echo", "big", "fail"]
            if fail:
                raise RuntimeError("a bug in the trial body")

    c = ctx()
    with pytest.raises(RuntimeError, match="a bug in the trial body"):
        asyncio.run(body(c, True))
    assert isinstance(seen[0], RuntimeError) and c.rec.errors["protocol_error"] == 0
    assert c.meta["live_tools_sha256"] and "started in mode ok" in c.meta["server_stderr_tail"]
    c2 = ctx()
    asyncio.run(body(c2, False))
    assert seen[1] is None
    c.sandbox.remove()
    c2.sandbox.remove()
