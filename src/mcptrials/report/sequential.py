"""The report's section on a run in waves (`trials: {min, max, until: decided}`; summary.json
`sequential`, mcptrials.analyze.sequential): per model, host and tool the waves and trials run,
why it stopped, the confidence sequence's interval then, and what was not spent; beside it,
what the sequential verdict is about, which is not what the headline's interval is about."""

from __future__ import annotations

from mcptrials.core.rows import SequentialRow, Summary
from mcptrials.report.formats import fusd
from mcptrials.report.render import Cell, Doc, Table

STOP_CLASS = {"decided: better": "better", "decided: worse": "worse"}


def interval(r: SequentialRow) -> str:
    return "–" if r.get("lo") is None else f"[{r['lo']:+.3f}, {r['hi']:+.3f}]"


def add_sequential(doc: Doc, s: Summary) -> None:
    seq = s.get("sequential")
    if not seq:
        return
    doc.h(2, "Trials in waves: where each tool stopped", "sequential")
    doc.p(
        f"This run went in waves: {seq['min']} trial(s) of every cell first, then one more trial per scenario for "
        f"the tools still undecided (and their baseline), up to {seq['max']}. After each wave a confidence sequence "
        f"of the paired difference in fairness against the baseline (alpha {seq['alpha']:g}, valid however often "
        f"it is looked at) decided: better above +{seq['margin']:g}, worse below -{seq['margin']:g}, equivalent "
        "within; a tool stops when decided, at max, or when the next wave would pass the budget."
    )
    doc.p(seq["about"], "note")
    t = Table(
        ["model", "host", "tool", "waves", "trials / scenario", "stopped", "interval when it stopped", "not spent"],
        caption="the waves of each tool (the baseline runs with its last undecided tool); not spent: the trials "
        "max would have run beyond these, priced as the cost plan prices them",
    )
    for r in seq["tools"]:
        t.add(
            r["model"],
            r["host"],
            r["tool"],
            r["waves"],
            r["trials"],
            Cell(r["stopped"], cls=STOP_CLASS.get(r["stopped"])),
            interval(r),
            f"{r['unspent_trials']} trial(s), {fusd(r['unspent_usd'])}",
        )
    doc.table(t, "sequential-waves")
    doc.p(f"Not spent in all: {seq['unspent_trials']} trial(s), {fusd(seq['unspent_usd'])}. Method: {seq['method']}.")
