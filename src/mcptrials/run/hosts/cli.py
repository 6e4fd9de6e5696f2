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
from mcptrials.providers.base import Usage

STREAM_LIMIT = 1 << 26  # one JSON line can hold a whole tool result


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
        reported = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home},
        ).stdout.strip()
    return {
        "host": host,
        "kind": kind,
        "package": package,
        "version": want,
        "reported_version": reported,
        "env_dir": str(env_dir),
        "binary": str(binary),
        "reused": reused,
        "resolved": {package: got},
        "seconds": round(time.monotonic() - t0, 2),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def stdio_entry(tool, values: dict, forbidden: set[str]) -> dict:
    """A stdio server's entry for a CLI's MCP config (tool: a ToolSpec): the loop's command,
    arguments, cwd and environment, enforced with `env -i` (a CLI would pass on its own)."""
    from mcp.client.stdio import get_default_environment

    from mcptrials.prepare.servers import server_argv, server_environment

    env = get_default_environment() | server_environment(tool.config, values, forbidden)
    # a description variant's argv starts with our proxy (mcptrials.prepare.proxy), inside the CLI's sandbox
    return {
        "type": "stdio",
        "command": shutil.which("env") or "/usr/bin/env",
        "args": ["-i", *(f"{k}={v}" for k, v in sorted(env.items())), *server_argv(tool, values)],
    }


def cli_sandbox(ctx, host_home: Path, extra_ro: list):
    """The CLI (and the stdio server it starts) in the tool's sandbox, with the network for
    the model API (through the key proxy): the trial's folders and the CLI's HOME read-write,
    its install and `extra_ro` (its config) read-only. Its built-in tools see this view only."""
    from mcptrials.prepare.servers import tool_sandbox

    sb = tool_sandbox(
        ctx.tool,
        extra_rw=[*ctx.sandbox.values().values(), host_home],
        extra_ro=[host_env_dir(ctx.host.name), *(p for p in extra_ro if p)],
    )
    sb.network = True
    ctx.meta["sandbox"] = sb.record()
    return sb


def server_entry(ctx, stack) -> tuple[dict | None, str | None]:
    """(the server under test as a CLI's config names it, None), or (None, why) when it cannot
    start (recorded as a protocol error; the trial ends server_crashed, as in the loop): a
    stdio command line, or the URL of an http server we start, as the loop does."""
    from mcptrials.prepare.servers import start_http_server

    tool = ctx.tool
    try:
        if tool.transport == "stdio":
            return stdio_entry(tool, ctx.sandbox.values(), ctx.forbidden_env), None
        errlog = stack.enter_context(open(ctx.sandbox.root / "server.stderr.log", "a"))
        return {
            "type": "http",
            "url": stack.enter_context(start_http_server(tool, ctx.sandbox.values(), ctx.forbidden_env, errlog)),
        }, None
    except Exception as e:  # no command, or an http server that never listened
        msg = f"server failed to start: {type(e).__name__}: {e}"
        ctx.rec.error("protocol_error", msg)
        return None, msg


def installed_binary(ctx, binary: Path, cli: str) -> Path:
    """The host's CLI binary, or the trial aborts harness_failed saying how to install it."""
    if not binary.exists():
        from mcptrials.run.trial import TrialAbort

        host = ctx.host.name
        raise TrialAbort(
            "harness_failed",
            f"{binary}: {cli} is not installed; run `mcptrials install-host "
            f"--host {host} --out results/hosts/{host}/install.json` "
            "(the workflow's install_host rule)",
        )
    return binary


def cli_env(**env: str) -> dict[str, str]:
    """A CLI's whole environment: nothing of ours leaks in but PATH and the locale."""
    return {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL") if k in os.environ} | env


def trial_proxy(ctx, auth: str = "x-api-key", set_fields: dict | None = None):
    """The trial's key proxy (run.keyproxy), holding the whole trial to its limits whoever
    calls: steps x max_turns successful model calls, each reply at most the trial's reply cap."""
    from mcptrials.run.keyproxy import KeyProxy

    return KeyProxy(
        ctx.model.base_url,
        ctx.api_key(),
        auth=auth,
        set_fields=set_fields,
        trial_calls=len(ctx.steps) * ctx.limits.max_turns,
        reply_cap=ctx.reply_cap,
    )


def proxy_outcome(proxy) -> tuple[str, str] | None:
    """The trial's outcome when the proxy refused calls past the trial's limit (None when it
    did not): the arm spent what the trial was allowed, so the trial fails as over budget."""
    if not proxy.trial_limit_hit.is_set():
        return None
    return "budget_exceeded", (
        f"the key proxy refused {proxy.refused} model call(s) past the trial's limit of "
        f"{proxy.trial_calls} (steps x max_turns), whoever sent them (the CLI, or a "
        "server in its sandbox)"
    )


def unreachable_detail(ctx, proxy) -> str | None:
    """What a step that failed on the model API records when the key proxy could not reach
    the API at its last call (None when it could): the API's URL (the proxy's upstream, not
    the proxy that the CLI names), why, and the fix. The outcome stays api_failed."""
    why = proxy.unreachable_in_step()
    if why is None:
        return None
    field = f"models.{ctx.model.name}.base_url"
    fix = f"fix {field}" if ctx.model.base_url else f"set {field} to an API this machine can reach"
    return (
        f"the model API ({proxy.upstream}) could not be reached: {why}; check this machine's route to it "
        f"(network, DNS, firewall), or {fix}"
    )


# --- running -----------------------------------------------------------------------------


@dataclass
class ProcessRun:
    events: list
    stderr: str
    returncode: int | None
    timed_out: bool
    stopped: bool  # we stopped it: stop_on said so (e.g. a failed MCP server at init), or stop_when
    seconds: float = 0.0


async def run_process(
    argv: list[str], env: dict, cwd: str, timeout: float, stop_on, stop_when=None, stamp: bool = False, stop_on_log=None
) -> ProcessRun:
    """Run the CLI, reading its stream as it comes; `stop_on(event)` True ends it early, and
    so do `stop_when()` (polled: a condition seen outside the stream, e.g. the key proxy's
    turn limit) and `stop_on_log(stderr line)` (a CLI that reports a failed server only in
    its log). With `stamp`, each event gets `_received` (epoch seconds) for a CLI whose
    events carry no time."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        limit=STREAM_LIMIT,
    )
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
    """What one run of a CLI said, in the loop's shapes; each host's parsed stream adds its own."""

    messages: list = field(default_factory=list)  # Messages-API turns (assistant / user tool results)
    calls: list = field(default_factory=list)  # tool-call records
    replies: list = field(default_factory=list)  # [(texts, has_tool_call)] per model call


def call_record(
    head: dict,
    tool: str,
    source: str,
    text: str,
    is_error: bool,
    latency_ms: float,
    code_re,
    crash_re=None,
    truncated: bool = False,
) -> dict:
    """A tool-call record (the loop's shape) after `head` (id, step, turn, name, arguments). An
    error with an MCP code (`code_re`) or a closed connection (`crash_re`: the server died,
    -32000) is a protocol error; any other error is the tool's."""
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
    return head | {
        "tool": tool,
        "source": source,
        "result_text": text,
        "result_chars": len(text),
        "truncated": truncated,
        "is_error": is_error,
        "error_kind": kind,
        "error_code": code,
        "latency_ms": latency_ms,
        "result_tokens_est": len(text) // CHARS_PER_TOKEN,
    }


def latency(t0: float | None, t1: float | None) -> float:
    return round((t1 - t0) * 1000, 2) if t0 is not None and t1 is not None else 0.0


def usage_of(input_tokens, output_tokens, cache_writes, cache_reads):
    """A Usage of a CLI's counts (a missing one: 0)."""
    return Usage(
        input_tokens=input_tokens or 0,
        output_tokens=output_tokens or 0,
        cache_creation_input_tokens=cache_writes or 0,
        cache_read_input_tokens=cache_reads or 0,
    )


def tool_use(c: dict) -> dict:
    return {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}


def tool_result(c: dict, content: str | None = None) -> dict:
    """The result the model saw; `content` given: a call never answered (an error)."""
    return {
        "type": "tool_result",
        "tool_use_id": c["id"],
        "content": c["result_text"] if content is None else content,
        "is_error": c["is_error"] if content is None else True,
    }


def final_text(s: Stream) -> str:
    """The step's answer: its last reply's text, when that reply asked for no tool."""
    if s.replies and not s.replies[-1][1]:
        return "\n\n".join(x for x in s.replies[-1][0] if x)
    return ""


def record_step(
    rec,
    s: Stream,
    index: int,
    name: str,
    prompt: str,
    relative,
    wall_seconds: float,
    turns: int | None,
    final: int | None = -1,
    show=json.dumps,
) -> dict:
    """Add one parsed step to the trial's Recorder `rec` (the user turn, the conversation, tool
    calls and their errors, model calls); return the step record, `answer_text` empty and
    `outcome` completed until the caller sets them. `turns`: the proxy's count of model calls
    (None: the replies); `final`: the reply that is the answer, not reasoning (-1: the last,
    when final_text has one); `show`: how the audit text shows a call's arguments."""
    turns = len(s.replies) if turns is None else turns
    if final == -1:
        final = len(s.replies) - 1 if final_text(s) else None
    srec = {
        "index": index,
        "name": name,
        "prompt": prompt,
        "answer_text": "",
        "reasoning_text": "",
        "audit_text": "",
        "outcome": "completed",
        "turns": turns,
        "state_check": None,
        "wall_seconds": wall_seconds,
    }
    rec.messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    rec.messages += s.messages
    rec.tool_calls += s.calls
    for c in s.calls:
        if c["error_kind"]:
            rec.error(c["error_kind"], f"{c['tool']}: {c['result_text'][:300]}", step=index, code=c["error_code"])
    srec["reasoning_text"] = relative(
        "\n\n".join(x for i, (texts, _) in enumerate(s.replies) if i != final for x in texts if x)
    )
    srec["audit_text"] = "\n\n".join(
        f"> {c['name']} {show(c['arguments'])}\n{c['result_text'][:2000]}" for c in s.calls
    )
    rec.api_calls += turns
    return srec


def step_answer(s: Stream, outcome: str, relative) -> tuple[str, str]:
    """(answer_text, feedback) of a step: the final text of a completed step, or the partial
    answer of one stopped at its budget (its last text); feedback split off as in the loop."""
    from mcptrials.run.trial import split_feedback

    if outcome == "completed":
        return split_feedback(relative(final_text(s)))
    if outcome == "budget_exceeded":
        texts = [x for texts, _ in s.replies for x in texts if x]
        return split_feedback(relative(texts[-1] if texts else ""))
    return "", ""


def api_failure(
    rec, index: int, text: str, statuses: list[int], unreachable: str | None, status: int | None = None
) -> tuple[str, str]:
    """A step the model API failed (after the CLI's retries): api_failed, with the HTTP status
    (the CLI's, else the proxy's last failure), said as `unreachable` when the proxy could
    not reach the API."""
    bad = [x for x in statuses if not 200 <= x < 300]
    status = status or (bad[-1] if bad else None)
    msg = unreachable or (f"{status}: {text}" if status else text)
    rec.error("api_error", msg, step=index, status=status, retries=max(0, len(bad) - 1))
    return "api_failed", msg


# --- the skeleton: what a CLI host is ---------------------------------------------------------


class CliHost:
    """A CLI host's HOST: a subclass names its npm package, its binary and its CliSession."""

    kind: str  # the config's host kind
    package: str  # the npm package (the host's `version` pins it)
    bin_name: str  # its binary in node_modules/.bin
    label: str  # the CLI's name in messages
    api: str  # run_meta's host_api: what it speaks
    session: type  # its CliSession subclass
    auth = "bearer"  # how the key proxy sends the key upstream

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
        proxy = self.proxy(ctx)  # the CLI (and the server it starts) never see the key: the proxy adds it
        session = self.session(ctx=ctx, binary=str(binary), host_home=host_home, proxy=proxy)
        ctx.meta.update(
            host_version=installed_version(host, self.package),
            **session.start(),
            host_builtin_tools=list(ctx.host.builtin_tools),
            host_api=self.api,
        )
        try:
            with proxy:
                return asyncio.run(session.run())
        finally:
            session.finish()


@dataclass
class CliSession:
    """One trial under a CLI: the server started, the CLI's config written, then one run of the
    CLI per step, its stream parsed into the step record. Hooks: what a host overrides."""

    ctx: Any
    binary: str
    host_home: Path | None
    proxy: Any  # the trial's KeyProxy: the CLI gets its stand-in token and URL
    session_id: str | None = None  # the CLI's session (thread), resumed by the later steps
    failed_servers: list = field(default_factory=list)  # the step's MCP server that did not start

    name = "cli"  # hook: the host's kind, in messages
    stamp = False  # hook: True when the CLI's events carry no time (stamped as read)
    stop_on_log = None  # hook: (a line of the CLI's log) -> stop it now (no annotation: not a field)

    def start(self) -> dict:  # hook: run_meta fields known before the first step
        return {}

    def configure(self, entry: dict | None) -> None:  # hook: write the CLI's config, with the server's entry
        pass

    def command(self, index: int, prompt: str) -> tuple[list[str], dict]:  # hook: argv, the whole environment
        raise NotImplementedError

    def parse(self, run: ProcessRun, index: int) -> Stream:  # hook: the step's stream parsed
        raise NotImplementedError

    def record(self, s, index: int, step: dict, prompt: str, wall: float, statuses: list[int]) -> dict:
        """Hook: the step into ctx.rec (a record_step with the CLI's usage); the step record."""
        raise NotImplementedError

    def end_outcome(self, run: ProcessRun, s, index: int, statuses: list[int]) -> tuple[str, str | None]:
        """Hook: the outcome of a step that ran to its end, from its stream."""
        raise NotImplementedError

    def config_files(self) -> list:  # hook: what the sandbox shows the CLI read-only
        return []

    def step_limits(self) -> tuple:  # the proxy's per step (KeyProxy.begin_step); (None,) if the CLI keeps max_turns
        return self.ctx.limits.max_turns, self.ctx.model.max_retries + 1

    def stop_on(self, event: dict) -> bool:  # hook: an event that ends the run at once
        return False

    def server_failure(self, run: ProcessRun, s) -> str | None:  # hook: the CLI said the server did not start
        return None

    def answer(self, s, outcome: str) -> tuple[str, str]:  # hook: (answer_text, feedback)
        return step_answer(s, outcome, self.ctx.sandbox.relative)

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
        from mcptrials.run.trial import step_prompt

        ctx, rec = self.ctx, self.ctx.rec
        prompt = step_prompt(step, last)
        self.failed_servers = []
        argv, env = self.command(index, prompt)
        argv, env = cli_sandbox(ctx, self.host_home, self.config_files()).wrap(argv, env, str(ctx.sandbox.workspace))
        first = self.proxy.begin_step(*self.step_limits())
        t0 = time.monotonic()
        run = await run_process(
            argv,
            env,
            str(ctx.sandbox.workspace),
            ctx.limits.max_seconds,
            self.stop_on,
            stop_when=self.proxy.stopped,
            stamp=self.stamp,
            stop_on_log=self.stop_on_log,
        )
        statuses = self.proxy.statuses[first:]
        s = self.parse(run, index)
        srec = self.record(s, index, step, prompt, round(time.monotonic() - t0, 3), statuses)
        outcome, detail = self._outcome(run, s, index, statuses)
        srec["outcome"] = outcome
        srec["answer_text"], feedback = self.answer(s, outcome)
        if feedback:
            rec.feedback = feedback
        rec.steps.append(srec)
        srec["state_check"] = ctx.state_check(step)
        return outcome, detail

    def _outcome(self, run: ProcessRun, s, index: int, statuses: list[int] | None = None) -> tuple[str, str | None]:
        """A server that did not start; the trial's limit, then the step's (the proxy's); the
        step's time; else what the stream says (end_outcome)."""
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

    def harness_failed(self, index: int, msg: str) -> tuple[str, str]:
        self.ctx.rec.error("harness_error", msg, step=index)
        return "harness_failed", msg

    def proxy_turns(self, statuses: list[int]) -> int:
        """The step's failed calls counted as retries; returns its successful ones (the turns)."""
        self.ctx.rec.retries += sum(1 for x in statuses if not 200 <= x < 300)
        return sum(1 for x in statuses if 200 <= x < 300)

    def keep_log(self, lines: list[str]) -> None:
        """run_meta's server_stderr_tail: the last 30 lines about the server, over the steps."""
        tail = self.ctx.meta.get("server_stderr_tail") or ""
        self.ctx.meta["server_stderr_tail"] = "\n".join([*tail.splitlines(), *lines][-30:])

    def note_session(self, index: int, sid: str | None) -> None:
        """The CLI's session id, kept for resuming (and in run_meta from the first step)."""
        self.session_id = self.session_id or sid
        if index == 0:
            self.ctx.meta["host_session_id"] = sid
