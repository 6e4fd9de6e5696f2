"""Grading throughput: transcripts graded per second by the deterministic graders.

    python bench/grading_throughput.py [--rounds 20]

Makes one transcript per training scenario of the demo (the reference model, baseline tool,
demo/shop.bundle at the demo's pinned commit; run in-process), then grades them:
  in-process   `score_trial` called in a loop (the first call, with its imports, apart)
  per process  one `mcptrials score` process per transcript, as the `scored` rule runs it
Prints transcripts per second (one core) and milliseconds per transcript.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20, help="in-process passes over the transcripts")
    args = ap.parse_args()
    demo = yaml.safe_load((ROOT / "config.yaml").read_text())
    commit = demo["repos"]["demo"]["commit"]
    with tempfile.TemporaryDirectory(prefix="mcptrials-grade-") as d:
        tmp = Path(d)
        cfg = {"tools": {"baseline": {"transport": "none"}},
               "repos": {"demo": {"url": str(ROOT / demo["repos"]["demo"]["url"]), "commit": commit}},
               "scenarios": str(ROOT / "scenarios" / "*.yaml"), "splits": ["train"],
               "models": {"reference": {"provider": "reference"}}, "trials": 1}
        (tmp / "config.yaml").write_text(yaml.safe_dump(cfg))

        t0 = time.monotonic()
        from mcptrials.prepare.checkout import checkout
        from mcptrials.matrix.config import load_matrix
        from mcptrials.core.records import write_json
        from mcptrials.run.runner import run_trial

        m = load_matrix(tmp / "config.yaml")
        co = checkout("demo", m.repo_source("demo"), cfg["repos"]["demo"]["url"], commit, tmp / "co")
        cases = []
        for sc in m.run_scenarios():
            out = tmp / "runs" / sc.path.stem
            transcript, _ = run_trial(m, "reference", "baseline", sc.path.stem, 1, co, None, None, out)
            write_json(out / "transcript.json", transcript)
            cases.append((transcript, sc, out / "transcript.json"))
        print(f"made {len(cases)} transcripts in {time.monotonic() - t0:.1f} s "
              f"({sum(len(t['steps']) for t, _, _ in cases)} steps, "
              f"{sum(len(t['tool_calls']) for t, _, _ in cases)} tool calls)")

        t0 = time.monotonic()
        from mcptrials.grade.scoring import score_trial

        score_trial(cases[0][0], cases[0][1].data, co["tree"], commit, None, None)
        first = time.monotonic() - t0
        t0 = time.monotonic()
        for _ in range(args.rounds):
            for transcript, sc, _ in cases:
                score_trial(transcript, sc.data, co["tree"], commit, None, None)
        n = args.rounds * len(cases)
        per = (time.monotonic() - t0) / n

        walls = []
        for _ in range(3):
            for _, sc, path in cases:
                t1 = time.monotonic()
                subprocess.run([sys.executable, "-m", "mcptrials.cli", "score", "--transcript", str(path),
                                "--scenario", str(sc.path), "--repo-dir", co["tree"], "--commit", commit,
                                "--config", str(tmp / "config.yaml"), "--out", str(path.parent / "scored.json")],
                               check=True, capture_output=True)
                walls.append(time.monotonic() - t1)
        proc = statistics.median(walls)

        print(f"{'grading':<34} {'ms / transcript':>15} {'transcripts / s':>15}")
        print(f"{'score_trial, first call (imports)':<34} {1000 * first:>15.1f} {1 / first:>15.1f}")
        print(f"{'score_trial, in-process, warm':<34} {1000 * per:>15.2f} {1 / per:>15.1f}")
        print(f"{'mcptrials score, one process each':<34} {1000 * proc:>15.1f} {1 / proc:>15.2f}")


if __name__ == "__main__":
    main()
