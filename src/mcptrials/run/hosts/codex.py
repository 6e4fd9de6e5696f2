"""Host `codex`: the Codex CLI (`codex exec --json`, then `exec resume <thread id>`) runs the agent
loop (docs/hosts.md). Its own: its config.toml in a sandboxed CODEX_HOME (a Responses-API provider
at the key proxy, the server `required`, `builtin_tools` and no other feature on), its argv (its
sandbox off: the whole CLI runs in ours) and its items parsed. Its events carry no time: latencies
are from when the harness read them."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from mcptrials.run.hosts.cli import CliHost, CliSession
from mcptrials.run.hosts.stream import CRASHED, Stream, api_failure, call_record, content_text, harness_failed, latency
from mcptrials.run.hosts.stream import safe_name, usage_of

PROVIDER = "mcptrials"
# builtin_tools names -> the [features] that turn each on (the schema lists the names)
BUILTIN_FEATURES = {
    "shell": ("shell_tool", "unified_exec"),
    "apply_patch": ("apply_patch_freeform",),
    "view_image": ("view_image",),
}
# always off: not part of a trial's task (the schema's builtin_tools cannot turn them on)
OFF_FEATURES = ("goals", "plugins", "default_mode_request_user_input", "multi_agent_v2")
# Codex's built-in call items -> (name the model saw, the loop's equivalent tool name)
BUILTIN_ITEMS = {
    "command_execution": ("exec_command", "shell"),
    "file_change": ("apply_patch", "apply_patch"),
    "web_search": ("web_search", "web_search"),
}
CRASH_RE = re.compile(r"Transport closed|connection closed|broken pipe", re.I)
MCP_CODE_RE = re.compile(r"(?:MCP error|code:?)\s*(-?\d{4,})")
INCOMPLETE_RE = re.compile(r"Incomplete response returned, reason: (\w+)")
SERVER_STDERR_RE = re.compile(r"MCP server stderr \([^)]*\): (.*)")  # its servers' stderr, as Codex logs it
CALL_ITEMS = ("mcp_tool_call", *BUILTIN_ITEMS)


def toml_value(v) -> str:
    """A TOML value: a JSON string is a valid TOML basic string, a JSON list of them an array."""
    if isinstance(v, (bool, int, float, str)):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {type(v).__name__}")


def config_toml(
    *,
    model: str,
    base_url: str,
    builtins: list[str],
    system: str,
    bare: bool,
    max_retries: int,
    max_result_tokens: int,
    server: tuple[str, dict] | None,
) -> str:
    """The trial's config.toml: top-level keys, then one table per section."""
    top: dict[str, Any] = {
        "model": model,
        "model_provider": PROVIDER,
        "developer_instructions": system,
        "web_search": "cached" if "web_search" in builtins else "disabled",
        "approval_policy": "never",
        "check_for_update_on_startup": False,
        "tool_output_token_limit": max_result_tokens,
    }
    if bare:
        top["project_doc_max_bytes"] = 0
    features = {f: name in builtins for name, fs in BUILTIN_FEATURES.items() for f in fs}
    features |= dict.fromkeys(OFF_FEATURES, False)
    tables: dict[str, dict[str, Any]] = {"analytics": {"enabled": False}, "agents": {"enabled": False}}
    tables["features"] = features
    tables[f"model_providers.{PROVIDER}"] = {
        "name": PROVIDER,
        "base_url": base_url,
        "env_key": "OPENAI_API_KEY",  # holds the proxy's stand-in token, never the key
        "wire_api": "responses",
        "request_max_retries": max_retries,
        "stream_max_retries": max_retries,
    }
    if server:
        tables[f"mcp_servers.{server[0]}"] = server[1]
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, t in tables.items():
        lines += ["", f"[{name}]", *(f"{k} = {toml_value(v)}" for k, v in t.items())]
    return "\n".join(lines) + "\n"


@dataclass
class StepStream(Stream):
    """What one `codex exec` run said (replies: per assistant group)."""

    thread_id: str | None = None
    tokens: dict | None = None  # turn.completed's usage
    failed: str | None = None  # turn.failed's message
    warnings: list = field(default_factory=list)  # error items: Codex's non-fatal notes

    def add_to(self, rec, meta: dict) -> None:  # turn.completed's usage, and Codex's warnings
        u = self.tokens or {}
        cached, written = u.get("cached_input_tokens") or 0, u.get("cache_write_input_tokens") or 0
        uncached = max(0, (u.get("input_tokens") or 0) - cached - written)
        rec.usage.add(usage_of(uncached, u.get("output_tokens"), written, cached))
        if self.warnings:
            meta.setdefault("host_warnings", []).extend(w for w in self.warnings if w not in meta["host_warnings"])


def result_text(item: dict) -> tuple[str, bool]:
    """(text, is_error) of a finished call item."""
    kind, failed = item.get("type"), item.get("status") == "failed"
    if kind == "mcp_tool_call":
        if item.get("error"):
            return str(item["error"].get("message") or item["error"]), True
        r = item.get("result") or {}
        text = content_text(r.get("content"))
        if not text and r.get("structured_content") is not None:
            text = json.dumps(r["structured_content"])
        return text, bool(r.get("is_error") or r.get("isError")) or failed
    if kind == "command_execution":
        return item.get("aggregated_output") or "", failed or (item.get("exit_code") or 0) != 0
    if kind == "file_change":
        return json.dumps(item.get("changes") or []), failed
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "type")}), failed


def call_of(item: dict, step: int, turn: int, t0: float | None, t1: float | None) -> dict:
    """A tool-call record of a finished call item (the loop's shape)."""
    text, is_error = result_text(item)
    if item["type"] == "mcp_tool_call":
        source, tool = "mcp", item.get("tool") or ""
        name, args = f"mcp__{item.get('server')}__{tool}", item.get("arguments") or {}
    else:
        source, (name, tool) = "builtin", BUILTIN_ITEMS[item["type"]]
        args = {k: item[k] for k in ("command", "query", "changes") if k in item}
    head = {"id": item.get("id"), "step": step, "turn": turn, "name": name, "arguments": args}
    return call_record(head, tool, source, text, is_error, latency(t0, t1), MCP_CODE_RE, CRASH_RE)


def parse_stream(events: list[dict], step: int) -> StepStream:
    """Items in the order they finished, in groups (a model call each, as far as is known: Codex
    does not say which call asked for which item): agent messages, then the calls they asked for,
    whose results close the group."""
    s = StepStream()
    started: dict[Any, tuple[float | None, dict]] = {}  # item id -> (when, the item) until it completes
    for ev in events:
        kind, item = ev.get("type"), ev.get("item") or {}
        if kind == "thread.started":
            s.thread_id = ev.get("thread_id")
        elif kind == "turn.completed":
            s.tokens = ev.get("usage") or {}
        elif kind == "turn.failed":
            s.failed = str((ev.get("error") or {}).get("message") or "turn failed")
        elif kind == "item.started" and item.get("type") in CALL_ITEMS:
            started[item.get("id")] = (ev.get("_received"), item)
        elif kind == "item.completed" and item.get("type") == "error":
            s.warnings.append(str(item.get("message")))
        elif kind == "item.completed" and item.get("type") == "agent_message":
            next_call = not s.replies or s.messages[-1]["role"] == "user"  # a message after results
            s.say(s.turn(len(s.replies) + 1 if next_call else len(s.replies)), item.get("text") or "")
        elif kind == "item.completed" and item.get("type") in CALL_ITEMS:
            t0 = started.pop(item.get("id"), (None, {}))[0]
            s.call(call_of(item, step, len(s.replies) or s.turn(1), t0, ev.get("_received")))
    # calls started and never completed (the CLI stopped, killed or timed out mid-call): recorded
    last = next((e["_received"] for e in reversed(events) if e.get("_received") is not None), None)
    for t0, item in started.values():
        s.call(call_of(item, step, len(s.replies) or s.turn(1), t0, last), answered=False)
    return s


def step_outcome(
    s: StepStream, rec, index: int, statuses: list[int] | None = None, unreachable: str | None = None
) -> tuple[str, str | None]:
    """A step that ran to its end: turn.failed -> budget_exceeded for a reply cut at its cap, else
    api_failed (Codex's retries spent; HTTP status from the proxy's `statuses`); a server connection
    that closed -> server_crashed; else completed."""
    if s.failed is not None:
        if (m := INCOMPLETE_RE.search(s.failed)) and m.group(1) == "max_output_tokens":
            return "budget_exceeded", f"codex: {s.failed}"
        return api_failure(rec, index, s.failed[:300], statuses or [], unreachable)
    if any(c["error_code"] == -32000 for c in s.calls):
        return CRASHED
    return "completed", None


@dataclass
class _Session(CliSession):
    kind, package, bin_name, label, stamp = "codex", "@openai/codex", "codex", "Codex", True
    api = "OpenAI Responses API, through the key proxy"
    reply_field = "max_output_tokens"  # the reply cap on every request: Codex has no option for it

    def configure(self, entry: dict | None) -> None:
        ctx, tool = self.ctx, self.ctx.tool
        server = None
        if entry:  # Codex's [mcp_servers.<name>] of a stdio entry or an http URL
            t = {k: v for k, v in entry.items() if k != "type"}  # command and args, or url
            t |= {"startup_timeout_sec": tool.startup_timeout, "tool_timeout_sec": tool.call_timeout, "required": True}
            server = (safe_name(tool.name), t)
        (self.host_home / ".codex").mkdir(parents=True)
        (self.host_home / ".codex" / "config.toml").write_text(
            config_toml(
                model=ctx.model.model,
                base_url=self.proxy.url,
                builtins=list(ctx.host.builtin_tools),
                system=ctx.system_text,
                bare=bool(ctx.host.bare),
                max_retries=ctx.model.max_retries,
                max_result_tokens=ctx.limits.max_result_tokens,
                server=server,
            )
        )

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:
        tid, home = self.session_id, str(self.host_home)
        argv = [self.binary, "exec", *(["resume"] if tid else []), "--json", "--skip-git-repo-check"]
        argv += ["--dangerously-bypass-approvals-and-sandbox", "-m", self.ctx.model.model, *self.ctx.host.extra_args]
        # RUST_LOG: Codex logs its MCP servers' stderr at info level; the run keeps its tail
        env = self.env(CODEX_HOME=f"{home}/.codex", NO_COLOR="1", RUST_LOG="error,codex_rmcp_client=info")
        return argv + ["--", *([tid] if tid else []), prompt], env  # after `--`: a prompt is never an option

    def on_log(self, line: str) -> None:
        if "required MCP servers failed to initialize" in line:
            self.failed_servers.append(f"did not start: {line.strip()[:500]}")

    def parse(self, run, index: int) -> StepStream:
        self.keep_log(SERVER_STDERR_RE.findall(run.stderr))
        s = parse_stream(run.events, index)
        for c in s.calls:  # Codex cuts what the model sees at tool_output_token_limit; its items hold it all
            c["truncated"] = c["result_tokens_est"] > self.ctx.limits.max_result_tokens
        self.note_session(index, s.thread_id)
        return s

    def end_outcome(self, run, s, index, statuses) -> tuple[str, str | None]:
        if self.proxy.gave_up.is_set() and s.failed is None:  # stopped: the model's retries were spent
            s.failed = f"the model API failed {len(statuses)} times in a row; codex was stopped"
        if s.failed is None and s.tokens is None:
            return self.exited(run, index, "a turn result")
        outcome = step_outcome(s, self.ctx.rec, index, statuses, self.unreachable())
        if outcome[0] == "completed" and not s.thread_id:
            return harness_failed(self.ctx.rec, index, "codex reported no thread id")
        return outcome


HOST = CliHost(_Session)
