"""`mcptrials report`: results/report/report.md, index.html and a page per trial
(mcptrials.report.document.report_job)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config
from mcptrials.core.keys import PAGES


def register(sub) -> None:
    p = sub.add_parser("report", help="write results/report/report.md, index.html and a page per trial")
    add_config(p)
    p.add_argument("--aggregate", default="results/aggregate", help="the folder of summary.json")
    p.add_argument("--heldout", default="results/heldout/agreement.json", help="the held-out agreement (optional)")
    p.add_argument("--lock", default=None, help="lock_verified.json (default: beside --heldout)")
    p.add_argument("--runs", default="results/runs")
    p.add_argument("--out-dir", default="results/report")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from mcptrials.report.document import StrictHeldout, report_job

    m = load_config(args)
    try:
        paths = report_job(m, args.aggregate, args.heldout, args.lock, args.runs, args.out_dir)
    except StrictHeldout as e:
        print(f"mcptrials report: {e}; no report written", file=sys.stderr)
        return 1
    print(f"report: {Path(paths['html']).resolve()}")
    print(f"report: {Path(paths['md']).resolve()}")
    print(f"{len(paths[PAGES])} trial page(s) under {Path(args.out_dir) / 'trials'}", file=sys.stderr)
    return 0
