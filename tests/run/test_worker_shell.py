"""The worker's shell client (mcptrials.cli.delegate.shell_function, the workflow's `mcptrials`
in its shell prefix): bash hands a job to the warm worker over 127.0.0.1 with no process of
its own. A worker whose children run a stand-in command (it prints what it was given) shows
that arguments and environment arrive intact, that the child writes to the job's own stdout
and stderr, that a request without the worker's token runs nothing, and that a client the
worker cannot serve runs the command itself. tests/run/test_worker.py runs real trials
through it."""

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcptrials.cli.delegate import TCP_ENV, shell_function
from mcptrials.cli.worker import parse_shell_request

LIBRARY = {k: os.environ[k] for k in ("PYTHONPATH",) if os.environ.get(k)}
# The stand-in command: what the child was given, as JSON on stdout, a line on stderr; exit code $EXIT.
STAND_IN = """
import json, os, sys
from mcptrials.cli.worker import serve

def run_argv(argv):
    print(json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}), flush=True)
    print("on stderr", file=sys.stderr)
    return int(os.environ.get("EXIT", "0"))

sys.exit(serve(sys.argv[1], run_argv, tcp_file=sys.argv[2]))
"""
# The fallback "interpreter" of the function: prints what it would have run in-process.
FALLBACK = "echo in-process:"


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shell")
    sock, tcp = tmp / "w.sock", tmp / "w.tcp"
    log = open(tmp / "worker.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(sock), str(tcp)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={"PATH": "/usr/bin:/bin", **LIBRARY},
    )
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, (tmp / "worker.log").read_text()
        time.sleep(0.05)
    yield {"dir": tmp, "tcp": tcp, "proc": proc, "log": tmp / "worker.log"}
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert not tcp.exists() and not sock.exists()  # both removed on the way out


def bash(script: str, env: dict, cwd: Path, **kw) -> subprocess.CompletedProcess:
    """`script` in a job's shell: the workflow's prefix options and the function first."""
    prefix = "set -euo pipefail; " + shell_function(FALLBACK)
    return subprocess.run(["bash", "-c", prefix + script], env=env, cwd=cwd, capture_output=True, timeout=60, **kw)


def test_the_port_file_is_the_users_alone(worker):
    port, token = worker["tcp"].read_text().split()
    assert worker["tcp"].stat().st_mode & 0o777 == 0o600
    assert int(port) > 0 and len(token) == 32


ODD = ["a b", "", 'q"uote', "it's", "new\nline", "tab\there", "é ü 漢", "$HOME", "*", "-x", "back\\slash"]


def test_arguments_and_environment_arrive_intact(worker, tmp_path):
    env = {"PATH": "/usr/bin:/bin", TCP_ENV: str(worker["tcp"]), "ODD": "v \"1\"\n'2' é\\", "EMPTY": ""}
    args = " ".join(shlex.quote(a) for a in ODD)
    p = bash(
        f"mcptrials run-trial {args} > out.txt 2>&1; export LATE=yes; unset EMPTY; mcptrials score x", env, tmp_path
    )
    assert p.returncode == 0, p.stderr
    first, stderr_line, end = (tmp_path / "out.txt").read_text().split("\n")
    got = json.loads(first)
    assert got["argv"] == ["run-trial", *ODD]
    assert got["cwd"] == str(tmp_path)  # the job's working directory
    assert got["env"]["ODD"] == env["ODD"] and got["env"]["EMPTY"] == ""
    assert TCP_ENV not in got["env"]  # a child never delegates again
    assert stderr_line == "on stderr" and end == ""  # stdout and stderr: the job's log, in the order written
    # the second call wrote to the shell's own stdout (a pipe here), with the environment as it then was
    later = json.loads(p.stdout.decode())
    assert later["argv"] == ["score", "x"] and later["env"]["LATE"] == "yes" and "EMPTY" not in later["env"]
    assert p.stderr.decode() == "on stderr\n"
    assert worker["log"].read_text().count("exit code 0") >= 2


def test_the_exit_code_is_the_childs_and_other_commands_run_in_process(worker, tmp_path):
    env = {"PATH": "/usr/bin:/bin", TCP_ENV: str(worker["tcp"]), "EXIT": "3"}
    p = bash("mcptrials judge y", env, tmp_path)
    assert p.returncode == 3 and json.loads(p.stdout)["argv"] == ["judge", "y"]
    p = bash("mcptrials validate", env, tmp_path)  # not a per-trial stage: never sent
    assert p.returncode == 0 and p.stdout.decode() == "in-process: -m mcptrials.cli validate\n"


def test_nothing_listening_or_a_socket_for_stdout_runs_in_process(worker, tmp_path):
    free = socket.socket()
    free.bind(("127.0.0.1", 0))  # a port nobody listens on, as in the file a killed worker leaves
    (tmp_path / "stale.tcp").write_text(f"{free.getsockname()[1]} {'0' * 32}\n")
    for tcp in (tmp_path / "missing.tcp", tmp_path / "stale.tcp"):
        p = bash("mcptrials run-trial z", {"PATH": "/usr/bin:/bin", TCP_ENV: str(tcp)}, tmp_path)
        assert p.returncode == 0 and p.stdout.decode() == "in-process: -m mcptrials.cli run-trial z\n", p.stderr
    free.close()
    # a socket cannot be opened through /proc: the worker answers 75 and runs nothing
    before = worker["log"].read_text().count("child ")
    a, b = socket.socketpair()
    p = subprocess.run(
        ["bash", "-c", "set -euo pipefail; " + shell_function(FALLBACK) + "mcptrials run-trial s"],
        env={"PATH": "/usr/bin:/bin", TCP_ENV: str(worker["tcp"])},
        stdout=a,
        stderr=subprocess.PIPE,
        timeout=60,
    )
    a.close()
    assert p.returncode == 0, p.stderr
    assert b.recv(4096) == b"in-process: -m mcptrials.cli run-trial s\n"
    b.close()
    assert worker["log"].read_text().count("child ") == before


def request(port: int, fields: list[bytes]) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
        c.sendall(b"".join(f + b"\0" for f in fields))
        c.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := c.recv(4096):
            answer += chunk
    return answer


def test_a_request_without_the_token_runs_nothing(worker, tmp_path):
    """A process that reaches the port but cannot read the port file (a sandboxed server with
    the network shared) is refused before anything of its request is used."""
    port, token = worker["tcp"].read_text().split()
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        holder = subprocess.Popen(["sleep", "30"], stdout=f)  # a process whose stdout a child would write to
    try:
        body = [str(holder.pid).encode(), b"1", b"1", b"1", b"run-trial", b"PATH=/usr/bin"]
        before = worker["log"].read_text().count("child ")
        for wrong in (b"", b"0" * 32, token[:-1].encode(), token.encode() + b"x"):
            answer = request(int(port), [wrong, *body, b""])
            assert answer.startswith(b"1 trial worker: bad request: refused"), answer
        assert worker["log"].read_text().count("child ") == before and out.read_text() == ""
        assert request(int(port), [token.encode(), *body, b""]) == b"0\n"  # the same request with the token runs
        assert json.loads(out.read_text().splitlines()[0])["argv"] == ["run-trial"]
    finally:
        holder.kill()
        holder.wait()


def test_the_request_format():
    """Hand-written bytes (worker.py's protocol): token, pid, stdout's and stderr's descriptors,
    argc, the arguments, NAME=VALUE, end."""
    data = b"tok\x0042\x0010\x0011\x002\x00a b\x00\x00X=1=2\x00Y=\xc3\xa9\n\x00\x00"
    assert parse_shell_request(data) == (b"tok", 42, (10, 11), ["a b", ""], {"X": "1=2", "Y": "é\n"})
    for cut in range(len(data)):  # any prefix is not yet a request
        assert parse_shell_request(data[:cut]) is None
    odd = b"t\x001\x001\x002\x000\x00\xff=\xfe\x00\x00"
    assert parse_shell_request(odd) == (b"t", 1, (1, 2), [], {"\udcff": "\udcfe"})
    for bad in (
        b"t\x00p\x001\x002\x000\x00\x00",
        b"t\x001\x001\x002\x000\x00NOEQ\x00\x00",
        b"t\x001\x001\x002\x000\x00\x00x\x00",
    ):
        with pytest.raises(ValueError):
            parse_shell_request(bad)
