"""Exact answers: does the step's answer state the expected value?

Candidates, tried in this order, the first that matches wins:
  1. the whole answer;
  2. each `backticked` span;
  3. each line (a markdown bullet, number or quote marker at its start removed);
  4. each run of consecutive words as long as the expected value (for dates: as the
     date format) — so "The total is 96.124991." offers "96.124991." as a candidate.
Every candidate is stripped of surrounding quotes, backticks, bold/italic markers,
brackets and trailing punctuation, and its whitespace collapsed. So an answer passes when
any such span equals the value: an answer that lists several values can pass.

Comparison, by mode:
  - date (date_format given, or `format` contains a %-directive): both sides parsed with
    that format or as ISO 8601, then compared as datetimes;
  - number (the expected value is a number or reads as one, or tolerance is given):
    thousands separators (, _ thin/non-breaking spaces), currency signs and a trailing %
    dropped; equal when |candidate - expected| <= tolerance (exact when no tolerance);
  - string: equal after the normalisation above, case-folded unless case_sensitive.
"""

from __future__ import annotations

import re
from decimal import Decimal

from mcptrials.core.values import clean, to_datetime, to_number
from mcptrials.matrix.scenario import exact_mode

_LINE_MARK = re.compile(r"^\s*(?:[-*+>]|#+|\d+[.)])\s+")


def candidates(answer: str, words: int):
    """(where, text) pairs in the order the module docstring gives."""
    yield "whole answer", answer
    for m in re.finditer(r"`([^`\n]+)`", answer):
        yield f"backticks at {m.start()}", m.group(1)
    for i, line in enumerate(answer.splitlines(), 1):
        if line.strip():
            yield f"line {i}", _LINE_MARK.sub("", line)
    toks = answer.split()
    for i in range(len(toks) - words + 1):
        yield f"words {i + 1}-{i + words}", " ".join(toks[i:i + words])


def grade_exact(spec: dict, answer: str, where: str = "steps.exact_answer") -> dict:
    """{mode, expected, passed, required, matched, where, normalised} for one step."""
    mode, fmt = exact_mode(spec, where)   # the loader's check: the expected value reads in this mode
    expected = spec["value"]
    tol = spec.get("tolerance")
    case = spec["case_sensitive"]
    if mode == "date":
        want = to_datetime(str(expected), fmt)
        words = len(fmt.split())
        same = lambda got: (d := to_datetime(got, fmt)) is not None and d == want  # noqa: E731
        norm = lambda got: to_datetime(got, fmt).isoformat()  # noqa: E731
    elif mode == "number":
        want = Decimal(str(expected)) if isinstance(expected, (int, float)) else to_number(str(expected))
        words = 1
        limit = Decimal(str(tol)) if tol is not None else Decimal(0)
        same = lambda got: (n := to_number(got)) is not None and abs(n - want) <= limit  # noqa: E731
        norm = lambda got: str(to_number(got))  # noqa: E731
    else:
        want = clean(expected) if case else clean(expected).casefold()
        words = max(1, len(want.split()))
        same = lambda got: (clean(got) if case else clean(got).casefold()) == want  # noqa: E731
        norm = lambda got: clean(got) if case else clean(got).casefold()  # noqa: E731
    result = {"mode": mode, "expected": expected, "tolerance": tol, "date_format": fmt,
              "required": spec["required"], "passed": False, "matched": None,
              "where": None, "normalised": None}
    for place, text in candidates(answer or "", words):
        if same(text):
            result.update(passed=True, matched=text, where=place, normalised=norm(text))
            break
    return result
