"""The main page's calibration of the citation grader by the reader's labels (summary.json
`calibration`, analyze.calibration): per model and tool, the strict verdict's agreement with the
reader and the prediction-powered estimate of the strict verified rate beside the raw one."""

from __future__ import annotations

from mcptrials.core.keys import N_CITATIONS
from mcptrials.core.rows import Summary
from mcptrials.report.formats import fci, f3, html_id, model_text
from mcptrials.report.render import Doc, Table

NO_LABELS = "no citation labels: run `mcptrials label` to check the citation grader against your own reading"


def calibration_warnings(s: Summary) -> list[str]:
    """The report's warnings (beside the held-out judge's): low or uneven agreement."""
    return list((s.get("calibration") or {}).get("warnings") or [])


def add_calibration(doc: Doc, s: Summary) -> None:
    cal = s.get("calibration")
    doc.h(2, "Citation grader against your labels", "citation-calibration")
    if not cal:
        doc.p(NO_LABELS + ".", "note")
        return
    doc.p(
        f"{cal['n_labels']} label(s) (seed(s) {', '.join(str(x) for x in cal['seeds']) or '–'}; "
        f"{cal['n_stale']} for citations no longer in these records, left out). Agreement: the share of your "
        "labelled citations where the grader's strict verdict (verified, or not: mismatch and undetermined count "
        "as not verified) equals yours (correct, or wrong line / wrong file; can't tell left out), with its "
        "Wilson 95% interval. PPI: the prediction-powered estimate of the verified rate (Angelopoulos et al. "
        "2023): the grader's rate over every citation, corrected by the mean of (yours - grader's) on the "
        "labelled ones, with its 95% interval; beside the grader's raw rate.",
        "note",
    )
    for model in dict.fromkeys(r["model"] for r in cal["rows"]):
        t = Table(["tool", "citations", "labelled", "can't tell", "agreement", "verified (raw)", "verified (PPI)"])
        for r in (r for r in cal["rows"] if r["model"] == model):
            t.add(
                r["tool"],
                r[N_CITATIONS],
                r["n_labelled"],
                r["n_cant_tell"],
                fci(r["agreement"], r["agreement_lo"], r["agreement_hi"]),
                f3(r["raw_verified_rate"]),
                fci(r["ppi_verified_rate"], r["ppi_lo"], r["ppi_hi"]),
            )
        doc.h(3, f"{model_text(s, model)}: citation grader against your labels", html_id("calibration", model))
        doc.table(t, html_id("calibration-table", model))
