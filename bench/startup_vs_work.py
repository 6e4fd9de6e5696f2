"""How a trial's wall time splits: server start-up, the agent's work, the harness's rest.

    python bench/startup_vs_work.py [results/aggregate/trials.csv]

Reads a finished run's trials.csv (after `make demo`, nothing is rerun) and prints per tool
the median over its completed trials of wall_seconds, server_startup_seconds, work_seconds
(graders.usage.work_seconds: the steps' wall time, what efficiency compares) and the rest
(wall - start-up - work: sandbox, tools/list, server shutdown, clean-up), with the share of
wall time each takes. Numbers only: nothing is asserted.
"""

from __future__ import annotations

import csv
import statistics
import sys
from pathlib import Path


def num(v: str) -> float | None:
    return float(v) if v not in ("", None) else None


def main(path: str = "results/aggregate/trials.csv") -> int:
    rows = [r for r in csv.DictReader(open(Path(path))) if r["completed"] == "True"]
    if not rows:
        print(f"{path}: no completed trial; run `make demo` first")
        return 1
    print("| tool | trials | wall (median) | start-up | work | rest | start-up share | work share |")
    print("|---|---|---|---|---|---|---|---|")
    for tool in dict.fromkeys(r["tool"] for r in rows):
        rs = [r for r in rows if r["tool"] == tool]
        wall = [num(r["wall_seconds"]) for r in rs]
        start = [num(r["server_startup_seconds"]) or 0.0 for r in rs]
        work = [num(r["work_seconds"]) for r in rs]
        rest = [w - s - k for w, s, k in zip(wall, start, work)]
        med = statistics.median
        share = lambda xs: med([x / w for x, w in zip(xs, wall) if w]) * 100  # noqa: E731
        print(
            f"| {tool} | {len(rs)} | {med(wall):.3f} s | {med(start):.3f} s | {med(work):.3f} s | "
            f"{med(rest):.3f} s | {share(start):.0f}% | {share(work):.0f}% |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
