"""A replay of the whole demo against the demo run's own wall time (issue 22: under 10%).

    python bench/replay_speed.py [--runs 3]

Per run: the demo project (config, scenarios, bundle, workflow, anchor) copied to a fresh
folder; `snakemake -j 2` there from no results (the tool installs shared through
$MCPTRIALS_TOOLS_DIR, as the tests do, so installs are not timed: `make demo` does not redo
them either), timed; then `mcptrials replay results` in that folder (every server tool, every
trial, no model), timed. Prints each run's figures and the medians, and the replay's share of
the demo run. Numbers only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("config.yaml", "Snakefile", "workflow", "scenarios", "demo", "locked")


def timed(argv: list[str], cwd: Path, env: dict) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.monotonic()
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - t0, p


def one_run(env: dict) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory(prefix="mcptrials-replay-bench-") as tmp:
        wd = Path(tmp)
        for name in PROJECT:
            src = ROOT / name
            (shutil.copytree if src.is_dir() else shutil.copy)(src, wd / name)
        demo_s, p = timed([sys.executable, "-m", "snakemake", "-j", "2", "--scheduler", "greedy", "-q"], wd, env)
        if p.returncode != 0:
            raise SystemExit(f"the demo run failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}")
        replay_s, p = timed([sys.executable, "-m", "mcptrials.cli", "replay", "results"], wd, env)
        if p.returncode != 0:
            raise SystemExit(f"the replay exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        last = p.stdout.strip().splitlines()
        return (
            demo_s,
            replay_s,
            "; ".join(
                ln.split(":")[0] + ": " + ln.split(": ", 2)[-1]
                for ln in last
                if ln and not ln.startswith((" ", "replay", "result"))
            ),
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    env = dict(
        os.environ,
        MCPTRIALS_TOOLS_DIR=str(ROOT / ".tools"),
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
    )
    if not (ROOT / ".tools").is_dir():
        print("no .tools/ here: run `make demo` once first (it installs the demo's servers)")
        return 1
    demos, replays = [], []
    print("| run | demo run (s) | replay (s) | share |")
    print("|---|---|---|---|")
    what = ""
    for i in range(1, args.runs + 1):
        d, r, what = one_run(env)
        demos.append(d)
        replays.append(r)
        print(f"| {i} | {d:.2f} | {r:.2f} | {r / d:.1%} |")
    d, r = statistics.median(demos), statistics.median(replays)
    print(f"| median | {d:.2f} | {r:.2f} | {r / d:.1%} |")
    print(f"replayed: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
