"""Dry-run cost of the DAG: wall time and peak memory of `snakemake -n` for N trial cells.

    python bench/dag_scale.py [N ...]        (default: 1000 10000)

Builds a synthetic matrix in a temporary folder (1 model x 5 tools x S scenarios x T
trials = N cells, each cell 3 per-trial jobs), then times a dry run of the whole plan.
`-q` keeps Snakemake from printing 30,000 job descriptions (printing them doubles the
time). Prints a table; asserts nothing (targets are read by people, not tests).
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from matrix_helpers import SCENARIO, faulty_tool, make_repo  # noqa: E402


def build(tmp: Path, cells: int) -> tuple[int, int]:
    tools = {"baseline": {"transport": "none"}}
    for i in range(4):
        tools[f"server{i}"] = faulty_tool("ok")
    trials = 10
    n_scen = max(1, cells // (len(tools) * trials))
    commit = make_repo(tmp / "repo")
    (tmp / "scenarios").mkdir()
    for i in range(n_scen):
        (tmp / "scenarios" / f"s{i:05d}.yaml").write_text(yaml.safe_dump(SCENARIO))
    cfg = {
        "tools": tools,
        "repos": {"tiny": {"url": "repo", "commit": commit}},
        "scenarios": "scenarios/*.yaml",
        "models": {"reference": {"provider": "reference"}},
        "trials": trials,
    }
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))
    shutil.copy(ROOT / "Snakefile", tmp / "Snakefile")
    shutil.copytree(ROOT / "workflow", tmp / "workflow")
    return n_scen, len(tools) * n_scen * trials


def dry_run(tmp: Path) -> tuple[float, float, float]:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu0 = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    t0 = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--directory",
            str(tmp),
            "--snakefile",
            str(tmp / "Snakefile"),
            "--configfile",
            str(tmp / "config.yaml"),
            "--scheduler",
            "greedy",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime - cpu0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-3000:])
    # ru_maxrss of children is the max over all children so far: run sizes in increasing order.
    # CPU time next to wall time shows how much of the wall was waiting (a busy machine).
    return wall, max(peak, before) / 1024, cpu


def main(sizes: list[int]) -> None:
    print(f"{'cells':>8} {'scenarios':>9} {'jobs':>8} {'dry run s':>10} {'CPU s':>7} {'peak MB':>8}")
    for n in sorted(sizes):
        with tempfile.TemporaryDirectory(prefix="mcptrials-dag-") as d:
            tmp = Path(d)
            n_scen, cells = build(tmp, n)
            wall, mb, cpu = dry_run(tmp)
            jobs = 3 * cells  # transcript, scored, judged per trial (+ a few per repo and tool)
            print(f"{cells:>8} {n_scen:>9} {jobs:>8} {wall:>10.1f} {cpu:>7.1f} {mb:>8.0f}", flush=True)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10000])
