"""`mcptrials status`: fail (exit 1) when a checkout, install or server start failed
(mcptrials.core.failures), one line each."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcptrials.core.failures import failed_stages, status_text


def register(sub) -> None:
    p = sub.add_parser("status", help="fail (exit 1) when a checkout, install or server start failed, one line each")
    p.add_argument("--results", default="results")
    p.add_argument("--out", help="write the list here as JSON (results/status.json)")
    p.set_defaults(func=cmd_status)


def cmd_status(args) -> int:
    found = failed_stages(Path(args.results))
    if args.out:
        Path(args.out).write_text(json.dumps({"failed_stages": found}, indent=1) + "\n")
    if found:
        print(status_text(found), file=sys.stderr)
        print(
            f"mcptrials: {len(found)} stage(s) failed; the report lists them and the trials they left missing: "
            "results/report/index.html",
            file=sys.stderr,
        )
        return 1
    return 0
