"""The optional per-repo index step of a tool (e.g. a code indexer), run once and reused."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.core.records import read_json, write_json


def build_index(tool: str, spec: dict, tree: str, out: Path, forbidden: set[str], log, tool_spec=None) -> dict:
    """Run the index command in a copy of the checkout, sandboxed like the tool's server
    (`tool_spec`: its ToolSpec; the copy, home, tmp and the output folder read-write)."""
    from mcptrials.prepare.servers import project_files, resolve_command, server_environment, substitute, tool_sandbox

    idx = spec["index"]
    if out.exists():  # a rerun starts from an empty index folder
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="mcptrials-index-") as sandbox:
        work, home, tmp = Path(sandbox, "repo"), Path(sandbox, "home"), Path(sandbox, "tmp")
        shutil.copytree(tree, work, symlinks=True)
        home.mkdir()
        tmp.mkdir()
        values = {
            "repo": str(work),
            "workspace": str(work),
            "index": str(out.resolve()),
            "home": str(home),
            "tmp": str(tmp),
        }
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin"} | server_environment(spec, values, forbidden)
        cmd = [resolve_command(tool, idx["command"])] + [substitute(a, values) for a in idx["args"]]
        sb = tool_sandbox(tool_spec, extra_rw=[work, home, tmp, out], commands=[cmd[0]]) if tool_spec else None
        argv, env = sb.wrap(cmd, env, str(work)) if sb else (cmd, env)
        p = subprocess.run(argv, cwd=work, env=env, stdout=log, stderr=log)
        if p.returncode != 0:
            where = (
                log.name
                if isinstance(getattr(log, "name", None), str) and not log.name.startswith("<")
                else f"results/logs/index/{tool}/{out.name}.log (the workflow's; else the output above)"
            )
            raise RuntimeError(
                f"tools.{tool}.index: {' '.join(cmd)} exited {p.returncode}; its output is in {where}: "
                f"fix tools.{tool}.index (or what it reads), then run again"
            )
    rec = {
        "tool": tool,
        "command": cmd,
        "sandbox": sb.record() if sb else None,
        # what of the project it was built from: replay refuses an index made from other contents
        "project_files": project_files(tool_spec) if tool_spec else None,
    }
    write_json(out / "index.json", rec)
    return rec


def index_repo(m, tool: str, checkout_json, install_json, out: Path, log=sys.stderr) -> dict:
    """Run a config tool's index step on the checkout its record names, into `out`. When the
    checkout or the tool's install failed there is nothing to index: index.json says why
    (`unavailable`), and so do the snapshot and the trials (mcptrials.core.failures)."""
    from mcptrials.core.failures import failure

    spec = m.tools.get(tool)
    if not spec or not spec.get("index"):
        raise ConfigError(f"{m.path}: field tools.{tool}.index: the tool has no index step")
    tool_spec = m.specs.tools[tool]  # its entry with {project} expanded
    co = read_json(checkout_json)
    unavailable = failure(co) or (failure(read_json(install_json)) if install_json else None)
    if unavailable:
        out.mkdir(parents=True, exist_ok=True)
        rec = {"tool": tool, "unavailable": unavailable}
        write_json(out / "index.json", rec)
        return rec
    return build_index(tool, tool_spec.config, co["tree"], out, m.specs.key_env_names(), log, tool_spec=tool_spec)
