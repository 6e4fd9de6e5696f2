"""Calibration of the citation grader by the reader's own labels (summary.json `calibration`,
results/aggregate/citation_calibration.csv): per model and tool, how often the strict verdict
agrees with the reader on the labelled sample, and the prediction-powered estimate of the strict
verified rate beside the grader's raw one.

The population is every occurrence of a line citation in the trials whose citations were
checked (analyze.citation_labels.occurrences); the grader's 0/1 is 1 for a strict `verified`
only (mismatch, undetermined or any other value: 0), the reader's 1 for `correct`, 0 for
`wrong line` or `wrong file`; `can't tell` labels are counted, never used. The grader's verdict
is the one in the current records (the label keeps the one it had when labelled), so a new
grader is calibrated by the same labels. A label whose occurrence is not in the current records
(another matrix, a re-run trial) is counted as stale and left out.
"""

from __future__ import annotations

from mcptrials.core.keys import N_CITATIONS
from mcptrials.analyze.citation_labels import VERDICTS, grader_ok, occurrences
from mcptrials.stats.intervals import wilson_interval
from mcptrials.stats.ppi import ppi_mean

# the report warns below this agreement, or when two tools' agreements differ by more (issue 34)
MIN_AGREEMENT = 0.9
MAX_SPREAD = 0.1
METHOD = (
    "agreement = share of labelled occurrences where the strict verdict (verified = 1, anything else = 0) equals "
    "the reader's (correct = 1, wrong line or wrong file = 0; can't tell left out), Wilson 95% interval; "
    "ppi = prediction-powered estimate of the verified rate (stats.ppi: grader's rate over all occurrences + "
    "mean of reader - grader over the labelled), normal 95% interval"
)
CSV_FIELDS = (
    "model",
    "tool",
    N_CITATIONS,
    "n_labelled",
    "n_cant_tell",
    "agreement",
    "agreement_lo",
    "agreement_hi",
    "raw_verified_rate",
    "ppi_verified_rate",
    "ppi_lo",
    "ppi_hi",
)


def calibration(records: list[dict], labels: dict | None) -> dict | None:
    """summary.json `calibration`, or None without a labels file."""
    if labels is None:
        return None
    occs = occurrences(records)
    by_id = {o["id"]: o for o in occs}
    strata: dict[tuple, list[dict]] = {}
    for o in occs:
        strata.setdefault((o["trial"]["model"], o["trial"]["tool"]), []).append(o)
    used = [lab for lab in labels["labels"] if lab["id"] in by_id]
    rows = []
    for (model, tool), items in strata.items():
        mine = [lab for lab in used if (lab["trial"]["model"], lab["trial"]["tool"]) == (model, tool)]
        judged = [lab for lab in mine if VERDICTS[lab["verdict"]] is not None]
        grader = [grader_ok(by_id[lab["id"]]["strict"]) for lab in judged]
        reader = [VERDICTS[lab["verdict"]] for lab in judged]
        agree = wilson_interval(sum(g == r for g, r in zip(grader, reader)), len(judged))
        ppi = ppi_mean([grader_ok(o["strict"]) for o in items], grader, reader)
        rows.append(
            {
                "model": model,
                "tool": tool,
                N_CITATIONS: len(items),
                "n_labelled": len(judged),
                "n_cant_tell": len(mine) - len(judged),
                "agreement": agree["p"],
                "agreement_lo": agree["lo"],
                "agreement_hi": agree["hi"],
                "raw_verified_rate": ppi["grader_rate"],
                "ppi_verified_rate": ppi["estimate"],
                "ppi_lo": ppi["lo"],
                "ppi_hi": ppi["hi"],
            }
        )
    seeds = sorted({lab.get("seed") for lab in labels["labels"] if lab.get("seed") is not None})
    return {
        "method": METHOD,
        "rows": rows,
        "n_labels": len(labels["labels"]),
        "n_stale": len(labels["labels"]) - len(used),
        "seeds": seeds,
        "warnings": calibration_warnings(rows),
    }


def calibration_warnings(rows: list[dict]) -> list[str]:
    """A tool whose agreement is below MIN_AGREEMENT, and, per model, two tools whose agreements
    differ by more than MAX_SPREAD (the grader reads one arm's answers worse than another's)."""
    out = []
    rated = [r for r in rows if r["agreement"] is not None]
    for r in rated:
        if r["agreement"] < MIN_AGREEMENT:
            out.append(
                f"{r['model']} / {r['tool']}: the citation grader agrees with your labels on {r['agreement']:.2f} "
                f"of {r['n_labelled']} citations (below {MIN_AGREEMENT}): its strict verdicts for this arm are unreliable."
            )
    for model in dict.fromkeys(r["model"] for r in rated):
        mine = sorted((r for r in rated if r["model"] == model), key=lambda r: r["agreement"])
        if len(mine) >= 2 and mine[-1]["agreement"] - mine[0]["agreement"] > MAX_SPREAD:
            lo, hi = mine[0], mine[-1]
            out.append(
                f"{model}: the grader reads {lo['tool']}'s answers worse than {hi['tool']}'s (agreement "
                f"{lo['agreement']:.2f} against {hi['agreement']:.2f}, more than {MAX_SPREAD} apart): a difference "
                "in their citation scores may be the grader's."
            )
    return out
