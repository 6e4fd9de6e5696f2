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
  /proc. Nothing of the project (config, scenarios, locked, results, other trials) and
  nothing of the user's home is mounted.

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
FIX = ("install bubblewrap (`apt-get install bubblewrap`) on a machine with unprivileged user namespaces, "
       "or run unsandboxed knowingly with `sandbox: none` in the config")


class SandboxUnavailable(Exception):
    """bubblewrap is missing or cannot create its namespaces here."""


@dataclass(frozen=True)
class Mount:
    path: str
    mode: str          # ro | rw

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
            if p:
                self.mounts.append(Mount(str(Path(p).absolute()), "ro"))
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
        cmd = [env_binary(), "-i", bwrap_binary(), "--unshare-all", *(["--share-net"] if self.network else []),
               "--die-with-parent", "--new-session", "--clearenv"]
        inside = {"PATH": SANDBOX_PATH, **env}
        for k, v in sorted(inside.items()):
            cmd += ["--setenv", k, v]
        for d in SYSTEM_DIRS:
            if os.path.lexists(d):
                cmd += ["--ro-bind", d, d] if not os.path.islink(d) else ["--symlink", os.readlink(d), d]
        cmd += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for m in self.mounts:
            if os.path.exists(m.path):
                cmd += ["--ro-bind" if m.mode == "ro" else "--bind", m.path, m.path]
        if cwd:
            cmd += ["--chdir", str(cwd)]
        return cmd + ["--", *argv], {}

    def record(self) -> dict:
        """What run_meta.json keeps: the mechanism, its version, the network and the mounts
        that exist (a path inside the project relative to it, as every record names them)."""
        from mcptrials.core.records import project_path

        if self.mechanism == NONE:
            return {"mechanism": NONE, "version": None, "network": True, "mounts": []}
        return {"mechanism": BUBBLEWRAP, "version": bwrap_version(), "network": self.network,
                "mounts": [{"path": d, "mode": "ro"} for d in SYSTEM_DIRS if os.path.lexists(d)]
                + [{"path": project_path(m.path), "mode": m.mode} for m in self.mounts if os.path.exists(m.path)]}


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
