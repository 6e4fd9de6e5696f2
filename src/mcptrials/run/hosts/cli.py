"""The skeleton of the CLI hosts (claude-code, codex, opencode): a trial under a CLI, from its
install (hosts/install.py) through the key proxy, the server's entry in the CLI's config and the
sandbox to the step loop (the CLI run once per step: hosts/process.py), each step's stream parsed
into the record (hosts/stream.py) and its outcome. A host module subclasses CliSession with its
names, config, argv and stream parsing (docs/hosts.md, "Adding a host").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from mcptrials.prepare.servers import host_env_dir
from mcptrials.run.hosts.install import binary_path, installed_binary, installed_version, npm_install
from mcptrials.run.hosts.process import ProcessRun, run_process
from mcptrials.run.hosts.stream import harness_failed, record_step
from mcptrials.run.trial import step_prompt


def server_entry(ctx, stack) -> tuple[dict | None, str | None]:
    """(the server under test as a CLI's config names it, None), or (None, why) when it cannot
    start (a protocol error; the trial ends server_crashed, as in the loop): the loop's command
    line under `env -i` (a CLI would pass its own environment on; a description variant's argv
    starts with our proxy, prepare.proxy), or the URL of an http server we start."""
    from mcp.client.stdio import get_default_environment

    from mcptrials.prepare.servers import server_argv, server_environment, start_http_server

    tool, values = ctx.tool, ctx.sandbox.values()
    try:
        if tool.transport == "stdio":
            env = get_default_environment() | server_environment(tool.config, values, ctx.forbidden_env)
            args = ["-i", *(f"{k}={v}" for k, v in sorted(env.items())), *server_argv(tool, values)]
            return {"type": "stdio", "command": shutil.which("env") or "/usr/bin/env", "args": args}, None
        errlog = stack.enter_context(open(ctx.sandbox.root / "server.stderr.log", "a"))
        url = stack.enter_context(start_http_server(tool, values, ctx.forbidden_env, errlog))
        return {"type": "http", "url": url}, None
    except Exception as e:  # no command, or an http server that never listened
        ctx.rec.error("protocol_error", msg := f"server failed to start: {type(e).__name__}: {e}")
        return None, msg


def proxy_outcome(proxy) -> tuple[str, str] | None:
    """budget_exceeded when the proxy refused calls past the trial's limit, whoever sent them."""
    if not proxy.trial_limit_hit.is_set():
        return None
    return "budget_exceeded", (
        f"the key proxy refused {proxy.refused} model call(s) past the trial's limit of {proxy.trial_calls} "
        "(steps x max_turns), whoever sent them (the CLI, or a server in its sandbox)"
    )


def unreachable_detail(ctx, proxy) -> str | None:
    """What a step that failed on the model API records when the key proxy could not reach it:
    the API's URL (not the proxy's, which the CLI names), why, and the fix; else None."""
    why = proxy.unreachable_in_step()
    if why is None:
        return None
    key = f"models.{ctx.model.name}.base_url"
    fix = f"fix {key}" if ctx.model.base_url else f"set {key} to an API this machine can reach"
    return (
        f"the model API ({proxy.upstream}) could not be reached: {why}; check this machine's route to it "
        f"(network, DNS, firewall), or {fix}"
    )


class CliHost:
    """A CLI host's HOST (run/hosts/__init__.py): its CliSession class, installed and run."""

    def __init__(self, session: type[CliSession]):
        self.session, self.kind = session, session.kind

    def install(self, host: str, spec, log) -> dict:
        s = self.session
        return npm_install(host, s.kind, s.package, s.bin_name, spec.version, log)

    def run(self, ctx) -> tuple[str, str | None]:
        """Run every step of the trial under the CLI, filling ctx.rec."""
        from mcptrials.run.keyproxy import KeyProxy

        host, cls = ctx.host.name, self.session
        binary = installed_binary(ctx, binary_path(host, cls.bin_name), cls.label)
        host_home = ctx.sandbox.root / "host-home"  # the CLI's HOME (sessions, logs); the server keeps `home`
        host_home.mkdir()
        # The CLI (and the server it starts) never see the key: the proxy adds it, and holds the
        # whole trial to steps x max_turns successful calls, each reply at most the reply cap.
        calls, cap = len(ctx.steps) * ctx.limits.max_turns, ctx.reply_cap
        fields = {cls.reply_field: cap} if cls.reply_field else None
        proxy = KeyProxy(ctx.model.base_url, ctx.api_key(), cls.auth, fields, trial_calls=calls, reply_cap=cap)
        session = cls(ctx=ctx, binary=str(binary), host_home=host_home, proxy=proxy)
        ctx.meta.update(host_version=installed_version(host, cls.package), **session.start())
        ctx.meta.update(host_builtin_tools=list(ctx.host.builtin_tools), host_api=cls.api)
        try:
            with proxy:
                return asyncio.run(session.run())
        finally:
            session.finish()


@dataclass
class CliSession:
    """One trial under a CLI: the server started, the CLI's config written, then one run of the
    CLI per step, its stream parsed into the step record. A host subclasses it: its names, then
    the hooks it overrides."""

    ctx: Any
    binary: str
    host_home: Path
    proxy: Any  # the trial's KeyProxy: the CLI gets its stand-in token and URL
    session_id: str | None = None  # the CLI's session (thread), resumed by the later steps
    failed_servers: list = field(default_factory=list)  # why the step's MCP server did not start
    read_only: list = field(default_factory=list)  # the CLI's config outside its HOME, shown read-only

    kind: ClassVar[str]  # the config's host kind (in messages too)
    package: ClassVar[str]  # the npm package (the host's `version` pins it)
    bin_name: ClassVar[str]  # its binary in node_modules/.bin
    label: ClassVar[str]  # the CLI's name in messages
    api: ClassVar[str]  # run_meta's host_api: what it speaks
    auth: ClassVar[str] = "bearer"  # how the key proxy sends the key upstream
    key_env: ClassVar[str] = "OPENAI_API_KEY"  # where the CLI reads its key (the proxy's stand-in token)
    reply_field: ClassVar[str | None] = None  # the request field the proxy sets to the reply cap
    stamp = False  # hook: True when the CLI's events carry no time (stamped as read)
    keeps_max_turns = False  # hook: True when the CLI keeps max_turns and counts its calls itself (else the proxy)

    def start(self) -> dict:  # hook: run_meta fields known before the first step
        return {"host_session_id": self.session_id} if self.session_id else {}

    def configure(self, entry: dict | None) -> None:  # hook: write the CLI's config, with the server's entry
        pass

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:  # hook: argv, the whole environment
        raise NotImplementedError

    def parse(self, run: ProcessRun, index: int) -> Any:  # hook: the step's stream parsed (a Stream)
        raise NotImplementedError

    def end_outcome(self, run: ProcessRun, s, index: int, statuses: list[int]) -> tuple[str, str | None]:
        raise NotImplementedError  # hook: the outcome of a step that ran to its end, from its stream

    def stop_on(self, event: dict) -> bool:  # hook: an event that ends the run at once
        return False

    def on_log(self, line: str) -> None:  # hook: a line of the CLI's log (a failed server: failed_servers)
        pass

    def finish(self) -> None:  # hook: run_meta fields read after the last step (the CLI's logs)
        pass

    async def run(self) -> tuple[str, str | None]:
        ctx = self.ctx
        with contextlib.ExitStack() as stack:
            entry = None
            if ctx.tool.has_server:
                entry, why = server_entry(ctx, stack)
                if why:
                    return "server_crashed", why
            self.configure(entry)
            for i, step in enumerate(ctx.steps):
                outcome, detail = await self.run_step(i, step, i == len(ctx.steps) - 1)
                if outcome != "completed":
                    return outcome, detail
        return "completed", None

    async def run_step(self, index: int, step: dict, last: bool) -> tuple[str, str | None]:
        """One run of the CLI in the tool's sandbox, with the network for the model API (through
        the key proxy): the trial's folders and the CLI's HOME read-write, its install and its
        config read-only. Its built-in tools see this view only."""
        from mcptrials.prepare.servers import tool_sandbox

        ctx, prompt, workspace = self.ctx, step_prompt(step, last), str(self.ctx.sandbox.workspace)
        self.failed_servers = []
        argv, env = self.command(index, prompt)
        sb = tool_sandbox(
            ctx.tool,
            extra_rw=[*ctx.sandbox.values().values(), self.host_home],
            extra_ro=[host_env_dir(ctx.host.name), *self.read_only],
        )
        sb.network = True
        ctx.meta["sandbox"] = sb.record()
        argv, env = sb.wrap(argv, env, workspace)
        limits = (None,) if self.keeps_max_turns else (ctx.limits.max_turns, ctx.model.max_retries + 1)
        first = self.proxy.begin_step(*limits)

        def stop_when() -> bool:
            return self.proxy.stopped() or bool(self.failed_servers)

        run = await run_process(
            argv, env, workspace, ctx.limits.max_seconds, self.stop_on, stop_when, self.on_log, self.stamp
        )
        return self.take(run, index, step, prompt, self.proxy.statuses[first:])

    def take(self, run: ProcessRun, index: int, step: dict, prompt: str, statuses: list[int]) -> tuple[str, str | None]:
        """The step's run into the trial's record: its conversation, outcome, answer and state."""
        ctx = self.ctx
        s = self.parse(run, index)
        turns = None if self.keeps_max_turns else self.turns(statuses)
        srec = record_step(ctx.rec, s, index, step["name"], prompt, ctx.sandbox.relative, run.seconds, turns)
        s.add_to(ctx.rec, ctx.meta)
        outcome, detail = self._outcome(run, s, index, statuses)
        srec["outcome"] = outcome
        srec["answer_text"], feedback = s.answer(outcome, ctx.sandbox.relative)
        ctx.rec.feedback = feedback or ctx.rec.feedback
        ctx.rec.steps.append(srec)
        srec["state_check"] = ctx.state_check(step)
        return outcome, detail

    def _outcome(self, run: ProcessRun, s, index: int, statuses: list[int] | None = None) -> tuple[str, str | None]:
        """A server that did not start; the trial's limit, then the step's (the proxy's); the
        step's time; else what the stream says (end_outcome)."""
        if self.failed_servers:
            msg = f"{self.kind}: MCP server {self.ctx.tool.name} {self.failed_servers[0]}"
            self.ctx.rec.error("protocol_error", msg, step=index)
            return "server_crashed", msg
        if refused := proxy_outcome(self.proxy):
            return refused
        if self.proxy.limit_hit.is_set():  # the proxy refused a call past max_turns
            return "max_turns", None
        if run.timed_out:
            return "timed_out", f"step {index} ran past max_seconds; {self.kind} was stopped"
        return self.end_outcome(run, s, index, statuses or [])

    def exited(self, run: ProcessRun, index: int, without: str) -> tuple[str, str]:
        """harness_failed: the CLI ended the step without what ends one (`without`)."""
        msg = f"{self.kind} exited {run.returncode} without {without}: {run.stderr[-2000:]}"
        return harness_failed(self.ctx.rec, index, msg)

    def unreachable(self) -> str | None:
        return unreachable_detail(self.ctx, self.proxy)

    def turns(self, statuses: list[int]) -> int:
        """The step's failed calls counted as retries; returns its successful ones (the turns)."""
        self.ctx.rec.retries += sum(1 for x in statuses if not 200 <= x < 300)
        return sum(1 for x in statuses if 200 <= x < 300)

    def env(self, **more: str) -> dict[str, str]:
        """The CLI's whole environment: PATH and the locale, its HOME, TMPDIR and the proxy's
        stand-in token in its key variable, and `more`; nothing else of ours leaks in."""
        ours = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ}
        return (
            ours
            | {"HOME": str(self.host_home), "TMPDIR": str(self.ctx.sandbox.tmp), self.key_env: self.proxy.token}
            | more
        )

    def keep_log(self, lines: list[str]) -> None:
        """run_meta's server_stderr_tail: the last 30 lines about the server, over the steps."""
        tail = self.ctx.meta.get("server_stderr_tail") or ""
        self.ctx.meta["server_stderr_tail"] = "\n".join([*tail.splitlines(), *lines][-30:])

    def note_session(self, index: int, sid: str | None) -> None:
        """The CLI's session id, kept for resuming (and in run_meta from the first step)."""
        self.session_id = self.session_id or sid
        if index == 0:
            self.ctx.meta["host_session_id"] = sid
