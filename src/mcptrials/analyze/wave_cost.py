"""What a run in waves (`trials: {min, max, until: decided}`) can cost, before it runs: the
least (every cell stops after the first wave, `min` trials), the expected (from the history:
the trials already in results/runs, when every tool has at least two paired trials in every
scenario) and the most (every cell runs to `max`). Printed by `mcptrials validate` and
`mcptrials plan --cost`.

Each cell is priced per trial as the cost plan prices it (mcptrials.cost.plan.cell_cost: the
measured mean of its earlier trials, else its upper bound; with its judge's cost). The expected
number of trials of a tool comes from replaying the decision on its history: each of REPLAYS
runs draws, wave after wave, one of the tool's observed paired differences per scenario (with
replacement) and stops where the confidence sequence decides (mcptrials.analyze.sequential), or
at max; the expectation is the mean over the runs (fixed seed). The baseline of a model and host
runs as long as its longest tool, in each run.
"""

from __future__ import annotations

from pathlib import Path

from mcptrials.analyze.sequential import fairness_table, model_hosts, settings
from mcptrials.core.identity import TrialKey
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.stats.sequential import BETTING, UNDECIDED, confidence_sequence, sequential_decision

REPLAYS = 200
SEED = 36


def history_keys(m: Matrix, results) -> list[TrialKey]:
    """The trials of the matrix (any trial number up to max) whose records are all there."""
    runs = Path(results) / "runs"
    names = ("transcript.json", "run_meta.json", "scored.json", "judged.json")
    return [k for k in m.cells() if all((k.dir(runs) / n).is_file() for n in names)]


def replay_stops(diffs: dict[str, list[float]], low: int, high: int, alpha: float, margin: float) -> list[int]:
    """For each of REPLAYS runs, the trials a tool gets: the first trial number from `low` on
    where the sequence over resampled differences (one per scenario and trial, drawn from
    `diffs`: scenario -> its observed differences) decides, else `high`."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    scenarios = sorted(diffs)
    pools = [np.asarray(diffs[s], dtype=float) for s in scenarios]
    stops = []
    for _ in range(REPLAYS):
        path = np.column_stack([rng.choice(p, size=high) for p in pools]).ravel().tolist()
        cs = confidence_sequence(path, -1.0, 1.0, alpha, block=len(scenarios), method=BETTING)
        stop = next((k for k in range(low, high + 1) if sequential_decision(*cs[k - 1], margin) != UNDECIDED), high)
        stops.append(stop)
    return stops


def expected_trials(m: Matrix, results) -> tuple[dict | None, str]:
    """((model, host, tool) -> expected trials per scenario, baseline included) from the
    history, and in words what it rests on; (None, why) when some tool lacks the history."""
    seq = m.sequential or {}
    alpha, margin = settings(m)
    scenarios = [sc.id for sc in m.run_scenarios()]
    keys = history_keys(m, results)
    out: dict = {}
    for model in m.models:
        scores = fairness_table(m, results, [k for k in keys if k.model == model]) if keys else {}
        for host in model_hosts(m, model):
            table, runs = scores.get(host, {}), []
            for tool in (t for t in m.tools if t != BASELINE):
                diffs = {s: _pairs(table, tool, s) for s in scenarios}
                thin = [s for s, d in diffs.items() if len(d) < 2]
                if thin:
                    return None, f"none: {model} {host} {tool} has fewer than 2 paired trials in scenario {thin[0]}"
                runs.append(replay_stops(diffs, seq["min"], seq["max"], alpha, margin))
                out[model, host, tool] = sum(runs[-1]) / len(runs[-1])
            if runs:
                out[model, host, BASELINE] = sum(map(max, zip(*runs))) / REPLAYS
    return out, f"the decisions replayed {REPLAYS} times on the {len(keys)} finished trial(s) in {results}/runs"


def _pairs(table: dict, tool: str, scenario: str) -> list[float]:
    """The tool's paired differences in one scenario: trial numbers both it and the baseline have."""
    out = []
    for (t, s, k), v in table.items():
        b = table.get((BASELINE, s, k))
        if t == tool and s == scenario and v is not None and b is not None:
            out.append(v - b)
    return out


def wave_costs(m: Matrix, results=Path("results")) -> dict:
    """{least, expected, most} in USD (None: a cost that cannot be known), the trials of each,
    and `basis`, what the expectation rests on (see the module docstring)."""
    from mcptrials.cost.plan import cost_plan

    seq = m.sequential or {}
    per_trial: dict[tuple, float | None] = {}
    for c in cost_plan(m, Path(results)).cells:
        trial, judge = c.per_trial, c.judge_per_trial
        per_trial[c.model, c.host, c.tool, c.scenario] = None if trial is None or judge is None else trial + judge
    expected, basis = expected_trials(m, results)

    def total(trials_of) -> tuple[float | None, float]:
        costs = [(v, trials_of(k)) for k, v in per_trial.items()]
        n = sum(t for _, t in costs)
        return (None if any(v is None for v, _ in costs) else sum(v * t for v, t in costs)), n

    least, n_least = total(lambda k: seq["min"])
    most, n_most = total(lambda k: seq["max"])
    out = {"least": least, "most": most, "trials_least": n_least, "trials_most": n_most, "basis": basis}
    out["expected"], out["trials_expected"] = total(lambda k: expected[k[:3]]) if expected else (None, None)
    return out


def wave_cost_line(m: Matrix, results=Path("results")) -> str:
    """`in waves: least $0.12 (24 trials), expected $0.20 (41 trials; ...), most $0.48 (96 trials)`."""
    from mcptrials.cost.plan import usd

    c, seq = wave_costs(m, results), m.sequential or {}
    expected = (
        f"expected {usd(c['expected'])} ({c['trials_expected']:.0f} trials; {c['basis']})"
        if c["trials_expected"] is not None
        else f"expected: {c['basis']}"
    )
    return (
        f"in waves (trials min {seq['min']}, max {seq['max']}): least {usd(c['least'])} "
        f"({c['trials_least']} trials, every tool decided after the first wave), {expected}, "
        f"most {usd(c['most'])} ({c['trials_most']} trials, every tool to max)"
    )
