"""The rules by which an exact answer is read (grade/exact_reading.py), each on its own: the
wording that asks for a bare value, the line it is read from, the values of each kind."""

import pytest

from mcptrials.grade.exact_reading import (
    BARE_WORDING,
    asks_bare,
    date_kind,
    kind_of,
    read_line,
    same_value,
    values_of,
)


@pytest.mark.parametrize(
    "text,rule",
    [
        ("a bare integer", "bare"),
        ("Answer with the bare version string (e.g. `1.2.3`)", "bare"),
        ("give the value as an integer alone on the last line of your answer", "alone on a line"),
        ("the full 40-character commit id alone on the last line", "alone on a line"),
        ("Answer from this row alone, with the number alone after it", "value alone"),
        ("Answer as `Type::method` on its own line", "own line"),
        ("say how many, as a number on the last line", "last line"),
        ("Reply with only the number.", "only the value"),
        ("Give the login and nothing else.", "nothing else"),
    ],
)
def test_each_wording_rule_asks_for_a_bare_value(text, rule):
    assert asks_bare(None, text) == f"prompt: {rule}"
    assert rule in {name for name, _ in BARE_WORDING}


@pytest.mark.parametrize(
    "fmt,prompt",
    [
        ("a login in backticks", "Answer from this entry alone, with the login in backticks."),
        ("%Y-%m-%d", "Answer with the date as YYYY-MM-DD and the issue's number."),
        ("an amount in euros with two decimals", "Show the arithmetic. Give the total in euros."),
        (None, "Where is it defined? Cite file:line."),
    ],
)
def test_other_wording_asks_for_no_bare_value(fmt, prompt):
    assert asks_bare(fmt, prompt) is None


def test_the_format_is_read_before_the_prompt():
    assert asks_bare("a bare integer", "on its own line") == "format: bare"
    assert asks_bare("a number", "with the number alone on the last line") == "prompt: alone on a line"


@pytest.mark.parametrize(
    "answer,read",
    [
        ("It is 9.\n\n20\n\n  \n", ("last line (3)", "20")),
        ("Answer: 9\nbecause of 20 things", ("answer label at line 1", "9")),
        ("**Answer:** 9\nAnswer: 8\ntail", ("answer label at line 2", "8")),  # the last label
        ("> **Answer**: `v1.2.0`", ("answer label at line 1", "`v1.2.0`")),
        ("- Final answer: 9", ("answer label at line 1", "9")),
        ("The answer: a count.\nThe answer is 9", ("last line (2)", "The answer is 9")),  # no label at the start
        ("", None),
        ("\n  \n", None),
    ],
)
def test_the_line_read(answer, read):
    assert read_line(answer) == read


def test_numbers_standing_on_their_own():
    k = kind_of(9, "number")
    text = (
        "1. The group registers 20 routes in 9 file(s), see `tree.go:147-153` and lines 19-23;\n"
        "v2 and p0 are names, 1.2.3 a version, deadbeef12 an id; totals $1,234.50, 1 234 567, 12%, -5 and 3."
    )
    assert values_of(k, text) == ["1", "20", "9", "1234.5", "1234567", "12", "-5", "3"]
    assert values_of(k, "9, 9.0 and 9") == ["9"]


def test_the_kinds_of_expected_values():
    assert kind_of("9", "number").name == "number"
    assert kind_of("babcb4468fd1730cc413550ce058d850e356c360", "string").name == "commit id"
    for v in ("0.8.9", "v1.12.0", "7.2.1-SNAPSHOT", "3.2.0.dev"):
        assert kind_of(v, "string").name == "version", v
    for v in ("lib/guardian.rb", "axum/src/routing/method_routing.rs"):
        assert kind_of(v, "string").name == "file path", v
    for v in ("Flask.make_response", "PostCreator#create", "#140", "leader", "next-action", "afolau"):
        assert kind_of(v, "string") is None, v


def test_values_of_each_kind():
    ids = kind_of("babcb4468fd1730cc413550ce058d850e356c360", "string")
    assert values_of(ids, "commit `babcb44`, parent 0A1B2C3D; not an id: 1234567, abcdefab") == ["babcb44", "0a1b2c3d"]
    assert same_value(ids, "babcb44", "babcb4468fd") and not same_value(ids, "babcb44", "babcb45")
    ver = kind_of("0.8.9", "string")
    assert values_of(ver, "axum 0.8.9 needs Rust 1.75 (`v1.12.0`, 7.2.1-SNAPSHOT); a.b.c is none") == [
        "0.8.9",
        "1.75",
        "v1.12.0",
        "7.2.1-SNAPSHOT",
    ]
    path = kind_of("lib/guardian.rb", "string")
    assert values_of(
        path, "`lib/guardian.rb:12` and lib/guardian.rb, app/models/user.rb; a URL https://x.org/a/b is none"
    ) == ["lib/guardian.rb", "app/models/user.rb"]
    dates = date_kind("%B %d, %Y")
    assert values_of(dates, "Cut on March 5, 2024, tagged 2024-03-06, i.e. after 2024-03-05.") == [
        "2024-03-06T00:00:00",
        "2024-03-05T00:00:00",
    ]
