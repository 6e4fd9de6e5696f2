"""The composition of a citation score by form, and the kinds of ungrounded citations
(issue 25 item 5). The reference bench's lesson (its lab/LAWS.md, "a form-dependent
leniency is an arm-dependent leniency"): an arm that writes one form more than another
inherits whatever leniency the grader has for that form, so every rate is printed with the
share of each form in it.

Per form (a citation's `form`: path:line, path:range, path:list, path:symbol, test-id,
basename, absolute, line-in-context, json-fields), counts of: total, grounded, verified and
mismatch (lenient), strict_verified and strict_mismatch. From them (rates()):
    share          = total_form / total_all
    grounded_rate  = grounded / total
    strict_grounded_rate = (grounded - strict_mismatch) / total
    verified_rate  = verified / (verified + mismatch)
    strict_verified_rate = strict_verified / (strict_verified + strict_mismatch)
    strict_undetermined_rate = strict_undetermined / (strict_verified + strict_mismatch + strict_undetermined)
each null when its denominator is 0.

Ungrounded kinds (a citation's `ungrounded`): basename (a bare file name several files
share, not settled by the context), past_eof (a line outside 1..EOF), no_such_file,
symbol_not_defined, ambiguous (a partial path several files end with); each with
    share = n_kind / total_all     (ungrounded_shares)

view() puts one pooled score (grade.citations.grading.pool over a tool's trials: counts summed,
then citation_rates) together: the lenient grounded_rate and verified_rate beside the strict
strict_grounded_rate = (grounded - strict_mismatch) / total and strict_verified_rate =
strict_verified / (strict_verified + strict_mismatch), the composition by form and the
ungrounded kinds. summary.json (`citation_composition`, per model and tool), the report (a
table per model) and `compare-sense-bench` (per tool) print it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcptrials.core.rows import CitationComposition, FormRates, UngroundedShare
from mcptrials.core.keys import (
    BY_FORM,
    GROUNDED_RATE,
    N_CITATIONS,
    STRICT_GROUNDED_RATE,
    STRICT_UNDETERMINED_RATE,
    STRICT_VERIFIED_RATE,
    VERIFIED_RATE,
)

FORM_KEYS = ("total", "grounded", "verified", "mismatch", "strict_verified", "strict_mismatch", "strict_undetermined")
FORM_ORDER = (
    "path:line",
    "path:range",
    "path:list",
    "path:symbol",
    "test-id",
    "basename",
    "absolute",
    "line-in-context",
    "json-fields",
)  # the order tables list the forms in
UNGROUNDED_KINDS = ("basename", "past_eof", "no_such_file", "symbol_not_defined", "ambiguous")


def by_form(items: list[dict]) -> dict[str, dict]:
    """{form: counts} over one step's distinct citations (keys FORM_KEYS)."""
    out: dict[str, dict] = {}
    for c in items:
        f = out.setdefault(c["form"], {k: 0 for k in FORM_KEYS})
        f["total"] += 1
        f["grounded"] += c["bucket"] == "grounded"
        f["verified"] += c["verification"] == "verified"
        f["mismatch"] += c["verification"] == "mismatch"
        f["strict_verified"] += c["strict"] == "verified"
        f["strict_mismatch"] += c["strict"] == "mismatch"
        f["strict_undetermined"] += c["strict"] == "undetermined"
    return out


def ungrounded(items: list[dict]) -> dict[str, int]:
    out = {k: 0 for k in UNGROUNDED_KINDS}
    for c in items:
        if c.get("ungrounded"):
            out[c["ungrounded"]] += 1
    return out


def add_forms(parts) -> dict[str, dict]:
    """The sum of several by_form counts."""
    out: dict[str, dict] = {}
    for part in parts:
        for form, counts in (part or {}).items():
            f = out.setdefault(form, {k: 0 for k in FORM_KEYS})
            for k in FORM_KEYS:
                f[k] += counts.get(k, 0)
    return dict(sorted(out.items()))


def add_ungrounded(parts) -> dict[str, int]:
    out = {k: 0 for k in UNGROUNDED_KINDS}
    for part in parts:
        for k in UNGROUNDED_KINDS:
            out[k] += (part or {}).get(k, 0)
    return out


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def rates(forms: dict[str, dict]) -> dict[str, FormRates]:
    """{form: {n, share, grounded_rate, strict_grounded_rate, verified_rate, strict_verified_rate}}
    (formulas in the module docstring)."""
    total = sum(f["total"] for f in forms.values())
    return {
        form: {
            "n": f["total"],
            "share": _ratio(f["total"], total),
            GROUNDED_RATE: _ratio(f["grounded"], f["total"]),
            STRICT_GROUNDED_RATE: _ratio(f["grounded"] - f["strict_mismatch"], f["total"]),
            VERIFIED_RATE: _ratio(f["verified"], f["verified"] + f["mismatch"]),
            STRICT_VERIFIED_RATE: _ratio(f["strict_verified"], f["strict_verified"] + f["strict_mismatch"]),
            STRICT_UNDETERMINED_RATE: _ratio(
                f.get("strict_undetermined", 0),
                f["strict_verified"] + f["strict_mismatch"] + f.get("strict_undetermined", 0),
            ),
        }
        for form, f in forms.items()
    }


def ungrounded_shares(kinds: dict[str, int], total: int) -> dict[str, UngroundedShare]:
    """{kind: {"n", "share"}}, share = n / all citations (null when there are none)."""
    return {k: {"n": kinds.get(k, 0), "share": _ratio(kinds.get(k, 0), total)} for k in UNGROUNDED_KINDS}


def view(pooled: Mapping[str, Any]) -> CitationComposition:
    """One pooled citation score's composition (pooled: grade.citations.grading.pool's counts and
    rates): strict beside lenient, by form (rates) and the ungrounded kinds (ungrounded_shares)."""
    c, r = pooled["counts"], pooled["rates"]
    return {
        N_CITATIONS: c["total"],
        GROUNDED_RATE: r[GROUNDED_RATE],
        STRICT_GROUNDED_RATE: r[STRICT_GROUNDED_RATE],
        VERIFIED_RATE: r[VERIFIED_RATE],
        STRICT_VERIFIED_RATE: r[STRICT_VERIFIED_RATE],
        STRICT_UNDETERMINED_RATE: r.get(STRICT_UNDETERMINED_RATE),
        BY_FORM: rates(c[BY_FORM]),
        "ungrounded": ungrounded_shares(c["ungrounded"], c["total"]),
    }
