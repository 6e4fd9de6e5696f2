"""Keyword checks on one step's answer text (never the tool calls or their results).

coverage = sum(required hits + 0.5 * bonus hits) / sum(required + 0.5 * bonus)
(the reference bench's keyword_coverage, computed per step; issue 4 item 2).

Matching: `word` = the value as a whole word (no word character on either side),
`phrase` = substring, both after collapsing runs of whitespace to one space;
`regex` = re.search on the raw answer text with re.MULTILINE. Case-insensitive unless
the check sets case_sensitive.
"""

from __future__ import annotations

import re

from mcptrials.core.record_types import Keywords
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.scenario import check_regex

BONUS_WEIGHT = 0.5
SNIPPET = 40  # characters of context either side of a match in the evidence


def _ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _snippet(text: str, start: int, end: int) -> str:
    lo, hi = max(0, start - SNIPPET), min(len(text), end + SNIPPET)
    return ("..." if lo else "") + text[lo:hi] + ("..." if hi < len(text) else "")


def match_check(check: dict, answer: str, where: str = "check") -> dict:
    """One check against one answer: {type, value, required, hit, matched, snippet}."""
    kind, value = check["type"], check["value"]
    flags = 0 if check["case_sensitive"] else re.IGNORECASE
    if kind == "regex":
        pat = check_regex(check, f"{where}.value")  # the loader's check: the same pattern and flags
        text = answer
    elif kind in ("word", "phrase"):
        text = _ws(answer)
        body = re.escape(_ws(value))
        pat = re.compile(rf"(?<!\w){body}(?!\w)" if kind == "word" else body, flags)
    else:
        raise ConfigError(f"{where}.type: {kind!r} is not a check type; use word, phrase or regex")
    m = pat.search(text)
    return {
        "type": kind,
        "value": value,
        "required": check["required"],
        "case_sensitive": check["case_sensitive"],
        "hit": m is not None,
        "matched": m.group(0) if m else None,
        "snippet": _snippet(text, m.start(), m.end()) if m else None,
    }


def coverage(results: list[dict]) -> float | None:
    """sum(required hits + 0.5 bonus hits) / sum(required + 0.5 bonus); null with no checks."""
    num = sum((1.0 if r["required"] else BONUS_WEIGHT) for r in results if r["hit"])
    den = sum((1.0 if r["required"] else BONUS_WEIGHT) for r in results)
    return num / den if den else None


def grade_keywords(checks: list[dict], answer: str, where: str = "steps.checks") -> dict:
    """A step's keyword result: per-check evidence, coverage and whether every required check hit."""
    results = [match_check(c, answer, f"{where}.{i}") for i, c in enumerate(checks or [])]
    return {
        "checks": results,
        "required_total": sum(1 for r in results if r["required"]),
        "required_hits": sum(1 for r in results if r["required"] and r["hit"]),
        "bonus_total": sum(1 for r in results if not r["required"]),
        "bonus_hits": sum(1 for r in results if not r["required"] and r["hit"]),
        "coverage": coverage(results),
        "required_passed": all(r["hit"] for r in results if r["required"]),
    }


def pool(step_results: list[dict]) -> Keywords:
    """A trial's coverage: the same formula over every step's checks together."""
    allr = [r for s in step_results for r in s["checks"]]
    return {"coverage": coverage(allr), "required_passed": all(s["required_passed"] for s in step_results)}
