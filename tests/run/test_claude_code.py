"""Host `claude-code`: the real Claude Code CLI (installed by the workflow's own command into
.tools/_hosts/cc/) against the SSE Messages-API test server, with the real `mcp-server-git`
and the fault-injecting test server. Its transcript validates against the transcript schema
and goes through the same graders as the loop's."""

import json
import re
import subprocess
import sys
import tempfile
import time

import pytest

from fakes.messages_api import check_tool_pairing, error, hang, reply, text, tool_use
from host_helpers import install_host
from matrix_helpers import ROOT, SCENARIO, faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.scoring import score_trial
from mcptrials.grade.usage import adoption
from mcptrials.matrix.specs import HostSpec
from mcptrials.run.hosts.claude_code import allowed_tools, build_command, parse_stream, server_tool_names
from mcptrials.core.records import write_json
from mcptrials.run.runner import run_trial
from mcptrials.run.trial import NO_RESULT
from mcptrials.prepare.snapshot import make_snapshot

pytestmark = pytest.mark.slow

KEY = "fake-key-test-claude-code-0123456789"
DEMO = load_matrix(ROOT / "config.yaml")
WS_RE = re.compile(re.escape(tempfile.gettempdir()) + r"/mcptrials-trial-[^/\\\"]+/workspace")

TWO_STEPS = dict(
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


def ws(body: dict) -> str:
    """The trial's workspace, as Claude Code tells the model (absolute paths for its tools)."""
    return WS_RE.search(json.dumps(body)).group(0)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Claude Code for host `cc` and the git server, installed as the workflow does
    (each reused when already there)."""
    out = tmp_path_factory.mktemp("install")
    record = install_host(out, "cc", "claude-code", {"provider": "anthropic", "model": "claude-sonnet-4-6"})
    if not (ROOT / ".tools/git/bin/mcp-server-git").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mcptrials.cli",
                "install-tool",
                "--config",
                str(ROOT / "config.yaml"),
                "--tool",
                "git",
                "--out",
                str(out / "git.json"),
            ],
            check=True,
        )
    return record


def matrix(tmp_path, api, tools, scenarios=None, limits=None):
    extra = {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
        },
        "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
        "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
    }
    if limits:
        extra["limits"] = limits
    cfg = write_matrix(tmp_path, tools=tools, scenarios=scenarios, extra=extra)
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def snapshot_of(tool, names):
    return {"tools": [{"name": n} for n in names], "server_name": tool}


def test_install_record(installed):
    assert installed["version"] == "2.1.328" and installed["reported_version"].startswith("2.1.328")
    assert installed["binary"].endswith(".tools/_hosts/cc/node_modules/.bin/claude")


def test_command_line():
    argv = build_command(
        "claude",
        "-p looks like an option",
        host=HostSpec(
            "cc", "claude-code", None, builtin_tools=("Read", "Grep"), bare=False, extra_args=("--effort", "low")
        ),
        model="m",
        session_id="S",
        resume=True,
        max_turns=7,
        allowed=allowed_tools("git", snapshot_of("git", ["git_log", "a.b"]), ["Read", "Grep"], True),
        mcp_file="/x/mcp.json",
        system_append="SYS",
    )
    assert argv[-2:] == ["--", "-p looks like an option"]
    assert argv[argv.index("--allowedTools") + 1] == "Read,Grep,mcp__git__git_log,mcp__git__a_b"
    assert argv[argv.index("--resume") + 1] == "S" and "--session-id" not in argv
    assert argv[argv.index("--max-turns") + 1] == "7" and "--strict-mcp-config" in argv and "--bare" not in argv
    # no tool list (e.g. no snapshot): the whole server is allowed
    assert allowed_tools("git", None, [], True) == ["mcp__git"] and allowed_tools("baseline", None, [], False) == []


def test_two_steps_real_git_server_graded(tmp_path, installed, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api(
        [
            lambda b: reply(
                text("Check the history and read the file."),
                tool_use("mcp__git__git_log", {"repo_path": ws(b), "max_count": 3}, id="toolu_g1"),
                tool_use("Read", {"file_path": ws(b) + "/src/util.py"}, id="toolu_r1"),
            ),
            reply(text("`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument.")),
            lambda b: reply(
                text("Search for callers."),
                tool_use(
                    "Grep", {"pattern": "helper\\(", "path": ws(b), "output_mode": "content", "-n": True}, id="toolu_s1"
                ),
            ),
            reply(
                text("`main` calls `helper` at `src/app.py:5`.\n\nFeedback on the tools: Grep found the call."),
                usage={
                    "input_tokens": 50,
                    "output_tokens": 20,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 200,
                },
            ),
        ]
    )
    m, co = matrix(tmp_path, api, {"git": DEMO.tools["git"]}, scenarios={"two": TWO_STEPS})
    snap = snapshot_of("git", ["git_log", "git_status", "git_show"])
    t, meta = run_trial(m, "claude", "git", "two", 1, co, snap, None, tmp_path / "out", host="cc")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "completed", t["outcome_detail"]
    assert t["host"] == "cc" and meta["host_kind"] == "claude-code" and meta["host_version"] == "2.1.328"
    calls = {c["id"]: c for c in t["tool_calls"]}
    g, r, s = calls["toolu_g1"], calls["toolu_r1"], calls["toolu_s1"]
    assert (g["source"], g["tool"], g["step"], g["turn"], g["is_error"]) == ("mcp", "git_log", 0, 1, False)
    assert "Commit history" in g["result_text"]  # the real server answered
    assert (r["source"], r["tool"], r["name"]) == ("builtin", "read_file", "Read") and "return x * 2" in r[
        "result_text"
    ]
    assert (s["source"], s["tool"], s["step"]) == ("builtin", "grep", 1) and "src/app.py" in s["result_text"]
    s0, s1 = t["steps"]
    assert s0["answer_text"].startswith("`helper` is defined at `src/util.py:1`") and s0["turns"] == 2
    assert s0["reasoning_text"] == "Check the history and read the file." and "git_log" in s0["audit_text"]
    assert s1["answer_text"] == "`main` calls `helper` at `src/app.py:5`."
    assert t["feedback_text"].startswith("Feedback on the tools")
    # one session: step 2's first request carries step 1's whole conversation
    reqs = api.message_requests()
    assert len(reqs) == 4 and all(q["query"] == "beta=true" and q["body"]["stream"] for q in reqs)
    assert len(reqs[2]["body"]["messages"]) > len(reqs[1]["body"]["messages"])
    assert "temperature" not in reqs[0]["body"]
    # the recorded conversation is valid Messages-API form
    assert check_tool_pairing(t["messages"]) is None and t["messages"][0]["role"] == "user"
    u = t["usage"]
    assert u["api_calls"] == 4 and u["cache_read_input_tokens"] == 1000 and u["cache_creation_input_tokens"] == 200
    assert u["cost_usd"] > 0 and u["host_cost_usd"] > 0
    assert meta["server_startup_seconds"] > 0 and meta["server_protocol_version"]
    sc = score_trial(
        t, m.scenarios["two"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], m.config["pricing"], None
    )
    assert sc["passed"] is True, sc["failures"]
    assert sc["adoption"]["mcp_calls"] == 1 and sc["adoption"]["builtin_search_calls"] == 1


def test_server_sees_only_its_environment_and_tool_errors(tmp_path, installed, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    dump = tmp_path / "server_env.json"
    tool = faulty_tool(
        "is_error", env={"FAULT_MODE": "is_error", "FAULT_ENV_DUMP": str(dump), "KEEP": "me"}, sandbox="none"
    )  # the dump is written outside the workspace
    api = fake_api(
        [
            reply(tool_use("mcp__faulty__echo", {"text": "hi"}, id="toolu_e1")),
            reply(text("The tool failed; `helper` is in `src/util.py:1`.")),
        ]
    )
    m, co = matrix(tmp_path, api, {"faulty": tool})
    t, _ = run_trial(m, "claude", "faulty", "find-helper", 1, co, None, None, tmp_path / "out", host="cc")
    env = json.loads(dump.read_text())
    assert "ANTHROPIC_API_KEY" not in env and not any(KEY in v for v in env.values())
    assert env["KEEP"] == "me" and env["HOME"].endswith("/home") and "CLAUDECODE" not in env
    assert t["outcome"] == "completed"
    (c,) = t["tool_calls"]
    assert c["source"] == "mcp" and c["is_error"] and c["error_kind"] == "tool_error"
    assert t["errors"]["tool_error"] == 1


def test_outcomes_crash_max_turns_api_failure_timeout(tmp_path, installed, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api([])
    m, co = matrix(tmp_path / "a", api, {"broken": faulty_tool("crash_at_start")})
    t, meta = run_trial(m, "claude", "broken", "find-helper", 1, co, None, None, tmp_path / "out", host="cc")
    assert t["outcome"] == "server_crashed" and "did not connect" in t["outcome_detail"]
    # stopped at the init event, which may come just after the first request went out
    assert len(api.message_requests()) <= 1 and t["errors"]["protocol_error"] == 1 and t["usage"]["api_calls"] == 0

    api = fake_api([reply(tool_use("Grep", {"pattern": "helper"}))], exhausted="repeat")
    m, co = matrix(tmp_path / "b", api, {"baseline": {"transport": "none"}}, limits={"max_turns": 2})
    t, _ = run_trial(m, "claude", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="cc")
    assert t["outcome"] == "max_turns" and t["steps"][0]["turns"] == 2 and t["steps"][0]["answer_text"] == ""
    assert len(api.message_requests()) == 2

    api = fake_api([error(500)], exhausted="repeat")
    m, co = matrix(tmp_path / "c", api, {"baseline": {"transport": "none"}})
    t, _ = run_trial(m, "claude", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="cc")
    assert t["outcome"] == "api_failed" and t["errors"]["api_error"] == 1
    assert t["error_events"][0]["status"] == 500 and t["steps"][0]["answer_text"] == ""
    assert t["usage"]["api_calls"] == 0

    api = fake_api([hang()])
    m, co = matrix(tmp_path / "d", api, {"baseline": {"transport": "none"}}, limits={"max_seconds": 3})
    t0 = time.monotonic()
    t, _ = run_trial(m, "claude", "baseline", "find-helper", 1, co, None, None, tmp_path / "out", host="cc")
    assert t["outcome"] == "timed_out" and time.monotonic() - t0 < 30  # the CLI was killed, not waited for


def test_parse_stream_groups_blocks_by_message():
    """stream-json sends one block per assistant event; results may arrive between them."""

    def a(mid, block, ts):
        return {"type": "assistant", "timestamp": ts, "message": {"id": mid, "model": "m", "content": [block]}}

    events = [
        {"type": "system", "subtype": "init", "mcp_servers": []},
        a("m1", {"type": "text", "text": "two calls"}, "2026-01-01T00:00:00.000Z"),
        a("m1", {"type": "tool_use", "id": "x", "name": "mcp__git__git_log", "input": {}}, "2026-01-01T00:00:00.000Z"),
        {
            "type": "user",
            "timestamp": "2026-01-01T00:00:00.250Z",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "x",
                        "is_error": True,
                        "content": [{"type": "text", "text": "MCP error -32001: timed out"}],
                    }
                ]
            },
        },
        a("m1", {"type": "tool_use", "id": "y", "name": "Glob", "input": {"pattern": "*"}}, "2026-01-01T00:00:00.100Z"),
        {
            "type": "user",
            "timestamp": "2026-01-01T00:00:00.300Z",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "y", "content": "a.py"}]},
        },
        a("m2", {"type": "text", "text": "done"}, "2026-01-01T00:00:01.000Z"),
        {"type": "result", "subtype": "success", "result": "done", "usage": {"input_tokens": 5}},
    ]
    s = parse_stream(events, 0)
    assert [m["role"] for m in s.messages] == ["assistant", "user", "assistant"]
    assert [b.get("id") for b in s.messages[0]["content"]] == [None, "x", "y"]
    assert check_tool_pairing(s.messages) is None
    x, y = s.calls
    assert (x["error_kind"], x["error_code"], x["latency_ms"]) == ("protocol_error", -32001, 250.0)
    assert (y["tool"], y["source"], y["latency_ms"], y["turn"]) == ("list_files", "builtin", 200.0, 1)
    assert s.replies == [(["two calls"], True), (["done"], False)]


def test_parse_stream_records_a_call_the_step_ended_before_it_answered():
    """The CLI stopped (a limit hit, a kill) while a call ran: the call is recorded, answered
    false, its latency until the last event, and the turn closed for the record."""
    events = [
        {
            "type": "assistant",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {
                "id": "m1",
                "model": "m",
                "content": [{"type": "tool_use", "id": "x", "name": "mcp__git__git_log", "input": {"n": 1}}],
            },
        },
        {"type": "system", "subtype": "api_retry", "timestamp": "2026-01-01T00:00:00.400Z"},
    ]
    s = parse_stream(events, 0, server_tool_names("git", [{"name": "git.log"}]))
    (x,) = s.calls
    assert (x["id"], x["tool"], x["arguments"], x["answered"], x["latency_ms"]) == (
        "x",
        "git.log",
        {"n": 1},
        False,
        400.0,
    )
    assert x["is_error"] and x["error_kind"] is None and "no result" in x["result_text"]
    assert check_tool_pairing(s.messages) is None


def test_parse_stream_records_the_servers_own_tool_name():
    """Claude Code calls `git.log` mcp__git__git_log; the record says `git.log`, as the loop's."""
    events = [
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "model": "m",
                "content": [
                    {"type": "tool_use", "id": "x", "name": "mcp__git__git_log", "input": {}},
                    {"type": "tool_use", "id": "y", "name": "mcp__git__unknown_tool", "input": {}},
                ],
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {"type": "tool_result", "tool_use_id": "x", "content": "ok"},
                    {"type": "tool_result", "tool_use_id": "y", "content": "ok"},
                ]
            },
        },
    ]
    names = server_tool_names("git", [{"name": "git.log"}, {"name": "git_status"}])
    assert names == {"mcp__git__git_log": "git.log", "mcp__git__git_status": "git_status"}
    x, y = parse_stream(events, 0, names).calls
    assert (x["tool"], x["name"]) == ("git.log", "mcp__git__git_log")
    assert y["tool"] == "unknown_tool"  # not in the tool list: Claude Code's spelling is all there is


def test_both_hosts_record_the_servers_own_tool_name(tmp_path, installed, fake_api, monkeypatch):
    """A server tool `text.echo` (sanitized to mcp__faulty__text_echo by both hosts) is
    `text.echo` in both hosts' tool_calls, so per-tool tables and expected_tools agree."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    sc = dict(SCENARIO, steps=[dict(SCENARIO["steps"][0], expected_tools=["text.echo"])])
    one = [
        reply(tool_use("mcp__faulty__text_echo", {"text": "hi"}, id="toolu_e1")),
        reply(text("`helper` is defined at `src/util.py:1`.")),
    ]
    api = fake_api(one + one)
    m, co = matrix(
        tmp_path, api, {"faulty": faulty_tool("ok", env={"FAULT_TOOL_PREFIX": "text."})}, scenarios={"dotted": sc}
    )
    write_json(tmp_path / "checkout.json", co)
    snap = make_snapshot(str(m.path), "faulty", "tiny", tmp_path / "checkout.json", None, None, tmp_path / "tools.json")
    assert "text.echo" in [t["name"] for t in snap["tools"]]
    used = {}
    for host in ("loop", "cc"):
        t, _ = run_trial(m, "claude", "faulty", "dotted", 1, co, snap, None, tmp_path / host, host=host)
        assert t["outcome"] == "completed", t["outcome_detail"]
        (c,) = [c for c in t["tool_calls"] if c["source"] == "mcp"]
        assert (c["tool"], c["result_text"]) == ("text.echo", "hi"), host
        a = adoption(t, sc)
        used[host] = (sorted(a["per_tool"]), a["expected_tools"][0]["used"])
    assert used["loop"] == used["cc"] == (["text.echo"], ["text.echo"])


def test_host_needs_a_model_it_can_drive(tmp_path):
    cfg = write_matrix(tmp_path, extra={"hosts": {"cc": {"kind": "claude-code"}}})
    with pytest.raises(ConfigError, match=r"hosts\.cc.*provider anthropic"):
        load_matrix(cfg)
    cfg.write_text(cfg.read_text().replace("kind: claude-code", "kind: loop\n    version: '1'"))
    with pytest.raises(ConfigError, match=r"hosts\.cc\.version.*only for a CLI host kind"):
        load_matrix(cfg)


def _hostile_cc_trial(tmp_path, installed, fake_api, sandbox):
    """The hostile server under the CLI, and the CLI's own Read of the gold file by absolute path."""
    from matrix_helpers import HOSTILE, MARKER

    gold = tmp_path / "gold.json"
    gold.write_text('{"items": {"secret-item": {"quality": 0.9}}}')
    tool = {
        "command": __import__("matrix_helpers").BASE_PYTHON,
        "read_only": [str(HOSTILE)],
        "args": [str(HOSTILE), "--read", str(gold), "--marker", MARKER],
    }
    api = fake_api(
        [
            reply(
                tool_use("Read", {"file_path": str(gold)}, id="toolu_r"),
                tool_use("mcp__hostile__probe", {}, id="toolu_p"),
            ),
            reply(text("`src/util.py:1`")),
        ]
    )
    extra = {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
        },
        "hosts": {"cc": {"kind": "claude-code"}},
        "sandbox": sandbox,
    }
    m = load_matrix(write_matrix(tmp_path, tools={"hostile": tool}, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    snap = snapshot_of("hostile", ["probe"])
    t, meta = run_trial(m, "claude", "hostile", "find-helper", 1, co, snap, None, tmp_path / "out", host="cc")
    assert t["outcome"] == "completed", t["outcome_detail"]
    calls = {c["id"]: c for c in t["tool_calls"]}
    probe = json.loads(calls["toolu_p"]["result_text"].replace("[redacted]", KEY))
    return calls["toolu_r"], probe, meta, api


def test_under_claude_code_the_server_and_the_cli_stay_in_the_sandbox(tmp_path, installed, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    read, probe, meta, api = _hostile_cc_trial(tmp_path, installed, fake_api, "bubblewrap")
    assert read["is_error"] and "secret-item" not in read["result_text"]  # the CLI's Read cannot reach it
    assert probe["read"] == {str(tmp_path / "gold.json"): None}  # nor can the server
    assert KEY not in probe["keys"] and probe["keys"]  # only the proxy's stand-in token
    assert all(k.startswith("mcptrials-proxy-") for k in probe["keys"])
    assert meta["sandbox"]["mechanism"] == "bubblewrap" and meta["sandbox"]["network"] is True
    # the API still got the real key: the proxy added it
    import hashlib

    reqs = api.message_requests()
    assert reqs and {q["auth_sha256"] for q in reqs} == {hashlib.sha256(KEY.encode()).hexdigest()}


def test_under_claude_code_sandbox_none_reaches_the_gold(tmp_path, installed, fake_api, monkeypatch):
    """The control: unsandboxed, the CLI reads the gold and the server finds the key."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    read, probe, meta, _ = _hostile_cc_trial(tmp_path, installed, fake_api, "none")
    assert "secret-item" in read["result_text"]
    assert "secret-item" in probe["read"][str(tmp_path / "gold.json")]
    assert KEY in probe["keys"]  # from the harness's own environment


def test_a_server_cannot_spend_past_the_trials_limits_through_the_proxy(tmp_path, installed, fake_api, monkeypatch):
    """A server in the CLI's sandbox finds the proxy's address and token in the CLI's
    environment and sends model calls of its own. The proxy holds the whole trial to
    steps x max_turns calls, each at the reply cap: the server's extra calls are refused,
    never reach the API, and the trial ends budget_exceeded, saying why."""
    from matrix_helpers import HOSTILE

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    tool = {
        "command": __import__("matrix_helpers").BASE_PYTHON,
        "read_only": [str(HOSTILE)],
        "args": [str(HOSTILE), "--spend", "4"],
    }
    api = fake_api([reply(tool_use("mcp__hostile__probe", {}, id="toolu_p")), reply(text("`src/util.py:1`"))])
    m, co = matrix(tmp_path, api, {"hostile": tool}, limits={"max_turns": 3, "max_output_tokens": 2000})
    t, _ = run_trial(
        m,
        "claude",
        "hostile",
        "find-helper",
        1,
        co,
        snapshot_of("hostile", ["probe"]),
        None,
        tmp_path / "out",
        host="cc",
    )
    reqs = api.message_requests()
    # the CLI's first call and two of the server's fit in 1 step x 3 turns; the rest are refused
    assert len(reqs) == 3, [q["body"].get("messages", [{}])[0] for q in reqs]
    assert [q["body"]["messages"][0]["content"] == "spend" for q in reqs] == [False, True, True]
    call = next(c for c in t["tool_calls"] if c["id"] == "toolu_p")  # recorded, whether it answered or not
    # The refusal stops the CLI; whether the probe's result came first is a race (under load it
    # often does not): either way the call is on record.
    if call.get("answered", True):
        assert json.loads(call["result_text"])["spend"] == [200, 200, 429, 429]
    else:
        assert call["result_text"] == NO_RESULT and call["is_error"] and call["error_kind"] is None
    assert all(q["body"]["max_tokens"] <= 2000 for q in reqs)  # 64000 asked, the reply cap sent
    assert t["outcome"] == "budget_exceeded", (t["outcome"], t["outcome_detail"])
    assert "key proxy refused" in t["outcome_detail"] and "limit of 3" in t["outcome_detail"]
