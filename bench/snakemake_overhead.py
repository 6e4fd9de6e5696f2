"""Total Snakemake overhead per trial, across all per-trial stages (transcript, scored, judged).

    python bench/snakemake_overhead.py [--trials 20] [-j 1] [--models reference,claude]

Builds a temporary project (the tiny test repo, one scenario, the baseline tool, N trials)
and, once its checkout and tool snapshot exist, runs the N trials' `scored.json` and
`judged.json` targets through Snakemake for
  - the `reference` model, and
  - the `anthropic` provider against the test Messages-API server answering at once
    (a grep tool call, then the answer),
each with and without the warm trial worker (MCPTRIALS_NO_WORKER=1 turns it off).
Prints, per configuration:
  wall       the whole `snakemake` run
  fixed      a run with nothing left to do (start-up, parsing, DAG): paid once per run
  trials     the sum of the trials' own wall_seconds (transcript.json)
  per trial  (wall - fixed - trials) / N: what each trial costs beyond its own run, i.e.
             Snakemake's scheduling plus three processes (run-trial, score, judge) and
             their imports; at -j 1 nothing overlaps, so the sum is the cost
and that per-trial overhead as a share of a 60-second trial.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fakes.messages_api import FakeMessagesAPI, reply, text, tool_use  # noqa: E402
from matrix_helpers import write_matrix  # noqa: E402
from workflow_helpers import copy_workflow  # noqa: E402


def snakemake(wd: Path, env: dict, *args) -> float:
    t0 = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--directory",
            str(wd),
            "--snakefile",
            str(wd / "Snakefile"),
            "--configfile",
            str(wd / "config.yaml"),
            "--scheduler",
            "greedy",
            "-q",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    if p.returncode != 0:
        raise SystemExit(p.stdout[-2000:] + p.stderr[-3000:])
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("-j", "--jobs", type=int, default=1)
    ap.add_argument("--models", default="reference,claude", help="comma-separated: reference, claude")
    args = ap.parse_args()
    n = args.trials
    script = [
        reply(text("Searching."), tool_use("grep", {"pattern": "def helper"})),
        reply(text("`helper` is at `src/util.py:1`; it returns `x * 2`.")),
    ]
    with (
        tempfile.TemporaryDirectory(prefix="mcptrials-smk-") as d,
        FakeMessagesAPI(script * (2 * n + 4), exhausted="repeat") as api,
    ):
        wd = Path(d)
        write_matrix(
            wd,
            trials=n,
            extra={
                "models": {
                    "reference": {"provider": "reference"},
                    "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url},
                }
            },
        )
        copy_workflow(wd)
        base_env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(wd),
            "ANTHROPIC_API_KEY": "sk-bench",
        }
        snakemake(wd, dict(base_env, MCPTRIALS_NO_WORKER="1"), "-j", "2", "results/snapshots/baseline/tiny/tools.json")
        print(f"{n} trials per run, -j {args.jobs}; per-trial stages: transcript, scored, judged")
        print(
            f"{'model':<10} {'worker':<7} {'wall s':>7} {'fixed s':>8} {'trials s':>9} {'per trial s':>12} "
            f"{'of 60 s':>8}"
        )
        for model in args.models.split(","):
            dirs = [f"results/runs/{model}/loop/baseline/tiny/find-helper/{k}" for k in range(1, n + 1)]
            targets = [f"{x}/{stage}.json" for x in dirs for stage in ("scored", "judged")]
            for worker in (False, True):
                env = dict(base_env) if worker else dict(base_env, MCPTRIALS_NO_WORKER="1")
                shutil.rmtree(wd / "results" / "runs", ignore_errors=True)
                wall = snakemake(wd, env, "-j", str(args.jobs), *targets)
                fixed = snakemake(wd, env, "-j", str(args.jobs), *targets)  # nothing left to do
                trials = sum(json.loads((wd / x / "transcript.json").read_text())["wall_seconds"] for x in dirs)
                per = (wall - fixed - trials) / n
                print(
                    f"{model:<10} {'yes' if worker else 'no':<7} {wall:>7.1f} {fixed:>8.1f} {trials:>9.2f} "
                    f"{per:>12.2f} {100 * per / 60:>7.1f}%",
                    flush=True,
                )
                if worker:
                    log = (wd / "results" / "logs" / "worker.log").read_text()
                    assert log.count("exit code 0") >= 3 * n, "the trials did not go through the worker"
                    (wd / "results" / "logs" / "worker.log").unlink()


if __name__ == "__main__":
    os.environ.pop("MCPTRIALS_WORKER", None)
    os.environ.pop("MCPTRIALS_WORKER_TCP", None)
    main()
