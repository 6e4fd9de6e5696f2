"""`mcptrials import sense-bench`: the command line of both reference-bench imports, its main
results (importers.sense_bench) and its verticals' runs (importers.sense_verticals)."""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.importers import sense_bench
from mcptrials.importers.sense_verticals import import_verticals
from mcptrials.importers.sense_verticals import summary as vertical_summary


def cmd_import_sense_bench(args) -> int:
    if args.vertical:
        for doc in import_verticals(
            args.bench_dir,
            args.vertical,
            args.out,
            pins_file=args.pins,
            pin_args=args.pin or (),
            mirrors_file=args.mirrors,
        ):
            print(vertical_summary(doc))
        return 0
    try:
        doc = sense_bench.import_bench(
            args.bench_dir, args.out, pins_file=args.pins, pin_args=args.pin or (), skip_unpinned=args.skip_unpinned
        )
    except ConfigError as e:
        report = Path(args.out) / "import-report.json"
        if report.exists() and str(e).startswith("wrote "):
            print(sense_bench.summary(dict(json.loads(report.read_text()))))
        raise
    print(sense_bench.summary(doc))
    return 0


def register(sub) -> None:
    p = sub.add_parser("import", help="convert another benchmark's scenarios and runs into mcptrials files")
    isub = p.add_subparsers(dest="source", required=True)
    s = isub.add_parser(
        "sense-bench", help="the reference bench (luuuc/sense bench/): scenarios, rubrics, pins, results"
    )
    s.add_argument("bench_dir", metavar="BENCH_DIR", help="the bench/ folder (or the repository root holding it)")
    s.add_argument(
        "--out", required=True, metavar="DIR", help="where to write scenarios/, config.yaml, import-report.json"
    )
    s.add_argument("--pins", metavar="FILE", help="another PINNED_COMMITS.json, merged over the bench's own")
    s.add_argument(
        "--pin", action="append", metavar="REPO=COMMIT[,URL]", help="one repo's pin (wins over the ledgers); repeatable"
    )
    s.add_argument("--skip-unpinned", action="store_true", help="leave out scenarios whose repo has no pin (reported)")
    s.add_argument(
        "--vertical",
        metavar="NAME",
        help="import the runs of verticals/NAME/ (many models and agents) "
        "instead of results/; `all`: each vertical into OUT/<name>/",
    )
    s.add_argument(
        "--mirrors",
        metavar="FILE",
        help="--vertical: a mirrors file (the pack's format) to resolve the runs' "
        "short commits on; a repo without one stays unresolved (citations "
        "not checked)",
    )
    s.set_defaults(func=cmd_import_sense_bench)
