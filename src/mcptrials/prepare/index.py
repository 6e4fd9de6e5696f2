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
    from mcptrials.prepare.servers import resolve_command, server_environment, substitute, tool_sandbox

    idx = spec["index"]
    if out.exists():  # a rerun starts from an empty index folder
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="mcptrials-index-") as sandbox:
        work, home, tmp = Path(sandbox, "repo"), Path(sandbox, "home"), Path(sandbox, "tmp")
        shutil.copytree(tree, work, symlinks=True)
        home.mkdir()
        tmp.mkdir()
        values = {"repo": str(work), "workspace": str(work), "index": str(out.resolve()), "home": str(home),
                  "tmp": str(tmp)}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin"} | server_environment(spec, values, forbidden)
        cmd = [resolve_command(tool, idx["command"])] + [substitute(a, values) for a in idx["args"]]
        sb = tool_sandbox(tool_spec, extra_rw=[work, home, tmp, out]) if tool_spec else None
        argv, env = sb.wrap(cmd, env, str(work)) if sb else (cmd, env)
        p = subprocess.run(argv, cwd=work, env=env, stdout=log, stderr=log)
        if p.returncode != 0:
            raise RuntimeError(f"tools.{tool}.index: {' '.join(cmd)} exited {p.returncode}; see the log")
    rec = {"tool": tool, "command": cmd, "sandbox": sb.record() if sb else None}
    write_json(out / "index.json", rec)
    return rec


def register(sub) -> None:
    p = sub.add_parser("index", help="run a tool's index command once for a repo")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--tool", required=True)
    p.add_argument("--checkout", required=True)
    p.add_argument("--install", help="results/tools/<tool>/install.json (a failed install: nothing to index)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from mcptrials.matrix.config import load_matrix

    m = load_matrix(args.config)
    spec = m.tools.get(args.tool)
    if not spec or not spec.get("index"):
        raise ConfigError(f"{m.path}: field tools.{args.tool}.index: the tool has no index step")
    tool_spec = m.specs.tools[args.tool]  # its entry with {project} expanded
    from mcptrials.core.failures import failure

    co = read_json(args.checkout)
    unavailable = failure(co) or (failure(read_json(args.install)) if args.install else None)
    if unavailable:   # nothing to index; the snapshot and the trials say why (mcptrials.core.failures)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "index.json", {"tool": args.tool, "unavailable": unavailable})
        print(f"mcptrials index: {args.tool}: not run: {unavailable}", file=sys.stderr)
        return 0
    build_index(args.tool, tool_spec.config, co["tree"], Path(args.out), m.specs.key_env_names(), sys.stderr,
                tool_spec=tool_spec)
    return 0
