"""One run of a CLI: its JSON-lines stream read as it comes, stopped early when its host says
so or at a time-out, the whole process group killed (the CLI and the servers it started)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass
from subprocess import DEVNULL, PIPE

STREAM_LIMIT = 1 << 26  # one JSON line can hold a whole tool result


@dataclass
class ProcessRun:
    events: list
    stderr: str
    returncode: int | None
    timed_out: bool
    stopped: bool  # we stopped it: stop_on or stop_when said so
    seconds: float = 0.0


async def run_process(
    argv: list[str], env: dict, cwd: str, timeout: float, stop_on, stop_when, on_log=None, stamp: bool = False
) -> ProcessRun:
    """Run the CLI, reading its stream as it comes: `stop_on(event)` True ends it at once, and
    so does `stop_when()` (polled: e.g. the key proxy's turn limit, or a failed server that the
    CLI's log reported to `on_log(line)`). With `stamp`, each event gets `_received` (epoch
    seconds), for a CLI whose events carry no time."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=DEVNULL, stdout=PIPE, stderr=PIPE, env=env, cwd=cwd, start_new_session=True, limit=STREAM_LIMIT
    )
    stdout, stderr = proc.stdout, proc.stderr
    assert stdout is not None and stderr is not None  # both piped
    events: list[dict] = []
    err: list[bytes] = []

    async def read_err() -> None:
        async for line in stderr:
            err.append(line)
            if on_log:
                on_log(line.decode(errors="replace"))

    async def read() -> bool:
        async for line in stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # a stray non-JSON line; stderr has the rest
            if isinstance(ev, dict):
                if stamp:
                    ev["_received"] = time.time()
                events.append(ev)
                if stop_on(ev):
                    return True
        await proc.wait()
        return False

    async def watch() -> None:
        while not stop_when():
            await asyncio.sleep(0.05)

    err_task, reader, watcher = (asyncio.create_task(f()) for f in (read_err, read, watch))
    timed_out = stopped = False
    try:
        async with asyncio.timeout(timeout):
            done, _ = await asyncio.wait({reader, watcher}, return_when=asyncio.FIRST_COMPLETED)
            stopped = reader not in done or bool(reader.result())
    except TimeoutError:
        timed_out = True
    finally:
        reader.cancel()
        watcher.cancel()
        if proc.returncode is None:
            await kill_group(proc)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(err_task, 5)  # a grandchild may hold stderr open
    return ProcessRun(
        events,
        b"".join(err).decode(errors="replace"),
        proc.returncode,
        timed_out,
        stopped,
        round(time.monotonic() - t0, 3),
    )


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
