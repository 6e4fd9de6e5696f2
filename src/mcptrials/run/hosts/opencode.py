"""Host `opencode`: the Opencode CLI (`opencode run --format json`, `--session <id>` from the
second step) runs the agent loop; the harness records it (docs/hosts.md). Opencode's own: its
opencode.json (an OpenAI-compatible provider at the key proxy, the server under test, the
built-ins allowed, all else denied), its argv and environment, and the parsing of its JSON-lines
parts (`text`, `tool_use`, `step_finish`, `error`, grouped by messageID: one model call each).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from mcptrials.run.hosts.cli import CliHost, CliSession
from mcptrials.run.hosts.stream import CRASHED, Stream, api_failure, call_record, harness_failed, safe_name, usage_of

PROVIDER = "mcptrials"
# Opencode's built-in tools (1.18.33) -> the permission that offers it: builtin_tools allows
# those it names, every other one is denied (a denied tool is not offered at all).
BUILTINS = {
    "read": "read",
    "grep": "grep",
    "glob": "glob",
    "list": "list",
    "bash": "bash",
    "edit": "edit",
    "write": "edit",
    "apply_patch": "edit",
    "patch": "edit",
    "webfetch": "webfetch",
    "websearch": "websearch",
    "codesearch": "codesearch",
    "todowrite": "todowrite",
    "todoread": "todowrite",
    "task": "task",
    "skill": "skill",
    "lsp": "lsp",
    "question": "question",
}
# the loop's equivalent built-in (graders count grep/list_files as searches)
BUILTIN_EQUIVALENTS = {"read": "read_file", "grep": "grep", "glob": "list_files", "list": "list_files"}
SERVER_FAILED_RE = re.compile(r'message="server unavailable" key=(\S+) .*status=failed')
MCP_CODE_RE = re.compile(r"MCP error (-?\d+)")
CRASH_RE = re.compile(r"Connection closed|Transport closed|not connected", re.I)
# its environment: XDG folders in its HOME; OPENCODE_DISABLE_<each> of QUIET (no updates, downloads,
# sharing, other tools' config); its start-up npm installs offline (nothing is fetched in a trial)
XDG = {"config": ".config", "data": ".local/share", "cache": ".cache", "state": ".local/state"}
QUIET = ("AUTOUPDATE", "MODELS_FETCH", "DEFAULT_PLUGINS", "LSP_DOWNLOAD", "SHARE", "CLAUDE_CODE", "EXTERNAL_SKILLS")
OFFLINE = {"OPENCODE_PURE": "1", "npm_config_offline": "true", "npm_config_registry": "http://127.0.0.1:9/"}


def server_tool_names(tool: str, tools: list[dict]) -> dict[str, str]:
    """Opencode's name of each server tool (<server>_<tool>) -> the server's own name (from tools/list)."""
    return {f"{safe_name(tool)}_{safe_name(t['name'])}": t["name"] for t in tools}


def opencode_config(model: str, base_url: str, builtins: list[str], instructions: str, reply_cap: int, server) -> dict:
    limit = {"context": 1000000, "output": reply_cap}
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": PROVIDER,
        "options": {"baseURL": base_url, "apiKey": "{env:OPENAI_API_KEY}"},
        "models": {model: {"name": model, "limit": limit}},
    }
    # never ask (nobody answers): allowed or denied; outside paths are the sandbox's to refuse
    allowed = {BUILTINS[b] for b in builtins}
    permission = {p: "allow" if p in allowed else "deny" for p in sorted(set(BUILTINS.values()))}
    return {
        "$schema": "https://opencode.ai/config.json",
        "provider": {PROVIDER: provider},
        "model": f"{PROVIDER}/{model}",
        "permission": permission | {"external_directory": "allow"},
        "agent": {"title": {"disable": True}},
        "instructions": [instructions],
        "autoupdate": False,
        "share": "disabled",
    } | ({"mcp": dict([server])} if server else {})


@dataclass
class StepStream(Stream):
    """What one `opencode run` said, in the loop's shapes."""

    session_id: str | None = None
    finishes: list = field(default_factory=list)  # step_finish parts, one per model call
    errors: list = field(default_factory=list)  # `error` events

    def add_to(self, rec, meta: dict) -> None:  # the usage of the `step_finish` parts
        for t in (f.get("tokens") or {} for f in self.finishes):
            c = t.get("cache") or {}
            rec.usage.add(usage_of(t.get("input"), t.get("output"), c.get("write"), c.get("read")))


def call_of(part: dict, step: int, turn: int, tool_names: dict[str, str], prefix: str | None) -> dict:
    """A tool-call record of a tool part; `prefix` ("<server>_") names server tools the snapshot lacks."""
    st, name = part.get("state") or {}, part.get("tool") or ""
    if name in tool_names:
        source, tool = "mcp", tool_names[name]
    elif prefix and name.startswith(prefix):
        source, tool = "mcp", name[len(prefix) :]
    else:
        source, tool = "builtin", BUILTIN_EQUIVALENTS.get(name, name)
    is_error = st.get("status") == "error"
    text = str(st.get("error") if is_error else st.get("output") or "")
    t = st.get("time") or {}
    ms = float(t["end"] - t["start"]) if all(isinstance(t.get(k), (int, float)) for k in ("start", "end")) else 0.0
    head = {"id": part.get("callID") or part.get("id"), "step": step, "turn": turn, "name": name}
    head["arguments"] = st.get("input") or {}
    cut = bool((st.get("metadata") or {}).get("truncated"))
    return call_record(head, tool, source, text, is_error, ms, MCP_CODE_RE, CRASH_RE, truncated=cut)


def parse_stream(
    events: list[dict], step: int, tool_names: dict[str, str] | None = None, server: str | None = None
) -> StepStream:
    """Parts grouped by messageID (a model call): an assistant turn, then its calls' results."""
    s = StepStream()
    for ev in events:
        kind, part = ev.get("type"), ev.get("part") or {}
        s.session_id = s.session_id or ev.get("sessionID")
        if kind == "error":
            s.errors.append(ev.get("error") or ev)
        if kind not in ("text", "tool_use", "step_finish") or part.get("messageID") is None:
            continue
        turn = s.turn(part["messageID"])
        if kind == "text" and part.get("text"):
            s.say(turn, part["text"])
        elif kind == "tool_use":
            s.call(call_of(part, step, turn, tool_names or {}, f"{safe_name(server)}_" if server else None))
        elif kind == "step_finish":
            s.finishes.append(part)
    return s


def step_outcome(
    s: StepStream, rec, index: int, statuses: list[int] | None = None, gave_up=False, unreachable: str | None = None
) -> tuple[str, str | None]:
    """An `error` event or the proxy giving up -> api_failed; a server connection that closed ->
    server_crashed; no model call finished -> harness_failed; the last one cut at its output
    cap (`length`) -> budget_exceeded; else completed."""
    if s.errors or gave_up:
        err = s.errors[-1] if s.errors else {}
        data = err.get("data") if isinstance(err, dict) else None
        data = data if isinstance(data, dict) else {}
        bad = [x for x in statuses or [] if not 200 <= x < 300]
        text = data.get("message") or (
            json.dumps(err)[:300] if err else f"the model API failed {len(bad)} times in a row"
        )
        return api_failure(rec, index, text, statuses or [], unreachable, data.get("statusCode"))
    if any(c["error_code"] == -32000 for c in s.calls):
        return CRASHED
    if not s.finishes:
        return harness_failed(rec, index, "opencode ended the step without a finished model call")
    if s.finishes[-1].get("reason") == "length":
        return "budget_exceeded", "opencode: the reply reached its output cap"
    return "completed", None


@dataclass
class _Session(CliSession):
    kind, package, bin_name, label = "opencode", "opencode-ai", "opencode", "Opencode"
    api = "OpenAI Chat Completions, through the key proxy"

    def configure(self, entry: dict | None) -> None:
        ctx, server = self.ctx, None
        if entry:  # Opencode's mcp entry of a stdio entry or an http URL
            e = {"type": "remote", "url": entry.get("url")}
            if entry["type"] == "stdio":
                e = {"type": "local", "command": [entry["command"], *entry["args"]]}
            server = (safe_name(ctx.tool.name), e | {"enabled": True, "timeout": int(ctx.tool.startup_timeout * 1000)})
        (system := self.host_home / "mcptrials-system.md").write_text(ctx.system_text)
        builtins = list(ctx.host.builtin_tools)
        cfg = opencode_config(ctx.model.model, self.proxy.url, builtins, str(system), ctx.reply_cap, server)
        (self.host_home / "opencode.json").write_text(json.dumps(cfg, indent=1))

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:
        ctx, home, sid = self.ctx, str(self.host_home), self.session_id
        argv = [self.binary, "run", "--format", "json", "--print-logs", "--log-level", "INFO"]
        argv += ["-m", f"{PROVIDER}/{ctx.model.model}", *(["--session", sid] if sid else []), *ctx.host.extra_args]
        env = self.env(
            OPENCODE_CONFIG=f"{home}/opencode.json",
            **{f"XDG_{k.upper()}_HOME": f"{home}/{d}" for k, d in XDG.items()},
            **{f"OPENCODE_DISABLE_{k}": "1" for k in QUIET},
            **OFFLINE,
        )
        if ctx.host.bare:
            env["OPENCODE_DISABLE_PROJECT_CONFIG"] = "1"
        return argv + ["--", prompt], env  # after `--`: a prompt is never read as an option

    def on_log(self, line: str) -> None:  # a server that did not start: stop before more model calls
        if SERVER_FAILED_RE.search(line) and self.ctx.tool.has_server:
            self.failed_servers.append(f"did not start: {line.strip()[:500]}")

    def parse(self, run, index: int) -> StepStream:
        ctx, tool = self.ctx, self.ctx.tool
        self.keep_log([x for x in run.stderr.splitlines() if "mcp" in x.lower()])
        names = server_tool_names(tool.name, (ctx.snapshot or {}).get("tools") or [])
        s = parse_stream(run.events, index, names, tool.name if tool.has_server else None)
        self.note_session(index, s.session_id)
        return s

    def end_outcome(self, run, s, index, statuses) -> tuple[str, str | None]:
        gave_up = self.proxy.gave_up.is_set()
        if not s.finishes and not s.errors and not gave_up and run.returncode:
            return self.exited(run, index, "a finished model call")
        return step_outcome(s, self.ctx.rec, index, statuses, gave_up, self.unreachable())


HOST = CliHost(_Session)
