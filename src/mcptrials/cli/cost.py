"""`mcptrials plan [--cost] --config CONFIG` (the cost plan, mcptrials.cost.plan) and
`mcptrials pilot --config CONFIG` (trial 1 of every cell, to measure what the run will cost).

The pilot runs the real workflow in the current folder (the project) with one more config
file merged over CONFIG, results/budget/pilot.yaml = `trials: 1`, and `--until transcript`:
trial 1 of every cell, with its checkouts, installs and snapshots, and nothing downstream
(no scores, judgements or report). `trials` changes only the shape of the matrix (rerun
table), so those trials are the run's own trial 1: the full run afterwards keeps them and
runs only the others, and `plan --cost` prices every cell from its measured trial. The
pilot is under the budget like any run (its own cost: one trial per cell). Arguments after
`--` go to snakemake (default `--profile profiles/local` when the project has it, else `-j 1`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config, matrix_line

PILOT_CONFIG = Path("budget") / "pilot.yaml"  # under the results folder


def register(sub) -> None:
    p = sub.add_parser(
        "plan", help="print the run's plan; with --cost, its expected cost and upper bound per model and tool"
    )
    add_config(p)
    p.add_argument("--cost", action="store_true", help="the expected cost (measured usage, else the upper bound)")
    p.add_argument("--results", default="results", help="the results folder whose earlier trials are measured")
    p.set_defaults(func=cmd_plan)
    q = sub.add_parser("pilot", help="run trial 1 of every cell (snakemake --until transcript), to measure the cost")
    add_config(q)
    q.add_argument("--results", default="results")
    q.add_argument("--print", action="store_true", help="print the snakemake command instead of running it")
    q.add_argument("snakemake_args", nargs="*", help="after --: arguments for snakemake")
    q.set_defaults(func=cmd_pilot)


def cmd_plan(args) -> int:
    from mcptrials.cost.plan import format_plan
    from mcptrials.dag.preflight import run_plan

    m = load_config(args)
    print(f"{m.path}: {matrix_line(m)}")
    if args.cost:
        print(format_plan(run_plan(m, Path(args.results)), str(args.config)))
        if m.sequential:  # the plan above is the waves planned so far; what the whole run can cost:
            from mcptrials.analyze.wave_cost import wave_cost_line

            print(wave_cost_line(m, Path(args.results)))
    return 0


def pilot_command(config: str, results: Path, extra: list[str]) -> list[str]:
    """The snakemake command of the pilot; writes the overlay config it names."""
    overlay = Path(results) / PILOT_CONFIG
    overlay.parent.mkdir(parents=True, exist_ok=True)
    overlay.write_text("# written by `mcptrials pilot`: trial 1 of every cell\ntrials: 1\n")
    files = [f for f in str(config).split(os.pathsep) if f] + [str(overlay)]
    if not extra:
        extra = ["--profile", "profiles/local"] if Path("profiles/local").is_dir() else ["-j", "1"]
    return [sys.executable, "-m", "snakemake", "--configfile", *files, "--until", "transcript", *extra]


def cmd_pilot(args) -> int:
    load_config(args)  # bad input stops here, with the file and the field
    cmd = pilot_command(args.config, Path(args.results), list(args.snakemake_args))
    if args.print:
        print(" ".join(cmd))
        return 0
    print("mcptrials pilot: " + " ".join(cmd), file=sys.stderr)
    code = subprocess.call(cmd)
    if code == 0:
        print(
            f"mcptrials pilot: done; `mcptrials plan --cost --config {args.config}` now prices every cell from its trial 1",
            file=sys.stderr,
        )
    return code
