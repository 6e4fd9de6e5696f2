"""Installing a server's pinned packages into its own environment under .tools/<tool>/.

Each server gets its own venv (pip) or npm prefix, never the project's: third-party
servers pin conflicting `mcp` versions (code-index-mcp needs mcp 1.x, we use 2.x).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.core.records import project_path, write_json
from mcptrials.prepare.servers import tool_env_dir


def drop_keys(m) -> None:
    """Installs run outside the sandbox (pip and npm need the registry), so this process,
    and every install script it starts, first forgets the API keys."""
    import os

    for name in m.specs.key_env_names():
        os.environ.pop(name, None)


def run_logged(cmd: list[str], log) -> str:
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"command failed ({p.returncode}): {' '.join(cmd)}; see the log")
    return p.stdout


def install_tool(tool: str, spec: dict, log) -> dict:
    """Install (or re-install) the tool's packages; return the resolved versions."""
    inst = spec.get("install") or {}
    env_dir = tool_env_dir(tool)
    t0 = time.monotonic()
    resolved: dict[str, str] = {}
    kinds = [k for k in ("pip", "npm") if inst.get(k)]
    # One environment per tool; a server may need both (serena: a pip package plus an
    # npm language server): the venv and the npm prefix share the folder.
    if kinds and env_dir.exists():
        shutil.rmtree(env_dir)
    if inst.get("pip"):
        run_logged([sys.executable, "-m", "venv", str(env_dir)], log)
        pip = str(env_dir / "bin" / "pip")
        run_logged([pip, "install", "--disable-pip-version-check", *inst["pip"]], log)
        for row in json.loads(run_logged([pip, "list", "--format", "json", "--disable-pip-version-check"], log)):
            resolved[row["name"]] = row["version"]
    if inst.get("npm"):
        env_dir.mkdir(parents=True, exist_ok=True)
        run_logged(["npm", "install", "--no-fund", "--no-audit", "--prefix", str(env_dir), *inst["npm"]], log)
        tree = json.loads(run_logged(["npm", "ls", "--all", "--json", "--prefix", str(env_dir)], log) or "{}")

        def walk(deps):
            for name, d in (deps or {}).items():
                if "version" in d:
                    resolved[name] = d["version"]
                walk(d.get("dependencies"))

        walk(tree.get("dependencies"))
    kind = "+".join(kinds) or "none"
    return {
        "tool": tool,
        "kind": kind,
        "requested": [*inst.get("pip", []), *inst.get("npm", [])],
        "env_dir": project_path(env_dir) if kind != "none" else None,
        "resolved": resolved,
        "seconds": round(time.monotonic() - t0, 2),
        "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def install_tool_record(m, tool: str, out: Path, attempt: int = 0, log=sys.stderr) -> dict:
    """Install a config tool's server (the API keys forgotten first, `drop_keys`) and write its
    install record to `out`. A package that does not install is recorded as failed, missing
    data (mcptrials.core.failures), not raised."""
    if tool not in m.tools:
        raise ConfigError(f"{m.path}: field tools: no tool {tool!r}")
    drop_keys(m)
    try:
        rec = dict(install_tool(tool, m.tools[tool], log), attempt=attempt)
    except Exception as e:  # noqa: BLE001 - a package that does not install: missing data (mcptrials.core.failures)
        from mcptrials.core.failures import failed_record

        rec = failed_record(
            "install",
            e,
            attempt,
            tool=tool,
            requested=[
                *(m.tools[tool].get("install") or {}).get("pip", []),
                *(m.tools[tool].get("install") or {}).get("npm", []),
            ],
        )
    write_json(Path(out), rec)
    return rec
