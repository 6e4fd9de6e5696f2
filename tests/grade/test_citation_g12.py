"""Grader 12's rules (issue 34), each on plain strings (no repository): a struct's lines a reader
may take for the named thing are no confirmed mismatch, and a name joined to a line by `:` or `@`
after a file named in its list item is a line-only reference."""

from __future__ import annotations

import pytest

from mcptrials.grade.citations import json_scopes, lines, strict, verify

GO = """package p

type other struct {
\tx int
}

// Entry is one cache entry.
type Entry struct {
\tdb  int
\tvrw int
}

var cache map[string]Entry
"""
LINES = GO.split("\n")


def reason(line: int, subject: str, in_code=()) -> str | None:
    return strict.abstain_reason("a.go", GO, [line], subject, LINES, [], list(in_code))


def test_the_header_above_the_subjects_owner_stays_a_wrong_line():
    # `Entry.db` at the doc comment above `type Entry struct`: the field has its own line (dolt #5;
    # tried as an abstention in grader 12 and left out: it cost a wrong line caught on dolt)
    assert strict.verdict("a.go", GO, [7], "Entry.db", LINES) == "mismatch"
    assert reason(7, "Entry.db") is None
    assert reason(10, "Entry.db") is None  # a wrong field of the owner's body


def test_the_owner_of_a_member_named_beside_it_holding_the_line_is_no_confirmed_mismatch():
    # `Entry.Database` + `.db` — a.go:8,9: line 8 opens Entry, whose member the clause names
    assert strict.verdict("a.go", GO, [8], "db", LINES) == "mismatch"
    assert reason(8, "db", ["Entry.Database"]) == "`Entry`, named beside it, is a struct holding the cited line"
    # a struct named alone holding the line is not enough (on half B it cost a wrong line caught)
    assert reason(9, "cache", ["Entry"]) is None
    # a struct that does not hold the line, or the subject's own owner, says nothing
    assert reason(9, "cache", ["other.x"]) is None
    assert reason(9, "Entry.vrw", ["Entry.size"]) is None


@pytest.mark.parametrize(
    "text, nums",
    [
        ("pkg/adapter.rb — to_wire_format:58, drop_parallel_calls:85", ["58", "85"]),
        ("`store/chunks.go:40`, `Root:307`, `Commit:314`", ["307", "314"]),
        ('"hooks": ["send@45", "skip_send@39"]', ["45", "39"]),
        ("the server on localhost:8080", []),  # a port
        ("Step:3 then x:1", []),  # a step; a one-letter name
        ("ratio 3:1, at 12:30, pkg@1.2.3", []),  # numbers, a time, a version
        ("see README.md:12", []),  # a path's own line is the path form's
        ("a tool_choice/parallel_tool_calls:23", []),  # a segment after a slash: not a name
    ],
)
def test_a_name_joined_to_a_line(text, nums):
    got = [m.group("nums") for m in lines._NAME_JOINED.finditer(text) if not lines.not_a_line(text, m)]
    assert got == nums


@pytest.mark.parametrize(
    "text, nums",
    [
        (
            "| `Chat` | `chat/sender.py:11` | `send` at `19`, overrides `escape` at `25` |",
            ["19", "25"],
        ),
        ("retries at `3 times`", []),  # a count, in a code span too
        ("released at `1.2.0`", []),  # a version
    ],
)
def test_at_a_line_in_a_code_span(text, nums):
    got = [m.group("nums") for m in lines._AT_NUMBER.finditer(text) if not lines.not_a_line(text, m)]
    assert got == nums


@pytest.mark.parametrize(
    "name, subject",
    [
        ("`models`", "models"),
        ("Root", "Root"),
        ("get_children()", "get_children"),
        ("`Flask.wsgi_app()`", "Flask.wsgi_app"),
    ],
)
def test_the_name_a_line_is_joined_to_is_its_subject(name, subject):
    assert lines.joined_subject(name, lambda s: "/" in s) == subject


def pairs(text: str, path: str, k: int) -> list[str | None]:
    got = [verify.listed_pairs(text, text.index(path), k, i, lambda s: "/" in s) for i in range(k)]
    return [g["name"] if g else None for g in got]


def test_names_and_a_list_of_lines_pair_up_in_order():
    text = "- `hook.src`, `.dest`, `.destF` (a factory) — `cluster/hook.go:50,52,47`."
    assert pairs(text, "cluster/", 3) == ["hook.src", "dest", "destF"]
    row = "| | `clear_a`, `clear_b`, `update_depth` | `ipam/hooks.py:54,70,20` |"
    assert pairs(row, "ipam/", 3) == ["clear_a", "clear_b", "update_depth"]
    # counts that differ, or prose between, pair nothing
    assert pairs("`a_b`, `c_d` — x.py:1,2,3", "x.py", 3) == [None] * 3
    assert pairs("`a_b`, `c_d` are used by x.py:1,2", "x.py", 2) == [None] * 2


def test_a_name_member_opening_with_a_qualified_name_names_it_whole():
    def lead(value: str, name: str) -> str:
        return json_scopes._whole_lead(value, name, lambda s: "/" in s)

    assert lead("ChatResponse#content reads the first choice", "ChatResponse") == ("ChatResponse#content")
    assert lead("notify(self, check)", "notify") == "notify"  # no longer name at its head
    assert lead("Foo.bar", "Foo.bar") == "Foo.bar"
