"""Importing and grading one of the reference bench's verticals, timed (issue 23 item 6:
the ruby-rails vertical, about 160 runs of up to 3 MB, in under 5 minutes on 2 cores).

    python bench/sense_vertical_speed.py BENCH_DIR [--vertical ruby-rails] [--mirrors FILE] [-j 2]

In a fresh temporary folder: `mcptrials import sense-bench BENCH_DIR --vertical NAME`
(timed), then `snakemake -j J` of the written config (every run converted, scored and judged
by the recorded judge, then aggregate and report; timed), then `mcptrials
compare-sense-bench --vertical NAME` (timed). Prints the three times, the trials, the
recordings' total size, and the per-model means of both boards. BENCH_DIR is your copy of
the bench (nothing of it is copied). Numbers only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cwd: Path) -> float:
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv[:6])}... failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
    return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_dir")
    ap.add_argument("--vertical", default="ruby-rails")
    ap.add_argument(
        "--mirrors",
        help="a mirrors file for the repositories (else every short commit stays unresolved "
        "unless the bench's ledger has it)",
    )
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="mcptrials-vertical-bench-") as tmp:
        tmp = Path(tmp)
        out, wd = tmp / "import", tmp / "run"
        wd.mkdir()
        shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
        shutil.copytree(ROOT / "workflow", wd / "workflow")
        imp = [
            py,
            "-m",
            "mcptrials.cli",
            "import",
            "sense-bench",
            args.bench_dir,
            "--vertical",
            args.vertical,
            "--out",
            str(out),
        ] + (["--mirrors", args.mirrors] if args.mirrors else [])
        t_import = timed(imp, wd)
        t_run = timed(
            [
                py,
                "-m",
                "snakemake",
                "--configfile",
                str(out / "config.yaml"),
                f"-j{args.j}",
                "--scheduler",
                "greedy",
                "-q",
            ],
            wd,
        )
        t_board = timed(
            [
                py,
                "-m",
                "mcptrials.cli",
                "compare-sense-bench",
                "--vertical",
                args.vertical,
                "--config",
                str(out / "config.yaml"),
                "--bench",
                args.bench_dir,
            ],
            wd,
        )
        rows = list(csv.DictReader((wd / "results/aggregate/trials.csv").open()))
        size = sum(os.path.getsize(p) for p in (out / "recordings").rglob("transcript.json"))
        means = list(csv.DictReader((wd / "results/sense-board/means.csv").open()))
    print(
        f"vertical {args.vertical}: {len(rows)} trials ({sum(r['missing'] == 'False' for r in rows)} graded), "
        f"recordings {size / 1e6:.0f} MB, -j {args.j} on {os.cpu_count()} cores"
    )
    print(
        f"import {t_import:.1f} s, snakemake {t_run:.1f} s, board {t_board:.1f} s, "
        f"total {t_import + t_run + t_board:.1f} s"
    )
    print("| model | bench mean Δ | our mean Δ | bench deps Δ | our deps Δ |")
    print("|---|---|---|---|---|")
    f = lambda x: "–" if x in ("", None) else f"{float(x):+.2f}"  # noqa: E731
    for x in means:
        print(
            f"| {x['model']} | {f(x['bench_mean_delta'])} | {f(x['ours_mean_delta'])} | "
            f"{f(x['bench_mean_deps_delta'])} | {f(x['ours_mean_deps_delta'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
