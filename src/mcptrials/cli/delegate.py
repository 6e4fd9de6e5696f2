"""The trial worker's client: hand `mcptrials <argv>` to the warm worker (mcptrials.cli.worker).

`mcptrials run-trial`, `score` and `judge` call `delegate` first: when env
MCPTRIALS_WORKER names a socket that answers, the worker's forked child runs the command
with this process's stdout, stderr, environment and working directory, and its exit code
is returned; otherwise None, and the command runs in-process. Stdlib only, and nothing
of mcptrials, so a delegating process stays light. The protocol is in worker.py.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import sys

ENV = "MCPTRIALS_WORKER"
DELEGATED = ("run-trial", "score", "judge")  # the per-trial stages, run once per trial


def delegate(argv: list[str]) -> int | None:
    """Run `mcptrials <argv>` in the worker named by $MCPTRIALS_WORKER; its exit code,
    or None when no worker is set or reachable (then the caller runs in-process)."""
    path = os.environ.get(ENV)
    if not path or not argv or argv[0] not in DELEGATED:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:  # missing, stale (nobody listening), or a path too long for a socket
        sock.close()
        return None
    with sock:
        body = json.dumps({"argv": list(argv), "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            socket.send_fds(sock, [struct.pack(">I", len(body)) + body], [1, 2])
        except OSError:
            return None  # the worker went away before taking the request: nothing ran
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    try:
        reply = json.loads(answer)
    except ValueError:
        print(
            f"mcptrials: error: the trial worker at {path} closed the connection without a result; "
            "the trial is counted as failed (rerun it, or unset MCPTRIALS_WORKER to run in-process)",
            file=sys.stderr,
        )
        return 1
    if reply.get("error"):
        print(f"mcptrials: error: {reply['error']}", file=sys.stderr)
    return int(reply["exit_code"])
