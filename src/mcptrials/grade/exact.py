"""Exact answers: does the step's answer state the expected value?

Candidates, tried in this order, the first that matches wins:
  1. the whole answer;
  2. each `backticked` span;
  3. each line (a markdown bullet, number or quote marker at its start removed);
  4. each run of consecutive words as long as the expected value (for dates: as the
     date format) — so "The total is 96.124991." offers "96.124991." as a candidate.
Every candidate is stripped of surrounding quotes, backticks, bold/italic markers,
brackets and trailing punctuation, and its whitespace collapsed. A span equal to the value
matches; the rules below say which text the spans come from, and when a match still fails.

Comparison, by mode:
  - date (date_format given, or `format` contains a %-directive): both sides parsed with
    that format or as ISO 8601, then compared as datetimes;
  - number (the expected value is a number or reads as one, or tolerance is given):
    thousands separators (, _ thin/non-breaking spaces), currency signs and a trailing %
    dropped; equal when |candidate - expected| <= tolerance (exact when no tolerance);
  - string: equal after the normalisation above, case-folded unless case_sensitive.

Where the value is read (grade/exact_reading.py), as the task asks:
  - when the step asks for a bare value (the exact answer's `format` or the step's prompt says
    so: "a bare integer", "alone on the last line", "on its own line", "only the number", ...:
    exact_reading.BARE_WORDING), the candidates come from one line only: the last labelled
    `Answer:` line (its text after the label), else the answer's last non-empty line. A value
    anywhere else does not count;
  - else, when the exact answer has a `label` (the step asks for several values of one kind:
    an amount's arithmetic and its total; `label: total`), the value read is the last value of
    the expected kind after the label, on the last line that names it with one
    (exact_reading.read_labelled);
  - in every case, the text read must not state a value of the expected kind (a number for a
    number, a date for a date, a commit id, a version, a file path: exact_reading.VALUE_KINDS)
    other than the matched one: an answer that states several different values fails as
    `ambiguous`, the values listed in `values`. The same value stated several times is not
    ambiguous; an expected value of no kind (a name, a method) is never ambiguous.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal

from mcptrials.core.values import clean, to_datetime, to_number
from mcptrials.grade.exact_reading import (
    Kind,
    asks_bare,
    date_kind,
    kind_of,
    read_labelled,
    read_line,
    same_value,
    values_of,
)
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
        yield f"words {i + 1}-{i + words}", " ".join(toks[i : i + words])


def grade_exact(spec: dict, answer: str, where: str = "steps.exact_answer", prompt: str | None = None) -> dict:
    """{mode, expected, passed, required, matched, where, normalised, bare, read, values,
    ambiguous} for one step; prompt: the step's prompt (its wording may ask for a bare value)."""
    mode, fmt = exact_mode(spec, where)  # the loader's check: the expected value reads in this mode
    expected = spec["value"]
    tol = spec.get("tolerance")
    case = spec["case_sensitive"]
    same: Callable[[str], bool]  # whether a candidate states the expected value
    norm: Callable[[str], str]  # a matched candidate as compared
    kind: Kind | None
    if mode == "date":
        assert fmt is not None  # exact_mode gives the date mode its format
        day = to_datetime(str(expected), fmt)
        words = len(fmt.split())
        same = lambda got: (d := to_datetime(got, fmt)) is not None and d == day  # noqa: E731
        # only a matched candidate is normalised, and it reads as a date
        norm = lambda got: to_datetime(got, fmt).isoformat()  # type: ignore[union-attr]  # noqa: E731
        kind = date_kind(fmt)
    elif mode == "number":
        num = Decimal(str(expected)) if isinstance(expected, (int, float)) else to_number(str(expected))
        assert num is not None  # exact_mode chose the number mode because it reads as one
        words = 1
        limit = Decimal(str(tol)) if tol is not None else Decimal(0)
        same = lambda got: (n := to_number(got)) is not None and abs(n - num) <= limit  # noqa: E731
        norm = lambda got: str(to_number(got))  # noqa: E731
        kind = kind_of(expected, mode)
    else:
        want = clean(expected) if case else clean(expected).casefold()
        words = max(1, len(want.split()))
        same = lambda got: (clean(got) if case else clean(got).casefold()) == want  # noqa: E731
        norm = lambda got: clean(got) if case else clean(got).casefold()  # noqa: E731
        kind = kind_of(expected, mode)
    bare = asks_bare(spec.get("format"), prompt)
    result = {
        "mode": mode,
        "expected": expected,
        "tolerance": tol,
        "date_format": fmt,
        "required": spec["required"],
        "passed": False,
        "matched": None,
        "where": None,
        "normalised": None,
        "bare": bare,
        "read": "whole answer",
        "values": None,
        "ambiguous": False,
    }
    text, prefix = answer or "", ""
    if bare:
        line = read_line(text)
        if line is None:
            result["read"] = "last line (none: the answer is empty)"
            return result
        result["read"], text = line
        prefix = result["read"] + ", "
    elif spec.get("label"):  # several values asked for, the expected one named by its label
        line = read_labelled(text, spec["label"], kind)
        if line is None:
            result["read"] = f"no line labelled {spec['label']!r}"
            return result
        result["read"], text = line
        prefix = result["read"] + ", "
    for place, cand in candidates(text, words):
        if same(cand):
            result.update(passed=True, matched=cand, where=prefix + place, normalised=norm(cand))
            break
    if kind is not None:
        values = values_of(kind, "\n".join(_LINE_MARK.sub("", ln) for ln in text.splitlines()))  # not list numbers
        result["values"] = values
        got = kind.read(result["matched"]) if result["passed"] else None
        # other values than the one matched (tolerance: a number within it is the same value)
        others = [v for v in values if not (same(v) or (got is not None and same_value(kind, v, got)))]
        if result["passed"] and others:
            result.update(passed=False, ambiguous=True)
    return result
