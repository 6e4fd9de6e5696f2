"""The skeleton of the CLI hosts (claude-code, codex, opencode): their npm install into
.tools/_hosts/<host>/, the sandbox, the key proxy, the step loop (the CLI run once per step
while its JSON-lines stream is read), the outcomes and the step record. A host module
subclasses CliHost and CliSession and writes only its config, argv and stream parsing
(docs/hosts.md, "Adding a host").
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcptrials.prepare.servers import host_env_dir

STREAM_LIMIT = 1 << 26   # one JSON line can hold a whole tool result


# --- install -------------------------------------------------------------------------


def binary_path(host: str, bin_name: str) -> Path:
    return host_env_dir(host) / "node_modules" / ".bin" / bin_name


def installed_version(host: str, package: str) -> str | None:
    pkg = host_env_dir(host) / "node_modules" / package / "package.json"
    try:
        return json.loads(pkg.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def npm_install(host: str, kind: str, package: str, bin_name: str, want: str, log) -> dict:
    """npm-install the pinned CLI into .tools/_hosts/<host>/; an install of the same version
    already there is reused (npm would only re-check it). Returns the install record."""
    from mcptrials.prepare.install import run_logged

    env_dir = host_env_dir(host)
    t0 = time.monotonic()
    binary = binary_path(host, bin_name)
    reused = installed_version(host, package) == want and binary.exists()
    if not reused:
        if env_dir.exists():
            shutil.rmtree(env_dir)
        env_dir.mkdir(parents=True)
        run_logged(["npm", "install", "--no-fund", "--no-audit", "--prefix", str(env_dir), f"{package}@{want}"], log)
    got = installed_version(host, package)
    if got != want:
        raise RuntimeError(f"hosts.{host}: npm installed {package} {got}, not the pinned {want}; see the log")
    with tempfile.TemporaryDirectory() as home:  # --version must not write into the user's HOME
        reported = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}).stdout.strip()
    return {"host": host, "kind": kind, "package": package, "version": want, "reported_version": reported,
            "env_dir": str(env_dir), "binary": str(binary), "reused": reused,
            "resolved": {package: got}, "seconds": round(time.monotonic() - t0, 2),
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def stdio_entry(tool, values: dict, forbidden: set[str]) -> dict:
    """A stdio server's entry for a CLI's MCP config (tool: a ToolSpec): the same command,
    arguments, cwd (the workspace) and environment as the loop's mcp client gives it, the
    environment enforced with `env -i` (a CLI would otherwise pass on its own, or part of it)."""
    from mcp.client.stdio import get_default_environment

    from mcptrials.prepare.servers import server_argv, server_environment

    env = get_default_environment() | server_environment(tool.config, values, forbidden)
    # a description variant's argv starts with our proxy (mcptrials.prepare.proxy), inside the CLI's sandbox
    return {"type": "stdio", "command": shutil.which("env") or "/usr/bin/env",
            "args": ["-i", *(f"{k}={v}" for k, v in sorted(env.items())), *server_argv(tool, values)]}


def cli_sandbox(ctx, host_home: Path, extra_ro: list):
    """The CLI (and the stdio server it starts) in the tool's sandbox, with the network for
    the model API (through the key proxy): the trial's folders and the CLI's HOME read-write,
    its install and `extra_ro` (its config) read-only. Its built-in tools see this view only."""
    from mcptrials.prepare.servers import tool_sandbox

    sb = tool_sandbox(ctx.tool, extra_rw=[*ctx.sandbox.values().values(), host_home],
                      extra_ro=[host_env_dir(ctx.host.name), *(p for p in extra_ro if p)])
    sb.network = True
    ctx.meta["sandbox"] = sb.record()
    return sb


def start_http(ctx, stack) -> str:
    """An http server is ours to start, as in the loop; the CLI connects to its URL."""
    from mcptrials.prepare.servers import start_http_server

    errlog = stack.enter_context(open(ctx.sandbox.root / "server.stderr.log", "a"))
    return stack.enter_context(start_http_server(ctx.tool, ctx.sandbox.values(), ctx.forbidden_env, errlog))


def server_entry(ctx, stack) -> tuple[dict | None, str | None]:
    """(the server under test as a CLI's config names it, None), or (None, why) when it cannot
    start: a stdio command line (stdio_entry) or the URL of an http server we start (start_http).
    A failure is recorded as a protocol error; the caller ends the trial server_crashed, as the
    loop does."""
    tool = ctx.tool
    try:
        return (stdio_entry(tool, ctx.sandbox.values(), ctx.forbidden_env) if tool.transport == "stdio"
                else {"type": "http", "url": start_http(ctx, stack)}), None
    except Exception as e:  # no command, or an http server that never listened
        msg = f"server failed to start: {type(e).__name__}: {e}"
        ctx.rec.error("protocol_error", msg)
        return None, msg


def installed_binary(ctx, binary: Path, cli: str) -> Path:
    """The host's CLI binary, or the trial aborts harness_failed saying how to install it."""
    if not binary.exists():
        from mcptrials.run.trial import TrialAbort

        host = ctx.host.name
        raise TrialAbort("harness_failed", f"{binary}: {cli} is not installed; run `mcptrials install-host "
                                           f"--host {host} --out results/hosts/{host}/install.json` "
                                           "(the workflow's install_host rule)")
    return binary


def trial_proxy(ctx, auth: str = "x-api-key", set_fields: dict | None = None):
    """The trial's key proxy (run.keyproxy), holding the whole trial to its limits whoever
    calls: steps x max_turns successful model calls, each reply at most the trial's reply cap."""
    from mcptrials.run.keyproxy import KeyProxy

    return KeyProxy(ctx.model.base_url, ctx.api_key(), auth=auth, set_fields=set_fields,
                    trial_calls=len(ctx.steps) * ctx.limits.max_turns, reply_cap=ctx.reply_cap)


def proxy_outcome(proxy) -> tuple[str, str] | None:
    """The trial's outcome when the proxy refused calls past the trial's limit (None when it
    did not): the arm spent what the trial was allowed, so the trial fails as over budget."""
    if not proxy.trial_limit_hit.is_set():
        return None
    return "budget_exceeded", (f"the key proxy refused {proxy.refused} model call(s) past the trial's limit of "
                               f"{proxy.trial_calls} (steps x max_turns), whoever sent them (the CLI, or a "
                               "server in its sandbox)")


def unreachable_detail(ctx, proxy) -> str | None:
    """What a step that failed on the model API records when the key proxy could not reach
    the API at its last call (None when it could): the API's URL (the proxy's upstream, not
    the proxy that the CLI names), why, and the fix. The outcome stays api_failed."""
    why = proxy.unreachable_in_step()
    if why is None:
        return None
    field = f"models.{ctx.model.name}.base_url"
    fix = f"fix {field}" if ctx.model.base_url else f"set {field} to an API this machine can reach"
    return (f"the model API ({proxy.upstream}) could not be reached: {why}; check this machine's route to it "
            f"(network, DNS, firewall), or {fix}")


# --- running -----------------------------------------------------------------------------


@dataclass
class ProcessRun:
    events: list
    stderr: str
    returncode: int | None
    timed_out: bool
    stopped: bool        # we stopped it: stop_on said so (e.g. a failed MCP server at init), or stop_when
    seconds: float = 0.0


async def run_process(argv: list[str], env: dict, cwd: str, timeout: float, stop_on, stop_when=None,
                      stamp: bool = False, stop_on_log=None) -> ProcessRun:
    """Run the CLI, reading its stream as it comes; `stop_on(event)` True ends it early, and
    so do `stop_when()` (polled: a condition seen outside the stream, e.g. the key proxy's
    turn limit) and `stop_on_log(stderr line)` (a CLI that reports a failed server only in
    its log). With `stamp`, each event gets `_received` (epoch seconds) for a CLI whose
    events carry no time."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(*argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True,
                                                limit=STREAM_LIMIT)
    err_lines: list[bytes] = []
    log_said_stop = asyncio.Event()

    async def read_err() -> None:
        async for line in proc.stderr:
            err_lines.append(line)
            if stop_on_log and stop_on_log(line.decode(errors="replace")):
                log_said_stop.set()

    err_task = asyncio.create_task(read_err())
    events, timed_out, stopped = [], False, False

    async def read() -> bool:
        async for line in proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # a stray non-JSON line; stderr has the rest
            if not isinstance(ev, dict):
                continue
            if stamp:
                ev["_received"] = time.time()
            events.append(ev)
            if stop_on(ev):
                return True
        await proc.wait()
        return False

    async def watch() -> None:
        while not (log_said_stop.is_set() or (stop_when and stop_when())):
            await asyncio.sleep(0.05)

    reader = asyncio.create_task(read())
    tasks = {reader} | ({asyncio.create_task(watch())} if stop_when or stop_on_log else set())
    try:
        async with asyncio.timeout(timeout):
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            stopped = reader not in done or reader.result()
    except TimeoutError:
        timed_out = True
    finally:
        for t in tasks:
            t.cancel()
        if proc.returncode is None:
            await kill_group(proc)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(err_task, 5)  # a grandchild may hold stderr open
        stderr = b"".join(err_lines).decode(errors="replace")
    return ProcessRun(events, stderr, proc.returncode, timed_out, stopped, round(time.monotonic() - t0, 3))


async def kill_group(proc) -> None:
    """The CLI and the servers it started: TERM, then KILL."""
    for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 5)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            return
        except TimeoutError:
            continue


# --- the step record: the loop's shapes, from any CLI's parsed stream -----------------------


@dataclass
class Stream:
    """What one run of a CLI said, in the loop's shapes; a host's parsed stream extends it."""

    messages: list = field(default_factory=list)   # Messages-API turns (assistant / user tool results)
    calls: list = field(default_factory=list)      # tool-call records
    replies: list = field(default_factory=list)    # [(texts, has_tool_call)] per model call


def call_record(head: dict, tool: str, source: str, text: str, is_error: bool, latency_ms: float, code_re,
                crash_re=None, truncated: bool = False) -> dict:
    """A tool-call record in the loop's shape; `head` holds id, step, turn, name and arguments.
    An error's MCP code (`code_re`) makes it a protocol error, and so does a closed connection
    (`crash_re`: the server died, -32000); any other error is the tool's."""
    from mcptrials.run.trial import CHARS_PER_TOKEN

    kind, code = None, None
    if is_error:
        m = code_re.search(text) if source == "mcp" else None
        if m:
            kind, code = "protocol_error", int(m.group(1))
        elif source == "mcp" and crash_re and crash_re.search(text):
            kind, code = "protocol_error", -32000
        else:
            kind = "tool_error"
    return head | {"tool": tool, "source": source, "result_text": text, "result_chars": len(text),
                   "truncated": truncated, "is_error": is_error, "error_kind": kind, "error_code": code,
                   "latency_ms": latency_ms, "result_tokens_est": len(text) // CHARS_PER_TOKEN}


def latency(t0: float | None, t1: float | None) -> float:
    return round((t1 - t0) * 1000, 2) if t0 is not None and t1 is not None else 0.0


def record_turns(rec, s: Stream, index: int, name: str, prompt: str, relative, wall_seconds: float, turns: int,
                 final: int | None, show=json.dumps) -> dict:
    """Add one parsed step to the trial's Recorder `rec` (the user turn, the conversation, tool
    calls and their errors, model calls); return the step record, its `answer_text` empty and
    `outcome` completed until the caller sets them. `final`: the reply that is the answer (its
    text is no reasoning); `show`: how the audit text shows a call's arguments."""
    srec = {"index": index, "name": name, "prompt": prompt, "answer_text": "", "reasoning_text": "",
            "audit_text": "", "outcome": "completed", "turns": turns, "state_check": None,
            "wall_seconds": wall_seconds}
    rec.messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    rec.messages += s.messages
    rec.tool_calls += s.calls
    for c in s.calls:
        if c["error_kind"]:
            rec.error(c["error_kind"], f"{c['tool']}: {c['result_text'][:300]}", step=index, code=c["error_code"])
    srec["reasoning_text"] = relative("\n\n".join(x for i, (texts, _) in enumerate(s.replies)
                                                   if i != final for x in texts if x))
    srec["audit_text"] = "\n\n".join(f"> {c['name']} {show(c['arguments'])}\n{c['result_text'][:2000]}"
                                     for c in s.calls)
    rec.api_calls += turns
    return srec


def final_text(s: Stream) -> str:
    """The step's answer: its last reply's text, when that reply asked for no tool; a run cut
    short may end with a tool call and have no answer."""
    if s.replies and not s.replies[-1][1]:
        return "\n\n".join(x for x in s.replies[-1][0] if x)
    return ""


def record_step(rec, s: Stream, index: int, name: str, prompt: str, relative, wall_seconds: float,
                model_calls: int | None) -> dict:
    """record_turns for a CLI whose model calls the proxy counts (`model_calls`; None for a
    recording: the replies are the estimate) and whose answer is final_text."""
    turns = model_calls if model_calls is not None else len(s.replies)
    return record_turns(rec, s, index, name, prompt, relative, wall_seconds, turns,
                        len(s.replies) - 1 if final_text(s) else None)


def step_answer(s: Stream, outcome: str, relative) -> tuple[str, str]:
    """(answer_text, feedback) of a step: the final text of a completed step, or the partial
    answer of one stopped at its budget (its last text); the feedback split off as in the loop."""
    from mcptrials.run.trial import split_feedback

    if outcome == "completed":
        return split_feedback(relative(final_text(s)))
    if outcome == "budget_exceeded":
        texts = [x for texts, _ in s.replies for x in texts if x]
        return split_feedback(relative(texts[-1] if texts else ""))
    return "", ""


# --- the skeleton: install, proxy and the step loop ------------------------------------------


class CliHost:
    """A CLI host's HOST: a subclass names its npm package, binary and CliSession class."""

    kind: str                 # the config's host kind
    package: str              # the npm package, pinned by the host's `version`
    bin_name: str             # its binary in node_modules/.bin
    label: str                # the CLI's name in messages
    api: str                  # run_meta's host_api: what the CLI speaks
    session: type             # the host's CliSession
    auth = "bearer"           # how the key proxy passes the key upstream

    def install(self, host: str, spec, log) -> dict:
        """npm-install the pinned CLI into .tools/_hosts/<host>/ (reused when there)."""
        return npm_install(host, self.kind, self.package, self.bin_name, spec.version, log)

    def proxy(self, ctx):
        return trial_proxy(ctx, auth=self.auth)

    def run(self, ctx) -> tuple[str, str | None]:
        """Run every step of the trial under the CLI, filling ctx.rec."""
        host = ctx.host.name
        binary = installed_binary(ctx, binary_path(host, self.bin_name), self.label)
        host_home = ctx.sandbox.root / "host-home"  # the CLI's HOME (sessions, logs); the server keeps `home`
        host_home.mkdir()
        # The CLI (and the server it starts in its sandbox) never see the key: the proxy adds it.
        proxy = self.proxy(ctx)
        session = self.session(ctx=ctx, binary=str(binary), host_home=host_home, proxy=proxy)
        ctx.meta.update(host_version=installed_version(host, self.package), **session.start(),
                        host_builtin_tools=list(ctx.host.builtin_tools), host_api=self.api)
        try:
            with proxy:
                return asyncio.run(session.run())
        finally:
            session.finish()


@dataclass
class CliSession:
    """One trial under a CLI: the server started, the CLI's config written, then one run of the
    CLI per step, its stream parsed into the step record. A host overrides the hooks marked so."""

    ctx: Any
    binary: str
    host_home: Path | None
    proxy: Any                      # the trial's KeyProxy: the CLI gets its stand-in token and URL
    session_id: str | None = None   # the CLI's session (thread), resumed by the later steps
    failed_servers: list = field(default_factory=list)   # the step's MCP server that did not start

    name = "cli"            # hook: the host's kind, in messages
    stamp = False           # hook: the CLI's events carry no time; stamp them as read
    stop_on_log = None      # hook: (a line of the CLI's log) -> whether to stop it (not a field: no annotation)

    def start(self) -> dict:
        """Hook: run_meta fields known before the first step."""
        return {}

    def configure(self, entry: dict | None) -> None:
        """Hook: write the CLI's config for the server's entry (stdio_entry, or an http URL)."""

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:
        """Hook: the step's argv and the CLI's whole environment."""
        raise NotImplementedError

    def config_files(self) -> list:
        """Hook: files the sandbox shows the CLI read-only."""
        return []

    def step_limits(self) -> tuple:
        """The proxy's limits per step (KeyProxy.begin_step): max_turns, then the model's
        retries; a CLI that keeps max_turns itself says (None,)."""
        return self.ctx.limits.max_turns, self.ctx.model.max_retries + 1

    def stop_on(self, event: dict) -> bool:
        """Hook: an event that ends the run at once."""
        return False

    def parse(self, run: ProcessRun, index: int) -> Stream:
        """Hook: the step's stream parsed."""
        raise NotImplementedError

    def record(self, s: Stream, index: int, step: dict, prompt: str, wall: float, statuses: list[int]) -> dict:
        """Hook: the step into ctx.rec (a record_step); returns the step record."""
        raise NotImplementedError

    def server_failure(self, run: ProcessRun, s: Stream) -> str | None:
        """Hook: why the server under test did not start, when the CLI said so early."""
        return None

    def end_outcome(self, run: ProcessRun, s: Stream, index: int, statuses: list[int]) -> tuple[str, str | None]:
        """Hook: the outcome of a step that ran to its end, from its stream."""
        raise NotImplementedError

    def answer(self, s: Stream, outcome: str) -> tuple[str, str]:
        return step_answer(s, outcome, self.ctx.sandbox.relative)

    def finish(self) -> None:
        """Hook: run_meta fields read after the last step (the CLI's logs)."""

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
        from mcptrials.run.trial import step_prompt

        ctx, rec = self.ctx, self.ctx.rec
        prompt = step_prompt(step, last)
        self.failed_servers = []
        argv, env = self.command(index, prompt)
        argv, env = cli_sandbox(ctx, self.host_home, self.config_files()).wrap(argv, env, str(ctx.sandbox.workspace))
        first = self.proxy.begin_step(*self.step_limits())
        t0 = time.monotonic()
        run = await run_process(argv, env, str(ctx.sandbox.workspace), ctx.limits.max_seconds, self.stop_on,
                                stop_when=self.proxy.stopped, stamp=self.stamp, stop_on_log=self.stop_on_log)
        statuses = self.proxy.statuses[first:]
        s = self.parse(run, index)
        srec = self.record(s, index, step, prompt, round(time.monotonic() - t0, 3), statuses)
        outcome, detail = self._outcome(run, s, index, statuses)
        srec["outcome"] = outcome
        answer, feedback = self.answer(s, outcome)
        srec["answer_text"] = answer
        if feedback:
            rec.feedback = feedback
        rec.steps.append(srec)
        srec["state_check"] = ctx.state_check(step)
        return outcome, detail

    def _outcome(self, run: ProcessRun, s: Stream, index: int, statuses: list[int] | None = None
                 ) -> tuple[str, str | None]:
        """The step's outcome: a server that did not start, the trial's or the step's limit
        (the proxy's), the step's time, else what the stream says (end_outcome)."""
        if msg := self.server_failure(run, s):
            self.ctx.rec.error("protocol_error", msg, step=index)
            return "server_crashed", msg
        if refused := proxy_outcome(self.proxy):
            return refused
        if self.proxy.limit_hit.is_set():  # the proxy refused a call past max_turns
            return "max_turns", None
        if run.timed_out:
            return "timed_out", f"step {index} ran past max_seconds; {self.name} was stopped"
        return self.end_outcome(run, s, index, statuses or [])

    def proxy_calls(self, statuses: list[int]) -> int:
        """The step's failed calls counted as retries; returns its successful ones (the turns)."""
        self.ctx.rec.retries += sum(1 for x in statuses if not 200 <= x < 300)
        return sum(1 for x in statuses if 200 <= x < 300)

    def note_session(self, index: int, sid: str | None) -> None:
        """The CLI's session id, kept for resuming (and in run_meta from the first step)."""
        self.session_id = self.session_id or sid
        if index == 0:
            self.ctx.meta["host_session_id"] = sid
