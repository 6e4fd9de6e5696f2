"""The sandbox every process under test runs in: bubblewrap, deny by default.

A server under test is third-party code (and the bench's author may be a contestant), so
it must reach neither the user's API key nor the answer key. Every MCP server process the
harness starts, every `index` and `state_check` command and the CLI hosts (claude-code, codex, opencode) run as

    env -i bwrap --unshare-all [--share-net] --die-with-parent --new-session --clearenv
         --setenv NAME VALUE ... <mounts> --chdir <workspace> -- COMMAND ARGS

- `env -i` first: bwrap's own init is PID 1 of the new PID namespace and keeps bwrap's
  environment, which `--clearenv` does not touch (measured: a key in the parent's
  environment is readable from /proc/1/environ otherwise).
- `--unshare-all`: new user (where possible), IPC, PID, network, UTS and cgroup namespaces;
  the process sees no process of the run. `--share-net` only where the tool says
  `network: true` (an http server must be reached; a CLI host calls the API).
- File system, nothing else: the system directories read-only (`SYSTEM_DIRS`, the ones
  that exist), the Python the tools' venvs are made from (`sys.base_prefix`) read-only,
  the tool's own install read-only, the paths the tool lists in `read_only`, and read-write
  the trial's workspace, its index copy, a fresh HOME and TMPDIR; a fresh /tmp, /dev and
  /proc. A read-only workspace (a scenario's `workspace: read-only`) is a symlink to the
  shared checkout, bound read-only at the workspace path (`bind_args`). Nothing of the
  project (config, scenarios, locked, results, other trials) and nothing of the user's home
  is mounted.

`sandbox: none` (config, or per tool) runs the command as it is, recorded in run_meta and
flagged in the report. `check_available()` stops a run before any job on a machine without
bubblewrap or without the namespaces it needs, naming the fix.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

BUBBLEWRAP = "bubblewrap"
NONE = "none"
# Read-only system directories: programs, libraries, and /etc (the dynamic loader's cache,
# passwd for getpwuid, TLS certificates, resolv.conf for a tool with network). On Debian
# /bin, /lib, /lib64 and /sbin are symlinks into /usr: bound as they are.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
FIX = (
    "install bubblewrap (`apt-get install bubblewrap`) on a machine with unprivileged user namespaces, "
    "or run unsandboxed knowingly with `sandbox: none` in the config"
)


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create its namespaces here."""


@dataclass(frozen=True)
class Mount:
    path: str
    mode: str  # ro | rw

    def record(self) -> dict:
        return {"path": self.path, "mode": self.mode}


@dataclass
class ProcessSandbox:
    """What one sandboxed process may see: mounts, network, environment, working dir."""

    mechanism: str = BUBBLEWRAP
    network: bool = False
    mounts: list[Mount] = field(default_factory=list)

    def ro(self, *paths) -> "ProcessSandbox":
        for p in paths:
            if p and (m := Mount(str(Path(p).absolute()), "ro")) not in self.mounts:
                self.mounts.append(m)
        return self

    def rw(self, *paths) -> "ProcessSandbox":
        for p in paths:
            if p:
                self.mounts.append(Mount(str(Path(p).absolute()), "rw"))
        return self

    def wrap(self, argv: list[str], env: dict[str, str], cwd: str | None) -> tuple[list[str], dict[str, str]]:
        """(argv, env) that run argv under this sandbox with exactly `env` inside.
        For mechanism none: argv unchanged, env as given."""
        if self.mechanism == NONE:
            return list(argv), dict(env)
        cmd = [
            env_binary(),
            "-i",
            bwrap_binary(),
            "--unshare-all",
            *(["--share-net"] if self.network else []),
            "--die-with-parent",
            "--new-session",
            "--clearenv",
        ]
        inside = {"PATH": SANDBOX_PATH, **env}
        for k, v in sorted(inside.items()):
            cmd += ["--setenv", k, v]
        for d in SYSTEM_DIRS:
            if os.path.lexists(d):
                cmd += ["--ro-bind", d, d] if not os.path.islink(d) else ["--symlink", os.readlink(d), d]
        cmd += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for m in self.mounts:
            if os.path.exists(m.path):
                cmd += bind_args(m)
        if cwd:
            cmd += ["--chdir", str(cwd)]
        return cmd + ["--", *argv], {}

    def record(self) -> dict:
        """What run_meta.json keeps: the mechanism, its version, the network and the mounts
        that exist (a path inside the project relative to it, as every record names them)."""
        from mcptrials.core.records import project_path

        if self.mechanism == NONE:
            return {"mechanism": NONE, "version": None, "network": True, "mounts": []}
        return {
            "mechanism": BUBBLEWRAP,
            "version": bwrap_version(),
            "network": self.network,
            "mounts": [{"path": d, "mode": "ro"} for d in SYSTEM_DIRS if os.path.lexists(d)]
            + [{"path": project_path(m.path), "mode": bound_mode(m)} for m in self.mounts if os.path.exists(m.path)],
        }


def bound_mode(m: Mount) -> str:
    """The mode a mount gets: a path that is itself a symlink is always read-only (bind_args)."""
    return "ro" if os.path.islink(m.path) else m.mode


def bind_args(m: Mount) -> list[str]:
    """bwrap's arguments for one mount, at its own path. A mount that is a symlink (a trial's
    read-only workspace, mcptrials.run.trial.Sandbox: a link to the shared checkout) is bound
    read-only to where it leads, whatever mode asked for it: bwrap would follow the link, and a
    read-write bind would let a server change the checkout every trial shares."""
    if os.path.islink(m.path):
        return ["--ro-bind", os.path.realpath(m.path), m.path]
    return ["--ro-bind" if m.mode == "ro" else "--bind", m.path, m.path]


def is_system(path: str) -> bool:
    """Whether a path lies in the system directories every sandbox mounts read-only."""
    return any(Path(os.path.normpath(path)).is_relative_to(d) for d in SYSTEM_DIRS if os.path.lexists(d))


def venv_of(path: str) -> str | None:
    """The venv an executable sits in (`<venv>/bin/<it>` beside `<venv>/pyvenv.cfg`), else None."""
    bin_dir = Path(os.path.normpath(os.path.abspath(path))).parent
    return str(bin_dir.parent) if bin_dir.name == "bin" and (bin_dir.parent / "pyvenv.cfg").is_file() else None


def python_installation(path: str) -> str | None:
    """The Python installation an interpreter belongs to (`<prefix>/bin/python3.x` with its
    standard library in `<prefix>/lib/python3.*/os.py`: pyenv, uv, conda, a built Python),
    else None. Only such a prefix is mounted whole for it."""
    bin_dir = Path(os.path.realpath(path)).parent
    prefix = bin_dir.parent
    if bin_dir.name == "bin" and any(prefix.glob("lib/python3*/os.py")):
        return str(prefix)
    return None


def venv_base(venv: str) -> str | None:
    """The installation a venv is made from: pyvenv.cfg's `home` (its bin/) one level up."""
    try:
        lines = Path(venv, "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip():
            return python_installation(str(Path(value.strip()) / "python3")) or None
    return None


def shebang(path: str) -> list[str]:
    """The `#!` line of a script, split (empty for a binary or a file that cannot be read)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(512)
    except OSError:
        return []
    if not first.startswith(b"#!"):
        return []
    return first[2:].decode(errors="replace").split()


def command_needs(path: str, _depth: int = 0) -> list[str]:
    """The read-only paths an executable needs inside the sandbox, beyond the system
    directories (which every sandbox mounts): the file itself (and where its link leads); for
    a Python, the venv it sits in and the installation each interpreter is made from; for a
    script, the same for its `#!` interpreter when that is a full path (`#!/usr/bin/env NAME`
    looks NAME up on the sandbox's PATH: `command_problem` checks it). A folder that holds the
    project (the current folder) or the user's home is never among them: such a command is
    refused by `mcptrials validate` (`command_problem`)."""
    p = os.path.normpath(os.path.abspath(path))
    real = os.path.realpath(p)
    needs: list[str | None] = [p, real]  # None: not found (left out below)
    for venv in sorted(
        {v for v in (venv_of(p), venv_of(real)) if v is not None}
    ):  # a link into a venv (pipx's ~/.local/bin) too
        needs += [venv, venv_base(venv)]
    needs.append(python_installation(real))
    interp = shebang(real)
    if interp and _depth < 3 and os.path.basename(interp[0]) != "env":
        needs += command_needs(interp[0], _depth + 1)
    kept = [n for n in dict.fromkeys(needs) if n and not is_system(n) and not _too_wide(n)]
    # a file inside a folder that is mounted anyway is not mounted on its own
    return [n for n in kept if not any(n != o and Path(n).is_relative_to(o) for o in kept)]


def _too_wide(path: str) -> bool:
    """A folder holding the project or the user's home (or the root): never mounted for a command."""
    p = Path(path)
    return any(Path(x).is_relative_to(p) for x in (os.getcwd(), Path.home(), "/"))


def visible(path: str, mounts: list[Mount]) -> bool:
    """Whether `path` (and where its links lead) lies under the system directories or a mount."""

    def under(x: str) -> bool:
        return is_system(x) or any(Path(x).is_relative_to(m.path) for m in mounts)

    p = os.path.normpath(os.path.abspath(path))
    return under(p) and under(os.path.realpath(p))


def command_problem(path: str, sandbox: "ProcessSandbox", inside_path: str = SANDBOX_PATH) -> str | None:
    """Why the executable at `path` (resolved outside, as the harness resolves it) cannot be
    started inside `sandbox` as it will run (None when it can): itself, or its `#!`
    interpreter, is not visible there. Reads files only; starts nothing."""
    if sandbox.mechanism == NONE:
        return None
    mounts = [m for m in sandbox.mounts if os.path.exists(m.path)]
    if not visible(path, mounts):
        wide = [n for n in (os.path.realpath(path), venv_of(path)) if n and _too_wide(n)]
        why = f" (it would need {wide[0]} mounted, which holds the project or your home)" if wide else ""
        return f"{path} is not visible inside the sandbox{why}"
    interp = shebang(os.path.realpath(path))
    if not interp:
        return None
    if os.path.basename(interp[0]) == "env":
        names = [a for a in interp[1:] if not a.startswith("-")]
        if not names:
            return None
        dirs = [d for d in inside_path.split(os.pathsep) if d]
        if any(os.access(Path(d, names[0]), os.X_OK) and visible(str(Path(d, names[0])), mounts) for d in dirs):
            return None
        return (
            f"{path} starts with `#!{' '.join(interp)}`, and {names[0]!r} is not on the sandbox's PATH ({inside_path})"
        )
    if not visible(interp[0], mounts):
        return f"{path} starts with `#!{interp[0]}`, which is not visible inside the sandbox"
    return None


def python_prefix() -> str:
    """The installation the harness's and the tools' venvs are made from (their `python`
    is a symlink into it): read-only, so a pip-installed server can start."""
    return sys.base_prefix


def env_binary() -> str:
    return shutil.which("env") or "/usr/bin/env"


def bwrap_binary() -> str:
    found = shutil.which("bwrap")
    if not found:
        raise SandboxUnavailable(f"bwrap is not installed: {FIX}")
    return found


@functools.lru_cache(maxsize=1)
def bwrap_version() -> str | None:
    try:
        out = subprocess.run([bwrap_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, SandboxUnavailable, subprocess.TimeoutExpired):
        return None
    return out.strip().split()[-1] if out.strip() else None


def check_available() -> None:
    """Raise SandboxUnavailable (with the fix) unless bwrap runs a command in new namespaces."""
    sb = ProcessSandbox()
    argv, env = sb.wrap(["true"], {}, None)
    try:
        p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise SandboxUnavailable(f"bwrap cannot run ({e}): {FIX}") from None
    if p.returncode != 0:
        raise SandboxUnavailable(f"bwrap cannot create its namespaces here ({p.stderr.strip()[:300]}): {FIX}")
