"""The warm trial worker: `mcptrials serve-trials --socket PATH`.

Why: `import anthropic` takes ~2.5 s and `import mcp` ~1.6 s here, so every
`mcptrials run-trial` process paid ~4 s before its trial started (7% of a 60-second
trial). The worker imports them (and the trial core, hosts, graders and judge, and parses the JSON
schemas) once, listens on a Unix socket, and for each request forks a child that runs
exactly `mcptrials ARGS`: the same argv parsing, records and exit code. The parent never
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
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import struct
import sys

from mcptrials.cli.delegate import ENV

MAX_REQUEST = 4 * 1024 * 1024


# --- the worker --------------------------------------------------------------------------


def preload() -> list[str]:
    """Import what a trial needs, once, in the parent (the reason the worker exists)."""
    import importlib

    loaded = []
    names = [
        "anthropic",
        "mcp",
        "mcp.client.stdio",
        "psutil",
        "jsonschema",
        "referencing",
        "yaml",
        "git",
        "mcptrials.run.runner",
        "mcptrials.run.trial",
        "mcptrials.run.hosts.loop",
        "mcptrials.prepare.servers",
        "mcptrials.prepare.snapshot",
        "mcptrials.prepare.builtins",
        "mcptrials.core.records",
        "mcptrials.providers.anthropic",
        "mcptrials.providers.reference",
        "mcptrials.cost.pricing",
        "mcptrials.grade.scoring",
        "mcptrials.judge.judging",
        "mcptrials.run.hosts",
        # the commands the worker runs (cli.COMMANDS of run-trial, score, judge); the package
        # mcptrials.cli itself is imported before this module is
        "mcptrials.cli.common",
        "mcptrials.cli.run_trial",
        "mcptrials.cli.score",
        "mcptrials.cli.judge",
        # imported inside the commands (lazily, for a light `mcptrials --help`)
        "mcptrials.dag.rerun",
        "mcptrials.core.failures",
        "mcptrials.core.outcomes",
        "mcptrials.cost.budget",
        "mcptrials.cost.plan",
        # imported by the SDK's HTTP client on its first request (~15 ms of CPU a trial otherwise)
        "anyio._backends._asyncio",
        "anyio.streams.stapled",
        "concurrent.futures.thread",
        "mcptrials.matrix.projectfiles",
        "openai",
        "mcptrials.providers.openai",
    ]
    for name in names:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except ImportError:  # an optional part (e.g. a provider another install lacks)
            pass
    # The parsed JSON schemas (config, scenario, records) are cached by the schema module:
    # parse them once here rather than in every child (~0.2 s of pure-Python YAML each).
    from mcptrials.matrix import schema
    from mcptrials.core.paths import SCHEMA_DIR

    for path in sorted(SCHEMA_DIR.glob("*.yaml")):
        schema._schema(path.name)
        schema._validator(path.name)  # and their validators (a class built per schema)
    # The graders' regular expressions for the default extensions, compiled on first use.
    from mcptrials.grade.citations.extract import citation_pattern, mention_pattern

    citation_pattern()
    mention_pattern()
    # The sandbox's bwrap version (a `bwrap --version` process), asked once here rather than
    # in every trial (its lru_cache is inherited by the forked children).
    from mcptrials.prepare.sandbox import bwrap_version
    from mcptrials.providers.anthropic import cert_env, tls_context

    bwrap_version()
    tls_context(cert_env())  # the CA store, loaded once (~20 ms a trial otherwise)
    # The SDK imports its resources lazily; building a client once pulls them in.
    import anthropic

    anthropic.AsyncAnthropic(api_key="preload", base_url="http://127.0.0.1:9").messages  # noqa: B018
    # Reading a reply builds its pydantic schemas on first use (~30 ms of CPU in every trial
    # otherwise): read one with each block a trial's replies hold.
    message: dict = dict(
        id="msg_preload",
        type="message",
        role="assistant",
        model="preload",
        content=[{"type": "text", "text": "."}, {"type": "tool_use", "id": "t", "name": "n", "input": {}}],
        stop_reason="tool_use",
        stop_sequence=None,
        usage={"input_tokens": 1, "output_tokens": 1},
    )
    anthropic.types.Message.construct(**message)
    # and dumping its blocks (providers.anthropic) builds their serializers (~8 ms otherwise)
    for block in anthropic.types.Message.model_validate(message).content:
        block.model_dump(exclude_none=True, include={"type", "text", "id", "name", "input"})
    return loaded


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
    within the clock's resolution is a miss in the child, which then parses it itself)."""
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


def _child(
    req: dict, fds: list[int], listener: socket.socket, conn: socket.socket, wakeup: list[int], run_argv
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
        os.environ.update({k: v for k, v in req["env"].items() if k != ENV})  # never delegate again
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


def serve(path: str, run_argv, watch_pid: int | None = None) -> int:
    """Listen on `path` until SIGTERM/SIGINT (or until `watch_pid` is gone); fork a child
    per request, which runs `run_argv(argv)` (cli.main). Binds before importing, so
    clients queue instead of falling back."""
    listener = _bind(path)
    ino = os.stat(path).st_ino
    loaded = preload()
    # Move everything imported so far out of the collector's reach: a child's collections
    # would otherwise walk (and so copy, page by page) the whole inherited heap.
    gc.freeze()
    import threading

    if threading.active_count() > 1:  # forking a process with threads can deadlock its children
        print(
            f"mcptrials serve-trials: error: a preloaded module started a thread "
            f"({[t.name for t in threading.enumerate()]}); not forking from it",
            file=sys.stderr,
        )
        listener.close()
        os.unlink(path)
        return 1
    print(
        f"mcptrials serve-trials: pid {os.getpid()} listening on {path} (preloaded {len(loaded)} modules)", flush=True
    )

    loop = _Loop(listener, run_argv)
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


def _reply(conn: socket.socket, obj: dict) -> None:
    try:
        conn.sendall((json.dumps(obj) + "\n").encode())
    except OSError:
        pass  # the client is gone; nothing to tell


class _Loop:
    """The worker's event loop: the listener, a pipe that signals wake it through (SIGCHLD
    to reap, SIGTERM/SIGINT to stop), and the children (pid -> its client's connection)."""

    def __init__(self, listener: socket.socket, run_argv):
        self.listener, self.run_argv = listener, run_argv
        self.stopping: list[bool] = []
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the loop through the pipe
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.stopping.append(True))
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ)
        self.sel.register(self.wake_r, selectors.EVENT_READ)
        self.children: dict[int, socket.socket] = {}

    def run(self, watch_pid: int | None) -> None:
        while not self.stopping:
            for key, _ in self.sel.select(timeout=1.0):
                if key.fileobj is self.listener:
                    self.accept()
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

    def accept(self) -> None:
        """Read one request and fork its child; a bad request is answered with exit code 1."""
        conn, _ = self.listener.accept()
        conn.settimeout(10)
        try:
            req, fds = _read_request(conn)
        except (OSError, ValueError) as e:
            _reply(conn, {"exit_code": 1, "error": f"trial worker: bad request: {e}"})
            conn.close()
            return
        warm(req["argv"], req.get("cwd") or "/")
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(req, fds, self.listener, conn, [self.wake_r, self.wake_w], self.run_argv)
        for fd in fds:
            os.close(fd)
        print(f"child {pid}: mcptrials {' '.join(req['argv'])}", flush=True)
        conn.setblocking(False)
        self.children[pid] = conn
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
                _reply(
                    conn,
                    {
                        "exit_code": 128 + sig,
                        "error": f"the trial process {pid} of the worker was killed "
                        f"by signal {sig} ({signal.Signals(sig).name})",
                    },
                )
            else:
                print(f"child {pid}: exit code {os.waitstatus_to_exitcode(status)}", flush=True)
                _reply(conn, {"exit_code": os.waitstatus_to_exitcode(status)})
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
            _reply(conn, {"exit_code": 1, "error": "the trial worker stopped during the trial"})
            conn.close()


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
