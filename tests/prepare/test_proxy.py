"""Description variants (issue 16 part 2): `variant_of` + `overrides`, run behind our MCP proxy
(src/mcptrials/prepare/proxy.py).

- the proxy's rewriting on messages (Rewriter), by hand;
- the proxy as a process between the real `mcp` client and real servers: one built with the
  official SDK (MCPServer, protocol 2026-07-28) and the stdlib fixture server (the
  initialize handshake): rewritten tools/list, renamed calls reaching the real tool, the
  old name refused, tool errors, JSON-RPC errors, notifications and ids passed unchanged,
  byte for byte against the server run directly;
- the config: a variant resolved to its base's server, and each bad variant refused with
  file, field and fix; the snapshot's record and its check of the overrides;
- a trial on the `loop` host through the fake Messages API (the model is offered the new
  names and descriptions, calls a renamed tool, and the real tool answers); the same under
  the real Claude Code CLI is in test_proxy_claude_code.py.
"""

from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import BASE_PYTHON, FAULTY_SERVER, faulty_tool, write_matrix
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.prepare.proxy import OVERRIDE_MISMATCH, UNKNOWN_TOOL, Rewriter, command_line, mismatch
from mcptrials.run.runner import run_trial
from mcptrials.prepare.servers import proxy_script
from variant_helpers import (
    KEY,
    OVERRIDES,
    anthropic_extra,
    proxy_mounted,
    variant_project,
    variant_snapshot,
    variant_tools,
)


def msg(obj) -> bytes:
    return json.dumps(obj).encode() + b"\n"


# --- the rewriting, by hand ------------------------------------------------------------


LIST = {
    "jsonrpc": "2.0",
    "id": 7,
    "result": {
        "tools": [
            {
                "name": "echo",
                "description": "Return the text.",
                "title": "Echo",
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": "old"}},
                    "required": ["text"],
                },
            },
            {"name": "big", "description": "Long.", "inputSchema": {"type": "object", "properties": {}}},
            {"name": "fail", "description": "Fails.", "inputSchema": {"type": "object"}},
        ],
        "_meta": {"k": 1},
    },
}


def test_tools_list_is_rewritten_and_the_rest_kept():
    r = Rewriter(OVERRIDES)
    assert r.from_client(msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})) == (
        msg({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
        None,
    )
    out = json.loads(r.from_server(msg(LIST)))
    echo, big, fail = out["result"]["tools"]
    assert echo == {
        "name": "say",
        "description": "Say the text back, word for word.",
        "title": "Echo",
        "inputSchema": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string", "description": "The words to say."}},
        },
    }
    assert big == {
        "name": "big",
        "description": "Make a long text.",
        "inputSchema": {"type": "object", "properties": {}},
    }
    assert fail == LIST["result"]["tools"][2] and out["result"]["_meta"] == {"k": 1} and out["id"] == 7
    assert not r.pending  # answered: the next server line is not even parsed
    assert r.from_server(b"not json at all\n") == b"not json at all\n"


def test_renamed_calls_map_back_and_the_old_name_is_gone():
    r = Rewriter(OVERRIDES)
    call = {
        "jsonrpc": "2.0",
        "id": "a-1",
        "method": "tools/call",
        "params": {"name": "say", "arguments": {"text": "hi"}, "_meta": {"progressToken": 3}},
    }
    to_server, to_client = r.from_client(msg(call))
    assert json.loads(to_server) == dict(call, params=dict(call["params"], name="echo")) and to_client is None
    # the server's own name of a renamed tool: the model never saw it, the proxy answers
    to_server, to_client = r.from_client(msg(dict(call, params={"name": "echo", "arguments": {}})))
    assert to_server is None
    assert json.loads(to_client) == {
        "jsonrpc": "2.0",
        "id": "a-1",
        "error": {"code": UNKNOWN_TOOL, "message": "Unknown tool: echo"},
    }
    # a tool that is not renamed passes byte for byte (spacing kept)
    raw = b'{"jsonrpc":"2.0",  "id":5,"method":"tools/call","params":{"name":"big","arguments":{}}}\n'
    assert r.from_client(raw) == (raw, None)
    # a swap: a -> b and b -> a, both calls mapped, neither hidden
    swap = Rewriter({"tools": {"a": {"name": "b"}, "b": {"name": "a"}}})
    assert json.loads(swap.from_client(msg(dict(call, params={"name": "a"})))[0])["params"]["name"] == "b"
    assert swap.hidden == set()


def test_everything_else_passes_untouched():
    r = Rewriter(OVERRIDES)
    lines = [
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n',
        b'{"jsonrpc":"2.0","id":1,"method":"resources/list"}\n',
        b'{"jsonrpc":"2.0","id":9,"result":{"roots":[]}}\n',  # the client answering the server
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}\n',
        b"garbage\n",
    ]
    for line in lines:
        assert r.from_client(line) == (line, None)
    assert not r.pending
    r.from_client(msg({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    # while a listing is pending: the server's notifications, requests, other responses and errors stay as sent
    server_lines = [
        b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"roots/list"}\n',  # the server's own request, same id
        b'{"jsonrpc":"2.0","id":3,"result":{"content":[]}}\n',
    ]
    for line in server_lines:
        assert r.from_server(line) == line
    err = b'{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"boom"}}\n'
    assert r.from_server(err) == err and not r.pending
    # ids are typed: a response with id "2" does not answer the request with id 2
    r.from_client(msg({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    assert r.from_server(msg(dict(LIST, id="2"))) == msg(dict(LIST, id="2")) and r.pending


def test_mismatch_is_an_error_after_the_last_page():
    r = Rewriter(
        {"tools": {"fail": {"name": "say"}, "echo": {"parameters": {"text": "x"}}, "late": {"description": "d"}}}
    )
    page1 = {"jsonrpc": "2.0", "id": 1, "result": {"tools": LIST["result"]["tools"][:1], "nextCursor": "c2"}}
    page2 = {"jsonrpc": "2.0", "id": 2, "result": {"tools": LIST["result"]["tools"][1:] + [{"name": "late"}]}}
    r.from_client(msg({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    assert "result" in json.loads(r.from_server(msg(page1)))  # not the last page: no verdict yet
    r.from_client(msg({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c2"}}))
    assert "result" in json.loads(r.from_server(msg(page2)))  # `late` is on page 2: known
    bad = Rewriter(
        {"tools": {"gone": {"description": "d"}, "echo": {"parameters": {"nope": "x"}}, "fail": {"name": "big"}}}
    )
    bad.from_client(msg({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    out = json.loads(bad.from_server(msg(dict(LIST, id=1))))
    assert out["id"] == 1 and out["error"]["code"] == OVERRIDE_MISMATCH
    assert out["error"]["data"] == {
        "unknown_tools": ["gone"],
        "listed": ["big", "echo", "fail"],
        "unknown_parameters": {"echo": {"unknown": ["nope"], "listed": ["text"]}},
        "name_clashes": {"big": ["big", "fail"]},
    }
    assert "the server lists no tool gone" in out["error"]["message"]
    assert mismatch(OVERRIDES["tools"], LIST["result"]["tools"]) == {}


# --- the proxy process between the real client and real servers ---------------------------

SDK_SERVER = textwrap.dedent('''
    """A tiny MCP server built with the official SDK (protocol 2026-07-28)."""
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("sdk-fixture", instructions="Use find_text.")


    @server.tool()
    def find_text(text: str) -> str:
        """Search for a text."""
        return f"found {text} at src/util.py:1"


    @server.tool()
    def boom() -> str:
        """Always raises."""
        raise RuntimeError("it went boom")


    @server.tool()
    async def slow_count(n: int, ctx: Context) -> str:
        """Count to n, reporting progress."""
        for i in range(n):
            await ctx.report_progress(i + 1, n)
        return f"counted {n}"


    if __name__ == "__main__":
        server.run()
''')
SDK_OVERRIDES = {
    "tools": {
        "find_text": {
            "name": "grep_repo",
            "description": "Find a text in the repository.",
            "parameters": {"text": "The exact text to look for."},
        }
    }
}


def _client(argv, errlog):
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env={"PATH": "/usr/bin:/bin"})
    return Client(stdio_client(params, errlog=errlog), mode="auto", read_timeout_seconds=30, cache=None)


def test_real_sdk_server_behind_the_proxy(tmp_path):
    from mcp import MCPError

    server = tmp_path / "sdk_server.py"
    server.write_text(SDK_SERVER)
    direct = [sys.executable, str(server)]
    proxied = command_line(BASE_PYTHON, proxy_script(), SDK_OVERRIDES, direct)

    async def session(argv):
        with open(tmp_path / "err.log", "a") as errlog:
            async with _client(argv, errlog) as c:
                tools = {t.name: t for t in (await c.list_tools()).tools}
                progress = []

                async def on_progress(p, total, message):
                    progress.append(p)

                counted = await c.call_tool("slow_count", {"n": 3}, progress_callback=on_progress)
                boom = await c.call_tool("boom", {})
                name = "grep_repo" if "grep_repo" in tools else "find_text"
                found = await c.call_tool(name, {"text": "helper"})
                try:
                    await c.call_tool("find_text" if name == "grep_repo" else "nope", {"text": "x"})
                    old = None
                except MCPError as e:
                    old = e.code
                return tools, c.protocol_version, c.instructions, progress, counted, boom, found, old

    d_tools, d_proto, d_instr, d_prog, d_count, d_boom, d_found, _ = asyncio.run(session(direct))
    tools, proto, instr, prog, count, boom, found, old = asyncio.run(session(proxied))
    assert proto == d_proto == "2026-07-28" and instr == d_instr == "Use find_text."
    assert sorted(tools) == ["boom", "grep_repo", "slow_count"] and sorted(d_tools) == [
        "boom",
        "find_text",
        "slow_count",
    ]
    g = tools["grep_repo"]
    assert g.description == "Find a text in the repository."
    assert g.input_schema["properties"]["text"]["description"] == "The exact text to look for."
    assert g.input_schema["required"] == d_tools["find_text"].input_schema["required"] == ["text"]
    assert tools["boom"] == d_tools["boom"] and tools["slow_count"] == d_tools["slow_count"]
    assert found.content[0].text == d_found.content[0].text == "found helper at src/util.py:1"  # the real tool
    assert boom.is_error and boom.content[0].text == d_boom.content[0].text  # a tool error, as the server sent it
    assert prog == d_prog == [1, 2, 3] and count.content[0].text == "counted 3"  # notifications in flight
    assert old == UNKNOWN_TOOL  # the renamed-away name is not callable


def _exchange(argv, lines: list[bytes]) -> list[bytes]:
    """Write the lines to a stdio server, then read its answers until it exits."""
    p = subprocess.run(argv, input=b"".join(lines), capture_output=True, timeout=30)
    return p.stdout.splitlines(keepends=True)


def test_byte_for_byte_against_the_server_run_directly():
    """The fixture server (initialize handshake) with odd ids, a JSON-RPC error, a notification and
    an unknown method: every answer but the listing is the server's own bytes."""
    lines = [
        msg(
            {
                "jsonrpc": "2.0",
                "id": "init-\u00e9",
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        ),
        msg({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        msg({"jsonrpc": "2.0", "id": 0, "method": "ping"}),
        msg({"jsonrpc": "2.0", "id": 2.5, "method": "no/such/method"}),
        msg({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}),
        msg({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "fail", "arguments": {}}}),
        msg({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
    ]
    direct = [BASE_PYTHON, str(FAULTY_SERVER), "ok"]
    want = _exchange(direct, lines)
    got = _exchange(command_line(BASE_PYTHON, proxy_script(), OVERRIDES, direct), lines)
    assert len(want) == len(got) == 6  # the notification has no answer
    assert got[:5] == want[:5]
    assert json.loads(want[3])["error"]["code"] == -32602 and json.loads(want[4])["result"]["isError"] is True
    assert [t["name"] for t in json.loads(got[5])["result"]["tools"]] == ["say", "big", "fail"]
    assert json.loads(got[5])["id"] == 5


def test_the_proxy_ends_with_its_server():
    """A server that dies mid-call: the proxy exits with its status at once and its client sees EOF."""
    direct = [BASE_PYTHON, str(FAULTY_SERVER), "crash_during_call"]
    p = subprocess.Popen(
        command_line(BASE_PYTHON, proxy_script(), OVERRIDES, direct),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    p.stdin.write(msg({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "say", "arguments": {}}}))
    p.stdin.flush()  # stdin stays open: the proxy must not wait for it
    assert p.stdout.read() == b"" and p.wait(timeout=10) == 3


def test_a_stopped_proxy_stops_its_server():
    """Unsandboxed, a host may signal the proxy alone: the server does not outlive it."""
    import psutil

    direct = [BASE_PYTHON, str(FAULTY_SERVER), "ok"]
    p = subprocess.Popen(
        command_line(BASE_PYTHON, proxy_script(), OVERRIDES, direct),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    p.stdin.write(msg({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    p.stdin.flush()
    assert json.loads(p.stdout.readline())["id"] == 1  # the server is up
    (server,) = psutil.Process(p.pid).children()
    p.terminate()
    assert p.wait(timeout=10) == 128 + 15
    server.wait(timeout=10)  # psutil: returns once it is gone (raises TimeoutExpired otherwise)
    assert not server.is_running()


def test_server_memory_leaves_the_proxy_out():
    """run_meta's server_peak_rss_kb is the server's: the proxy's own memory is not counted.

    Peak memory is compared in a fixed process state, not while it moves: the server has
    answered `initialize` through the proxy (its start-up is over), then both are stopped
    (SIGSTOP) while the figures are read, so two reads of the same peak are equal exactly."""
    import signal

    import psutil

    from mcptrials.prepare.servers import process_tree_peak_rss_kb

    argv = command_line(BASE_PYTHON, proxy_script(), OVERRIDES, [BASE_PYTHON, str(FAULTY_SERVER), "ok"])
    # a shell stays the tree's root (`; true`: no exec), as the harness is the root of a trial's tree
    root = subprocess.Popen(
        ["sh", "-c", shlex.join(argv) + "; true"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    stopped = []
    try:
        root.stdin.write(
            msg(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                }
            )
        )
        root.stdin.flush()
        answer = json.loads(root.stdout.readline())  # blocks until the server, behind the proxy, is up
        assert answer["id"] == 1 and "result" in answer
        proxy, server = psutil.Process(root.pid).children(recursive=True)
        assert server.ppid() == proxy.pid and proxy_script() in proxy.cmdline()
        for p in (proxy, server):
            p.send_signal(signal.SIGSTOP)
            stopped.append(p)
        for p in stopped:  # SIGSTOP is asynchronous: read only once both are stopped
            while p.status() != psutil.STATUS_STOPPED:
                time.sleep(0.01)

        def hwm(pid):
            return int(next(x for x in open(f"/proc/{pid}/status") if x.startswith("VmHWM:")).split()[1])

        assert hwm(proxy.pid) > 0
        assert process_tree_peak_rss_kb(root.pid) == hwm(server.pid)
    finally:
        for p in stopped:
            p.send_signal(signal.SIGCONT)
        root.stdin.close()
        root.wait(timeout=10)


# --- the config ------------------------------------------------------------------------------


def test_a_variant_is_its_base_server_plus_overrides(tmp_path):
    m = load_matrix(write_matrix(tmp_path, tools=variant_tools()))
    base, var = m.specs.tools["faulty"], m.specs.tools["terse"]
    assert (var.command, var.args, var.read_only, var.version) == (base.command, base.args, base.read_only, "1.0")
    assert var.config["env"] == base.config["env"] and var.transport == "stdio"
    assert (var.variant_of, var.overrides, var.env_name, base.env_name) == ("faulty", OVERRIDES, "faulty", "faulty")
    assert m.server_of("terse") == "faulty" and m.installed_tools() == ["faulty"] and "terse" in m.server_tools()
    assert m.tool_hash("terse") != m.tool_hash("faulty")
    m2 = load_matrix(write_matrix(tmp_path / "v", tools=variant_tools(version="descriptions-2")))
    assert m2.specs.tools["terse"].version == "descriptions-2"


@pytest.mark.parametrize(
    "tools, match",
    [
        (
            dict(variant_tools(), terse={"variant_of": "nothere", "overrides": OVERRIDES}),
            r"field tools\.terse\.variant_of: 'nothere' is not a tool of the config; use one of: baseline, faulty",
        ),
        (
            dict(variant_tools(), again={"variant_of": "terse", "overrides": OVERRIDES}),
            r"field tools\.again\.variant_of: 'terse' is itself a variant; name the tool it is a variant of \('faulty'\)",
        ),
        (
            dict(variant_tools(), terse={"variant_of": "baseline", "overrides": OVERRIDES}),
            r"field tools\.terse\.variant_of: tools\.baseline has transport none; the variant proxy relays stdio servers only",
        ),
        (
            dict(
                variant_tools(),
                web=faulty_tool(transport="http", url="http://127.0.0.1:{port}/mcp", network=True),
                terse={"variant_of": "web", "overrides": OVERRIDES},
            ),
            r"tools\.web has transport http; the variant proxy relays stdio servers only.*transport stdio",
        ),
        (
            variant_tools(args=["--other"]),
            r"field tools\.terse\.args: a variant runs its base's server \(tools\.faulty\).*remove `args` \(set it on tools\.faulty\)",
        ),
        (
            variant_tools(overrides={"tools": {"echo": {"name": "x"}, "big": {"name": "x"}}}),
            r"field tools\.terse\.overrides\.tools\.big\.name: 'x' is also the new name of echo",
        ),
        (
            variant_tools(overrides={"tools": {"echo": {"name": "has space"}}}),
            r"field tools\.terse\.overrides\.tools\.echo\.name: 'has space' does not match",
        ),
        (
            dict(variant_tools(), terse={"variant_of": "faulty"}),
            r"field tools\.terse: 'overrides' is a dependency of 'variant_of'",
        ),
        (
            dict(variant_tools(), terse={"overrides": OVERRIDES, "command": "x"}),
            r"field tools\.terse: 'variant_of' is a dependency of 'overrides'",
        ),
    ],
)
def test_bad_variants_are_refused_with_the_field_and_the_fix(tmp_path, tools, match):
    with pytest.raises(ConfigError, match=match):
        load_matrix(write_matrix(tmp_path, tools=tools))


# --- the snapshot ------------------------------------------------------------------------------


def test_the_variants_snapshot_is_what_the_model_sees(tmp_path):
    m, _ = variant_project(tmp_path, variant_tools())
    base, var = variant_snapshot(m, tmp_path, "faulty"), variant_snapshot(m, tmp_path, "terse")
    assert [t["name"] for t in base["tools"]] == ["echo", "big", "fail"]
    assert [t["name"] for t in var["tools"]] == ["say", "big", "fail"]
    say = var["tools"][0]
    assert say["description"] == "Say the text back, word for word."
    assert say["input_schema"]["properties"]["text"]["description"] == "The words to say."
    assert var["tools"][2] == base["tools"][2]
    assert var["tools_sha256"] != base["tools_sha256"]
    assert (var["variant_of"], var["overrides_sha256"]) == ("faulty", canonical_hash(OVERRIDES))
    assert (base["variant_of"], base["overrides_sha256"]) == (None, None)
    assert var["server_name"] == base["server_name"] == "faulty-mcp-server"
    assert var["sandbox"]["mechanism"] == "bubblewrap"
    assert proxy_mounted(var["sandbox"])  # the proxy's one file, read-only
    assert json.loads((tmp_path / "snap" / "terse" / "tools.json").read_text())["tools"] == var["tools"]


@pytest.mark.parametrize(
    "overrides, match",
    [
        (
            {"tools": {"ecko": {"description": "d"}}},
            r"field tools\.terse\.overrides\.tools\.ecko: the server lists no tool 'ecko' \(it lists: big, echo, fail\); "
            r"fix the name or remove the entry",
        ),
        (
            {"tools": {"echo": {"parameters": {"txt": "d"}}}},
            r"field tools\.terse\.overrides\.tools\.echo\.parameters\.txt: tool 'echo' has no such parameter \(it has: text\)",
        ),
        (
            {"tools": {"echo": {"name": "big"}}},
            r"field tools\.terse\.overrides\.tools: tools big, echo would all be named 'big'",
        ),
    ],
)
def test_overrides_that_do_not_fit_the_server_stop_the_snapshot(tmp_path, overrides, match):
    m, _ = variant_project(tmp_path, variant_tools(overrides=overrides))
    with pytest.raises(ConfigError, match=match):
        variant_snapshot(m, tmp_path, "terse")
    # through the command, as the workflow runs it: a config error, named, nonzero
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "snapshot",
            "--config",
            str(m.path),
            "--tool",
            "terse",
            "--repo",
            "tiny",
            "--checkout",
            str(tmp_path / "checkout.json"),
            "--estimate-only",
            "--out",
            str(tmp_path / "cmd" / "tools.json"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "field tools.terse.overrides.tools" in p.stderr
    assert not (tmp_path / "cmd" / "tools.json").exists()


# --- a trial on the loop host --------------------------------------------------------------------


def test_loop_trial_the_model_sees_the_variant_and_its_call_reaches_the_real_tool(tmp_path, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api(
        [
            reply(tool_use("mcp__terse__say", {"text": "helper lives in src/util.py"}, id="toolu_1")),
            reply(text("`helper` is defined at `src/util.py:1`.")),
        ]
    )
    m, co = variant_project(tmp_path, variant_tools(), extra=anthropic_extra(api))
    snap = variant_snapshot(m, tmp_path, "terse")
    t, meta = run_trial(m, "claude", "terse", "find-helper", 1, co, snap, None, tmp_path / "out", host="loop")
    assert t["outcome"] == "completed", t["outcome_detail"]
    offered = {d["name"]: d for d in api.message_requests()[0]["body"]["tools"]}
    assert "mcp__terse__say" in offered and "mcp__terse__echo" not in offered
    say = offered["mcp__terse__say"]
    assert say["description"] == "Say the text back, word for word."
    assert say["input_schema"]["properties"]["text"]["description"] == "The words to say."
    assert offered["mcp__terse__big"]["description"] == "Make a long text."
    (c,) = [c for c in t["tool_calls"] if c["source"] == "mcp"]
    assert (c["tool"], c["is_error"], c["result_text"]) == (
        "say",
        False,
        "helper lives in src/util.py",
    )  # echo answered
    assert (meta["variant_of"], meta["overrides_sha256"]) == ("faulty", canonical_hash(OVERRIDES))
    assert meta["tools_sha256"] == meta["live_tools_sha256"] == snap["tools_sha256"]
    assert proxy_mounted(meta["sandbox"])
    assert (
        KEY not in json.dumps(meta) and "ANTHROPIC_API_KEY" not in (tmp_path / "out" / "server.stderr.log").read_text()
    )


@pytest.mark.slow
def test_the_workflow_runs_a_variant_on_its_bases_install(tmp_path):
    """The real rules: the variant has a snapshot and trials of its own but no install or index
    job (it reads the base's); an edit of its overrides replans its snapshot and trials only,
    an edit of the base's server replans both snapshots and both tools' trials."""
    from workflow_helpers import copy_workflow, run_snakemake

    from workflow_helpers import planned

    copy_workflow(tmp_path)
    write_matrix(tmp_path, tools=variant_tools())
    run_snakemake(tmp_path, "-j2")
    res = tmp_path / "results"
    assert sorted(p.name for p in (res / "tools").iterdir()) == ["faulty"]
    snap = json.loads((res / "snapshots" / "terse" / "tiny" / "tools.json").read_text())
    assert [t["name"] for t in snap["tools"]] == ["say", "big", "fail"] and snap["variant_of"] == "faulty"
    meta = json.loads((res / "runs/reference/loop/terse/tiny/find-helper/1/run_meta.json").read_text())
    assert meta["variant_of"] == "faulty" and meta["tools_sha256"] == snap["tools_sha256"]
    assert planned(tmp_path) == {}
    cfg0 = (tmp_path / "config.yaml").read_text()

    def edit(fn):
        cfg = yaml.safe_load(cfg0)
        fn(cfg["tools"])
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        try:
            return planned(tmp_path)
        finally:
            (tmp_path / "config.yaml").write_text(cfg0)

    trials_of = {"transcript": 1, "scored": 1, "judged": 1, "aggregate": 1, "report": 1, "status": 1, "all": 1}
    assert edit(lambda t: t["terse"]["overrides"]["tools"]["echo"].update(description="Echo.")) == {
        "tools_snapshot": 1,
        **trials_of,
    }
    assert edit(lambda t: t["faulty"]["args"].append("--quiet")) == {
        "tools_snapshot": 2,
        **{k: 2 if k in ("transcript", "scored", "judged") else 1 for k in trials_of},
    }
    assert planned(tmp_path) == {}


def test_the_proxy_and_its_server_see_only_the_servers_environment(tmp_path, fake_api, monkeypatch):
    """The proxy passes its environment to the server unchanged, and it is the one the config
    allows: no API key (unsandboxed here, so that the server can write its dump outside)."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    dump = tmp_path / "env.json"
    api = fake_api([reply(tool_use("mcp__terse__say", {"text": "hi"}, id="toolu_1")), reply(text("Done."))])
    tools = variant_tools()
    tools["faulty"] = faulty_tool(
        "ok", env={"FAULT_MODE": "ok", "FAULT_ENV_DUMP": str(dump), "KEEP": "me"}, sandbox="none"
    )
    m, co = variant_project(tmp_path, tools, extra=anthropic_extra(api))
    t, meta = run_trial(m, "claude", "terse", "find-helper", 1, co, None, None, tmp_path / "out", host="loop")
    assert t["outcome"] == "completed", t["outcome_detail"]
    env = json.loads(dump.read_text())
    assert env["KEEP"] == "me" and env["HOME"].endswith("/home")
    assert "ANTHROPIC_API_KEY" not in env and not any(KEY in v for v in env.values())
    assert meta["sandbox"]["mechanism"] == "none"
