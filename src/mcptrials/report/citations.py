"""The main page's citation composition: strict beside lenient grounding and verification per
tool, the ungrounded decomposed, and the citations by form."""

from __future__ import annotations

from mcptrials.grade.composition import FORM_ORDER, UNGROUNDED_KINDS
from mcptrials.report.formats import f3, html_id, model_text
from mcptrials.report.render import Doc, Table

FORM_COLUMNS = (
    "share",
    "grounded (lenient)",
    "grounded (strict)",
    "verified (lenient)",
    "verified (strict)",
    "undetermined (strict)",
)


def add_citation_composition(doc: Doc, s: dict) -> None:
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
        "line is inside the definition of the citation's subject or names it (grade.strict), a citation "
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
                r["n_trials"],
                r.get("n_not_checked", 0),
                r["n_citations"],
                f3(r["grounded_rate"]),
                f3(r["strict_grounded_rate"]),
                f3(r["verified_rate"]),
                f3(r["strict_verified_rate"]),
                f3(r.get("strict_undetermined_rate")),
                *(f"{r['ungrounded'][k]['n']} ({f3(r['ungrounded'][k]['share'])})" for k in UNGROUNDED_KINDS),
            )
        doc.table(t, html_id("citations-table", model))
        forms = [f for f in FORM_ORDER if any(f in r["by_form"] for r in rows)]
        forms += sorted({f for r in rows for f in r["by_form"]} - set(forms))
        t = Table(["form", *(f"{r['tool']}: {h}" for r in rows for h in FORM_COLUMNS)])
        for form in forms:
            cells = []
            for r in rows:
                f = r["by_form"].get(form)
                cells += (
                    [
                        f"{f3(f['share'])} (n={f['n']})",
                        f3(f["grounded_rate"]),
                        f3(f.get("strict_grounded_rate")),
                        f3(f["verified_rate"]),
                        f3(f["strict_verified_rate"]),
                        f3(f.get("strict_undetermined_rate")),
                    ]
                    if f
                    else ["–"] * len(FORM_COLUMNS)
                )
            t.add(form, *cells)
        doc.table(t, html_id("citation-forms-table", model))
