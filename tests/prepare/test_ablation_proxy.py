"""The proxy for ablation arms (issue 37 item 1): left-out tools hidden from tools/list and
refused on tools/call with the error a server gives for an unknown tool, the instructions
dropped; by hand, then between the real `mcp` client and a real SDK server, and in the arm's
snapshot (the fixture server)."""

from __future__ import annotations

import asyncio
import json
import sys

from matrix_helpers import BASE_PYTHON, faulty_tool
from mcptrials.prepare.proxy import UNKNOWN_TOOL, Rewriter, command_line
from mcptrials.prepare.servers import proxy_script
from test_proxy import LIST, SDK_SERVER, _client, msg
from variant_helpers import variant_project, variant_snapshot

HIDE = {"tools": {}, "hide": ["big"], "ablation": {"of": "faulty", "kind": "leave_one_out"}}


def test_hidden_tools_leave_the_listing_and_their_calls_are_unknown():
    r = Rewriter(HIDE)
    assert r.from_client(msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})) == (
        msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        None,
    )
    listed = json.loads(r.from_server(msg(LIST)))
    assert [t["name"] for t in listed["result"]["tools"]] == ["echo", "fail"] and listed["result"]["_meta"] == {"k": 1}
    to_server, answer = r.from_client(
        msg({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "big"}})
    )
    assert to_server is None
    assert json.loads(answer) == {
        "jsonrpc": "2.0",
        "id": 8,
        "error": {"code": UNKNOWN_TOOL, "message": "Unknown tool: big"},
    }
    call = msg({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "echo"}})
    assert r.from_client(call) == (call, None)
    # a hidden name the server does not list is a mismatch, as an unknown override is
    r2 = Rewriter({"tools": {}, "hide": ["gone"]})
    r2.from_client(msg({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert json.loads(r2.from_server(msg(dict(LIST, id=1))))["error"]["data"]["unknown_tools"] == ["gone"]


def test_instructions_off_drops_them_from_both_handshakes():
    r = Rewriter({"tools": {}, "instructions": False})
    for i, method in enumerate(("initialize", "server/discover")):
        r.from_client(msg({"jsonrpc": "2.0", "id": i, "method": method, "params": {}}))
        answer = {"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": "2025-11-25", "instructions": "Use x."}}
        assert json.loads(r.from_server(msg(answer))) == {
            "jsonrpc": "2.0",
            "id": i,
            "result": {"protocolVersion": "2025-11-25"},
        }
    kept = Rewriter(HIDE)  # an arm that keeps them never reads the handshake
    kept.from_client(msg({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
    same = msg({"jsonrpc": "2.0", "id": 1, "result": {"instructions": "Use x."}})
    assert kept.from_server(same) == same


def test_real_sdk_client_and_server_behind_the_ablation_proxy(tmp_path):
    from mcp import MCPError

    server = tmp_path / "sdk_server.py"
    server.write_text(SDK_SERVER)
    overrides = {"tools": {}, "hide": ["find_text"], "instructions": False}
    proxied = command_line(BASE_PYTHON, proxy_script(), overrides, [sys.executable, str(server)])

    async def session():
        with open(tmp_path / "err.log", "a") as errlog:
            async with _client(proxied, errlog) as c:
                names = sorted(t.name for t in (await c.list_tools()).tools)
                counted = await c.call_tool("slow_count", {"n": 2})
                try:
                    await c.call_tool("find_text", {"text": "x"})
                    code = None
                except MCPError as e:
                    code = e.code
                return names, c.instructions, counted, code

    names, instructions, counted, code = asyncio.run(session())
    assert names == ["boom", "slow_count"] and instructions is None
    assert counted.content[0].text == "counted 2"  # the kept tools answer as before
    assert code == UNKNOWN_TOOL  # the hidden tool is refused as the server refuses a name it does not have


def test_an_arms_snapshot_lists_what_the_model_sees(tmp_path):
    tools = {"baseline": {"transport": "none"}, "faulty": faulty_tool("ok", ablate={"leave_one_out": ["echo", "big"]})}
    m, _ = variant_project(tmp_path, tools)
    full = variant_snapshot(m, tmp_path, "faulty")
    arm = variant_snapshot(m, tmp_path, "faulty-without-big")
    assert [t["name"] for t in full["tools"]] == ["echo", "big", "fail"]
    assert [t["name"] for t in arm["tools"]] == ["echo", "fail"] and arm["variant_of"] == "faulty"
    assert arm["definition_tokens"] < full["definition_tokens"]
