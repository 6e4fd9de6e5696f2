"""Host `claude-code`: the Claude Code CLI (`claude -p --output-format stream-json`; one session per
trial, `--session-id` then `--resume`) runs the agent loop and keeps max_turns (docs/hosts.md). Its
own: argv (the server its only MCP server, its tools allowed by name, our system prompt appended),
environment (limits, telemetry off) and stream-json parser, which run.recorded also uses."""

from __future__ import annotations

import contextlib
import glob
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from mcptrials.matrix.specs import HostSpec
from mcptrials.run.hosts.cli import CliHost, CliSession
from mcptrials.run.hosts.stream import CRASHED, Stream, call_record, content_text, harness_failed, latency, safe_name
from mcptrials.run.hosts.stream import event_time, usage_of
from mcptrials.run.trial import split_feedback

# Claude Code's built-ins -> the loop's equivalent built-in (graders count grep/list_files as searches)
BUILTIN_EQUIVALENTS = {"Read": "read_file", "Grep": "grep", "Glob": "list_files", "LS": "list_files"}
MCP_CODE_RE = re.compile(r"MCP error (-?\d+)")
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
# no telemetry, update checks or error reports from inside a trial
QUIET = dict.fromkeys(["DISABLE_TELEMETRY", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1")
QUIET |= dict.fromkeys(["DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING"], "1")
SESSION_FIELDS = ("inputTokens", "outputTokens", "cacheCreationInputTokens", "cacheReadInputTokens")


def server_tool_names(tool: str, tools: list[dict]) -> dict[str, str]:
    """Claude Code's name of each server tool (mcp__<server>__<tool>) -> the server's own (from
    tools/list), so `tool_calls[].tool` is `git.log`, not `git_log`, as the loop records it."""
    return {safe_name(f"mcp__{tool}__{t['name']}"): t["name"] for t in tools}


def allowed_tools(tool: str, snapshot: dict | None, builtins: list[str], has_server: bool) -> list[str]:
    """The built-ins plus every server tool by name; without a tool list, the whole server."""
    names = list(server_tool_names(tool, (snapshot or {}).get("tools") or []))
    if has_server and not names:
        names = [f"mcp__{tool}"]  # a server-level rule allows all of its tools
    return [*builtins, *names]


def build_command(
    binary: str,
    prompt: str,
    *,
    host: HostSpec,
    model: str,
    session_id: str,
    resume: bool,
    max_turns: int,
    allowed: list[str],
    mcp_file: str | None,
    system_append: str,
) -> list[str]:
    builtins, bare, extra_args = list(host.builtin_tools or ()), host.bare, list(host.extra_args or ())
    argv = [binary, "-p", "--output-format", "stream-json", "--verbose", "--model", model]
    argv += ["--max-turns", str(max_turns), "--strict-mcp-config", "--setting-sources", "user"]
    argv += ["--tools", ",".join(builtins), "--append-system-prompt", system_append]
    argv += ["--resume" if resume else "--session-id", session_id]
    argv += ["--mcp-config", mcp_file] if mcp_file else []
    argv += ["--allowedTools", ",".join(allowed)] if allowed else []
    # after `--`: a prompt is never read as an option, nor swallowed by a variadic one
    return [*argv, *(["--bare"] if bare else []), *extra_args, "--", prompt]


@dataclass
class StepStream(Stream):
    """What one `claude -p` run said, in the loop's shapes."""

    init: dict | None = None
    result: dict | None = None
    api_retries: int = 0
    msg_usage: dict = field(default_factory=dict)  # message id -> usage (when no result event came)

    def show(self, arguments) -> str:
        return str(arguments)

    def add_to(self, rec, meta: dict) -> None:
        """Claude Code's retries, usage with cache fields and own cost; its permission denials and
        version into `meta`."""
        rec.retries += self.api_retries
        r, by_model = self.result or {}, (self.result or {}).get("modelUsage")
        if isinstance(by_model, dict) and by_model:
            # Claude Code's own count over the (resumed) session and every model it called: this
            # step's share is what it adds to the steps before (its `usage` can leave calls out)
            totals = [sum(x.get(k) or 0 for x in by_model.values() if isinstance(x, dict)) for k in SESSION_FIELDS]
            rec.usage.add(usage_of(*(max(0, n - getattr(rec.usage, k)) for n, k in zip(totals, USAGE_FIELDS))))
        else:  # no modelUsage: the result's usage, or (no result event) the replies' own, partial
            for x in [r["usage"]] if r.get("usage") else list(self.msg_usage.values()):
                rec.usage.add(usage_of(*(x.get(k) for k in USAGE_FIELDS)))
        if r.get("total_cost_usd") is not None:  # cumulative over the resumed session (2.1.328)
            rec.extra_usage["host_cost_usd"] = max(rec.extra_usage.get("host_cost_usd") or 0.0, r["total_cost_usd"])
        if r.get("permission_denials"):
            meta.setdefault("host_permission_denials", []).extend(r["permission_denials"])
        if self.init and not meta.get("host_reported_version"):
            meta["host_reported_version"] = self.init.get("claude_code_version")

    def answer(self, outcome: str, relative) -> tuple[str, str]:
        """The `result` text of a completed step; of a step stopped at its budget, that text or
        else the prose of its last reply that has any (the partial answer)."""
        if outcome not in ("completed", "budget_exceeded"):
            return "", ""
        text = (self.result or {}).get("result") or ""
        if outcome == "budget_exceeded" and not text.strip():
            replies = ("\n\n".join(x for x in texts if x) for texts, _ in reversed(self.replies))
            text = next((j for j in replies if j.strip()), "")
        return split_feedback(relative(text))


def parse_stream(events: list[dict], step: int, tool_names: dict[str, str] | None = None) -> StepStream:
    """Group assistant events by message id (stream-json sends one content block per event), pair each
    tool_use with its tool_result, keep init and result apart. `tool_names`: see server_tool_names."""
    s, names = StepStream(), tool_names or {}
    pending: dict[str, tuple[dict, float | None]] = {}  # tool_use id -> (call, when) until answered
    for ev in events:
        kind, sub, msg = ev.get("type"), ev.get("subtype"), ev.get("message") or {}
        if kind == "system" and sub == "init":
            s.init = ev
        elif kind == "system" and sub == "api_retry":
            s.api_retries += 1
        elif kind == "result":
            s.result = ev
        elif kind == "assistant" and not (ev.get("is_api_error_message") or msg.get("model") == "<synthetic>"):
            mid = msg.get("id") or ev.get("uuid")  # (a synthetic one is Claude Code's own error note)
            s.msg_usage.setdefault(mid, msg.get("usage") or {})
            turn = s.turn(mid)
            for b in msg.get("content") or []:
                if b.get("type") == "text":
                    s.say(turn, b.get("text", ""))
                elif b.get("type") == "tool_use":
                    s.use(turn, {k: b[k] for k in ("type", "id", "name", "input") if k in b})
                    head = {"id": b["id"], "step": step, "turn": turn, "name": b["name"]}
                    pending[b["id"]] = (head | {"arguments": b.get("input") or {}}, event_time(ev))
        elif kind == "user" and isinstance(msg.get("content"), list):
            for b in (b for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_result"):
                if (p := pending.pop(b.get("tool_use_id"), None)) is not None:
                    text, is_error = content_text(b.get("content")), bool(b.get("is_error"))
                    s.call(_call_record(p[0], text, is_error, p[1], event_time(ev), names), asked=True)
    # asked for, never answered (a stop, a kill, a time-out): recorded, and the turn closed, as the loop does
    last = next((t for t in map(event_time, reversed(events)) if t is not None), None)
    for call, t0 in pending.values():
        s.call(_call_record(call, "", False, t0, last, names), answered=False, asked=True)
    return s


def _call_record(call: dict, text: str, is_error: bool, t0, t1, tool_names: dict[str, str]) -> dict:
    name = call["name"]
    if name.startswith("mcp__"):
        source, tool = "mcp", tool_names.get(name) or name.split("__", 2)[-1]
    else:
        source, tool = "builtin", BUILTIN_EQUIVALENTS.get(name, name)
    return call_record(call, tool, source, text, is_error, latency(t0, t1), MCP_CODE_RE)


def result_outcome(s: StepStream, rec, index: int, unreachable: str | None = None) -> tuple[str, str | None]:
    """The outcome of a step from its `result` event: its subtype, an API error after retries (said
    as `unreachable` when the proxy could not reach the API: Claude Code would blame the proxy, its
    "inference gateway"), a server connection that closed, a reply cut at max_tokens."""
    r = s.result or {}
    sub = r.get("subtype")
    if sub == "error_max_turns":
        return "max_turns", None
    if sub == "error_max_budget_usd":
        return "budget_exceeded", "claude-code: error_max_budget_usd"
    if r.get("is_error") and (r.get("api_error_status") is not None or r.get("terminal_reason") == "api_error"):
        msg = unreachable or f"{r.get('api_error_status')}: {str(r.get('result'))[:300]}"
        rec.error("api_error", msg, step=index, status=r.get("api_error_status"), retries=s.api_retries)
        return "api_failed", msg
    if sub != "success" or r.get("is_error"):
        return harness_failed(rec, index, f"claude-code result {sub}: {r.get('errors') or r.get('result')}")
    if any(c["error_code"] == -32000 for c in s.calls):
        return CRASHED
    return ("budget_exceeded", None) if r.get("stop_reason") == "max_tokens" else ("completed", None)


@dataclass
class _Session(CliSession):
    kind, package, bin_name, label = "claude-code", "@anthropic-ai/claude-code", "claude", "Claude Code"
    api, auth, key_env, keeps_max_turns = "through the key proxy", "x-api-key", "ANTHROPIC_API_KEY", True
    session_id: str | None = field(default_factory=lambda: str(uuid.uuid4()))  # ours: one per trial
    mcp_file: Path | None = None

    def configure(self, entry: dict | None) -> None:
        if entry:
            self.mcp_file = f = self.ctx.sandbox.root / "mcp-config.json"
            f.write_text(json.dumps({"mcpServers": {self.ctx.tool.name: entry}}, indent=1))
            self.read_only.append(f)

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:
        ctx, mcp_file = self.ctx, str(self.mcp_file) if self.mcp_file else None
        tool, model, host, lim = ctx.tool, ctx.model, ctx.host, ctx.limits
        argv = build_command(
            self.binary,
            prompt,
            host=host,
            model=model.model,
            session_id=self.session_id or "",
            resume=index > 0,
            max_turns=lim.max_turns,
            allowed=allowed_tools(tool.name, ctx.snapshot, list(host.builtin_tools or ()), mcp_file is not None),
            mcp_file=mcp_file,
            system_append=ctx.system_text,
        )
        env = self.env(
            **QUIET,
            CLAUDE_CODE_MAX_OUTPUT_TOKENS=str(ctx.reply_cap),
            MAX_MCP_OUTPUT_TOKENS=str(lim.max_result_tokens),
            CLAUDE_CODE_MAX_RETRIES=str(model.max_retries),
            MCP_TIMEOUT=str(int(tool.startup_timeout * 1000)),
            MCP_TOOL_TIMEOUT=str(int(tool.call_timeout * 1000)),
        )
        return argv, env | ({"ANTHROPIC_BASE_URL": self.proxy.url} if self.proxy.url else {})

    def stop_on(self, ev: dict) -> bool:  # a server that did not connect: stop before spending a model call
        servers = (ev.get("mcp_servers") or []) if ev.get("type") == "system" and ev.get("subtype") == "init" else []
        if self.mcp_file and any(x.get("status") != "connected" for x in servers):
            self.failed_servers.append(f"did not connect: {json.dumps(ev.get('mcp_servers'))}")
        return bool(self.failed_servers)

    def parse(self, run, index: int) -> StepStream:
        tools = (self.ctx.snapshot or {}).get("tools") or []
        return parse_stream(run.events, index, server_tool_names(self.ctx.tool.name, tools))

    def end_outcome(self, run, s, index, statuses) -> tuple[str, str | None]:
        if s.result is None:
            return self.exited(run, index, "a result event")
        return result_outcome(s, self.ctx.rec, index, self.unreachable())

    def finish(self) -> None:
        """run_meta's server fields from Claude Code's MCP logs: start-up time, protocol, last lines."""
        lines = []
        for f in sorted(glob.glob(f"{self.host_home}/.cache/claude-cli-nodejs/*/mcp-logs-*/*.jsonl")):
            with contextlib.suppress(OSError):
                for raw in open(f, errors="replace"):
                    with contextlib.suppress(ValueError):
                        d = json.loads(raw)
                        lines.append(str(d.get("debug") or d.get("error") or d.get("info") or d))
        startup = re.search(r"Successfully connected .*? in (\d+)ms", text := "\n".join(lines))
        protocol = re.search(r'"negotiatedProtocolVersion":"([^"]+)"', text)
        self.ctx.meta["server_startup_seconds"] = int(startup.group(1)) / 1000 if startup else None
        self.ctx.meta["server_protocol_version"] = protocol.group(1) if protocol else None
        self.ctx.meta["server_stderr_tail"] = "\n".join(lines[-30:])


HOST = CliHost(_Session)
