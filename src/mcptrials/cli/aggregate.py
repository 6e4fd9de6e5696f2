"""`mcptrials aggregate`: every trial's records into trials.csv, cells.csv, tools.csv and
summary.json (mcptrials.analyze.aggregate)."""

from __future__ import annotations

import sys

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("aggregate", help="every trial's scores into trials.csv, cells.csv, tools.csv and summary.json")
    add_config(p)
    p.add_argument("--runs", default="results/runs", help="the trial records (results/runs)")
    p.add_argument("--out-dir", default="results/aggregate")
    p.set_defaults(func=cmd_aggregate)


def cmd_aggregate(args) -> int:
    from mcptrials.analyze.aggregate import aggregate, write_aggregate

    result = aggregate(load_config(args), args.runs)
    paths = write_aggregate(result, args.out_dir)
    print(
        f"{paths['summary']}: {len(result['trials'])} trial(s), {len(result['cells'])} cell(s), "
        f"{len(result['tools'])} (model, tool) row(s)"
    )
    for note in result["notes"]:
        print(f"note: {note}", file=sys.stderr)
    return 0
