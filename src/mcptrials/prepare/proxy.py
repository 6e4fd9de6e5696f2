"""Our MCP proxy for description variants: rewrites `tools/list`, maps renamed tools back.

A tool entry with `variant_of: BASE` and `overrides` runs BASE's server behind this proxy:

    python -I -S .../mcptrials/prepare/proxy.py --overrides JSON -- COMMAND ARGS...

The proxy is the first process of the server's sandbox and the server is its child: it
relays newline-delimited JSON-RPC messages (the MCP stdio transport) between its own
stdin/stdout and the server's, and changes exactly these things:

- the result of every `tools/list` request of the client: each overridden tool gets its
  new `name`, `description` and parameter descriptions (`inputSchema.properties.<p>
  .description`); everything else of the result (other tools, `nextCursor`, `_meta`,
  cache fields) is kept;
- `tools/call` of a renamed tool: its new name is mapped back to the server's own; a call
  of a renamed tool's old name is answered by the proxy with JSON-RPC -32602 "Unknown
  tool" (the model never saw that name, so the variant has no hidden alias);
- a `tools/list` whose last page shows that an override names a tool or parameter the
  server does not list, or that a new name clashes with another tool's, is answered with
  JSON-RPC error OVERRIDE_MISMATCH instead (the snapshot turns it into a config error
  naming the field and the fix, before any trial);
- for an ablation arm (mcptrials.matrix.ablation; `hide` and `instructions: false` in the
  overrides): the tools in `hide` are left out of `tools/list` and a call to one is answered
  like a renamed-away name (-32602 "Unknown tool", as the spec's example and our fixture
  server answer an unknown tool; a `hide` name the server does not list is a mismatch), and
  with `instructions: false` the `instructions` field of the `initialize` or `server/discover`
  result is removed, so no host sees them.

Every other message passes byte for byte: notifications, other requests and responses in
both directions (the server's own requests too), errors and ids. A message the proxy
does not need to read is never parsed on the server's side (no `tools/list` pending:
a large tool result costs one line copy).

Stdlib only and no import of mcptrials: it runs as a script under the base Python inside
the sandbox, where the project's venv is not mounted (only this file is; see
servers.tool_sandbox). The overrides come on the command line: no file, no environment.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from typing import Any

# JSON-RPC implementation-defined server error (range -32000..-32099; -32000 is taken by
# "connection closed" in the mcp client): the overrides do not fit the server's tool list.
OVERRIDE_MISMATCH = -32050
UNKNOWN_TOOL = -32602  # invalid params: the spec's own example for an unknown tool name
# the requests whose result carries the server's `instructions` (the 2026-07-28 probe, the older handshake)
HANDSHAKES = ("initialize", "server/discover")


def _key(msg_id) -> tuple:
    """A JSON-RPC id as a dict key: 1, "1" and true are different ids."""
    return (type(msg_id).__name__, msg_id)


class Rewriter:
    """The proxy's whole logic on parsed messages, without pipes (unit-testable).

    `overrides`: the tool entry's `overrides` ({"tools": {server name: {name, description,
    parameters: {param: description}}}})."""

    def __init__(self, overrides: dict):
        self.tools: dict[str, dict] = dict((overrides or {}).get("tools") or {})
        # new name -> the server's own name, and the renamed-away old names
        self.to_server = {o["name"]: old for old, o in self.tools.items() if o.get("name") and o["name"] != old}
        # an ablation arm (mcptrials.matrix.ablation): tools left out, and the server's instructions dropped
        self.left_out = set((overrides or {}).get("hide") or ())
        self.keep_instructions = (overrides or {}).get("instructions", True) is not False
        self.hidden = (set(self.to_server.values()) - set(self.to_server)) | self.left_out
        self.pending: dict[tuple, str] = {}  # ids of the client's requests whose answer the proxy reads
        self.seen: list[dict] = []  # the server's tools of the listing so far (pagination)
        self.lock = threading.Lock()

    # --- client -> server ------------------------------------------------------------

    def from_client(self, line: bytes) -> tuple[bytes | None, bytes | None]:
        """(what goes to the server, what the proxy answers the client itself); None: nothing."""
        try:
            msg = json.loads(line)
        except ValueError:
            return line, None  # not ours to judge: the server answers it
        batch = isinstance(msg, list)
        changed, answers, forward = False, [], []
        for m in msg if batch else [msg]:
            out, answer, edited = self._client_message(m)
            changed |= edited
            if answer is not None:
                answers.append(answer)
            if out is not None:
                forward.append(out)
        to_server = line if not changed else (_dump(forward if batch else forward[0]) if forward else None)
        to_client = None
        if answers:
            to_client = _dump(answers if batch else answers[0])
        return to_server, to_client

    def _client_message(self, m) -> tuple[dict | None, dict | None, bool]:
        if not isinstance(m, dict) or "method" not in m:
            return m, None, False  # a response to the server's own request, or junk: as it is
        method, params = m.get("method"), m.get("params")
        if method in HANDSHAKES and "id" in m and not self.keep_instructions:
            with self.lock:
                self.pending[_key(m["id"])] = "handshake"
            return m, None, False
        if method == "tools/list" and "id" in m:
            with self.lock:
                self.pending[_key(m["id"])] = "list"
                if not (isinstance(params, dict) and params.get("cursor")):
                    self.seen = []  # a new listing from the first page
            return m, None, False
        if method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
            name = params["name"]
            if name in self.to_server:
                return dict(m, params=dict(params, name=self.to_server[name])), None, True
            if name in self.hidden and "id" in m:
                err = {
                    "jsonrpc": "2.0",
                    "id": m["id"],
                    "error": {"code": UNKNOWN_TOOL, "message": f"Unknown tool: {name}"},
                }
                return None, err, True
        return m, None, False

    # --- server -> client ------------------------------------------------------------

    def from_server(self, line: bytes) -> bytes:
        if not self.pending:  # the fast path: nothing of the server's needs reading
            return line
        try:
            msg = json.loads(line)
        except ValueError:
            return line
        batch = isinstance(msg, list)
        changed = False
        out = []
        for m in msg if batch else [msg]:
            new = self._server_message(m)
            changed |= new is not m
            out.append(new)
        return _dump(out if batch else out[0]) if changed else line

    def _server_message(self, m):
        if not isinstance(m, dict) or "method" in m or "id" not in m:
            return m  # a notification or a request of the server's: as it is
        with self.lock:
            kind = self.pending.pop(_key(m["id"]), None)
        if kind is None:
            return m
        result = m.get("result")
        if kind == "handshake":  # an ablation arm without the server's instructions
            return (
                dict(m, result={k: v for k, v in result.items() if k != "instructions"})
                if isinstance(result, dict)
                else m
            )
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            return m  # an error (or an odd result): the client sees it as the server sent it
        self.seen += [t for t in result["tools"] if isinstance(t, dict)]
        tools = [self.rewrite_tool(t) for t in result["tools"] if not self._left_out(t)]
        if not result.get("nextCursor"):
            problems = mismatch(dict({n: {} for n in self.left_out}, **self.tools), self.seen)
            if problems:
                return {
                    "jsonrpc": m.get("jsonrpc", "2.0"),
                    "id": m["id"],
                    "error": {
                        "code": OVERRIDE_MISMATCH,
                        "message": "mcptrials proxy: " + describe(problems),
                        "data": problems,
                    },
                }
        return dict(m, result=dict(result, tools=tools))

    def _left_out(self, tool) -> bool:
        return isinstance(tool, dict) and tool.get("name") in self.left_out

    def rewrite_tool(self, tool):
        """One tool as the model sees it under the overrides (a copy; unknown parameters skipped)."""
        if not isinstance(tool, dict) or tool.get("name") not in self.tools:
            return tool
        o = self.tools[tool["name"]]
        new = dict(tool)
        if o.get("name"):
            new["name"] = o["name"]
        if "description" in o:
            new["description"] = o["description"]
        if o.get("parameters"):
            schema = dict(new.get("inputSchema") or {})
            props = dict(schema.get("properties") or {})
            for p, text in o["parameters"].items():
                if isinstance(props.get(p), dict):
                    props[p] = dict(props[p], description=text)
            new["inputSchema"] = dict(schema, properties=props)
        return new


def mismatch(overrides: dict, tools: list[dict]) -> dict:
    """What of the overrides does not fit the server's tool list (empty: all fits):
    unknown tools, unknown parameters, and final names shared by two tools."""
    listed: dict[Any, dict] = {t.get("name"): t for t in tools}  # by the name the server gives
    out: dict = {}
    unknown = sorted(n for n in overrides if n not in listed)
    if unknown:
        out["unknown_tools"] = unknown
        out["listed"] = sorted(str(n) for n in listed)
    params = {}
    for name, o in overrides.items():
        if name in listed and o.get("parameters"):
            props = (listed[name].get("inputSchema") or {}).get("properties") or {}
            bad = sorted(p for p in o["parameters"] if p not in props)
            if bad:
                params[name] = {"unknown": bad, "listed": sorted(props)}
    if params:
        out["unknown_parameters"] = params
    finals: dict[str, list[str]] = {}
    for n in listed:
        finals.setdefault((overrides.get(n) or {}).get("name") or n, []).append(n)
    clashes = {new: sorted(olds) for new, olds in finals.items() if len(olds) > 1}
    if clashes:
        out["name_clashes"] = clashes
    return out


def describe(problems: dict) -> str:
    parts = []
    if problems.get("unknown_tools"):
        parts.append(
            f"the server lists no tool {', '.join(problems['unknown_tools'])} "
            f"(it lists: {', '.join(problems['listed'])})"
        )
    for tool, p in (problems.get("unknown_parameters") or {}).items():
        parts.append(
            f"tool {tool} has no parameter {', '.join(p['unknown'])} (it has: {', '.join(p['listed']) or 'none'})"
        )
    for new, olds in (problems.get("name_clashes") or {}).items():
        parts.append(f"tools {', '.join(olds)} would all be named {new}")
    return "; ".join(parts)


def _dump(obj) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


# --- the relay --------------------------------------------------------------------------


def relay(rewriter: Rewriter, command: list[str]) -> None:
    """The script's body: start `command` (the server) and relay this process's stdin/stdout
    to it until either side ends; exit with the server's status. When the server dies
    first the proxy exits at once, so the client sees its connection close as without it."""
    import os

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # buffered pipes: readline on an unbuffered one reads a byte per system call
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    server_in, server_out = child.stdin, child.stdout
    assert server_in is not None and server_out is not None  # both are pipes
    out_lock = threading.Lock()  # the proxy's own answers and the server's share stdout

    def write_client(data: bytes) -> None:
        with out_lock:
            stdout.write(data)
            stdout.flush()

    def status(rc: int) -> int:
        return rc if rc >= 0 else 128 - rc  # killed by signal N: 128 + N, as a shell says

    def server_to_client() -> None:
        try:
            for line in iter(server_out.readline, b""):
                write_client(rewriter.from_server(line))
        except OSError:
            pass  # the client is gone
        os._exit(status(child.wait()))  # the main thread may still be blocked reading stdin

    def forward(signum, _frame) -> None:
        # unsandboxed, a host may stop the proxy alone (its pid): the server must not outlive it
        child.send_signal(signum)
        try:
            child.wait(timeout=3)
        except subprocess.TimeoutExpired:
            child.kill()
        os._exit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    pump = threading.Thread(target=server_to_client, daemon=True)
    pump.start()
    try:
        for line in iter(stdin.readline, b""):
            to_server, to_client = rewriter.from_client(line)
            if to_client is not None:
                write_client(to_client)
            if to_server is not None:
                server_in.write(to_server)
                server_in.flush()
    except OSError:
        pass  # the server closed its stdin: its exit ends the proxy (above)
    try:  # the client closed: as the mcp client does, close the server's stdin, then insist
        server_in.close()
    except OSError:
        pass
    for stop, wait in ((None, 5), (child.terminate, 3), (child.kill, None)):
        if stop:
            stop()
        try:
            child.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    pump.join(timeout=5)
    os._exit(status(child.wait()))


def command_line(python: str, script: str, overrides: dict, server_argv: list[str]) -> list[str]:
    """The argv that runs `server_argv` behind the proxy (`-I -S`: no site, no PYTHON* variables,
    no current folder on sys.path; the server gets the environment unchanged). servers.process_tree_peak_rss_kb
    knows the proxy by these first arguments."""
    return [
        python,
        "-I",
        "-S",
        script,
        "--overrides",
        json.dumps(overrides, sort_keys=True, separators=(",", ":")),
        "--",
        *server_argv,
    ]


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] != "--overrides" or argv[2] != "--":
        print("usage: proxy.py --overrides JSON -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    relay(Rewriter(json.loads(argv[1])), argv[3:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
