"""The judge's noise over many judged.json records (its spread and agreement over repeats)."""

from __future__ import annotations


def judge_variance(records: list[dict]) -> dict:
    """The judge's noise across judged.json records with R repeats each: the spread
    (mcptrials.stats.agreement.judge_spread: SD and range of the R scores of an item) and ICC(1,1)
    (mcptrials.stats.agreement.icc) per scenario (items: records), per step (items: judged steps) and
    per criterion (items: judged steps, one criterion). Empty answers are left out of the
    step and criterion levels: they were not judged. A difference smaller than the spread
    is inside the judge's noise."""
    from mcptrials.stats.agreement import icc, judge_spread

    def summary(items: list[list[float]]) -> dict | None:
        if not items:
            return None
        try:
            agreement = icc(items)
        except ValueError:  # records with different repeats: no ICC over them
            agreement = None
        return dict(judge_spread(items), icc=agreement)

    judged_steps = [s for r in records for s in r["steps"] if not s["empty"]]
    names = sorted({c["name"] for s in judged_steps for c in s["criteria"]})
    return {
        "records": len(records),
        "scenario": summary([r["quality"] for r in records]),
        "step": summary([s["quality"] for s in judged_steps]),
        "criteria": {
            n: summary([c["scores"] for s in judged_steps for c in s["criteria"] if c["name"] == n]) for n in names
        },
    }
