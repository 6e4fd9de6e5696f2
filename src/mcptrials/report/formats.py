"""How one value is written in the report: numbers, intervals, the trials a figure lost, money and
seconds, escaping, links and element ids, and the models' labels."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from mcptrials.core.keys import MISSING_REASONS, N_MISSING
from mcptrials.core.rows import Summary


def f3(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def fp(v) -> str:
    if v is None:
        return "–"
    return f"{v:.3f}" if v >= 0.001 else f"{v:.1e}"


def fci(mean, lo, hi) -> str:
    if mean is None:
        return "–"
    return f3(mean) if lo is None else f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def fsigned_ci(mean, lo, hi) -> str:
    if mean is None:
        return "–"
    return f"{mean:+.3f}" if lo is None else f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def error_counts(row: Mapping[str, Any]) -> list[tuple[str, int]]:
    """A trial's or a group's count of each error kind, in analyze.trial_rows.ERROR_KINDS order."""
    from mcptrials.analyze.trial_rows import ERROR_KINDS

    return [(k, row[k]) for k in ERROR_KINDS]


def fmissing(n_used, row: Mapping[str, Any]) -> str:
    """'' for a cell that lost no trial, else 'n=3 of 4, 1 missing: api_failed' (the missing
    trials are infrastructure failures, left out of the interval beside which this stands)."""
    gone = row.get(N_MISSING) or 0
    if not gone:
        return ""
    reasons = ", ".join(
        f"{why}" + (f" {c}" if int(c) != gone else "")
        for why, _, c in (part.rpartition("=") for part in row[MISSING_REASONS].split(";"))
    )
    return f"n={n_used} of {n_used + gone}, {gone} missing: {reasons}"


def fci_missing(mean, lo, hi, n_used, row: Mapping[str, Any]) -> str:
    """The interval, and beside it what the cell lost (fmissing)."""
    lost = fmissing(n_used, row)
    return fci(mean, lo, hi) + (f" ({lost})" if lost else "")


def with_n(v, n) -> str:
    """A rate beside its denominator: "0.750 (n=8)"; "– (n=0)" when there is nothing to measure."""
    return f3(v) if n is None else f"{f3(v)} (n={n})"


def fusd(v) -> str:
    return "–" if v is None else f"${v:.4f}"


def fsec(v) -> str:
    """Seconds; under 1 s with three decimals, so the reference agent's milliseconds show."""
    return "–" if v is None else f"{v:.3f} s" if abs(v) < 1 else f"{v:.1f} s"


def fnum(v, unit="") -> str:
    if v is None:
        return "–"
    return (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}") + unit


def esc(v) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def href(rel: str) -> str:
    """A relative link with each path part percent-encoded."""
    return "/".join(quote(p) for p in rel.split("/"))


def html_id(*parts) -> str:
    """An element id from names (model, tool, pattern): letters, digits, - and _ kept, the rest _."""
    return "-".join("".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(p)) for p in parts)


def model_labels(s: Summary) -> list[str]:
    """The units the tables compare: model names, or model@host when the run has several hosts
    (aggregate.model_label), in matrix order."""
    return list(dict.fromkeys(r["model"] for r in s["tools"])) or list(s["identity"]["models"])


def model_text(s: Summary, label: str) -> str:
    name, _, host = label.partition("@")  # model names cannot hold '@' (config schema)
    text = s["identity"]["models"].get(name, {}).get("label", name)
    return f"{text} under host {host}" if host else text
