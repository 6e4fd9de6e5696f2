"""`mcptrials index`: run a tool's index step once for a repo (mcptrials.prepare.index)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("index", help="run a tool's index command once for a repo")
    add_config(p)
    p.add_argument("--tool", required=True)
    p.add_argument("--checkout", required=True)
    p.add_argument("--install", help="results/tools/<tool>/install.json (a failed install: nothing to index)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_index)


def cmd_index(args) -> int:
    from mcptrials.prepare.index import index_repo

    rec = index_repo(load_config(args), args.tool, args.checkout, args.install, Path(args.out), sys.stderr)
    if rec.get("unavailable"):
        print(f"mcptrials index: {args.tool}: not run: {rec['unavailable']}", file=sys.stderr)
    return 0
