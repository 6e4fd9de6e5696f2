"""Starting an MCP server under test, with only the environment its config allows.

One `ServerSession` = one fresh server process and one `mcp` 2.x client connected
to it. Used by the tools snapshot and by every trial.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mcptrials.matrix.specs import ToolSpec

if TYPE_CHECKING:  # imported where a server starts (open_server): mcp is slow to import
    from mcp import Client


def tools_dir() -> Path:
    """Where tool (and host) environments live: `.tools/` of the project (the folder every
    stage runs in), or $MCPTRIALS_TOOLS_DIR to share one set of installs between projects
    (the tests do). Absolute, because servers start in the trial's workspace."""
    return Path(os.environ.get("MCPTRIALS_TOOLS_DIR") or ".tools").absolute()


def project_files(tool: ToolSpec) -> dict[str, str]:
    """Project path -> sha256 of each file of the project the tool's entry names (its server
    kept in the project: mcptrials.matrix.projectfiles.content_hashes; {} for an installed or
    system server). Recorded beside its spec hash (tools.json, index.json, run_meta.json,
    summary.json), so results made with other contents are known stale (mcptrials.gate)."""
    from mcptrials.matrix.projectfiles import content_hashes, project_dir

    return content_hashes(tool.config, project_dir(), tools_dir())


def tool_env_dir(tool: str) -> Path:
    return tools_dir() / tool


def host_env_dir(host: str) -> Path:
    """Where a host's own software lives. `_hosts` cannot clash with a tool's folder:
    tool names start with a letter or digit."""
    return tools_dir() / "_hosts" / host


def resolve_command(tool: str, command: str) -> str:
    """A bare command is looked up in the tool's own environment first, then on PATH."""
    if os.sep in command:
        p = Path(command)
        return str(p.absolute())  # a relative path is from the project folder
    env_dir = tool_env_dir(tool)
    for cand in (env_dir / "bin" / command, env_dir / "node_modules" / ".bin" / command):
        if cand.exists():
            if cand.parent == env_dir / "bin":
                relocate_venv(env_dir)
            return str(cand)
    found = shutil.which(command)
    if not found:
        raise FileNotFoundError(
            f"tools.{tool}.command: {command!r} is neither in {env_dir} nor on PATH; "
            "add an `install:` entry for it or give a full path"
        )
    return found


def relocate_venv(env_dir: Path) -> int:
    """Make a tool's venv work where it now sits: its scripts' `#!` lines name the python of the
    folder the venv was built in, so a project copied or moved elsewhere (or a tools folder
    reached through another path) would start no server (`bwrap: execvp ...: No such file`).
    Rewrites each `#!.../bin/python...` line that names another folder to this venv's own python,
    atomically (a rename), so concurrent trials see the old file or the new one. Returns how many
    it rewrote (0 when it sits where it was built: the usual case, one read of a first line)."""
    bin_dir = Path(env_dir) / "bin"
    here = os.path.realpath(bin_dir)  # the sandbox mounts the venv at its real path too (tool_sandbox)
    fixed = 0
    for script in sorted(bin_dir.iterdir()) if bin_dir.is_dir() else []:
        if script.is_symlink() or not script.is_file():
            continue
        try:
            with open(script, "rb") as f:
                first = f.readline()
            if not first.startswith(b"#!/") or b"/bin/python" not in first:
                continue
            interp = first[2:].strip().decode()
            if os.path.dirname(interp) == here:
                continue
            text = script.read_bytes()
        except (OSError, UnicodeDecodeError):
            continue
        new = f"#!{here}/{os.path.basename(interp)}\n".encode() + text[len(first) :]
        tmp = script.with_name(f".{script.name}.relocating-{os.getpid()}")
        tmp.write_bytes(new)
        os.chmod(tmp, script.stat().st_mode)
        os.replace(tmp, script)
        fixed += 1
    return fixed


def substitute(text: str, values: dict[str, str]) -> str:
    for k, v in values.items():
        text = text.replace("{" + k + "}", v)
    return text


def server_environment(spec: dict, values: dict[str, str], forbidden: set[str], environ=os.environ) -> dict[str, str]:
    """The variables a server may see: its config's `env` (literal or passed through by
    name) plus HOME/TMPDIR of the sandbox. Names in `forbidden` (API keys) never pass."""
    env = {"HOME": values["home"], "TMPDIR": values["tmp"]}
    for name, val in spec["env"].items():
        if name in forbidden:
            continue
        if val is None:
            if name in environ:
                env[name] = environ[name]
        else:
            env[name] = substitute(val, values)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree_peak_rss_kb(root_pid: int) -> int | None:
    """Sum of VmHWM (peak resident set) over the process tree under root_pid, from /proc;
    a description variant's proxy (ours, not the server's) is left out."""
    try:
        import psutil

        procs = psutil.Process(root_pid).children(recursive=True)
    except Exception:
        return None
    total = 0
    proxy = proxy_script()
    for p in procs:
        try:
            if p.cmdline()[1:4] == ["-I", "-S", proxy]:  # the proxy itself (not bwrap, whose argv names it)
                continue
        except Exception:  # gone, or not ours to read
            pass
        try:
            with open(f"/proc/{p.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total or None


@dataclass
class ServerSession:
    """A connected server. Use `async with open_server(...) as s:`."""

    client: Client
    startup_seconds: float
    errlog_path: Path
    pid_root: int = field(default_factory=os.getpid)
    sandbox: dict = field(default_factory=dict)  # the sandbox's record (sandbox.ProcessSandbox.record)
    read_only: set[str] = field(default_factory=set)  # tools annotated readOnlyHint: true (list_tools)

    @property
    def server_name(self) -> str | None:
        info = self.client.server_info
        return info.name if info else None

    @property
    def server_version(self) -> str | None:
        info = self.client.server_info
        return info.version if info else None

    @property
    def protocol_version(self) -> str | None:
        return self.client.protocol_version

    @property
    def instructions(self) -> str | None:
        return self.client.instructions

    async def list_tools(self) -> list[dict]:
        from mcptrials.prepare.tree_state import read_only_tools

        result = await self.client.list_tools()
        self.read_only = read_only_tools(result.tools)  # kept out of the list: a snapshot's hash stays as it was
        return [
            {
                "name": t.name,
                "description": t.description or "",
                "input_schema": t.input_schema,
                # only when the server gives one (prepare.conformance checks it): older records stay as they were
                **({"output_schema": t.output_schema} if getattr(t, "output_schema", None) is not None else {}),
            }
            for t in result.tools
        ]

    def peak_rss_kb(self) -> int | None:
        return process_tree_peak_rss_kb(self.pid_root)


def tool_sandbox(tool: ToolSpec, extra_rw=(), extra_ro=(), commands=None):
    """The sandbox of a tool's processes (server, index command; under a CLI host the CLI
    too): the Python its venv points at, its install, what the commands it runs need
    (`commands`: the resolved executables, by default its server's; sandbox.command_needs)
    and its `read_only` paths read-only, `extra_rw` (the trial's folders) read-write; the
    network only with `network: true`."""
    from mcptrials.prepare.sandbox import ProcessSandbox, command_needs, python_prefix

    sb = ProcessSandbox(mechanism=tool.sandbox, network=tool.network)
    env = tool_env_dir(tool.env_name)
    # its real path too: a tools folder reached through a link keeps working (relocate_venv)
    real = [os.path.realpath(env)] if env.exists() and os.path.realpath(env) != str(env) else []
    if commands is None:
        commands = [c for c in [server_command(tool)] if c]
    # what they need beyond the tool's own install (mounted whole above)
    own: list[Path | str] = [env, *real]
    needs = [n for c in commands for n in command_needs(c) if not any(Path(n).is_relative_to(d) for d in own)]
    sb.ro(python_prefix(), env, *real, *needs, *tool.read_only, *extra_ro)
    if tool.variant_of:  # the proxy is the sandbox's first process: its one file, run by the base Python
        sb.ro(proxy_script())
    return sb.rw(*extra_rw)


def server_command(tool: ToolSpec) -> str | None:
    """The executable a tool's server starts as (resolve_command), or None when it has none or
    it is not found (the start then fails with resolve_command's message)."""
    if not tool.command or not tool.has_server:
        return None
    try:
        return resolve_command(tool.env_name, tool.command)
    except FileNotFoundError:
        return None


def proxy_script() -> str:
    """mcptrials/prepare/proxy.py, which a variant's sandbox mounts read-only (stdlib only: nothing
    else of the package or its venv is needed there)."""
    from mcptrials.prepare import proxy

    return str(Path(proxy.__file__).resolve())


def server_argv(tool: ToolSpec, values: dict[str, str]) -> list[str]:
    """The command line that starts a tool's stdio server (both hosts start it from this): the
    resolved command and its arguments, behind mcptrials.prepare.proxy for a description variant (run
    by the interpreter the venvs are made from, which every tool sandbox mounts)."""
    import sys

    from mcptrials.prepare.proxy import command_line

    assert tool.command is not None  # a server has one (matrix.tools.check_tools)
    argv = [resolve_command(tool.env_name, tool.command)] + [substitute(a, values) for a in tool.args]
    if not tool.variant_of:
        return argv
    assert tool.overrides is not None  # a variant's field (matrix.tools.resolve_variants)
    return command_line(os.path.realpath(sys.executable), proxy_script(), tool.overrides, argv)


def server_sandbox(tool: ToolSpec, values: dict[str, str]):
    """The sandbox a tool's server runs in: the trial's (or snapshot's) folders read-write."""
    return tool_sandbox(tool, extra_rw=[values.get(k) for k in ("workspace", "home", "tmp", "index")])


@contextlib.contextmanager
def start_http_server(tool: ToolSpec, values: dict[str, str], forbidden_env: set[str], errlog, cwd: str | None = None):
    """Start an http server (`command args`, {port} a free port) in its sandbox and wait
    until it listens; yield its URL; stop its process group at the end. Hosts that connect
    by URL share it. (It must share the host's network to be reached: `network: true`.)"""
    assert tool.command is not None and tool.url is not None  # an http server has both (matrix.tools.check_tools)
    values = dict(values, port=str(free_port()))
    env = {k: os.environ[k] for k in ("LANG",) if k in os.environ} | server_environment(
        tool.config, values, forbidden_env
    )
    argv, env = server_sandbox(tool, values).wrap(
        [resolve_command(tool.env_name, tool.command)] + [substitute(a, values) for a in tool.args],
        {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        cwd or values.get("workspace"),
    )
    proc = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd or values.get("workspace"),
        stdout=errlog,
        stderr=errlog,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        url = substitute(tool.url, values)
        wait_for_port(url, tool.startup_timeout, proc)
        yield url
    finally:
        stop_process(proc)


@contextlib.asynccontextmanager
async def open_server(
    tool: ToolSpec, values: dict[str, str], errlog_path: Path, forbidden_env: set[str], cwd: str | None = None
):
    """Start the tool's server and connect. `values` fills {workspace} {repo} {index} {home} {tmp}."""
    from mcp import Client, StdioServerParameters, stdio_client

    env = server_environment(tool.config, values, forbidden_env)
    errlog_path.parent.mkdir(parents=True, exist_ok=True)
    sandbox = server_sandbox(tool, values)
    t0 = time.monotonic()
    with open(errlog_path, "a") as errlog, contextlib.ExitStack() as stack:
        if tool.transport == "stdio":
            # Under bubblewrap the client starts `env -i bwrap ... -- command args`: the mcp
            # client's own default variables never reach bwrap, only `env` reaches the server.
            argv, env = sandbox.wrap(
                server_argv(tool, values),
                env if tool.sandbox == "none" else {"PATH": _sandbox_path(), **env},
                cwd or values.get("workspace"),
            )
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=cwd or values.get("workspace"))
            target = stdio_client(params, errlog=errlog)
        else:  # http: we start the process, then connect to its URL
            target = stack.enter_context(start_http_server(tool, values, forbidden_env, errlog, cwd))
        client = Client(target, mode="auto", read_timeout_seconds=tool.call_timeout, cache=None)
        async with client:
            yield ServerSession(
                client=client, startup_seconds=time.monotonic() - t0, errlog_path=errlog_path, sandbox=sandbox.record()
            )


def _sandbox_path() -> str:
    from mcptrials.prepare.sandbox import SANDBOX_PATH

    return SANDBOX_PATH


def wait_for_port(url: str, timeout: float, proc) -> None:
    from urllib.parse import urlparse

    u = urlparse(url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ConnectionError(f"http server exited with status {proc.returncode} before listening on {url}")
        with socket.socket() as s:
            if s.connect_ex((u.hostname or "127.0.0.1", u.port or 80)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"http server did not listen on {url} within {timeout} s")


def stop_process(proc) -> None:
    import signal

    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def stderr_tail(path: Path, lines: int = 30) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as anyio raises them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def mcp_error_code(exc: BaseException) -> int | None:
    """The JSON-RPC error code of an MCP error (e.g. -32000 connection closed), if any."""
    exc = leaf_error(exc)
    code = getattr(exc, "code", None)
    if code is None:
        code = getattr(getattr(exc, "error", None), "code", None)
    return code
