"""What the CLI hosts (claude-code, codex, opencode) share: their npm install into
.tools/_hosts/<host>/, and running the CLI once per step while reading its JSON-lines stream.
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
from dataclasses import dataclass
from pathlib import Path

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
