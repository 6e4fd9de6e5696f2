"""Issue 34 item 5: the line-only references a reader follows, each form on plain strings (which
numbers a form reads, and what is no line), then through the grader on a small repository (the
file is the nearest one named in the same clause, list item or JSON object)."""

from __future__ import annotations

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations import lines
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import commit_tree


def read(rx, text: str) -> list[str]:
    """The numbers a form reads in text that are lines (not_a_line applied)."""
    return [m.group("nums") for m in rx.finditer(text) if not lines.not_a_line(text, m)]


@pytest.mark.parametrize(
    "text, nums",
    [
        ("`Javalin.java:21` — create; `create()` at :64; `start()` at :128", ["64", "128"]),
        ("(:22) → (:44)", ["22", "44"]),
        ("`records`/`load` (`:353/:1212/:1243`)", ["353", "1212", "1243"]),
        ("spawn_methods.rb:33 #merge -> :43 merge!", ["43"]),
        ("the server listens on :8080 in main.go", []),  # a port
        ("at 12:30 the job runs", []),  # a time
        ("a slice `xs[:5]` and `a[1:3]`", []),
        ('{"rank":1, "risk": "high"}', []),  # a JSON member, not a line
        ("see README.md:12", []),  # a path's own line is the path form's
    ],
)
def test_a_bare_colon_line(text, nums):
    assert read(lines._BARE_COLON, text) == nums


@pytest.mark.parametrize(
    "text, nums",
    [
        ("`full_dispatch_request` at 1597, `finalize_request` at 1600", ["1597", "1600"]),
        ('"ctx.push() @1596"', ["1596"]),
        ("ctx.push() @ 1596", ["1596"]),
        ("retries at 3 levels", []),  # a count
        ("it fails at 100% load", []),  # a measure
        ("released at 2024-05-01", []),  # a date
        ("install pkg@1.2.3", []),  # a version
        ("the cache expires at 30 seconds", []),
    ],
)
def test_at_a_number(text, nums):
    assert read(lines._AT_NUMBER, text) == nums


@pytest.mark.parametrize(
    "text, nums",
    [
        ('"test_request_dispatching (129)"', ["129"]),
        ("`is_noop` (11), `notify`(14)", ["11", "14"]),
        ("Flask.wsgi_app (1565)", ["1565"]),
        ("Step (3): run it", []),  # a step number after a plain word
        ("tests (20) pass", []),  # a count after a plain word
        ("since version (2)", []),
    ],
)
def test_a_number_after_a_name(text, nums):
    assert read(lines._NAME_PAREN, text) == nums


@pytest.mark.parametrize(
    "text, items",
    [
        ("relation.rb:1250/1473/1485 x", ["1473", "1485"]),
        ("named.rb:175/:181 x", ["181"]),
        ("a.rb:3/b.rb:4", []),  # a path after a slash is another citation
        ("a.rb:3/4.5", []),  # a fraction, not lines
    ],
)
def test_a_slash_list_after_a_path_line(text, items):
    m = lines._SLASH_LIST.match(text, text.index(":") + 1 + len(text.split(":")[1].split("/")[0]))
    got = [i.group("l1") for i in lines._SLASH_LIST_ITEM.finditer(m.group(0))] if m else []
    assert got == items


def test_a_list_of_code_spans_after_a_path_line():
    text = "`query_methods.rb:1206`, `1238`, `1654` — `#and`"
    m = lines._TICK_LIST.match(text, text.index("`,"))
    assert m is not None and [i.group("l1") for i in lines._TICK_LIST_ITEM.finditer(m.group(0))] == ["1238", "1654"]
    # a `:14` in its own code span is a line-only reference of its own (the older _COLON_LINE form)
    assert lines._TICK_LIST.match("`hidden_story.rb:5`,`:14`", len("`hidden_story.rb:5")) is None


FILES = {
    "src/app.py": "".join(f"def f{i}():\n    return {i}\n" for i in range(1, 400)),
    "src/auth.go": "package auth\n" + "".join(f"func F{i}() int {{ return {i} }}\n" for i in range(1, 200)),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("lineonly") / "repo"
    return commit_tree(str(root), make_repo(root, FILES))


def found(text: str, tree) -> list[tuple[str | None, list[int], str]]:
    items = grade_citations(text, tree)["items"]
    return sorted((c["resolved_path"], c["lines"], c["form"]) for c in items if c["lines"])


def test_the_forms_take_the_nearest_file_of_their_clause_or_item(tree):
    text = (
        "- `src/app.py:5` defines f3; `f50()` at :99; `f51()` at :101\n"
        "- in `src/auth.go`, F3 at 4 and `F7()` @8; `test_F9 (10)`\n"
        "- `src/app.py:11/21` and `src/auth.go:56, 105`\n"
    )
    assert found(text, tree) == [
        ("src/app.py", [5], "path:line"),
        ("src/app.py", [11], "path:list"),
        ("src/app.py", [21], "path:list"),
        ("src/app.py", [99], "line-in-context"),
        ("src/app.py", [101], "line-in-context"),
        ("src/auth.go", [4], "line-in-context"),
        ("src/auth.go", [8], "line-in-context"),
        ("src/auth.go", [10], "line-in-context"),
        ("src/auth.go", [56], "path:list"),
        ("src/auth.go", [105], "path:list"),
    ]


def test_an_explicit_line_takes_the_file_named_above_its_list(tree):
    text = "Intro.\n\n## Flow\nThe module is `src/app.py`.\n\n**Calls:**\n1. `f7` (line 13) calls `f8` (line 15)\n"
    assert found(text, tree) == [("src/app.py", [13], "line-in-context"), ("src/app.py", [15], "line-in-context")]
    # without a heading, the answer is no section about one file: no citation
    assert found(text.replace("## Flow\n", ""), tree) == []


def test_numbers_that_are_no_line_are_not_extracted(tree):
    text = (
        "- `src/app.py:3`: 1. retries at 3 levels; listens on :8080; Step (2); version 2.1; in 2024\n"
        '- {"file": "src/auth.go", "rank":1}\n'
    )
    assert found(text, tree) == [("src/app.py", [3], "path:line")]


def test_grader_12_a_name_joined_to_a_line_takes_its_json_objects_file_and_is_its_subject(tree):
    # `"overrides": ["f3@5"]` beside `"ref": "src/app.py:1"`: the line names no file, its object does
    text = '{"name": "App", "ref": "src/app.py:1", "overrides": ["f3@5", "f9@8"]}'
    items = {tuple(c["lines"]): c for c in grade_citations(text, tree)["items"] if c["lines"]}
    assert items[(5,)]["resolved_path"] == "src/app.py" and items[(5,)]["subject"]["name"] == "f3"
    assert items[(5,)]["strict"] == "verified"  # def f3 at 5
    # f9 is at 17; a plain word not at the line, so no confirmed mismatch (rule 2), and since grader 13
    # no subject either (n/a; undetermined before)
    assert items[(8,)]["strict"] == "n/a"
    # outside JSON a line whose item names no file is still no citation
    assert found("- overrides f3@5 and f9@17\n", tree) == []
