"""Grader 14's rules (issue 34), on plain strings and a small repository: the first word of each
other member of the JSON object a citation stands in (under a key that locates it) is a weak name
(weak.py), which only verifies; so are the names of the line or code block a heading citation opens;
a bare number in a table's line column cites the row's file."""

from __future__ import annotations

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations import structure
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.citations.weak import weak_names
from mcptrials.grade.gittree import commit_tree


def is_path(s: str) -> bool:
    return "/" in s or s.endswith((".rb", ".py", ".go"))


def weak_of(text: str, cite: str, in_member: bool) -> list[tuple[str, bool]]:
    s = text.index(cite)
    objs = structure.enclosing_objects(structure.json_objects(text), s)[:1] if in_member else []
    return weak_names(text, s, s + len(cite), 0, len(text), is_path, objs)


def test_the_other_members_of_a_citations_own_object_give_weak_names():
    text = '{"behavior": "acts_as_thing", "called_at": "app/m/issue.rb:50", "count": 3}'
    assert weak_of(text, "app/m/issue.rb:50", True) == [("acts_as_thing", True)]
    text = '{"file": "app/c/stories.rb:123-137", "use": "preview"}'
    assert weak_of(text, "app/c/stories.rb:123-137", True) == [("preview", False)]
    # the grader passes no object for an item of an array of refs (grading.member_of): about the group
    text = '{"what": "Story#url", "refs": ["a/b.rb:1", "a/c.rb:2"]}'
    assert weak_of(text, "a/b.rb:1", False) == []


FILES = {"lib/call.rb": "class Call\n  def notify\n    1\n  end\nend\n", "lib/sms.rb": "class Sms\nend\n"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("g14") / "repo"
    return commit_tree(str(root), make_repo(root, FILES))


@pytest.mark.parametrize(
    "key, strict",
    [
        ("called_at", "verified"),  # a key that locates the citation: its siblings describe it
        ("file", "verified"),
        ("defaults", "n/a"),  # a fact of its own beside the others: their words are not about it
    ],
)
def test_only_a_locating_key_lets_a_citations_siblings_name_it(tree, key, strict):
    text = '{"behavior": "notify sends it", "%s": "lib/call.rb:2", "count": 3}' % key
    (item,) = [c for c in grade_citations(text, tree)["items"] if c["lines"]]
    occ = item["by_occurrence"][0]
    assert occ["strict"] == strict
    assert (occ["subject"] or {}).get("name") == ("notify" if strict == "verified" else None)


@pytest.mark.parametrize(
    "header, row, cited",
    [
        ("| Name | File | Line | Notes |", "| Call | `lib/call.rb` | 2 | sends |", [[2]]),
        ("| Name | File | Line(s) |", "| Call | lib/call.rb | `2-4` |", [[2, 4]]),
        # not under a line column: a count
        ("| Name | File | Calls |", "| Call | lib/call.rb | 2 |", []),
        # the file cell gives its own line: the number is no second citation
        ("| Name | File | Line |", "| Call | lib/call.rb:1 | 2 |", [[1]]),
    ],
)
def test_a_number_in_a_tables_line_column_cites_the_rows_file(tree, header, row, cited):
    text = f"{header}\n|{'---|' * header.count(' | ')}---|\n{row}\n"
    items = [c for c in grade_citations(text, tree)["items"] if c["lines"]]
    assert [c["lines"] for c in items] == cited
    assert all(c["resolved_path"] == "lib/call.rb" for c in items)


@pytest.mark.parametrize(
    "text, cited, names",
    [
        # a heading citation with a bold mark after its colon: the code-like names of the line below
        ("2. **Checks (`app/i.rb:172`):**\n   - `visible?` method checks\n", "app/i.rb:172", ["visible?"]),
        # no colon, but a code block right below: its first line
        (
            "3. **Parse** (`lib/p.rb:16`)\n   ```ruby\n   def initialize(stream)\n   ```\n",
            "lib/p.rb:16",
            ["initialize"],
        ),
        # no colon and no code block: the next line is another item, not what the citation heads
        ("- **Parse** (`lib/p.rb:16`)\n- `other_thing` next\n", "lib/p.rb:16", []),
    ],
)
def test_a_heading_citation_takes_the_names_of_the_line_or_code_block_below(text, cited, names):
    s = text.index(cited)
    got = weak_names(text, s, s + len(cited), 0, len(text), is_path)
    assert [n for n, strong in got if strong and n not in ("Checks", "Parse")] == names
