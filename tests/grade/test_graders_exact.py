"""Exact answers: normalisation, tolerance, dates, candidate spans."""

import pytest

from matrix_helpers import filled_step as filled
from mcptrials.matrix.errors import ConfigError
from mcptrials.grade import exact
from mcptrials.core.values import to_number


def grade_exact(spec, answer, where="steps.exact_answer", prompt=None):
    return exact.grade_exact(filled(exact_answer=spec)["exact_answer"], answer, where, prompt)


def test_numeric_tolerance():
    answer = "The mean latency is **96.124991** ms."
    r = grade_exact({"value": "96.12", "tolerance": 0.01}, answer)
    assert r["passed"] and r["mode"] == "number" and r["matched"] == "**96.124991**" and r["where"].startswith("words")
    assert not grade_exact({"value": 96.12, "tolerance": 0.001}, answer)["passed"]
    assert not grade_exact({"value": 96.12}, answer)["passed"]  # no tolerance: exact
    assert not grade_exact({"value": "96.2", "tolerance": 0.01}, answer)["passed"]


def test_thousands_separators_and_numbers():
    assert to_number("1,234,567.5") == to_number("1234567.50")
    assert to_number("$1,234") == 1234 and to_number("12%") == 12 and to_number("1,23") is None
    r = grade_exact({"value": 1234567}, "There are 1,234,567 rows.")
    assert r["passed"] and r["normalised"] == "1234567"
    assert grade_exact({"value": "1234567"}, "Rows: `1 234 567`")["passed"]  # via the backticked span
    assert not grade_exact({"value": 1234567}, "There are 1,234,568 rows.")["passed"]


def test_dates():
    spec = {"value": "05/03/2024", "date_format": "%d/%m/%Y"}
    assert grade_exact(spec, "It was released on 2024-03-05.")["passed"]  # ISO candidate
    assert grade_exact(spec, "Released 05/03/2024")["passed"]
    assert not grade_exact(spec, "Released 03/05/2024")["passed"]  # day/month swapped
    long = {"value": "2024-03-05", "format": "%B %d, %Y"}  # format with a %-directive
    r = grade_exact(long, "The tag was cut on March 5, 2024, after review.")
    assert r["passed"] and r["mode"] == "date" and r["matched"] == "March 5, 2024,"
    with pytest.raises(ConfigError, match="date_format"):
        grade_exact({"value": "yesterday", "date_format": "%Y"}, "x")


def test_strings_case_and_whitespace():
    assert grade_exact({"value": "Flask.App"}, "The class is `flask.app`.")["passed"]
    r = grade_exact({"value": "flask.app"}, "  flask.app \n")
    assert r["where"] == "whole answer"
    assert not grade_exact({"value": "Flask.App", "case_sensitive": True}, "It is flask.app")["passed"]
    assert grade_exact({"value": "Flask.App", "case_sensitive": True}, "It is Flask.App.")["passed"]
    r = grade_exact({"value": "make  test"}, "Run:\n- make test\nthen wait")  # a bullet line
    assert r["passed"] and r["where"] in ("line 2", "words 2-3")
    assert not grade_exact({"value": "make test"}, "make tests")["passed"]
    with pytest.raises(ConfigError, match="tolerance"):
        grade_exact({"value": "abc", "tolerance": 0.1}, "abc")


def test_required_defaults_and_evidence():
    r = grade_exact({"value": "x", "required": False}, "no")
    assert r == {
        "mode": "string",
        "expected": "x",
        "tolerance": None,
        "date_format": None,
        "required": False,
        "passed": False,
        "matched": None,
        "where": None,
        "normalised": None,
        "bare": None,
        "read": "whole answer",
        "values": None,
        "ambiguous": False,
    }


# --- read as the task asks: a bare value from the last line, several values ambiguous -----------

# An answer of the shape issue 33 found: the count it computed, then another number alone on
# its last line; the expected 9 occurs only inside the sentence before.
STRAY = (
    "I listed the registrations with the search tool:\n\n"
    "- `Handle` is called at `router.go:12` in `Group.Any`\n"
    "- `Handle` also appears at `router.go:40`\n\n"
    "Counting the use(s) of `Handle` listed above: 20 in 9 file(s).\n\n"
    "20\n"
)


def test_a_bare_integer_is_read_from_the_last_line_not_from_a_stray_number():
    r = grade_exact({"value": "9", "format": "a bare integer"}, STRAY)
    assert not r["passed"] and r["bare"] == "format: bare" and r["read"] == "last line (8)"
    assert r["values"] == ["20"] and not r["ambiguous"]
    good = STRAY.replace("\n20\n", "\n9\n")
    r = grade_exact({"value": "9", "format": "a bare integer"}, good)
    assert r["passed"] and r["where"] == "last line (8), whole answer" and r["values"] == ["9"]


def test_the_prompt_wording_asks_for_a_bare_value_too():
    prompt = "How many are there? Answer with the number alone on the last line."
    assert not grade_exact({"value": 9}, STRAY, prompt=prompt)["passed"]
    assert grade_exact({"value": 9}, "Nine of them:\n\n**9**\n\n", prompt=prompt)["passed"]
    # the last line states two numbers: ambiguous, both listed
    r = grade_exact({"value": 9}, "All found.\n20 in 9 file(s).", prompt=prompt)
    assert not r["passed"] and r["ambiguous"] and r["values"] == ["20", "9"]


def test_a_labelled_answer_line_wins_over_the_last_line():
    spec = {"value": "9", "format": "a bare integer"}
    r = grade_exact(spec, "**Answer:** 9\n\nThe list has 20 entries over several files.")
    assert r["passed"] and r["read"] == "answer label at line 1" and r["where"].startswith("answer label")
    assert not grade_exact(spec, "Answer: 20\n\n9")["passed"]


def test_several_different_values_of_the_kind_are_ambiguous_where_no_bare_value_is_asked():
    r = grade_exact({"value": "9"}, STRAY)
    assert not r["passed"] and r["ambiguous"] and r["values"] == ["20", "9"] and r["matched"] == "9"
    # the same value stated several times is not ambiguous, nor are line numbers, ranges or list markers
    r = grade_exact({"value": 9}, "1. It is 9 (see `a.go:147-153`).\n2. Yes, 9 methods, lines 19-23.")
    assert r["passed"] and r["values"] == ["9"] and not r["ambiguous"]
    # a number within the tolerance is the same value
    assert grade_exact({"value": 96.12, "tolerance": 0.01}, "About 96.12, precisely 96.124991.")["passed"]


def test_ambiguity_by_kind_commit_ids_dates_and_no_kind_for_names():
    full = "babcb4468fd1730cc413550ce058d850e356c360"
    one = f"The newest commit is `{full[:7]}` (full id {full})."
    assert grade_exact({"value": full}, one)["passed"]  # a short id of the same commit
    r = grade_exact({"value": full}, one + " Its parent is 0a1b2c3d4e5f.")
    assert not r["passed"] and r["ambiguous"] and r["values"] == [full[:7], full, "0a1b2c3d4e5f"]
    r = grade_exact(
        {"value": "2026-01-05", "format": "%Y-%m-%d"}, "Issue 12, created 2026-01-05; issue 19 on 2026-02-01."
    )
    assert not r["passed"] and r["ambiguous"] and len(r["values"]) == 2
    r = grade_exact({"value": "Flask.make_response"}, "`Flask.make_response` calls `Flask.response_class`.")
    assert r["passed"] and r["values"] is None  # a name has no kind


def test_failure_messages_name_the_ambiguity_and_the_line_read():
    from mcptrials.grade.scoring import exact_failure

    r = grade_exact({"value": "9", "format": "a bare integer"}, STRAY)
    assert exact_failure(r) == "exact answer '9' not found on the line a bare value is read from (last line (8))"
    r = grade_exact({"value": "9"}, STRAY)
    assert exact_failure(r) == "exact answer '9' ambiguous: the answer states '20', '9'"


def test_a_label_reads_the_named_value_among_the_arithmetic():
    """A step that asks for several amounts and grades the total: `label: total` reads the value
    after the last line naming it, so the arithmetic's other amounts are not a second answer;
    without the label the same answer is ambiguous."""
    answer = (
        "Subtotal: 2 x 24.90 + 12.00 = 61.80\nDiscount: 10% of 61.80 = 6.18\nShipping: 4.90\n"
        "Tax: 7.33\n**Total: 67.85 EUR** (cited at pricing.py:40)"
    )
    spec = {
        "value": "67.85",
        "format": "an amount in euros with two decimals",
        "case_sensitive": False,
        "required": True,
    }
    assert grade_exact(spec, answer)["ambiguous"]
    got = grade_exact({**spec, "label": "total"}, answer)
    assert got["passed"] and not got["ambiguous"] and got["read"] == "line 5 labelled 'total', its last value"
    # the arithmetic on the labelled line ends with its result; a later header names no value
    sums = grade_exact(
        {**spec, "label": "total"}, answer + "\n\nTotal: 61.80 - 6.18 + 4.90 + 7.33 = 67.85\n| tax | total |"
    )
    assert sums["passed"] and sums["read"] == "line 7 labelled 'total', its last value"
    wrong = grade_exact({**spec, "label": "total"}, answer.replace("67.85 EUR", "61.80 EUR"))
    assert not wrong["passed"]
    none = grade_exact({**spec, "label": "total"}, "67.85")
    assert not none["passed"] and none["read"] == "no line labelled 'total'"
