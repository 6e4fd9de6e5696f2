"""Host `opencode`: the Opencode CLI (`opencode run --format json`, `--session <id>` from the
second step) runs the agent loop; the harness records it (docs/hosts.md, "Hosts `codex` and
`opencode`"). This module holds what is Opencode's own: its opencode.json (an OpenAI-compatible
provider at the key proxy, the server under test, the built-ins allowed, all else denied), its
argv and environment, and the parsing of its JSON-lines parts (`text`, `tool_use`,
`step_finish`, `error`, grouped by messageID: one model call each) into the loop's records.
Everything else is the skeleton's (hosts/cli.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from mcptrials.run.hosts.cli import (
    CliHost,
    CliSession,
    Stream,
    api_failure,
    call_record,
    cli_env,
    record_step as base_record_step,
    tool_result,
    tool_use,
    unreachable_detail,
    usage_of,
)

PACKAGE = "opencode-ai"
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


def server_key(name: str) -> str:
    """Opencode's name of the MCP server (and of a tool: its tools are offered as <server>_<tool>)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


def server_tool_names(tool: str, tools: list[dict]) -> dict[str, str]:
    """Opencode's name of each server tool -> the server's own name (from tools/list)."""
    return {f"{server_key(tool)}_{server_key(t['name'])}": t["name"] for t in tools}


def opencode_config(
    *,
    model: str,
    base_url: str,
    builtins: list[str],
    instructions: str,
    reply_cap: int,
    server: tuple[str, dict] | None,
) -> dict:
    cfg = {
        "$schema": "https://opencode.ai/config.json",
        "provider": {
            PROVIDER: {
                "npm": "@ai-sdk/openai-compatible",
                "name": PROVIDER,
                "options": {"baseURL": base_url, "apiKey": "{env:OPENAI_API_KEY}"},
                "models": {model: {"name": model, "limit": {"context": 1000000, "output": reply_cap}}},
            }
        },
        "model": f"{PROVIDER}/{model}",
        # never ask (nobody answers): allowed or denied; outside paths are the sandbox's to refuse
        "permission": {
            p: "allow" if any(BUILTINS[b] == p for b in builtins) else "deny" for p in sorted(set(BUILTINS.values()))
        }
        | {"external_directory": "allow"},
        "agent": {"title": {"disable": True}},
        "instructions": [instructions],
        "autoupdate": False,
        "share": "disabled",
    }
    if server:
        cfg["mcp"] = {server[0]: server[1]}
    return cfg


def build_command(binary: str, prompt: str, *, model: str, session_id: str | None, extra_args: list[str]) -> list[str]:
    argv = [
        binary,
        "run",
        "--format",
        "json",
        "--print-logs",
        "--log-level",
        "INFO",
        "-m",
        f"{PROVIDER}/{model}",
        *(["--session", session_id] if session_id else []),
        *extra_args,
    ]
    return argv + ["--", prompt]  # after `--`: a prompt is never read as an option


def host_environment(home: str, tmp: str, config: str, token: str, bare: bool) -> dict[str, str]:
    """Opencode's whole environment (hosts.cli.cli_env)."""
    env = cli_env(
        **{
            "HOME": home,
            "TMPDIR": tmp,
            "OPENCODE_CONFIG": config,
            "OPENAI_API_KEY": token,
            "XDG_CONFIG_HOME": f"{home}/.config",
            "XDG_DATA_HOME": f"{home}/.local/share",
            "XDG_CACHE_HOME": f"{home}/.cache",
            "XDG_STATE_HOME": f"{home}/.local/state",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_CLAUDE_CODE": "1",
            "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
            "OPENCODE_PURE": "1",
            # its start-up npm installs stay offline: nothing is fetched inside a trial
            "npm_config_offline": "true",
            "npm_config_registry": "http://127.0.0.1:9/",
        }
    )
    if bare:
        env["OPENCODE_DISABLE_PROJECT_CONFIG"] = "1"
    return env


@dataclass
class StepStream(Stream):
    """What one `opencode run` said, in the loop's shapes."""

    session_id: str | None = None
    finishes: list = field(default_factory=list)  # step_finish parts, one per model call
    errors: list = field(default_factory=list)  # `error` events


def call_of(part: dict, step: int, turn: int, tool_names: dict[str, str], prefix: str | None) -> dict:
    """A tool-call record of a tool part; `prefix` ("<server>_") names server tools the snapshot lacks."""
    st = part.get("state") or {}
    name = part.get("tool") or ""
    if name in tool_names:
        source, tool = "mcp", tool_names[name]
    elif prefix and name.startswith(prefix):
        source, tool = "mcp", name[len(prefix) :]
    else:
        source, tool = "builtin", BUILTIN_EQUIVALENTS.get(name, name)
    is_error = st.get("status") == "error"
    text = str(st.get("error") if is_error else st.get("output") or "")
    t = st.get("time") or {}
    latency = (
        (t["end"] - t["start"])
        if isinstance(t.get("start"), (int, float)) and isinstance(t.get("end"), (int, float))
        else 0.0
    )
    head = {
        "id": part.get("callID") or part.get("id"),
        "step": step,
        "turn": turn,
        "name": name,
        "arguments": st.get("input") or {},
    }
    return call_record(
        head,
        tool,
        source,
        text,
        is_error,
        float(latency),
        MCP_CODE_RE,
        CRASH_RE,
        truncated=bool((st.get("metadata") or {}).get("truncated")),
    )


def parse_stream(
    events: list[dict], step: int, tool_names: dict[str, str] | None = None, server: str | None = None
) -> StepStream:
    """Parts grouped by messageID (a model call): an assistant turn, then its calls' results."""
    s = StepStream()
    turn_of: dict[str, int] = {}
    for ev in events:
        kind, part = ev.get("type"), ev.get("part") or {}
        s.session_id = s.session_id or ev.get("sessionID")
        if kind == "error":
            s.errors.append(ev.get("error") or ev)
            continue
        mid = part.get("messageID")
        if kind not in ("text", "tool_use", "step_finish") or mid is None:
            continue
        if mid not in turn_of:
            turn_of[mid] = len(turn_of) + 1
            s.messages.append({"role": "assistant", "content": []})
            s.replies.append(([], False))
        turn = turn_of[mid]
        # the assistant turn of this call: messages alternate assistant / user (results)
        a = [m for m in s.messages if m["role"] == "assistant"][turn - 1]
        texts, has_tool = s.replies[turn - 1]
        if kind == "text" and part.get("text"):
            texts.append(part["text"])
            a["content"].append({"type": "text", "text": part["text"]})
        elif kind == "tool_use":
            c = call_of(part, step, turn, tool_names or {}, f"{server_key(server)}_" if server else None)
            has_tool = True
            a["content"].append(tool_use(c))
            i = s.messages.index(a)
            if i + 1 >= len(s.messages) or s.messages[i + 1]["role"] != "user":
                s.messages.insert(i + 1, {"role": "user", "content": []})
            s.messages[i + 1]["content"].append(tool_result(c))
            s.calls.append(c)
        elif kind == "step_finish":
            s.finishes.append(part)
        s.replies[turn - 1] = (texts, has_tool)
    return s


def record_step(
    rec, s: StepStream, index: int, name: str, prompt: str, relative, wall_seconds: float, model_calls: int | None
) -> dict:
    """hosts.cli.record_step, with the usage of the `step_finish` parts."""
    srec = base_record_step(rec, s, index, name, prompt, relative, wall_seconds, model_calls)
    for f in s.finishes:
        t = f.get("tokens") or {}
        cache = t.get("cache") or {}
        rec.usage.add(usage_of(t.get("input"), t.get("output"), cache.get("write"), cache.get("read")))
    return srec


def step_outcome(
    s: StepStream,
    rec,
    index: int,
    statuses: list[int] | None = None,
    gave_up: bool = False,
    unreachable: str | None = None,
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
        return "server_crashed", "the MCP server's connection closed during the step"
    if not s.finishes:
        msg = "opencode ended the step without a finished model call"
        rec.error("harness_error", msg, step=index)
        return "harness_failed", msg
    if s.finishes[-1].get("reason") == "length":
        return "budget_exceeded", "opencode: the reply reached its output cap"
    return "completed", None


@dataclass
class _Session(CliSession):
    name = "opencode"

    def configure(self, entry: dict | None) -> None:
        ctx = self.ctx
        server = None
        if entry:  # Opencode's mcp entry of a stdio entry (hosts.cli.stdio_entry) or an http URL
            e = (
                {"type": "local", "command": [entry["command"], *entry["args"]]}
                if entry["type"] == "stdio"
                else {"type": "remote", "url": entry["url"]}
            )
            server = (server_key(ctx.tool.name), e | {"enabled": True, "timeout": int(ctx.tool.startup_timeout * 1000)})
        system = self.host_home / "mcptrials-system.md"
        system.write_text(ctx.system_text)
        self.cfg = self.host_home / "opencode.json"
        self.cfg.write_text(
            json.dumps(
                opencode_config(
                    model=ctx.model.model,
                    base_url=self.proxy.url,
                    builtins=list(ctx.host.builtin_tools),
                    instructions=str(system),
                    reply_cap=ctx.reply_cap,
                    server=server,
                ),
                indent=1,
            )
        )

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:
        ctx = self.ctx
        argv = build_command(
            self.binary, prompt, model=ctx.model.model, session_id=self.session_id, extra_args=list(ctx.host.extra_args)
        )
        return argv, host_environment(
            str(self.host_home), str(ctx.sandbox.tmp), str(self.cfg), self.proxy.token, bool(ctx.host.bare)
        )

    def stop_on_log(self, line: str) -> bool:  # a server that did not start: stop before more model calls
        if SERVER_FAILED_RE.search(line) and self.ctx.tool.has_server:
            self.failed_servers.append(line.strip())
        return bool(self.failed_servers)

    def parse(self, run, index: int) -> StepStream:
        ctx, tool = self.ctx, self.ctx.tool
        self.keep_log([x for x in run.stderr.splitlines() if "mcp" in x.lower()])
        names = server_tool_names(tool.name, (ctx.snapshot or {}).get("tools") or [])
        s = parse_stream(run.events, index, names, tool.name if tool.has_server else None)
        self.note_session(index, s.session_id)
        return s

    def record(self, s, index, step, prompt, wall, statuses) -> dict:
        return record_step(
            self.ctx.rec, s, index, step["name"], prompt, self.ctx.sandbox.relative, wall, self.proxy_turns(statuses)
        )

    def server_failure(self, run, s) -> str | None:
        if self.failed_servers:
            return f"opencode: MCP server {self.ctx.tool.name} did not start: {self.failed_servers[0][:500]}"
        return None

    def end_outcome(self, run, s, index, statuses) -> tuple[str, str | None]:
        if not s.finishes and not s.errors and not self.proxy.gave_up.is_set() and run.returncode:
            return self.harness_failed(
                index, f"opencode exited {run.returncode} without a finished model call: {run.stderr[-2000:]}"
            )
        return step_outcome(
            s, self.ctx.rec, index, statuses, self.proxy.gave_up.is_set(), unreachable_detail(self.ctx, self.proxy)
        )


class OpencodeHost(CliHost):
    kind, package, bin_name, label, session = "opencode", PACKAGE, "opencode", "Opencode", _Session
    api = "OpenAI Chat Completions, through the key proxy"


HOST = OpencodeHost()
