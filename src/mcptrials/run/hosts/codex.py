"""Host `codex`: the Codex CLI (`codex exec --json`, `exec resume ... <thread id>` from the
second step) runs the agent loop; the harness records it (docs/hosts.md, "Hosts `codex` and
`opencode`"). This module holds what is Codex's own: its config.toml in a sandboxed CODEX_HOME
(a Responses-API provider at the key proxy, the server under test `required`, the built-ins
of `builtin_tools` and every other feature off), its argv and environment (its own sandbox
off: the whole CLI runs in ours), and the parsing of its items (agent_message, mcp_tool_call,
command_execution, file_change, web_search; turn.completed / turn.failed) into the loop's
records. Its events carry no time: latencies are from when the harness read them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from mcptrials.run.trial import NO_RESULT, unanswered_call
from mcptrials.run.hosts.cli import (
    CliHost,
    CliSession,
    Stream,
    api_failure,
    call_record,
    cli_env,
    latency,
    record_step as base_record_step,
    tool_result,
    tool_use,
    trial_proxy,
    unreachable_detail,
    usage_of,
)

PACKAGE = "@openai/codex"
KEY_ENV = "OPENAI_API_KEY"  # holds the proxy's stand-in token, never the key
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


def server_key(tool: str) -> str:
    """Codex's name of the MCP server (its tools are offered as namespace mcp__<name>)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", tool)


def toml_value(v) -> str:
    """A TOML value: a JSON string is a valid TOML basic string, a JSON list of them an array."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
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
    top = {
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
    features |= {f: False for f in OFF_FEATURES}
    tables = {
        "analytics": {"enabled": False},
        "agents": {"enabled": False},
        "features": features,
        f"model_providers.{PROVIDER}": {
            "name": PROVIDER,
            "base_url": base_url,
            "env_key": KEY_ENV,
            "wire_api": "responses",
            "request_max_retries": max_retries,
            "stream_max_retries": max_retries,
        },
    }
    if server:
        tables[f"mcp_servers.{server[0]}"] = server[1]
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for name, t in tables.items():
        lines += ["", f"[{name}]", *(f"{k} = {toml_value(v)}" for k, v in t.items())]
    return "\n".join(lines) + "\n"


def server_table(entry: dict, startup_timeout: float, call_timeout: float) -> dict:
    """Codex's [mcp_servers.<name>] of a stdio entry (hosts.cli.stdio_entry) or an http URL."""
    t = {"command": entry["command"], "args": entry["args"]} if entry["type"] == "stdio" else {"url": entry["url"]}
    return t | {"startup_timeout_sec": startup_timeout, "tool_timeout_sec": call_timeout, "required": True}


def build_command(binary: str, prompt: str, *, model: str, thread_id: str | None, extra_args: list[str]) -> list[str]:
    argv = [
        binary,
        "exec",
        *(["resume"] if thread_id else []),
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-m",
        model,
        *extra_args,
    ]
    # after `--`: a prompt is never read as an option
    return argv + ["--", *([thread_id] if thread_id else []), prompt]


def host_environment(home: str, codex_home: str, tmp: str, token: str) -> dict[str, str]:
    """Codex's whole environment (hosts.cli.cli_env). RUST_LOG: Codex logs its MCP servers'
    stderr at info level; the run keeps its tail."""
    return cli_env(
        **{
            "HOME": home,
            "CODEX_HOME": codex_home,
            "TMPDIR": tmp,
            KEY_ENV: token,
            "NO_COLOR": "1",
            "RUST_LOG": "error,codex_rmcp_client=info",
        }
    )


SERVER_STDERR_RE = re.compile(r"MCP server stderr \([^)]*\): (.*)")


def server_stderr(stderr: str) -> list[str]:
    """The lines the MCP server wrote to its stderr, as Codex logged them."""
    return [m.group(1) for m in SERVER_STDERR_RE.finditer(stderr)]


@dataclass
class StepStream(Stream):
    """What one `codex exec` run said, in the loop's shapes (replies: per assistant group)."""

    thread_id: str | None = None
    usage: dict | None = None  # turn.completed's
    failed: str | None = None  # turn.failed's message
    errors: list = field(default_factory=list)  # top-level `error` events (retries, the failure)
    warnings: list = field(default_factory=list)  # error items: Codex's non-fatal notes


def result_text(item: dict) -> tuple[str, bool]:
    """(text, is_error) of a finished call item."""
    kind = item.get("type")
    if kind == "mcp_tool_call":
        if item.get("error"):
            return str(item["error"].get("message") or item["error"]), True
        r = item.get("result") or {}
        parts = [
            b.get("text", "") if b.get("type") == "text" else f"[{b.get('type')} content]"
            for b in r.get("content") or []
            if isinstance(b, dict)
        ]
        if not parts and r.get("structured_content") is not None:
            parts = [json.dumps(r["structured_content"])]
        return "\n".join(parts), bool(r.get("is_error") or r.get("isError")) or item.get("status") == "failed"
    if kind == "command_execution":
        return item.get("aggregated_output") or "", item.get("status") == "failed" or (item.get("exit_code") or 0) != 0
    if kind == "file_change":
        return json.dumps(item.get("changes") or []), item.get("status") == "failed"
    return json.dumps({k: v for k, v in item.items() if k not in ("id", "type")}), item.get("status") == "failed"


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
    """Items in the order they finished: agent messages, then the calls they asked for (an
    assistant group, one Messages-API assistant turn with its tool_use blocks), then the calls'
    results (a user turn); a message after results starts the next group. Codex does not say
    which model call asked for which call item, so calls in a row count as one group."""
    s = StepStream()
    started: dict[str, tuple[float | None, dict]] = {}  # item id -> (when, the item) until it completes
    assistant: dict | None = None
    results: list = []

    def new_group() -> dict:
        nonlocal assistant, results
        if results:
            s.messages.append({"role": "user", "content": results})
            results = []
        assistant = {"role": "assistant", "content": []}
        s.messages.append(assistant)
        s.replies.append(([], False))
        return assistant

    def add_call(item: dict, t0: float | None, t1: float | None, answered: bool = True) -> None:
        if assistant is None:  # calls in a row belong to one reply (Codex does not say otherwise)
            new_group()
        call = call_of(item, step, len(s.replies), t0, t1)
        call = call if answered else unanswered_call(call, call["latency_ms"])
        s.replies[-1] = (s.replies[-1][0], True)
        assistant["content"].append(tool_use(call))
        results.append(tool_result(call, None if answered else NO_RESULT))
        s.calls.append(call)

    for ev in events:
        kind = ev.get("type")
        if kind == "thread.started":
            s.thread_id = ev.get("thread_id")
        elif kind == "turn.completed":
            s.usage = ev.get("usage") or {}
        elif kind == "turn.failed":
            s.failed = str((ev.get("error") or {}).get("message") or "turn failed")
        elif kind == "error":
            s.errors.append(str(ev.get("message")))
        elif kind == "item.started":
            item = ev.get("item") or {}
            started[item.get("id")] = (ev.get("_received"), item)
        elif kind == "item.completed":
            item = ev.get("item") or {}
            itype = item.get("type")
            if itype == "error":
                s.warnings.append(str(item.get("message")))
            elif itype == "agent_message":
                if assistant is None or results:
                    new_group()
                s.replies[-1][0].append(item.get("text") or "")
                assistant["content"].append({"type": "text", "text": item.get("text") or ""})
            elif itype == "mcp_tool_call" or itype in BUILTIN_ITEMS:
                add_call(item, started.pop(item.get("id"), (None, None))[0], ev.get("_received"))
    # calls started and never completed (the CLI stopped, killed or timed out mid-call): recorded
    last = next((e["_received"] for e in reversed(events) if e.get("_received") is not None), None)
    for t0, item in started.values():
        if item.get("type") == "mcp_tool_call" or item.get("type") in BUILTIN_ITEMS:
            add_call(item, t0, last, answered=False)
    if results:
        s.messages.append({"role": "user", "content": results})
    return s


def record_step(
    rec,
    s: StepStream,
    index: int,
    name: str,
    prompt: str,
    relative,
    meta: dict,
    wall_seconds: float,
    model_calls: int | None,
) -> dict:
    """The step into the trial's Recorder `rec` (hosts.cli.record_step), with the usage of
    turn.completed and Codex's warnings (into `meta`)."""
    srec = base_record_step(rec, s, index, name, prompt, relative, wall_seconds, model_calls)
    u = s.usage or {}
    cached, written = u.get("cached_input_tokens") or 0, u.get("cache_write_input_tokens") or 0
    rec.usage.add(
        usage_of(max(0, (u.get("input_tokens") or 0) - cached - written), u.get("output_tokens"), written, cached)
    )
    if s.warnings:
        meta.setdefault("host_warnings", []).extend(w for w in s.warnings if w not in meta.get("host_warnings", []))
    return srec


def step_outcome(
    s: StepStream, rec, index: int, statuses: list[int] | None = None, unreachable: str | None = None
) -> tuple[str, str | None]:
    """The outcome of a step that ran to its end: turn.failed -> budget_exceeded for a reply
    cut at max_output_tokens, else api_failed (Codex fails a turn on the model API's errors,
    after its retries; `statuses`, the proxy's, give the HTTP status; said as `unreachable`
    when the key proxy could not reach the API); a server connection
    that closed -> server_crashed; turn.completed -> completed; neither -> harness_failed."""
    if s.failed is not None:
        m = INCOMPLETE_RE.search(s.failed)
        if m and m.group(1) == "max_output_tokens":
            return "budget_exceeded", f"codex: {s.failed}"
        return api_failure(rec, index, s.failed[:300], statuses or [], unreachable)
    if any(c["error_code"] == -32000 for c in s.calls):
        return "server_crashed", "the MCP server's connection closed during the step"
    if s.usage is None:
        msg = f"codex ended the step without turn.completed or turn.failed: {'; '.join(s.errors)[:500]}"
        rec.error("harness_error", msg, step=index)
        return "harness_failed", msg
    return "completed", None


@dataclass
class _Session(CliSession):
    name, stamp = "codex", True

    def configure(self, entry: dict | None) -> None:
        ctx, tool = self.ctx, self.ctx.tool
        (self.host_home / ".codex").mkdir(parents=True)
        server = (
            (server_key(tool.name), server_table(entry, tool.startup_timeout, tool.call_timeout)) if entry else None
        )
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
        ctx = self.ctx
        argv = build_command(
            self.binary, prompt, model=ctx.model.model, thread_id=self.session_id, extra_args=list(ctx.host.extra_args)
        )
        return argv, host_environment(
            str(self.host_home), str(self.host_home / ".codex"), str(ctx.sandbox.tmp), self.proxy.token
        )

    def parse(self, run, index: int) -> StepStream:
        ctx = self.ctx
        self.keep_log(server_stderr(run.stderr))
        s = parse_stream(run.events, index)
        for c in s.calls:  # Codex cuts what the model sees at tool_output_token_limit; its items hold it all
            c["truncated"] = c["result_tokens_est"] > ctx.limits.max_result_tokens
        self.note_session(index, s.thread_id)
        self.step_thread = s.thread_id
        return s

    def record(self, s, index, step, prompt, wall, statuses) -> dict:
        ctx = self.ctx
        return record_step(
            ctx.rec, s, index, step["name"], prompt, ctx.sandbox.relative, ctx.meta, wall, self.proxy_turns(statuses)
        )

    def end_outcome(self, run, s, index, statuses) -> tuple[str, str | None]:
        rec = self.ctx.rec
        if self.proxy.gave_up.is_set() and s.failed is None:  # stopped: the model's retries were spent
            s.failed = f"the model API failed {len(statuses)} times in a row; codex was stopped"
        if "required MCP servers failed to initialize" in run.stderr:
            line = next(x for x in run.stderr.splitlines() if "required MCP servers failed" in x)
            msg = f"codex: MCP server {self.ctx.tool.name} did not start: {line.strip()[:500]}"
            rec.error("protocol_error", msg, step=index)
            return "server_crashed", msg
        if s.failed is None and s.usage is None:
            return self.harness_failed(
                index, f"codex exited {run.returncode} without a turn result: {run.stderr[-2000:]}"
            )
        return step_outcome(s, rec, index, statuses, unreachable_detail(self.ctx, self.proxy))

    async def run_step(self, index: int, step: dict, last: bool) -> tuple[str, str | None]:
        outcome, detail = await super().run_step(index, step, last)
        if outcome == "completed" and not self.step_thread:
            return "harness_failed", "codex reported no thread id"
        return outcome, detail


class CodexHost(CliHost):
    kind, package, bin_name, label, session = "codex", PACKAGE, "codex", "Codex", _Session
    api = "OpenAI Responses API, through the key proxy"

    def proxy(self, ctx):  # the reply cap on every request: Codex has no option for it
        return trial_proxy(ctx, auth="bearer", set_fields={"max_output_tokens": ctx.reply_cap})


HOST = CodexHost()
