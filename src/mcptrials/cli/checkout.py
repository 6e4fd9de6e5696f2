"""`mcptrials checkout`: clone a config repo at its pinned commit (mcptrials.prepare.checkout)
and write its checkout record."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config
from mcptrials.core.failures import failure
from mcptrials.prepare.checkout import checkout_repo


def register(sub) -> None:
    p = sub.add_parser("checkout", help="clone a config repo at its pinned commit")
    add_config(p)
    p.add_argument("--repo", required=True)
    p.add_argument("--out", required=True, help="the checkout record, results/checkouts/<repo>/checkout.json")
    p.add_argument("--attempt", type=int, default=0, help="the workflow's retry count (mcptrials.core.failures)")
    p.set_defaults(func=cmd_checkout)


def cmd_checkout(args) -> int:
    rec = checkout_repo(load_config(args), args.repo, Path(args.out), args.attempt)
    if failure(rec):
        print(f"mcptrials checkout: {args.repo}: {rec['error']}", file=sys.stderr)
    print(json.dumps(rec))
    return 0
