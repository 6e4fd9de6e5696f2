"""Trials in waves, stopped by an anytime-valid interval (`trials: {min, max, until: decided}`):
after each wave, per tool against the baseline of the same model and host, a confidence
sequence (mcptrials.stats.sequential) of the paired difference in fairness decides whether the
tool needs another wave.

The observations of a tool: per trial number k and scenario s, the tool's fairness minus the
baseline's, both of trial k of scenario s (in [-1, 1]); a trial number is one block of the
sequence, its scenarios in a fixed order (the run's), so the sequence covers the mean over the
run's scenarios of the tool's expected difference: the difference on these scenarios, given
their trials, not on tasks at large (the report's clustered headline interval is about that,
and stays). A trial number where a pair is missing (a missing trial: api_failed,
harness_failed, not_run) is left out whole, and named (`skipped_trials`): the next invocation
retries the missing trial and decides again.

Wave 1 runs trials 1..min of every cell; each later wave one more trial number of the cells
still undecided (and of the baseline while any tool of its model and host is), up to max.
The wave records (results/sequential/{model}/wave-{w}.json, `decide_wave`) are the
checkpoints of the workflow (workflow/rules/sequential.smk).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mcptrials.stats.sequential import BETTING, UNDECIDED, confidence_sequence, sequential_decision

# Why a tool stopped (summary.json `sequential`, the report): decided (with the decision),
# max (undecided after max trials), budget (the next wave did not fit budget.max_cost_usd).
DECIDED, MAX, BUDGET = "decided", "max", "budget"
METHOD = (
    "hedged-capital betting confidence sequence (Waudby-Smith & Ramdas 2024, JRSS-B 86(1), Theorem 3; "
    "mcptrials.stats.sequential) of the paired difference in fairness, one block per trial number over the "
    "run's scenarios, read after every wave: better above +margin, worse below -margin, equivalent within"
)

Scores = Mapping[tuple[str, str, int], "float | None"]  # (tool, scenario, trial) -> fairness


def paired_values(
    scores: Scores, tool: str, baseline: str, scenarios: list[str], trials: Iterable[int]
) -> tuple[list[float], list[int], list[int]]:
    """The tool's observations, block after block: for each trial number k (in order) whose
    every scenario has both fairness values, tool - baseline per scenario. Returns (values,
    trial numbers used, trial numbers skipped for a missing pair)."""
    values: list[float] = []
    used, skipped = [], []
    for k in trials:
        block = []
        for s in scenarios:
            a, b = scores.get((tool, s, k)), scores.get((baseline, s, k))
            if a is None or b is None:
                break
            block.append(a - b)
        else:
            values += block
            used.append(k)
            continue
        skipped.append(k)
    return values, used, skipped


def tool_decision(
    scores: Scores, tool: str, baseline: str, scenarios: list[str], trials: int, alpha: float, margin: float
) -> dict:
    """The decision on `tool` against `baseline` after trials 1..`trials`: {decision (better,
    worse, equivalent, undecided), lo, hi (the sequence's interval now; None before any complete
    trial number), trials_used, skipped_trials}."""
    values, used, skipped = paired_values(scores, tool, baseline, scenarios, range(1, trials + 1))
    out: dict = {"decision": UNDECIDED, "lo": None, "hi": None, "trials_used": len(used), "skipped_trials": skipped}
    if values:
        lo, hi = confidence_sequence(values, -1.0, 1.0, alpha, block=len(scenarios), method=BETTING)[-1]
        out.update(lo=lo, hi=hi, decision=sequential_decision(lo, hi, margin))
    return out
