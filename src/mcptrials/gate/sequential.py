"""The gate's interval when both runs went in waves (`trials: {min, max, until: decided}`):
the number of trials each tool ran depends on its scores (it stopped when decided), so the
gate reads HEAD - BASE off a confidence sequence, which holds whatever the stopping, instead of
the fixed-n t interval of the scenarios' means (mcptrials.gate.decision.paired_figures).

The observations: per trial number k that both runs have for every scenario, HEAD's fairness
of trial k minus BASE's, per scenario (one block per k: mcptrials.analyze.sequential.paired_values),
and the betting confidence sequence of their mean at error 1 - GATE_LEVEL (mcptrials.stats.sequential):
each side misses with probability at most (1 - GATE_LEVEL) / 2, the same one-sided level 0.05
as the 90% interval the margin test reads (mcptrials.stats.paired.margin_test)."""

from __future__ import annotations

from typing import Any

from mcptrials.analyze.sequential import paired_values
from mcptrials.core.keys import FAIRNESS
from mcptrials.core.rows import TrialRow
from mcptrials.gate.decision import GATE_LEVEL
from mcptrials.stats.sequential import BETTING, confidence_sequence

METHOD = (
    "betting confidence sequence (Waudby-Smith & Ramdas 2024) of HEAD - BASE fairness, paired by scenario and "
    "trial number over the trial numbers both runs have for every scenario (both runs went in waves)"
)


def both_sequential(base: dict, head: dict) -> bool:
    return bool(base["summary"].get("sequential")) and bool(head["summary"].get("sequential"))


def sequential_fairness(
    base_rows: list[TrialRow], head_rows: list[TrialRow], level: float = GATE_LEVEL
) -> dict[str, Any] | None:
    """{mean_diff, lo, hi, n (paired differences), trials (trial numbers used), method} of HEAD -
    BASE fairness for one tool, or None when no trial number is complete on both sides."""
    scores: dict[tuple[str, str, int], float | None] = {}
    for side, rows in (("base", base_rows), ("head", head_rows)):
        for r in rows:
            scores[side, r["scenario"], int(r["trial"])] = r.get(FAIRNESS)
    scenarios = sorted({r["scenario"] for r in base_rows} & {r["scenario"] for r in head_rows})
    top = max((int(r["trial"]) for r in base_rows + head_rows), default=0)
    values, used, _ = paired_values(scores, "head", "base", scenarios, range(1, top + 1))
    if not values:
        return None
    lo, hi = confidence_sequence(values, -1.0, 1.0, 1 - level, block=len(scenarios), method=BETTING)[-1]
    return {
        "mean_diff": sum(values) / len(values),
        "lo": lo,
        "hi": hi,
        "n": len(values),
        "trials": used,
        "method": METHOD,
    }
