"""The trial worker's clients: hand `mcptrials <argv>` to the warm worker (mcptrials.cli.worker).

`mcptrials run-trial`, `score` and `judge` call `delegate` first: when env
MCPTRIALS_WORKER names a socket that answers, the worker's forked child runs the command
with this process's stdout, stderr, environment and working directory, and its exit code
is returned; otherwise None, and the command runs in-process. Stdlib only, and nothing
of mcptrials, so a delegating process stays light. The protocol is in worker.py.

The workflow's jobs start no client process at all: the shell function `mcptrials` of the
workflow's shell prefix (`shell_function`, used by workflow/rules/common.smk) hands the
per-trial stages to the worker from bash itself, over TCP on 127.0.0.1 (bash's /dev/tcp),
when $MCPTRIALS_WORKER_TCP names the worker's port file; its exit code NOT_DELEGATED (75:
nothing ran) runs `python -m mcptrials.cli` instead. Run as a script (`python -S -I
delegate.py <argv>`: no site-packages, no mcptrials package, ~8 ms of CPU where `python -m
mcptrials.cli` costs ~40 ms: hence `_socket` and the small JSON writer and reader here) this
module is a light client for the Unix socket, with the same exit code 75.
"""

from __future__ import annotations

import _socket  # the C module: `socket` imports enum and selectors, `json` imports re (~8 ms a client)
import os
import struct
import sys

ENV = "MCPTRIALS_WORKER"
# The worker's port file for the shell client: "PORT TOKEN\n", mode 0600 (worker.py).
TCP_ENV = "MCPTRIALS_WORKER_TCP"
DELEGATED = ("run-trial", "score", "judge")  # the per-trial stages, run once per trial
# The script's exit code for "nothing ran here: run the command in-process" (EX_TEMPFAIL,
# sysexits.h); no mcptrials command exits with it.
NOT_DELEGATED = 75


# JSON's escapes for a string (RFC 8259 section 7): the quote, the backslash, control characters.
_ESCAPES = {i: f"\\u{i:04x}" for i in range(0x20)} | {ord('"'): '\\"', ord("\\"): "\\\\"}


def shell_function(python: str) -> str:
    """The bash function `mcptrials` (one line, for a shell prefix; `python` shell-quoted).

    For run-trial, score and judge, with $MCPTRIALS_WORKER_TCP set: read the port and the
    token from that file, connect to 127.0.0.1:PORT (no process started: bash's /dev/tcp),
    send the request (worker.py: token, $BASHPID, two fds that are copies of stdout and
    stderr, argc, argv, the exported variables, each ending in a NUL, then one more NUL), and
    return the exit code of the worker's answer line ("CODE" or "CODE MESSAGE"). The worker
    opens those copies and the working directory through /proc/$BASHPID, so the child writes
    to the job's log. Nothing reachable (no file, no listener) or the answer 75: `python -m
    mcptrials.cli` runs the command. Only
    the exported variables that are set are sent, as a process's environment holds them; the
    one fork, `$(compgen -e)`, costs ~1 ms (enumerating names by prefix in bash costs more)."""
    return (
        f'mcptrials() {{ local rc=0; if [ -n "${{{TCP_ENV}:-}}" ]; then case "${{1:-}}" in '
        f'{"|".join(DELEGATED)}) _mcptrials_worker "$@" || rc=$?; [ "$rc" = {NOT_DELEGATED} ] || return "$rc";; '
        f'esac; fi; {python} -m mcptrials.cli "$@"; }}; '
        "_mcptrials_worker() { local port='' tok='' fd out err n rc='' msg=''; local -a env=(); "
        'for n in $(compgen -e); do [ -z "${!n+x}" ] || env+=("$n=${!n}"); done; '
        f'{{ read -r port tok < "${TCP_ENV}" && exec {{fd}}<>"/dev/tcp/127.0.0.1/$port"; }} 2>/dev/null '
        f"|| return {NOT_DELEGATED}; exec {{out}}>&1 {{err}}>&2; "
        """printf '%s\\0' "$tok" "$BASHPID" "$out" "$err" "$#" "$@" "${env[@]}" "" >&"$fd"; """
        """read -r rc msg <&"$fd" || :; exec {fd}>&- {out}>&- {err}>&-; """
        '[ -z "$msg" ] || echo "mcptrials: error: $msg" >>/dev/stderr; '
        '[ -n "$rc" ] || { echo "mcptrials: error: the trial worker closed the connection without a result; '
        'the trial is counted as failed (rerun it, or set MCPTRIALS_NO_WORKER=1 to run in-process)" >>/dev/stderr; '
        'return 1; }; return "$rc"; }; '
    )


def _string(s: str) -> str:
    return '"' + s.translate(_ESCAPES) + '"'


def encode_request(argv: list[str], cwd: str, env: dict[str, str]) -> bytes:
    """The request's JSON body, {"argv", "cwd", "env"}, as json.dumps would read back."""
    items = ", ".join(f"{_string(k)}: {_string(v)}" for k, v in env.items())
    text = f'{{"argv": [{", ".join(map(_string, argv))}], "cwd": {_string(cwd)}, "env": {{{items}}}}}'
    try:
        return text.encode()
    except UnicodeEncodeError:  # an undecodable byte kept as a lone surrogate: json escapes it
        import json

        return json.dumps({"argv": argv, "cwd": cwd, "env": env}).encode()


def decode_reply(answer: bytes) -> dict:
    """The worker's answer line: {"exit_code": N} read by hand, anything else by json (ValueError
    when it is no JSON, e.g. empty: the worker closed the connection without an answer)."""
    head, line = b'{"exit_code": ', answer.strip()
    code = line[len(head) : -1]
    if line.startswith(head) and line.endswith(b"}") and code.lstrip(b"-").isdigit():
        return {"exit_code": int(code)}
    import json

    return json.loads(answer)


def delegate(argv: list[str]) -> int | None:
    """Run `mcptrials <argv>` in the worker named by $MCPTRIALS_WORKER; its exit code,
    or None when no worker is set or reachable (then the caller runs in-process)."""
    path = os.environ.get(ENV)
    if not path or not argv or argv[0] not in DELEGATED:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:  # missing, stale (nobody listening), or a path too long for a socket
        sock.close()
        return None
    try:
        body = encode_request(list(argv), os.getcwd(), dict(os.environ))
        data = struct.pack(">I", len(body)) + body
        sys.stdout.flush()
        sys.stderr.flush()
        try:  # the request with this process's stdout and stderr (as socket.send_fds sends them)
            sent = sock.sendmsg([data], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("2i", 1, 2))])
            sock.sendall(data[sent:])
        except OSError:
            return None  # the worker went away before taking the request: nothing ran
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    finally:
        sock.close()
    try:
        reply = decode_reply(answer)
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


if __name__ == "__main__":
    _code = delegate(sys.argv[1:])
    sys.exit(NOT_DELEGATED if _code is None else _code)
