"""What a run in waves pays per wave for its checkpoint, read off a finished run:

    snakemake --configfile config.yaml configs/waves.yaml -j2     # the demo in waves, once
    python bench/wave_overhead.py [--results results] [--model reference]

Per wave (results/sequential/<model>/wave-<w>.json): its wall time, from its first trial's start
(run_meta.json `started_at`) to its record written; and the gap from the previous wave's record
to this wave's first trial start: Snakemake's re-evaluation of the DAG after the checkpoint plus
the first job's start-up. Issue 36's target: the re-evaluation under 10% of a wave's wall time.
The checkpoint job itself (`mcptrials decide`) runs inside the previous wave's time; time it alone with
`/usr/bin/time mcptrials decide --config ... --model M --wave W --out /tmp/w.json`.
"""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from pathlib import Path


def started(results: Path, model: str, trials: list[int]) -> list[float]:
    return [
        datetime.fromisoformat(json.loads(p.read_text())["started_at"]).timestamp()
        for t in trials
        for p in results.glob(f"runs/{model}/*/*/*/*/{t}/run_meta.json")
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", default="results")
    ap.add_argument("--model", default="reference")
    a = ap.parse_args()
    results = Path(a.results)
    waves = sorted(results.glob(f"sequential/{a.model}/wave-*.json"), key=lambda p: int(p.stem.split("-")[1]))
    before = None
    for p in waves:
        rec = json.loads(p.read_text())
        first, end = min(started(results, a.model, rec["trials"])), p.stat().st_mtime
        line = f"wave {rec['wave']} (trial {', '.join(map(str, rec['trials']))}): {end - first:.1f} s"
        if before is not None:
            gap = first - before
            line += (
                f"; after wave {rec['wave'] - 1}'s record: {gap:.2f} s to its first trial ({gap / (end - first):.1%})"
            )
        print(line)
        before = end


if __name__ == "__main__":
    main()
