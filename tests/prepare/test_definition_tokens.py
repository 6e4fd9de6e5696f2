"""What the tool definitions cost (issue 15 item 4): the snapshot's definition_tokens, by the
count-tokens endpoint of the fake Messages API, by the estimate without a key, the fallback
when the endpoint fails, and the figure in summary.json and the report's server profile."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import anthropic
import pytest

import runs_fixture as fx
from fakes.messages_api import reply, text, tool_use
from matrix_helpers import faulty_tool, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.definition_tokens import COUNT_METHOD, ESTIMATE_METHOD, definitions_json
from mcptrials.core.records import write_json
from mcptrials.run.runner import run_trial
from mcptrials.prepare.snapshot import make_snapshot

KEY = "fake-key-test-definition-tokens-0123456789"
MODEL = "claude-sonnet-4-6"


def project(tmp_path, base_url=None, tools=None, anthropic_model=True):
    models = (
        {"claude": {"provider": "anthropic", "model": MODEL, "base_url": base_url, "max_retries": 0}}
        if anthropic_model
        else {"reference": {"provider": "reference"}}
    )
    cfg = write_matrix(
        tmp_path,
        tools=tools or {"echo": faulty_tool("ok"), "baseline": {"transport": "none"}},
        extra={"models": models, "pricing": {MODEL: {"input": 3.0, "output": 15.0}}},
    )
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    write_json(tmp_path / "checkout.json", co)
    return m, co


def snapshot(m, tmp_path, tool="echo", **kw):
    return make_snapshot(
        str(m.path), tool, "tiny", tmp_path / "checkout.json", None, None, tmp_path / "snap" / tool / "tools.json", **kw
    )


def count_requests(api):
    return [r for r in api.requests if r["path"] == "/v1/messages/count_tokens"]


def fake_count(api, body) -> int:
    """The fake's own answer for a logged count request (asked again, through the SDK)."""
    client = anthropic.Anthropic(api_key=KEY, base_url=api.url, max_retries=0)
    kwargs = {"tools": body["tools"]} if body.get("tools") else {}
    try:
        return client.messages.count_tokens(model=body["model"], messages=body["messages"], **kwargs).input_tokens
    finally:
        client.close()


def test_counted_by_the_endpoint_with_the_tools_the_loop_sends(tmp_path, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api(
        [reply(tool_use("mcp__echo__echo", {"text": "hi"})), reply(text("`src/util.py:1`."))], require_auth=True
    )
    m, co = project(tmp_path, api.url)
    snap = snapshot(m, tmp_path)
    none, builtin, full = (r["body"] for r in count_requests(api))
    assert "tools" not in none and [t["name"] for t in builtin["tools"]] == ["read_file", "grep", "list_files"]
    with_tools, without = fake_count(api, full), fake_count(api, builtin)
    # the server's instructions count too (chars/4): "A test server in mode ok." is 25 chars, 6 tokens
    assert snap["instructions"] == "A test server in mode ok." and snap["instructions_tokens"] == 25 // 4 == 6
    assert snap["definition_tokens"] == with_tools - without + 6 > 6
    assert snap["definition_tokens_method"] == COUNT_METHOD and snap["definition_tokens_model"] == MODEL
    assert snap["definition_tokens_error"] is None
    assert snap["builtin_definition_tokens"] == without - fake_count(api, none)
    assert snap["definition_tools"] == len(snap["tools"]) > 0
    server_defs = full["tools"][3:]
    assert snap["definition_tokens_estimate"] == len(definitions_json(server_defs)) // 4 + 6
    # what was counted is what the loop sends with every request (less its cache breakpoint)
    api.requests.clear()
    t, _ = run_trial(m, "claude", "echo", "find-helper", 1, co, snap, None, tmp_path / "out")
    assert t["outcome"] == "completed", t["outcome_detail"]
    sent = api.message_requests()[0]["body"]["tools"]
    for d in sent:
        d.pop("cache_control", None)
    assert sent == full["tools"]
    assert (
        json.loads((tmp_path / "snap" / "echo" / "tools.json").read_text())["definition_tokens"]
        == with_tools - without + 6
    )


def test_baseline_adds_nothing(tmp_path, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api()
    m, _ = project(tmp_path, api.url)
    snap = snapshot(m, tmp_path, tool="baseline")
    assert (snap["definition_tokens"], snap["definition_tokens_method"], snap["definition_tools"]) == (
        0,
        COUNT_METHOD,
        0,
    )
    assert snap["builtin_definition_tokens"] > 0


def test_without_a_key_the_estimate_is_named(tmp_path, fake_api, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    api = fake_api()
    m, _ = project(tmp_path, api.url)
    snap = snapshot(m, tmp_path)
    assert not count_requests(api)
    assert snap["definition_tokens_method"] == ESTIMATE_METHOD == "estimate: chars/4 of the definitions' JSON"
    assert snap["definition_tokens"] == snap["definition_tokens_estimate"] > 0
    assert "ANTHROPIC_API_KEY is not set" in snap["definition_tokens_error"]


def test_no_anthropic_model_and_estimate_only_never_ask(tmp_path, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api()
    m, _ = project(tmp_path, api.url)
    snap = snapshot(m, tmp_path, count_tokens=False)  # a dry run: `mcptrials snapshot --estimate-only`
    assert not count_requests(api)
    assert (snap["definition_tokens_method"], snap["definition_tokens_error"]) == (ESTIMATE_METHOD, None)
    m2, _ = project(tmp_path / "ref", anthropic_model=False)
    snap2 = snapshot(m2, tmp_path / "ref")
    assert (snap2["definition_tokens_method"], snap2["definition_tokens_error"]) == (ESTIMATE_METHOD, None)
    assert snap2["definition_tokens"] == snap["definition_tokens"] > 0


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NotJSON(BaseHTTPRequestHandler):
    """An endpoint that answers every POST with a 200 whose body is not JSON."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b"<html>upstream proxy error</html>"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def not_json():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), NotJSON)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("broken", ["404", "refused", "not json"])
def test_a_broken_endpoint_falls_back_and_records_the_error(tmp_path, fake_api, not_json, monkeypatch, broken):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api()
    url = {"404": api.url + "/nowhere", "refused": f"http://127.0.0.1:{closed_port()}", "not json": not_json}[broken]
    m, _ = project(tmp_path, url)
    snap = snapshot(m, tmp_path)
    assert snap.get("error") is None and snap["tools"]  # the snapshot itself is whole
    assert snap["definition_tokens_method"] == ESTIMATE_METHOD
    assert snap["definition_tokens"] == snap["definition_tokens_estimate"] > 0
    err = snap["definition_tokens_error"]
    assert err.startswith(f"count_tokens with models.claude ({MODEL}) failed: ")
    assert {"404": "NotFoundError", "refused": "APIConnectionError", "not json": "JSONDecodeError"}[broken] in err
    assert KEY not in err


def test_summary_and_report_give_it_per_tool(tmp_path):
    cfg, runs = fx.build(tmp_path)
    snaps = runs.parent / "snapshots"
    for tool, n, method in (("git", 1234, "count_tokens"), ("baseline", 0, "count_tokens")):
        write_json(
            snaps / tool / "tiny" / "tools.json",
            {
                "tool": tool,
                "repo": "tiny",
                "definition_tokens": n,
                "definition_tokens_method": method,
                "definition_tokens_model": MODEL,
                "definition_tokens_error": None,
                "definition_tokens_estimate": n + 10,
                "builtin_definition_tokens": 456,
                "definition_tools": 12 if n else 0,
            },
        )
    agg, out = tmp_path / "aggregate", tmp_path / "report"
    fx.aggregate(cfg, runs, agg)
    prof = {p["tool"]: p for p in json.loads((agg / "summary.json").read_text())["server_profile"]}
    d = prof["git"]["definition_tokens"]
    assert (d["tokens"], d["methods"], d["builtin_tokens"]) == (1234, ["count_tokens"], 456)
    assert d["per_repo"]["tiny"]["definition_tokens_estimate"] == 1244
    assert prof["baseline"]["definition_tokens"]["tokens"] == 0
    assert fx.report(cfg, runs, agg, out, tmp_path / "none.json") == 0
    md = (out / "report.md").read_text()
    assert "tool definitions, tokens per request" in md and "1,234 (12 tools)" in md
    assert "by count_tokens" in md and "add 456 more" in md


def test_no_snapshots_leaves_it_unknown(tmp_path):
    cfg, runs = fx.build(tmp_path, models=("reference",), scenarios=("s1",))
    agg = tmp_path / "aggregate"
    fx.aggregate(cfg, runs, agg)
    prof = json.loads((agg / "summary.json").read_text())["server_profile"]
    assert all(p["definition_tokens"]["tokens"] is None for p in prof)


def test_a_server_that_did_not_start_has_no_figure(tmp_path, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api()
    m, _ = project(tmp_path, api.url, tools={"dead": faulty_tool("crash_at_start")})
    snap = snapshot(m, tmp_path, tool="dead")
    assert snap["error"] and not count_requests(api)
    assert (snap["definition_tokens"], snap["definition_tokens_method"]) == (None, "none: the server did not start")
