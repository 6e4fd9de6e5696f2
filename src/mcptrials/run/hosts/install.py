"""A CLI host's install: its pinned npm package in .tools/_hosts/<host>/ (`mcptrials install-host`,
the workflow's install_host rule), the install record, and the binary a trial runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from mcptrials.prepare.servers import host_env_dir


def binary_path(host: str, bin_name: str) -> Path:
    return host_env_dir(host) / "node_modules" / ".bin" / bin_name


def installed_version(host: str, package: str) -> str | None:
    try:
        return json.loads((host_env_dir(host) / "node_modules" / package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def npm_install(host: str, kind: str, package: str, bin_name: str, want: str, log) -> dict:
    """npm-install the pinned CLI into .tools/_hosts/<host>/; an install of the same version
    already there is reused (npm would only re-check it). Returns the install record."""
    from mcptrials.prepare.install import run_logged

    env_dir, binary, t0 = host_env_dir(host), binary_path(host, bin_name), time.monotonic()
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
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        reported = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60, env=env)
    return {
        "host": host,
        "kind": kind,
        "package": package,
        "version": want,
        "reported_version": reported.stdout.strip(),
        "env_dir": str(env_dir),
        "binary": str(binary),
        "reused": reused,
        "resolved": {package: got},
        "seconds": round(time.monotonic() - t0, 2),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def installed_binary(ctx, binary: Path, cli: str) -> Path:
    """The host's CLI binary, or the trial aborts harness_failed saying how to install it."""
    if not binary.exists():
        from mcptrials.run.trial import TrialAbort

        host = ctx.host.name
        raise TrialAbort(
            "harness_failed",
            f"{binary}: {cli} is not installed; run `mcptrials install-host --host {host} "
            f"--out results/hosts/{host}/install.json` (the workflow's install_host rule)",
        )
    return binary
