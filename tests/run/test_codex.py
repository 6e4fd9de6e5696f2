"""Host `codex`: the real Codex CLI (installed by the workflow's own command into
.tools/_hosts/codex/) against the streaming Responses-API fake (tests/fakes/responses_api.py),
sandboxed, with the fault-injecting test server and the hostile server. Its transcript validates against the transcript schema and is graded."""

import hashlib
import json

import pytest

from fakes.responses_api import FakeResponsesAPI, error, failed, function_tool_names, hang, reply, tool_call
from host_helpers import install_host, started_apis
from matrix_helpers import BASE_PYTHON, SCENARIO, faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.scoring import score_trial
from mcptrials.run.hosts.codex import config_toml, parse_stream, step_outcome, toml_value
from mcptrials.run.runner import run_trial
from mcptrials.run.trial import Recorder

pytestmark = pytest.mark.slow

KEY = "fake-key-test-codex-0123456789abcdef"
# A model Codex's catalogue does not know: Codex then offers MCP tools directly (a catalogued
# one, e.g. gpt-5.5, defers them behind its tool_search tool) and notes the fallback.
MODEL = "gpt-test"
NS = "mcp__faulty"


@pytest.fixture
def responses_api(tmp_path):
    yield from started_apis(FakeResponsesAPI, tmp_path, "responses")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Codex for host `codex`, installed as the workflow does (reused when there)."""
    return install_host(tmp_path_factory.mktemp("install"), "codex", "codex", {"provider": "openai", "model": MODEL})


def matrix(tmp_path, api, tools, scenarios=None, limits=None, host=None, sandbox=None):
    extra = {
        "models": {"gpt": {"provider": "openai", "model": MODEL, "base_url": api.url, "max_retries": 0}},
        "hosts": {"codex": host or {"kind": "codex"}},
        "pricing": {MODEL: {"input": 1.25, "output": 10.0, "cache_read": 0.125}},
    }
    if limits:
        extra["limits"] = limits
    if sandbox:
        extra["sandbox"] = sandbox
    m = load_matrix(write_matrix(tmp_path, tools=tools, scenarios=scenarios, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def test_install_record(installed):
    assert installed["kind"] == "codex" and installed["version"] == "0.171.0"
    assert installed["reported_version"] == "codex-cli 0.171.0"
    assert installed["binary"].endswith(".tools/_hosts/codex/node_modules/.bin/codex")


def test_config_toml_is_valid_toml_with_the_limits():
    import tomllib

    text = config_toml(
        model="m",
        base_url="http://127.0.0.1:1",
        builtins=["shell"],
        system='say "hi"\n\\ok',
        bare=True,
        max_retries=2,
        max_result_tokens=500,
        server=("git_x", {"command": "/usr/bin/env", "args": ["-i", "A=b c", "srv"], "required": True}),
    )
    d = tomllib.loads(text)
    assert d["developer_instructions"] == 'say "hi"\n\\ok' and d["project_doc_max_bytes"] == 0
    assert d["features"]["shell_tool"] is True and d["features"]["apply_patch_freeform"] is False
    assert d["web_search"] == "disabled" and d["tool_output_token_limit"] == 500
    p = d["model_providers"]["mcptrials"]
    assert p["wire_api"] == "responses" and p["env_key"] == "OPENAI_API_KEY" and p["request_max_retries"] == 2
    assert d["mcp_servers"]["git_x"]["args"] == ["-i", "A=b c", "srv"]
    assert tomllib.loads("x = " + toml_value({"a.b": [1, True]}))["x"] == {"a.b": [1, True]}


def test_builtin_tools_of_codex_are_checked(tmp_path):
    cfg = write_matrix(
        tmp_path,
        extra={
            "models": {"g": {"provider": "openai", "model": "m"}},
            "hosts": {"codex": {"kind": "codex", "builtin_tools": ["Read"]}},
        },
    )
    with pytest.raises(ConfigError, match=r"hosts\.codex\.builtin_tools"):
        load_matrix(cfg)
    cfg = write_matrix(tmp_path / "b", extra={"hosts": {"codex": {"kind": "codex"}}})
    with pytest.raises(ConfigError, match=r"hosts\.codex.*provider openai"):
        load_matrix(cfg)


def test_trial_with_the_faulty_server_records_tools_usage_and_grades(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    api = responses_api(
        [
            lambda b: reply(
                "Let me look.",
                tool_call("echo", {"text": "hi"}, id="call_e1", namespace=NS),
                tool_call("exec_command", {"cmd": "cat src/util.py"}, id="call_s1"),
            ),
            reply(
                "`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument."
                "\n\nFeedback on the tools: echo echoed.",
                usage={"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 1000},
            ),
        ]
    )
    m, co = matrix(tmp_path, api, {"faulty": faulty_tool("ok")})
    t, meta = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "completed", t["outcome_detail"]
    assert t["host"] == "codex" and meta["host_kind"] == "codex" and meta["host_version"] == "0.171.0"
    assert meta["sandbox"]["mechanism"] == "bubblewrap" and meta["host_session_id"]
    e, s = t["tool_calls"]
    assert (e["source"], e["tool"], e["name"], e["result_text"], e["is_error"]) == (
        "mcp",
        "echo",
        "mcp__faulty__echo",
        "hi",
        False,
    )
    assert (s["source"], s["tool"], s["name"]) == ("builtin", "shell", "exec_command")
    assert "return x * 2" in s["result_text"]  # the shell ran in the workspace
    (step,) = t["steps"]
    assert step["answer_text"] == "`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument."
    assert step["reasoning_text"] == "Let me look." and step["turns"] == 2
    assert t["feedback_text"].startswith("Feedback on the tools")
    u = t["usage"]
    assert u["api_calls"] == 2 and u["cache_read_input_tokens"] == 1000 and u["cost_usd"] > 0
    first = api.response_requests()[0]["body"]
    # the server's tools are offered under Codex's namespace; of the built-ins only the shell
    names = function_tool_names(first)
    assert {"mcp__faulty" + n for n in ("echo", "big", "fail")} <= set(names) and "exec_command" in names
    assert not {"apply_patch", "view_image", "web_search", "update_goal"} & set(names)
    assert "mcptrials" in json.dumps(first["input"]).lower() or "Cite" in json.dumps(first["input"])
    assert first["max_output_tokens"] == 4096  # the reply cap, set by the proxy
    assert {q["auth_sha256"] for q in api.response_requests()} == {hashlib.sha256(KEY.encode()).hexdigest()}
    sc = score_trial(
        t, m.scenarios["find-helper"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], m.config["pricing"], None
    )
    assert sc["passed"] is True, sc["failures"]


def test_two_steps_one_thread(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    two = dict(
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
    api = responses_api(
        [
            reply(None, tool_call("text_echo", {"text": "step one"}, id="call_g1", namespace=NS)),
            reply("`helper` is defined at `src/util.py:1`; it returns `x * 2`."),
            reply("`main` calls `helper` at `src/app.py:5`."),
        ]
    )
    # a dotted tool name: Codex offers it as text_echo, and reports the server's own name
    m, co = matrix(
        tmp_path, api, {"faulty": faulty_tool("ok", env={"FAULT_TOOL_PREFIX": "text."})}, scenarios={"two": two}
    )
    t, _ = run_trial(m, "gpt", "faulty", "two", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "completed", t["outcome_detail"]
    (g,) = t["tool_calls"]
    assert (g["source"], g["tool"], g["step"], g["result_text"]) == ("mcp", "text.echo", 0, "step one")
    assert [s["answer_text"] for s in t["steps"]][1] == "`main` calls `helper` at `src/app.py:5`."
    reqs = api.response_requests()
    # one thread: step 2's request carries step 1's whole conversation
    assert len(reqs) == 3 and len(reqs[2]["body"]["input"]) > len(reqs[1]["body"]["input"])
    assert reqs[0]["body"]["prompt_cache_key"] == reqs[2]["body"]["prompt_cache_key"]


def test_server_sees_only_its_environment_and_tool_errors(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    dump = tmp_path / "server_env.json"
    tool = faulty_tool(
        "is_error", env={"FAULT_MODE": "is_error", "FAULT_ENV_DUMP": str(dump), "KEEP": "me"}, sandbox="none"
    )
    api = responses_api(
        [
            reply(None, tool_call("echo", {"text": "hi"}, id="call_x", namespace=NS)),
            reply("The tool failed; `helper` is in `src/util.py:1`."),
        ]
    )
    m, co = matrix(tmp_path, api, {"faulty": tool})
    t, _ = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    env = json.loads(dump.read_text())
    assert "OPENAI_API_KEY" not in env and not any(KEY in v for v in env.values())
    assert env["KEEP"] == "me" and not any(k.startswith("CODEX") for k in env)
    assert t["outcome"] == "completed"
    (c,) = t["tool_calls"]
    assert c["source"] == "mcp" and c["is_error"] and c["error_kind"] == "tool_error"


def test_outcomes_crash_at_start_crash_during_call_api_error_max_turns_timeout(
    tmp_path, installed, responses_api, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    api = responses_api([])
    m, co = matrix(tmp_path / "a", api, {"faulty": faulty_tool("crash_at_start")})
    t, _ = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "server_crashed" and "did not start" in t["outcome_detail"]
    assert api.response_requests() == [] and t["errors"]["protocol_error"] == 1

    api = responses_api([reply(None, tool_call("echo", {"text": "x"}, namespace=NS)), reply("after the crash")])
    m, co = matrix(tmp_path / "b", api, {"faulty": faulty_tool("crash_during_call")})
    t, _ = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "server_crashed", t["outcome_detail"]
    (c,) = t["tool_calls"]
    assert c["error_kind"] == "protocol_error" and c["error_code"] == -32000

    api = responses_api([error(500)], exhausted="repeat")
    m, co = matrix(tmp_path / "c", api, {"baseline": {"transport": "none"}})
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "api_failed" and t["errors"]["api_error"] == 1
    assert t["error_events"][0]["status"] == 500 and t["steps"][0]["answer_text"] == ""
    assert t["usage"]["api_calls"] == 0

    api = responses_api([reply(None, tool_call("exec_command", {"cmd": "true"}))], exhausted="repeat")
    m, co = matrix(tmp_path / "d", api, {"baseline": {"transport": "none"}}, limits={"max_turns": 2})
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "max_turns" and t["steps"][0]["turns"] == 2
    assert len(api.response_requests()) == 2  # the third call never reached the API

    api = responses_api([hang()])
    m, co = matrix(tmp_path / "e", api, {"baseline": {"transport": "none"}}, limits={"max_seconds": 3})
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "timed_out"


def test_reply_cut_at_its_cap_and_a_failed_response(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    # a tool result above max_result_tokens: the model sees it cut (tool_output_token_limit)
    api = responses_api([reply(None, tool_call("big", {"chars": 60000}, namespace=NS)), reply("done")])
    m, co = matrix(tmp_path / "r", api, {"faulty": faulty_tool("ok")}, limits={"max_result_tokens": 1000})
    t, _ = run_trial(m, "gpt", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    (c,) = t["tool_calls"]
    assert t["outcome"] == "completed" and c["result_chars"] == 60000 and c["truncated"] is True
    seen = [i for i in api.response_requests()[1]["body"]["input"] if i.get("type") == "function_call_output"]
    assert 1000 < len(json.dumps(seen)) < 2 * 4 * 1000

    api = responses_api([reply("`helper` is in `src/util.py:1` and ret", incomplete=True)])
    m, co = matrix(tmp_path / "a", api, {"baseline": {"transport": "none"}})
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "budget_exceeded" and t["steps"][0]["answer_text"].startswith("`helper` is in")

    api = responses_api([failed("The model broke.")], exhausted="repeat")
    m, co = matrix(tmp_path / "b", api, {"baseline": {"transport": "none"}})
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "api_failed" and t["errors"]["api_error"] == 1


def test_parse_stream_groups_and_classifies():
    """A recorded stream (no proxy): messages, calls in a row as one group, results, usage."""
    item = lambda ev, **i: {"type": ev, "item": i}  # noqa: E731
    events = [
        {"type": "thread.started", "thread_id": "T"},
        {"type": "turn.started"},
        item("item.completed", id="w", type="error", message="Model metadata for `x` not found."),
        item("item.completed", id="a", type="agent_message", text="Two calls."),
        item(
            "item.completed",
            id="c1",
            type="mcp_tool_call",
            server="git",
            tool="git.log",
            arguments={},
            result=None,
            error={"message": "tool call failed: Transport closed"},
            status="failed",
        ),
        item(
            "item.completed",
            id="c2",
            type="command_execution",
            command="ls",
            aggregated_output="a.py\n",
            exit_code=0,
            status="completed",
        ),
        item("item.completed", id="b", type="agent_message", text="Done."),
        {"type": "turn.completed", "usage": {"input_tokens": 100, "cached_input_tokens": 60, "output_tokens": 5}},
    ]
    s = parse_stream(events, 0)
    assert s.thread_id == "T" and s.warnings == ["Model metadata for `x` not found."]
    assert [m["role"] for m in s.messages] == ["assistant", "user", "assistant"]
    assert [b["type"] for b in s.messages[0]["content"]] == ["text", "tool_use", "tool_use"]
    c1, c2 = s.calls
    assert (c1["tool"], c1["source"], c1["error_code"], c1["turn"]) == ("git.log", "mcp", -32000, 1)
    assert (c2["tool"], c2["source"], c2["is_error"]) == ("shell", "builtin", False)
    rec = Recorder()
    assert step_outcome(s, rec, 0) == ("server_crashed", "the MCP server's connection closed during the step")
    s.failed = "stream disconnected"
    assert step_outcome(s, rec, 0, [200, 503, 503])[0] == "api_failed" and rec.error_events[-1]["status"] == 503


def test_parse_stream_records_a_call_started_and_never_completed():
    """The CLI stopped (a limit hit, a kill) while a call ran: the started call is recorded,
    answered false, its latency until the last event; a completed one is as before."""
    item = lambda ev, t, **i: {"type": ev, "_received": t, "item": i}  # noqa: E731
    events = [
        item("item.started", 10.0, id="c1", type="command_execution", command="ls", status="in_progress"),
        item(
            "item.completed",
            10.5,
            id="c1",
            type="command_execution",
            command="ls",
            aggregated_output="a.py\n",
            exit_code=0,
            status="completed",
        ),
        item(
            "item.started",
            11.0,
            id="c2",
            type="mcp_tool_call",
            server="git",
            tool="git.log",
            arguments={"n": 1},
            status="in_progress",
        ),
        {"type": "error", "_received": 11.25, "message": "stopped"},
    ]
    s = parse_stream(events, 0)
    c1, c2 = s.calls
    assert c1.get("answered", True) and c1["latency_ms"] == 500.0
    assert (c2["id"], c2["tool"], c2["arguments"], c2["answered"], c2["latency_ms"]) == (
        "c2",
        "git.log",
        {"n": 1},
        False,
        250.0,
    )
    assert c2["is_error"] and c2["error_kind"] is None and "no result" in c2["result_text"]
    assert [b["tool_use_id"] for b in s.messages[-1]["content"]] == ["c1", "c2"]


def _hostile_trial(tmp_path, responses_api, sandbox):
    """The hostile server under Codex, and Codex's own shell reading the gold by absolute path."""
    from matrix_helpers import HOSTILE, MARKER

    gold = tmp_path / "gold.json"
    gold.write_text('{"items": {"secret-item": {"quality": 0.9}}}')
    tool = {
        "command": BASE_PYTHON,
        "read_only": [str(HOSTILE)],
        "args": [str(HOSTILE), "--read", str(gold), "--marker", MARKER],
    }
    api = responses_api(
        [
            reply(
                None,
                tool_call("exec_command", {"cmd": f"cat {gold}"}, id="call_r"),
                tool_call("probe", {}, id="call_p", namespace="mcp__hostile"),
            ),
            reply("`src/util.py:1`"),
        ]
    )
    m, co = matrix(tmp_path, api, {"hostile": tool}, sandbox=sandbox)
    t, meta = run_trial(m, "gpt", "hostile", "find-helper", 1, co, None, None, tmp_path / "out", host="codex")
    assert t["outcome"] == "completed", t["outcome_detail"]
    calls = {c["tool"]: c for c in t["tool_calls"]}
    probe = json.loads(calls["probe"]["result_text"].replace("[redacted]", KEY))
    return calls["shell"], probe, meta, api


def test_under_codex_the_server_and_the_cli_stay_in_the_sandbox(tmp_path, installed, responses_api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    read, probe, meta, api = _hostile_trial(tmp_path, responses_api, "bubblewrap")
    assert "secret-item" not in read["result_text"]  # Codex's shell cannot reach it
    assert probe["read"] == {str(tmp_path / "gold.json"): None}  # nor can the server
    assert KEY not in probe["keys"] and probe["keys"]  # only the proxy's stand-in token
    assert all(k.startswith("mcptrials-proxy-") for k in probe["keys"])
    assert meta["sandbox"]["network"] is True
    reqs = api.response_requests()
    assert reqs and {q["auth_sha256"] for q in reqs} == {hashlib.sha256(KEY.encode()).hexdigest()}


def test_under_codex_sandbox_none_reaches_the_gold(tmp_path, installed, responses_api, monkeypatch):
    """The control: unsandboxed, Codex's shell reads the gold and the server finds the key."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    read, probe, _, _ = _hostile_trial(tmp_path, responses_api, "none")
    assert "secret-item" in read["result_text"]
    assert "secret-item" in probe["read"][str(tmp_path / "gold.json")]
    assert KEY in probe["keys"]  # from the harness's own environment
