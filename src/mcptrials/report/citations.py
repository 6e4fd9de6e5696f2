"""The main page's citation composition: strict beside lenient grounding and verification per
tool, the ungrounded decomposed, and the citations by form."""

from __future__ import annotations

from mcptrials.grade.citations.composition import FORM_ORDER, UNGROUNDED_KINDS
from mcptrials.report.formats import f3, html_id, model_text
from mcptrials.report.render import Doc, Table
from mcptrials.core.keys import (
    BY_FORM,
    GROUNDED_RATE,
    N_CITATIONS,
    N_NOT_CHECKED,
    N_TRIALS,
    STRICT_GROUNDED_RATE,
    STRICT_UNDETERMINED_RATE,
    STRICT_VERIFIED_RATE,
    VERIFIED_RATE,
)
from mcptrials.core.rows import Summary

FORM_COLUMNS = (
    "share",
    "grounded (lenient)",
    "grounded (strict)",
    "verified (lenient)",
    "verified (strict)",
    "undetermined (strict)",
)


def add_citation_composition(doc: Doc, s: Summary) -> None:
    """Per model: strict beside lenient grounding and verification per tool, the ungrounded
    decomposed, and the composition by form (summary.json citation_composition)."""
    comp = s.get("citation_composition") or []
    if not comp:
        return
    doc.h(2, "Citations: strict beside lenient, by form", "citation-composition")
    doc.p(
        "Per tool, the trials' citations pooled (trials whose citations were not checked, with no checkout "
        "of their commit, are left out and counted). grounded (lenient) = grounded / all citations; grounded "
        "(strict) = (grounded - strict mismatch) / all citations, the citation part of fairness; verified "
        "(lenient) = verified / (verified + mismatch) with the +/-5-line window; verified (strict) = the cited "
        "line is inside the definition of the citation's subject or names it (grade.citations.strict), a citation "
        "into a code file whose definitions are not known here (undetermined) counting as neither. Ungrounded: "
        "each kind's share of all citations. By form: a form's share of the citations, and its own rates: "
        "a grader lenient with one form is lenient with whichever arm writes it.",
        "note",
    )
    for model in dict.fromkeys(r["model"] for r in comp):
        rows = [r for r in comp if r["model"] == model]
        doc.h(3, f"{model_text(s, model)}: citations per tool", html_id("citations", model))
        t = Table(
            [
                "tool",
                "trials",
                "not checked",
                "citations",
                "grounded (lenient)",
                "grounded (strict)",
                "verified (lenient)",
                "verified (strict)",
                "undetermined (strict)",
                *(f"ungrounded: {k.replace('_', ' ')}" for k in UNGROUNDED_KINDS),
            ]
        )
        for r in rows:
            t.add(
                r["tool"],
                r[N_TRIALS],
                r.get(N_NOT_CHECKED, 0),
                r[N_CITATIONS],
                f3(r[GROUNDED_RATE]),
                f3(r[STRICT_GROUNDED_RATE]),
                f3(r[VERIFIED_RATE]),
                f3(r[STRICT_VERIFIED_RATE]),
                f3(r.get(STRICT_UNDETERMINED_RATE)),
                *(f"{r['ungrounded'][k]['n']} ({f3(r['ungrounded'][k]['share'])})" for k in UNGROUNDED_KINDS),
            )
        doc.table(t, html_id("citations-table", model))
        forms = [f for f in FORM_ORDER if any(f in r[BY_FORM] for r in rows)]
        forms += sorted({f for r in rows for f in r[BY_FORM]} - set(forms))
        t = Table(["form", *(f"{r['tool']}: {h}" for r in rows for h in FORM_COLUMNS)])
        for form in forms:
            cells = []
            for r in rows:
                f = r[BY_FORM].get(form)
                cells += (
                    [
                        f"{f3(f['share'])} (n={f['n']})",
                        f3(f[GROUNDED_RATE]),
                        f3(f.get(STRICT_GROUNDED_RATE)),
                        f3(f[VERIFIED_RATE]),
                        f3(f[STRICT_VERIFIED_RATE]),
                        f3(f.get(STRICT_UNDETERMINED_RATE)),
                    ]
                    if f
                    else ["–"] * len(FORM_COLUMNS)
                )
            t.add(form, *cells)
        doc.table(t, html_id("citation-forms-table", model))
