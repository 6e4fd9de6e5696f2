"""The warm trial worker: `mcptrials serve-trials --socket PATH`.

Why: `import anthropic` takes ~2.5 s and `import mcp` ~1.6 s here, so every
`mcptrials run-trial` process paid ~4 s before its trial started (7% of a 60-second
trial). The worker imports the trial core, hosts, graders and judge (and parses the JSON schemas)
once, and each SDK the first time a request's config uses it (cli.preload: a config of the reference
model with built-in tools imports neither); it listens on a Unix socket, and for each request forks
a child that runs exactly `mcptrials ARGS`: the same argv parsing, records and exit code. The parent never
runs a trial and starts no threads, so forking it is safe. Before forking it reads what every
child would read again (`warm`): the request's config and scenarios, parsed and validated into
mcptrials.matrix.memo (keyed by content, so an edited file is never served stale), and a scoring
request's file listing of the commit; the children inherit both.

The per-trial commands `mcptrials run-trial`, `score` and `judge` delegate to the worker
named by env MCPTRIALS_WORKER when that is set and the socket answers
(mcptrials.cli.delegate, the client, stdlib only); otherwise they run in-process as before.
The worker is handed the command line's own entry point (`run_argv`, cli.main) by the
command that starts it (cli.serve_trials), so this module never imports cli.main (no import
cycle); it sits in the command layer because it preloads, by name, modules of every floor.

Protocol, one request per connection:
  client -> worker  a 4-byte big-endian length, then JSON {"argv": [...], "cwd": ...,
                    "env": {...}}, with the client's stdout and stderr attached
                    (SCM_RIGHTS), so the child writes to the job's own log.
  worker -> client  one JSON line {"exit_code": N} when the child has ended; "error" is
                    added when the child died of a signal or could not be started.
The child gets the client's environment (API keys included: the trial needs them, and
it still passes a server only the variables its config allows, and scrubs records) and
its working directory. If the client goes away (Snakemake killed the job), the child's
process group (the trial and its server) is terminated, as it would be in-process.
The socket is created with mode 0600: only the same user can ask for a trial.

The shell client (`--tcp-file PATH`; mcptrials.cli.delegate.shell_function, the workflow's
jobs): bash cannot open a Unix socket or pass descriptors, so the worker also listens on
127.0.0.1 (a free port) and writes "PORT TOKEN\n" to PATH (mode 0600, in results/, which no
sandbox mounts; removed on the way out). The token is random per worker and is in no
environment: a process that cannot read the file (a sandboxed server with the network
shared, another user) cannot ask for a trial. One request per connection:
  client -> worker  fields, each ending in a NUL byte: the token, the client's pid, the
                    numbers of two of its descriptors that are its stdout and stderr, the
                    number of arguments N, the N arguments, then the environment's
                    NAME=VALUE entries, then an empty field (one more NUL). Bytes as they
                    are: any argument, value or name but a NUL passes intact.
  worker -> client  one line when the child has ended: "CODE" or "CODE MESSAGE" (the
                    message on one line). "75" (NOT_DELEGATED) when nothing ran: the
                    client's stdout, stderr or working directory could not be opened
                    through /proc/PID (e.g. a socket), so the client runs the command itself.
A request with a wrong token is answered "1 ..." and nothing else is read of it. The child
writes to the client's own stdout and stderr, opened anew through /proc/PID/fd/N in append
mode (a job's log is truncated by its shell first, so its content is the same as with the
descriptors themselves). Copies of them, not 1 and 2: bash points its fd 1 at the socket
while it writes the request, and the worker may read the request before bash puts it back.
"""

from __future__ import annotations

import gc
import hmac
import json
import os
import selectors
import signal
import socket
import struct
import sys
import threading

from mcptrials.cli.delegate import ENV, NOT_DELEGATED, TCP_ENV
from mcptrials.cli.preload import preload, preload_sdks, sdks_for

MAX_REQUEST = 4 * 1024 * 1024


# --- the worker --------------------------------------------------------------------------


# config argument and cwd -> the stat of each file its last warm-up read (config and scenarios)
_warmed: dict[tuple[str, str], tuple] = {}


def _stat(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return (path,)
    return (path, st.st_mtime_ns, st.st_size, st.st_ino)


def warm(argv: list, cwd: str) -> None:
    """Before forking a request's child: read its config and scenarios here, in the parent, so
    the child (and every later one) finds them parsed and validated in mcptrials.matrix.memo.
    The memo is keyed by content, so what a child gets never depends on this: the stat of the
    files only says when to read them again (a changed file is read again; one changed
    within the clock's resolution is a miss in the child, which then parses it itself). The SDKs
    the config's trials use are imported here the first time (`preload_sdks`)."""
    repo_dir, commit = _opt(argv, "--repo-dir"), _opt(argv, "--commit")
    if argv and argv[0] == "score" and repo_dir and commit:
        _warm_tree(os.path.join(cwd, repo_dir), commit)
    config = _opt(argv, "--config")
    if not config:
        return
    key = (config, cwd)
    files = _warmed.get(key)
    if files is not None and all(_stat(f[0]) == f for f in files):
        return
    from mcptrials.matrix.config import load_matrix

    here = os.getcwd()
    try:
        os.chdir(cwd)
        m = load_matrix(config)
        paths = [*m.sources, *(str(sc.path.resolve()) for sc in m.scenarios.values())]
        _warmed[key] = tuple(_stat(p) for p in paths)
        if preload_sdks(sdks_for(m.config)):
            gc.freeze()  # out of the collector's reach, as serve() does with the first preloads
    except Exception:  # noqa: BLE001 - the child reads the config itself and reports what is wrong
        _warmed[key] = tuple(_stat(os.path.join(cwd, p)) for p in config.split(os.pathsep) if p)
    finally:
        os.chdir(here)


def _opt(argv: list, name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv[:-1] else None


def _warm_tree(repo_dir: str, commit: str) -> None:
    """The commit's file listing (two git processes: the commit resolved, its tree listed), read
    once per checkout and commit here and inherited by every scoring child (grade.gittree caches
    it by the real path and the commit, whose id fixes its content). Its persistent `git
    cat-file` processes are ended here: a child starts its own when it reads a file's text, never
    one shared with another child."""
    from mcptrials.grade.gittree import commit_tree

    try:
        commit_tree(repo_dir, commit).repo.git.clear_cache()
    except Exception:  # noqa: BLE001 - the child reads the tree itself and reports what is wrong
        pass


def _read_request(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 65536, 2)
    if len(data) < 4:
        raise ValueError("short request")
    (size,) = struct.unpack(">I", data[:4])
    if size > MAX_REQUEST:
        raise ValueError(f"request of {size} bytes is too large")
    body = data[4:]
    while len(body) < size:
        chunk = conn.recv(min(65536, size - len(body)))
        if not chunk:
            raise ValueError("connection closed mid-request")
        body += chunk
    req = json.loads(body)
    if not isinstance(req.get("argv"), list) or not isinstance(req.get("env"), dict):
        raise ValueError("request needs argv (a list) and env (an object)")
    return req, list(fds)


class Refused(ValueError):
    """A shell request whose token is not the worker's."""


class NotHere(Exception):
    """A shell request the worker cannot serve (its client's stdout, stderr or working directory
    cannot be opened): answered NOT_DELEGATED, and the client runs the command itself."""


def parse_shell_request(data: bytes) -> tuple[bytes, int, tuple[int, int], list[str], dict[str, str]] | None:
    """(token, pid, (stdout fd, stderr fd), argv, env) of a shell client's request (the protocol
    above), None while `data` is not all of it yet; ValueError when it is no such request. Bytes
    are read as os.environ and sys.argv read them (os.fsdecode: undecodable bytes kept as surrogates)."""
    fields = data.split(b"\0")[:-1]  # each field ends in a NUL: what follows the last is unfinished
    if len(fields) < 5:
        return None
    if not all(f.isdigit() for f in fields[1:5]):
        raise ValueError("the pid, the descriptors and the number of arguments must be numbers")
    n = int(fields[4])
    try:
        end = fields.index(b"", 5 + n)
    except ValueError:
        return None
    if end != len(fields) - 1:
        raise ValueError("bytes after the end of the request")
    env = {}
    for entry in fields[5 + n : end]:
        name, eq, value = os.fsdecode(entry).partition("=")
        if not (name and eq):
            raise ValueError("an environment entry is not NAME=VALUE")
        env[name] = value
    argv = [os.fsdecode(a) for a in fields[5 : 5 + n]]
    return fields[0], int(fields[1]), (int(fields[2]), int(fields[3])), argv, env


def _read_shell_request(conn: socket.socket, token: bytes) -> tuple[dict, list[int]]:
    """A shell client's request, and its stdout and stderr opened through /proc (see above)."""
    data = b""
    while (parsed := parse_shell_request(data)) is None:
        chunk = conn.recv(65536)
        if not chunk:
            raise ValueError("connection closed mid-request")
        data += chunk
        if b"\0" in data and not hmac.compare_digest(data.split(b"\0", 1)[0], token):
            raise Refused("refused: not this worker's token")
        if len(data) > MAX_REQUEST:
            raise ValueError(f"request of over {MAX_REQUEST} bytes is too large")
    _token, pid, outputs, argv, env = parsed
    fds: list[int] = []
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        for n in outputs:
            fds.append(os.open(f"/proc/{pid}/fd/{n}", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC))
    except OSError as e:
        for fd in fds:
            os.close(fd)
        raise NotHere(str(e)) from e
    return {"argv": argv, "cwd": cwd, "env": env}, fds


def _child(
    req: dict, fds: list[int], listeners: list[socket.socket], conn: socket.socket, wakeup: list[int], run_argv
) -> None:
    """In the forked child: become `mcptrials run-trial` for the client, then exit."""
    import tempfile
    import traceback

    code = 1
    try:
        os.setpgid(0, 0)  # the trial and its server form one group, killed together
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for listener in listeners:
            listener.close()
        conn.close()
        for fd in wakeup:
            os.close(fd)
        if not fds:  # a client that sent no descriptors gets no output
            fds = [os.open(os.devnull, os.O_WRONLY)]
        os.dup2(fds[0], 1)
        os.dup2(fds[-1], 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        for fd in set(fds) | {devnull}:
            if fd > 2:
                os.close(fd)
        os.chdir(req.get("cwd") or "/")
        os.environ.clear()
        os.environ.update({k: v for k, v in req["env"].items() if k not in (ENV, TCP_ENV)})  # never delegate again
        tempfile.tempdir = None  # recomputed from the client's TMPDIR
        sys.argv = ["mcptrials", *req["argv"]]
        try:
            code = run_argv(list(req["argv"]))
        except SystemExit as e:  # argparse errors and sys.exit, as the process would exit
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if not isinstance(e.code, (int, type(None))):
                print(e.code, file=sys.stderr)
        code = 0 if code is None else int(code)
    except BaseException:  # noqa: BLE001 - an uncaught error ends the process with 1, as Python does
        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code & 0xFF)


def serve(path: str, run_argv, watch_pid: int | None = None, tcp_file: str | None = None) -> int:
    """Listen on `path` (and on 127.0.0.1 for the shell client, its port and token written to
    `tcp_file`) until SIGTERM/SIGINT (or until `watch_pid` is gone); fork a child per
    request, which runs `run_argv(argv)` (cli.main). Binds before importing, so clients
    queue instead of falling back; the port file first, so a client that finds the socket
    finds both."""
    tcp = _bind_tcp(tcp_file) if tcp_file else None
    listener = _bind(path)
    ino = os.stat(path).st_ino
    loaded = preload()
    # Move everything imported so far out of the collector's reach: a child's collections
    # would otherwise walk (and so copy, page by page) the whole inherited heap.
    gc.freeze()
    if threading.active_count() > 1:  # forking a process with threads can deadlock its children
        print(
            f"mcptrials serve-trials: error: a preloaded module started a thread "
            f"({[t.name for t in threading.enumerate()]}); not forking from it",
            file=sys.stderr,
        )
        listener.close()
        os.unlink(path)
        _unbind_tcp(tcp, tcp_file)
        return 1
    print(
        f"mcptrials serve-trials: pid {os.getpid()} listening on {path} (preloaded {len(loaded)} modules)", flush=True
    )

    loop = _Loop(listener, run_argv, tcp)
    try:
        loop.run(watch_pid)
    finally:
        loop.stop_children()
        listener.close()
        try:
            if os.stat(path).st_ino == ino:  # not a newer worker's socket
                os.unlink(path)
        except FileNotFoundError:
            pass
        _unbind_tcp(tcp, tcp_file)
    return 0


def _bind(path: str) -> socket.socket:
    """The listening socket at `path` (a stale one of a killed run replaced), mode 0600."""
    if os.path.exists(path):  # a stale socket of a killed run
        os.unlink(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(path)
    finally:
        os.umask(old)
    listener.listen(128)
    return listener


def _bind_tcp(tcp_file: str) -> tuple[socket.socket, bytes]:
    """The shell client's listener on 127.0.0.1 (a free port) and its token, both written to
    `tcp_file` ("PORT TOKEN\n", mode 0600, replaced in one rename)."""
    import secrets

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    token = secrets.token_hex(16)
    os.makedirs(os.path.dirname(os.path.abspath(tcp_file)), exist_ok=True)
    tmp = f"{tcp_file}.{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{listener.getsockname()[1]} {token}\n")
    os.replace(tmp, tcp_file)
    return listener, token.encode()


def _unbind_tcp(tcp: tuple[socket.socket, bytes] | None, tcp_file: str | None) -> None:
    """Close the shell client's listener and remove its port file (if it is still this worker's)."""
    if tcp is None or not tcp_file:
        return
    tcp[0].close()
    try:
        with open(tcp_file) as f:
            if f.read().split()[1:] == [tcp[1].decode()]:
                os.unlink(tcp_file)
    except (OSError, IndexError):
        pass


def _reply(conn: socket.socket, obj: dict, shell: bool = False) -> None:
    """The answer: a JSON line, or for a shell client "CODE" or "CODE MESSAGE" (one line)."""
    if shell:
        line = " ".join([str(obj["exit_code"]), *([" ".join(obj["error"].split())] if obj.get("error") else [])])
    else:
        line = json.dumps(obj)
    try:
        conn.sendall((line + "\n").encode())
    except OSError:
        pass  # the client is gone; nothing to tell


class _Loop:
    """The worker's event loop: the listener, a pipe that signals wake it through (SIGCHLD
    to reap, SIGTERM/SIGINT to stop), and the children (pid -> its client's connection)."""

    def __init__(self, listener: socket.socket, run_argv, tcp: tuple[socket.socket, bytes] | None = None):
        self.listener, self.run_argv = listener, run_argv
        self.tcp: socket.socket | None = tcp[0] if tcp else None
        self.token = tcp[1] if tcp else b""
        self.listeners = [listener, *([self.tcp] if self.tcp else [])]
        self.stopping: list[bool] = []
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the loop through the pipe
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.append(True))
        self.sel = selectors.DefaultSelector()
        for sock in self.listeners:
            self.sel.register(sock, selectors.EVENT_READ)
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.children: dict[int, socket.socket] = {}
        self.shell: set[socket.socket] = set()  # the connections of shell clients (their answer's form)

    def run(self, watch_pid: int | None) -> None:
        while not self.stopping:
            for key, _ in self.sel.select(timeout=1.0):
                if (listener := next((s for s in self.listeners if s is key.fileobj), None)) is not None:
                    self.accept(listener)
                elif key.fileobj == self.wake_r:
                    try:
                        while os.read(self.wake_r, 512):
                            pass
                    except BlockingIOError:
                        pass
                else:  # a client sends nothing after its request: readable means it is gone
                    self.check_client(key)
            self.reap()
            if watch_pid and not _alive(watch_pid):
                print(f"mcptrials serve-trials: process {watch_pid} is gone; stopping", flush=True)
                break

    def accept(self, listener: socket.socket) -> None:
        """Read one request and fork its child; a bad request is answered with exit code 1."""
        conn, _ = listener.accept()
        conn.settimeout(10)
        shell = listener is self.tcp
        try:
            req, fds = _read_shell_request(conn, self.token) if shell else _read_request(conn)
        except NotHere as e:
            print(f"not served here (the client runs it in-process): {e}", flush=True)
            _reply(conn, {"exit_code": NOT_DELEGATED}, shell)
            conn.close()
            return
        except (OSError, ValueError) as e:
            _reply(conn, {"exit_code": 1, "error": f"trial worker: bad request: {e}"}, shell)
            conn.close()
            return
        warm(req["argv"], req.get("cwd") or "/")
        if threading.active_count() > 1:  # an SDK's preload started a thread: never fork from it
            print(f"not served here (a preload started a thread: {[t.name for t in threading.enumerate()]})")
            _reply(conn, {"exit_code": NOT_DELEGATED}, shell)
            conn.close()
            for fd in fds:
                os.close(fd)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req, fds, self.listeners, conn, [self.wake_r, self.wake_w], self.run_argv)
        for fd in fds:
            os.close(fd)
        print(f"child {pid}{' (shell client)' if shell else ''}: mcptrials {' '.join(req['argv'])}", flush=True)
        conn.setblocking(False)
        self.children[pid] = conn
        if shell:
            self.shell.add(conn)
        self.sel.register(conn, selectors.EVENT_READ, pid)

    def check_client(self, key) -> None:
        """A child's client connection became readable: if the client is gone, end the child's group."""
        pid = key.data
        try:
            gone = key.fileobj.recv(1) == b""
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if gone:
            self.sel.unregister(key.fileobj)
            _kill_group(pid, signal.SIGTERM)

    def reap(self) -> None:
        """Collect the ended children and tell each one's client its exit code."""
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            try:
                self.sel.unregister(conn)
            except KeyError:  # already dropped when its client went away
                pass
            if os.WIFSIGNALED(status):
                sig = os.WTERMSIG(status)
                print(f"child {pid}: killed by signal {sig}", flush=True)
                self.answer(
                    conn,
                    {
                        "exit_code": 128 + sig,
                        "error": f"the trial process {pid} of the worker was killed "
                        f"by signal {sig} ({signal.Signals(sig).name})",
                    },
                )
            else:
                print(f"child {pid}: exit code {os.waitstatus_to_exitcode(status)}", flush=True)
                self.answer(conn, {"exit_code": os.waitstatus_to_exitcode(status)})

    def answer(self, conn: socket.socket, obj: dict) -> None:
        """Tell a child's client how it ended (in its client's form), and close the connection."""
        _reply(conn, obj, conn in self.shell)
        self.shell.discard(conn)
        conn.close()

    def stop_children(self) -> None:
        """On the way out: end every running child and tell its client the worker stopped."""
        for pid in list(self.children):
            _kill_group(pid, signal.SIGTERM)
        for pid, conn in list(self.children.items()):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
            self.answer(conn, {"exit_code": 1, "error": "the trial worker stopped during the trial"})


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
