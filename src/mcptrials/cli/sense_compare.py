"""`mcptrials compare-sense-bench`: our grading of the reference bench's runs beside its own
(mcptrials.importers.sense_compare), or with --vertical the board of one of its verticals
(mcptrials.importers.sense_board)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("compare-sense-bench", help="our grading of the reference bench's runs beside its own")
    add_config(p, required=True, help="the config `mcptrials import sense-bench` wrote (and mirrors)")
    p.add_argument("--runs", default="results/runs")
    p.add_argument("--bench", required=True, help="the bench/ folder the import read")
    p.add_argument("--out", help="default results/sense-compare (--vertical: results/sense-board)")
    p.add_argument(
        "--vertical",
        metavar="NAME",
        help="reproduce the board of verticals/NAME (after `import sense-bench "
        "--vertical NAME` and a run of its config)",
    )
    p.add_argument("--aggregate", default="results/aggregate", help="--vertical: the run's aggregate folder")
    p.set_defaults(func=cmd_compare_sense_bench)


def cmd_compare_sense_bench(args) -> int:
    from mcptrials.importers.sense_compare import bench_folder, write_comparison

    m = load_config(args)
    if args.vertical:
        from mcptrials.importers.sense_board import run

        out = Path(args.out or "results/sense-board")
        result = run(
            m, bench_folder(Path(args.bench), "verticals"), args.vertical, Path(args.aggregate), Path(args.runs), out
        )
        print((out / "board.md").read_text().split("\n## ")[0])
        print(
            f"{out}: board.md, board.csv ({len(result['cells'])} cells), means.csv, composition.csv "
            f"({len(result['composition'])} model x tool rows)",
            file=sys.stderr,
        )
        return 0
    out = Path(args.out or "results/sense-compare")
    result = write_comparison(m, Path(args.bench), Path(args.runs), out)
    print(f"{out}: {len(result['cells'])} cell(s), {len(result['disagreements'])} disagreement(s)", file=sys.stderr)
    return 0
