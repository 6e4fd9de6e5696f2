"""Grader 13's rules (issue 34), on plain strings (no repository) and then through the grader on a
small repository: names a reader may have meant only verify (weak.py); a subject no clear scope gives,
not at the line, is no subject; another name the context names, at the line, is what it cites; a
JSON "line" member whose object names no file takes the file its enclosing objects name."""

from __future__ import annotations

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations import lines, strict
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.citations.weak import weak_names
from mcptrials.grade.gittree import commit_tree


def is_path(s: str) -> bool:
    return "/" in s or s.endswith((".rb", ".py", ".go"))


@pytest.mark.parametrize(
    "text, cited, names",
    [
        # the two nearest names of its clause after it, then the two before it
        ('"lib/q.rb:1653 excluding extracts Relation"', "lib/q.rb:1653", [("excluding", False), ("extracts", False)]),
        # deeper in the description: what the line does (`can :manage, Spree::Order`), not its name
        ("- `lib/p.rb:36` – CanCan manage `Spree::Order`", "lib/p.rb:36", [("CanCan", True), ("manage", False)]),
        ("table (Arel::Table) - lib/r.rb:72, model", "lib/r.rb:72", [("Arel::Table", True), ("table", False)]),
        # an instruction after it names what to change (grader 8), none; a verb alone is a name
        ("- `lib/m.rb:26-40` - add to `PREFERENCE` array", "lib/m.rb:26-40", []),
        ("- `lib/c.rb:151` create", "lib/c.rb:151", [("create", False)]),
        # a table row's first cell
        ("| Keyring | nomad/keyring.go:23 |", "nomad/keyring.go:23", [("Keyring", False)]),
        # short plain words are none; a clause ends at a comma
        ("- `lib/a.rb:3` to db, then `Other` here", "lib/a.rb:3", []),
        # the line a citation heads: its code-like names
        (
            "1. `app/c.rb` (line 67):\n   - `Mastodon.delete_post(@story)` - deletes\n",
            "line 67",
            [("Mastodon.delete_post", True)],
        ),
        # the first word of each other string member of its JSON object
        ('{"file": "lib/g.rb", "line": 23, "usage": "Gantt helper reads"}', '"line": 23', [("Gantt", False)]),
    ],
)
def test_the_weak_names_stand_where_a_subject_stands(text, cited, names):
    from mcptrials.grade.citations.structure import json_objects

    s = text.index(cited)
    assert weak_names(text, s, s + len(cited), 0, len(text), is_path, json_objects(text)) == names


RUBY = """class Store
  has_many :refunds, through: :payments

  def create
    story = 1
  end
end
"""


@pytest.mark.parametrize(
    "line, name, held",
    [
        (4, "create", True),  # def create
        (5, "create", True),  # inside it
        (2, "refunds", True),  # a Rails declaration at the line
        (5, "story", False),  # written at the line, but no definition of it: a plain word says nothing
        (2, "payments", False),  # `through: :payments` declares nothing
        (1, "create", False),
    ],
)
def test_a_plain_weak_word_verifies_only_by_its_definition_or_declaration(line, name, held):
    assert strict.defined_at("a.rb", RUBY, [line], name, RUBY.split("\n")) is held


FILES = {
    "lib/store.rb": RUBY,
    "lib/base.rb": "class Base\n" + "".join(f"  def m{i}\n    {i}\n  end\n" for i in range(1, 40)) + "end\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("g13") / "repo"
    return commit_tree(str(root), make_repo(root, FILES))


def occ(text: str, tree, lines: list[int]) -> dict:
    item = next(c for c in grade_citations(text, tree)["items"] if c["lines"] == lines)
    return item["by_occurrence"][0]


def test_a_weak_name_at_the_line_verifies_and_elsewhere_gives_no_subject(tree):
    got = occ('{"triggers": ["lib/store.rb:4 create", "lib/store.rb:2 refunds"]}', tree, [4])
    assert (got["strict"], got["subject"]) == ("verified", {"name": "create", "from": "weak, at the line"})
    # `story` is written at line 5 but defined nowhere: a description's word, no subject
    assert occ('{"t": ["lib/store.rb:5 story search", "x"]}', tree, [5])["strict"] == "n/a"
    # never a mismatch from a weak name: `create` is not at line 1
    assert occ('{"t": ["lib/store.rb:1 create", "x"]}', tree, [1])["strict"] == "n/a"


def test_a_json_line_member_takes_the_file_of_its_enclosing_object(tree):
    text = '{"contract": "lib/base.rb", "methods": [{"name": "m2", "line": 5}, {"name": "m3", "line": 8}]}'
    items = {tuple(c["lines"]): c for c in grade_citations(text, tree)["items"] if c["lines"]}
    assert items[(5,)]["resolved_path"] == "lib/base.rb" and items[(5,)]["strict"] == "verified"
    assert items[(8,)]["context"]["scope"] == "enclosing json object"
    # the enclosing object's own file field comes first
    text = '{"file": "lib/base.rb:1", "methods": [{"name": "m2", "line": 5}]}'
    assert {tuple(c["lines"]) for c in grade_citations(text, tree)["items"] if c["lines"]} >= {(5,)}


@pytest.mark.parametrize(
    "text, nums",
    [
        ("(`:78,129-131`)", [[78], [129, 131]]),
        ("`:132/2099`", [[132], [2099]]),
        ("`:163-164, 215-217`", [[163, 164], [215, 217]]),
        ("`:14`", [[14]]),
        ("`:14, a`", []),  # not a list of lines: not the form
    ],
)
def test_a_colon_line_span_may_list_lines(text, nums):
    m = lines._COLON_LINE.search(text)
    got = [n for _, _, n in lines._numbers(text, m.start("nums"), m.end("nums"))] if m else []
    assert got == nums


def test_a_line_joined_to_a_name_in_a_json_string_takes_an_enclosing_objects_file(tree):
    text = '{"contract": "lib/base.rb", "required": {"overrides": ["m2@5", "m3@8"]}}'
    items = {tuple(c["lines"]): c for c in grade_citations(text, tree)["items"] if c["lines"]}
    assert items[(5,)]["resolved_path"] == "lib/base.rb" and items[(5,)]["strict"] == "verified"


def test_a_plain_word_verifies_by_the_innermost_definition_only():
    # `Chat endpoint defaults to ... at chat.rb:8`: class Chat holds line 8 only around the method
    # that holds it; the word names the file's class, not the line
    src = "class Chat\n  def url\n    'x'\n  end\nend\n"
    lines_of = src.split("\n")
    assert strict.defined_at("a.rb", src, [3], "Chat", lines_of) is False
    assert strict.defined_at("a.rb", src, [3], "url", lines_of) is True
    assert strict.defined_at("a.rb", src, [1], "Chat", lines_of) is True  # the line opens it
