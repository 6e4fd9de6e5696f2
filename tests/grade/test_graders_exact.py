"""Exact answers: normalisation, tolerance, dates, candidate spans."""

import pytest

from matrix_helpers import filled_step as filled
from mcptrials.matrix.errors import ConfigError
from mcptrials.grade import exact
from mcptrials.core.values import to_number




def grade_exact(spec, answer, where="steps.exact_answer"):
    return exact.grade_exact(filled(exact_answer=spec)["exact_answer"], answer, where)


def test_numeric_tolerance():
    answer = "The mean latency is **96.124991** ms."
    r = grade_exact({"value": "96.12", "tolerance": 0.01}, answer)
    assert r["passed"] and r["mode"] == "number" and r["matched"] == "**96.124991**" and r["where"].startswith("words")
    assert not grade_exact({"value": 96.12, "tolerance": 0.001}, answer)["passed"]
    assert not grade_exact({"value": 96.12}, answer)["passed"]          # no tolerance: exact
    assert not grade_exact({"value": "96.2", "tolerance": 0.01}, answer)["passed"]


def test_thousands_separators_and_numbers():
    assert to_number("1,234,567.5") == to_number("1234567.50")
    assert to_number("$1,234") == 1234 and to_number("12%") == 12 and to_number("1,23") is None
    r = grade_exact({"value": 1234567}, "There are 1,234,567 rows.")
    assert r["passed"] and r["normalised"] == "1234567"
    assert grade_exact({"value": "1234567"}, "Rows: `1 234 567`")["passed"]   # via the backticked span
    assert not grade_exact({"value": 1234567}, "There are 1,234,568 rows.")["passed"]


def test_dates():
    spec = {"value": "05/03/2024", "date_format": "%d/%m/%Y"}
    assert grade_exact(spec, "It was released on 2024-03-05.")["passed"]       # ISO candidate
    assert grade_exact(spec, "Released 05/03/2024")["passed"]
    assert not grade_exact(spec, "Released 03/05/2024")["passed"]               # day/month swapped
    long = {"value": "2024-03-05", "format": "%B %d, %Y"}                       # format with a %-directive
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
    r = grade_exact({"value": "make  test"}, "Run:\n- make test\nthen wait")     # a bullet line
    assert r["passed"] and r["where"] in ("line 2", "words 2-3")
    assert not grade_exact({"value": "make test"}, "make tests")["passed"]
    with pytest.raises(ConfigError, match="tolerance"):
        grade_exact({"value": "abc", "tolerance": 0.1}, "abc")


def test_required_defaults_and_evidence():
    r = grade_exact({"value": "x", "required": False}, "no")
    assert r == {"mode": "string", "expected": "x", "tolerance": None, "date_format": None, "required": False,
                 "passed": False, "matched": None, "where": None, "normalised": None}
