"""The sequential decision after a wave, at scale: time the decisions of every tool against the
baseline for N synthetic trials.

    python bench/sequential_decision.py [--trials 10000] [--runs 5]

Makes fairness scores for 5 tools (the baseline among them) x 2 models x 50 scenarios x
N/500 trials (none missing: every trial number is a complete block, the most work), then times mcptrials.analyze.sequential.tool_decision for the 4 tools
of both models (8 decisions, each a betting confidence sequence over its N/500 trial numbers of
50 paired differences). Prints the median wall time of `--runs` runs and the decisions.
The target (issue 36): under 1 s for 10,000 trials.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from mcptrials.analyze.sequential import tool_decision  # noqa: E402

TOOLS = ("baseline", "git", "filesystem", "search", "code-intel")
EFFECT = {"baseline": 0.0, "git": 0.15, "filesystem": 0.0, "search": -0.1, "code-intel": 0.03}
MODELS = ("reference", "sonnet")
SCENARIOS = [f"s{i:02d}" for i in range(50)]


def scores(trials: int, seed: int = 36) -> dict:
    """model -> (tool, scenario, trial) -> fairness, uniform on the scenario's mean + the tool's effect +/- 0.15."""
    rng = random.Random(seed)
    per_cell = max(1, trials // (len(TOOLS) * len(MODELS) * len(SCENARIOS)))
    out: dict = {}
    for model in MODELS:
        table = out.setdefault(model, {})
        base = {s: rng.uniform(0.2, 0.65) for s in SCENARIOS}
        for tool in TOOLS:
            for s in SCENARIOS:
                for k in range(1, per_cell + 1):
                    v = base[s] + EFFECT[tool] + rng.uniform(-0.15, 0.15)
                    table[tool, s, k] = min(1.0, max(0.0, v))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    table = scores(a.trials)
    per_cell = max(1, a.trials // (len(TOOLS) * len(MODELS) * len(SCENARIOS)))
    n = sum(len(t) for t in table.values())
    times, decisions = [], {}
    for _ in range(a.runs):
        t0 = time.perf_counter()
        for model, sc in table.items():
            for tool in TOOLS[1:]:
                decisions[model, tool] = tool_decision(sc, tool, "baseline", SCENARIOS, per_cell, 0.05, 0.05)
        times.append(time.perf_counter() - t0)
    print(
        f"{n} trials ({len(TOOLS)} tools x {len(MODELS)} models x {len(SCENARIOS)} scenarios x {per_cell} trials, "
        f"none missing): {len(decisions)} decisions in {statistics.median(times):.3f} s (median of {a.runs}; "
        f"min {min(times):.3f}, max {max(times):.3f})"
    )
    for (model, tool), d in decisions.items():
        print(
            f"  {model:9} {tool:10} true {EFFECT[tool]:+.2f}: {d['decision']:10} [{d['lo']:+.3f}, {d['hi']:+.3f}] "
            f"after {d['trials_used']} trial numbers"
        )


if __name__ == "__main__":
    main()
