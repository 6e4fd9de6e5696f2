"""Grader 11's rules (issue 34: a `mismatch` that is right), each on a small repository built from
the numbered strings below; every expectation was worked out by hand from them."""

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations import json_scopes, scopes, structure
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import commit_tree


def numbered(*lines):
    return "".join(line + "\n" for line in lines)


RESPONSE = numbered(
    "class Response",  # 1
    "  def role",  # 2
    "    'assistant'",  # 3
    "  end",  # 4
    "",  # 5
    "  def chat_completion",  # 6
    "    raw",  # 7
    "  end",  # 8
    "",  # 9
    "  def tool_calls",  # 10
    "    []",  # 11
    "  end",  # 12
    "end",  # 13
)
NODE_STORE = numbered("package tree", "", "type NodeStore struct {", "\tcs int", "}")  # 5 lines
FILES = {"lib/response.rb": RESPONSE, "go/store/prolly/tree/node_store.go": NODE_STORE}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("g11") / "repo"
    return commit_tree(repo, make_repo(repo, FILES))


def by_lines(text, tree):
    """{(resolved path, first line): item} for the line citations of one answer."""
    items = grade_citations(text, tree)["items"]
    return {(c["resolved_path"] or c["path_as_cited"], c["lines"][0]): c for c in items if c["lines"]}


def test_names_joined_by_slashes_before_a_colon_are_checked_as_a_group(tree):
    # the three names, then their three lines in file order (not the names' order)
    text = "Response role/chat_completion/tool_calls: lib/response.rb:6, lib/response.rb:10, lib/response.rb:2\n"
    got = by_lines(text, tree)
    assert [got[("lib/response.rb", n)]["strict"] for n in (6, 10, 2)] == ["verified"] * 3
    assert got[("lib/response.rb", 6)]["subject"]["name"] == "chat_completion"
    # a line holding none of them (13: `end`) is undetermined: no order was stated
    text = "Response role/chat_completion/tool_calls: lib/response.rb:6, lib/response.rb:10, lib/response.rb:13\n"
    assert by_lines(text, tree)[("lib/response.rb", 13)]["strict"] == "undetermined"
    # prose words joined by slashes (`registry/catalog`) are no group
    text = "Model registry/catalog: lib/response.rb:6, lib/response.rb:10\n"
    assert by_lines(text, tree)[("lib/response.rb", 10)]["subject"] is None


def test_an_absolute_path_from_a_top_level_folder_that_is_no_file_is_no_such_file(tree):
    got = by_lines("NodeStore at /Users/x/work/dolt/go/store/tree/node_store.go:3\n", tree)
    (c,) = got.values()
    assert c["bucket"] == "unresolved" and c["ungrounded"] == "no_such_file"
    # its tail from the top-level folder is a file: that file
    got = by_lines("NodeStore at /Users/x/work/dolt/go/store/prolly/tree/node_store.go:3\n", tree)
    assert got[("go/store/prolly/tree/node_store.go", 3)]["strict"] == "verified"


def site(text: str, cite: str, **kw) -> scopes.Site:
    start = text.index(cite)
    return scopes.Site(text, start, start + len(cite), structure.json_objects(text), is_path=lambda s: "/" in s, **kw)


def test_the_owning_key_names_a_locator_s_object_not_a_member_with_its_own_key():
    text = '{"Ollama": {"response_adapter_completion": "lib/a/completion.rb:4"}}'
    assert json_scopes.json_owner(site(text, "lib/a/completion.rb:4")) is None
    text = '{"Ollama": {"loc": "lib/a/completion.rb:4"}}'
    assert json_scopes.json_owner(site(text, "lib/a/completion.rb:4")) == "Ollama"
    text = '{"sstructs.Planner": {"field": "a/generic_sched.go:57"}}'  # a key naming the kind of place
    assert json_scopes.json_owner(site(text, "a/generic_sched.go:57")) == "sstructs.Planner"
    assert json_scopes.json_key_kind("field") == json_scopes.json_key_kind("impl_def") == "kind"


def test_a_name_with_a_line_of_its_own_is_not_the_subject_of_the_citation_before_it():
    text = '"deepseek": "lib/p/deepseek.rb:21 (own RequestAdapter:23, disables files)"'
    assert scopes.after(site(text, "lib/p/deepseek.rb:21")) is None
    text = '"deepseek": "lib/p/deepseek.rb:21 (RequestAdapter)"'
    assert scopes.after(site(text, "lib/p/deepseek.rb:21")) == "RequestAdapter"
    # a table cell right after the citation: its code span with its own line is that line's
    row = "| Name | Where | Format |\n|---|---|---|\n| MistralAI | `lib/a/m.rb:7` | `to_openai_format` (`:67`) |\n"
    assert scopes.table_name_cell(site(row.replace("Name", "Provider"), "lib/a/m.rb:7")) is None
    row = "| Provider | Where | Format |\n|---|---|---|\n| MistralAI | `lib/a/m.rb:7` | `to_openai_format` |\n"
    assert scopes.table_name_cell(site(row, "lib/a/m.rb:7")) == "to_openai_format"


def test_a_table_without_a_name_column_takes_the_code_span_before_or_the_declaration_after():
    row = "| Dependent | file:line | What |\n|---|---|---|\n| `get_listing` | `a/fetch.py:220` | lookup |\n"
    assert scopes.table_name_cell(site(row, "a/fetch.py:220")) == "get_listing"
    row = "| File | Line | Category |\n|---|---|---|\n| a/issue.rb:83 | validate :validate_issue | validator |\n"
    assert scopes.table_name_cell(site(row, "a/issue.rb:83")) == "validate_issue"


def test_a_class_name_key_is_a_name_whatever_its_words():
    assert json_scopes.json_key_kind("WhereClause") is None  # not a locator for its `where`
    assert json_scopes.json_key_kind("where") == "locator"


def test_a_label_naming_the_file_gives_way_to_the_next_scope_of_the_clause(tree):
    # `response` names lib/response.rb itself; the name right after is the subject
    (c,) = by_lines("response: lib/response.rb:6 chat_completion reads raw\n", tree).values()
    assert c["subject"] == {"name": "chat_completion", "from": "after"} and c["strict"] == "verified"


def test_a_class_line_for_a_call_its_body_makes_is_undetermined():
    from mcptrials.grade.citations import strict

    src = 'class Decoder\n  def feed(x)\n    parser.parse!(x)\n    log("parser.run!")\n  end\nend\n'
    lines = src.splitlines()
    assert strict.abstain_reason("a.rb", src, [1], "parser.parse!", lines, []) == (
        "the cited line opens a definition whose code writes `parser.parse!`"
    )
    # written only in a string: no such call, the mismatch stands (confirmed: None)
    assert strict.abstain_reason("a.rb", src, [1], "parser.run!", lines, []) is None


def test_names_joined_by_slashes_before_a_parenthesised_list_pair_up_in_order(tree):
    text = "hooks role_name/chat_completion/tool_calls (lib/response.rb:2,6,10) are overridable\n"
    got = by_lines(text, tree)
    assert got[("lib/response.rb", 2)]["subject"] is None  # `role_name` is written nowhere in the file
    assert [got[("lib/response.rb", n)]["subject"]["name"] for n in (6, 10)] == ["chat_completion", "tool_calls"]
    assert got[("lib/response.rb", 6)]["subject"]["from"] == "respectively"
    # plain words (`enable/disable`) are no such group
    got = by_lines("leadership enable/disable (lib/response.rb:2,6)\n", tree)
    assert all(c["subject"] is None or c["subject"]["from"] != "respectively" for c in got.values())


def test_a_name_the_cited_file_never_writes_is_no_subject(tree):
    # `request_building` is written nowhere in lib/response.rb: nothing to check at any of its lines
    (c,) = by_lines('{"component": "request_building", "file": "lib/response.rb:13"}', tree).values()
    assert c["subject"] is None and c["strict"] == "n/a"
    # a `component` member names the object like `name` (lexicon IDENT_KEYS): a confirmed wrong line
    (c,) = by_lines('{"component": "Response#tool_calls", "file": "lib/response.rb:3"}', tree).values()
    assert c["subject"] == {"name": "Response#tool_calls", "from": "json field"} and c["strict"] == "mismatch"
