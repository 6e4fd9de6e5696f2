"""Issue 25: every citation form real answers use (with `form` recorded), each citation's
subject (narrowest scope first, with where it came from), resolution by the subject, the
strict verdict beside the lenient one, and the composition by form. Every expectation below
was worked out by hand from the numbered fixture files."""

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations.grading import grade_citations, pool
from mcptrials.grade.gittree import commit_tree


def numbered(*lines):
    return "".join(line + "\n" for line in lines)


TRANSPORTS = numbered(
    '"""Transports."""',  # 1
    "import json",  # 2
    "",  # 3
    "",  # 4
    "class TransportError(Exception):",  # 5
    "    pass",  # 6
    "",  # 7
    "",  # 8
    "class Transport:",  # 9
    "    def __init__(self, channel):",  # 10
    "        self.channel = channel",  # 11
    "",  # 12
    "    def notify(self, flip):",  # 13
    "        raise NotImplementedError",  # 14
    "",  # 15
    "    def is_noop(self, status):",  # 16
    "        return False",  # 17
    "",  # 18
    "    def render(self, name):",  # 19
    "        # see notify",  # 20
    "        return name",  # 21
    "",  # 22
    "",  # 23
    "class Http(Transport):",  # 24
    "    def notify(self, flip):",  # 25
    "        return self.post(flip)",  # 26
    "",  # 27
    "    def post(self, flip):",  # 28
    "        return flip",  # 29
    "",  # 30
)
MODELS = numbered(
    "TRANSPORTS = {",  # 1
    '    "email": "pkg.email.Email",',  # 2
    "}",  # 3
    "",  # 4
    "",  # 5
    "class Channel:",  # 6
    "    def transport(self):",  # 7
    "        return TRANSPORTS[self.kind]",  # 8
    "",  # 9
    "    def notify(self, flip):",  # 10
    "        if self.transport().is_noop(flip):",  # 11
    '            return "no-op"',  # 12
    "        self.transport().notify(flip)",  # 13
    "",  # 14
)
TESTS = numbered(
    "def test_notify():",  # 1
    "    assert True",  # 2
    "",  # 3
    "",  # 4
    "def test_noop():",  # 5
    "    assert True",  # 6
)
STORY = numbered(
    "class Story < ApplicationRecord",  # 1
    "  belongs_to :user",  # 2
    "  has_many :taggings, dependent: :destroy",  # 3
    "",  # 4
    "  def title=(t)",  # 5
    "    self[:title] = t",  # 6
    "  end",  # 7
    "",  # 8
    "  def is_gone?",  # 9
    "    is_deleted",  # 10
    "  end",  # 11
    "end",  # 12
)
UTIL_A = numbered("def helper():", "    return 1", "", "", "def other():", "    return 2")  # 6 lines
UTIL_B = numbered("import os", "", "", "def unrelated():", "    return os", "", "", "def helper2():", "    return 3")
LIB = numbered(
    "pub struct A;",  # 1
    "pub struct B;",  # 2
    "",  # 3
    "impl Service for A {",  # 4
    "    fn call(&self) {",  # 5
    "    }",  # 6
    "}",  # 7
    "",  # 8
    "impl Service for B {",  # 9
    "    fn call(&self) {",  # 10
    "    }",  # 11
    "}",  # 12
)
FILES = {
    "pkg/transports.py": TRANSPORTS,
    "pkg/models.py": MODELS,
    "tests/test_transports.py": TESTS,
    "app/models/story.rb": STORY,
    "a/util.py": UTIL_A,
    "b/util.py": UTIL_B,
    "src/lib.rs": LIB,
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("subj") / "repo"
    return commit_tree(repo, make_repo(repo, FILES))


def grade(text, tree):
    return grade_citations(text, tree)


def by_lines(text, tree, path=None):
    """{(resolved path, first line): item} for the line citations of one answer."""
    out = {}
    for c in grade(text, tree)["items"]:
        if c["lines"]:
            out[(c["resolved_path"] or c["path_as_cited"], c["lines"][0])] = c
    return out


# --- forms --------------------------------------------------------------------------------


def test_every_number_of_a_prose_list_is_a_citation_with_its_form(tree):
    text = "In pkg/transports.py the methods start at (lines 13, 16, 19) and the class at lines 24-29.\n"
    got = by_lines(text, tree)
    assert {k for k in got} == {
        ("pkg/transports.py", 13),
        ("pkg/transports.py", 16),
        ("pkg/transports.py", 19),
        ("pkg/transports.py", 24),
    }
    assert got[("pkg/transports.py", 16)]["form"] == "line-in-context"
    assert got[("pkg/transports.py", 24)]["lines"] == [24, 29]


def test_l_prefix_tilde_and_bare_parenthesised_range(tree):
    text = (
        "- pkg/models.py: `Channel.notify` at L10, `TRANSPORTS` at line ~1.\n"
        "- pkg/transports.py holds `Http` (24–29).\n"
    )
    got = by_lines(text, tree)
    assert got[("pkg/models.py", 10)]["form"] == "line-in-context"
    assert got[("pkg/models.py", 1)]["lines"] == [1]
    rng = got[("pkg/transports.py", 24)]
    assert rng["lines"] == [24, 29] and rng["form"] == "line-in-context"
    # A bare (N-M) with no file in its item is not a citation.
    assert grade("- the retries happen (3-5) times\n", tree)["counts"]["total"] == 0


def test_json_lines_string_with_a_comma_list_cites_every_number(tree):
    text = '{"file": "pkg/transports.py", "lines": "13, 25", "name": "notify"}'
    got = by_lines(text, tree)
    assert set(got) == {("pkg/transports.py", 13), ("pkg/transports.py", 25)}
    assert {c["form"] for c in got.values()} == {"json-fields"}
    assert {c["strict"] for c in got.values()} == {"verified"}  # both lines define a notify


def test_path_forms_list_basename_symbol_and_test_id(tree):
    text = (
        "See pkg/transports.py:13,16 and `transports.py:19` (`render`), pkg/models.py:Channel.notify "
        "and the test tests/test_transports.py::test_noop.\n"
    )
    items = grade(text, tree)["items"]
    forms = {(c["resolved_path"], tuple(c["lines"] or ()), c["symbol"]): c["form"] for c in items}
    assert forms == {
        ("pkg/transports.py", (13,), None): "path:list",
        ("pkg/transports.py", (16,), None): "path:list",
        ("pkg/transports.py", (19,), None): "basename",
        ("pkg/models.py", (), "Channel.notify"): "path:symbol",
        ("tests/test_transports.py", (), "test_noop"): "test-id",
    }
    test_id = next(c for c in items if c["form"] == "test-id")
    assert test_id["bucket"] == "grounded" and test_id["symbol_lines"] == [5, 6]


def test_absolute_path_of_the_agent_workspace_resolves_by_its_tail(tree):
    text = "The base is /Users/someone/work/repo/pkg/transports.py:9 (`Transport`).\n"
    (c,) = grade(text, tree)["items"]
    assert (c["resolved_path"], c["form"], c["bucket"], c["strict"]) == (
        "pkg/transports.py",
        "absolute",
        "grounded",
        "verified",
    )


def test_path_range_form(tree):
    (c,) = grade("pkg/transports.py:24-29 is `Http`.", tree)["items"]
    assert c["form"] == "path:range" and c["strict"] == "verified"


# --- subjects -----------------------------------------------------------------------------


def test_subject_from_the_parenthetical_after_wins_over_a_name_before(tree):
    (c,) = grade("`Transport` is dispatched from pkg/models.py:10 (`Channel.notify`).\n", tree)["items"]
    assert c["subject"] == {"name": "Channel.notify", "from": "after"}
    assert c["strict"] == "verified"


def test_subject_from_the_name_right_before(tree):
    (c,) = grade("- `is_noop(self, status) -> bool` — pkg/transports.py:16. Called by dispatch.\n", tree)["items"]
    assert c["subject"] == {"name": "is_noop", "from": "label"}
    assert c["strict"] == "verified"


def test_subject_of_a_string_in_a_list_is_its_own_name_not_the_enclosing_objects_symbol(tree):
    text = (
        '{"symbol": "Channel.transport", "file": "pkg/models.py", "line": 7,\n'
        ' "callers": ["Http.post (pkg/transports.py:28)"]}'
    )
    got = by_lines(text, tree)
    post = got[("pkg/transports.py", 28)]
    assert post["subject"] == {"name": "Http.post", "from": "label"} and post["strict"] == "verified"
    # The old rule took the object's symbol (transport), absent near line 28: mismatch.
    assert post["verification"] == "mismatch"
    own = got[("pkg/models.py", 7)]
    assert own["subject"] == {"name": "Channel.transport", "from": "json field"} and own["strict"] == "verified"


def test_subject_from_a_json_objects_own_name_field(tree):
    text = '{"callers": [{"name": "Http.post", "file": "pkg/transports.py", "line": 29}], "symbol": "Transport"}'
    (c,) = grade(text, tree)["items"]
    assert c["subject"] == {"name": "Http.post", "from": "json field"} and c["strict"] == "verified"


def test_subject_from_the_list_items_head(tree):
    text = "1. **Http.post** sends the request; the body is built at pkg/transports.py:29.\n"
    (c,) = grade(text, tree)["items"]
    assert c["subject"] == {"name": "Http.post", "from": "list item"} and c["strict"] == "verified"


def test_no_subject_is_na(tree):
    (c,) = grade("pkg/transports.py:2 imports it.\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_ruby_association_and_predicate_subjects(tree):
    text = "- `has_many :taggings, dependent: :destroy` — `story.rb:3`\n- `Story#is_gone?` — app/models/story.rb:9\n"
    got = by_lines(text, tree)
    assert got[("app/models/story.rb", 3)]["subject"]["name"] == "taggings"
    assert got[("app/models/story.rb", 3)]["strict"] == "verified"
    assert got[("app/models/story.rb", 9)]["subject"]["name"] == "Story#is_gone?"
    assert got[("app/models/story.rb", 9)]["strict"] == "verified"


# --- resolution by the subject ------------------------------------------------------------


def test_line_only_reference_resolves_to_the_file_where_its_subject_is(tree):
    # The nearest path before is models.py (14 lines): the old rule called line 16 past EOF.
    text = "The base is pkg/transports.py:9 and dispatch is pkg/models.py:6; `is_noop` is at line 16.\n"
    c = by_lines(text, tree)[("pkg/transports.py", 16)]
    assert c["resolved_by"] == "context" and c["context"]["scope"] == "subject at the line"
    assert c["bucket"] == "grounded" and c["strict"] == "verified"


def test_basename_resolves_by_its_subject_else_stays_ambiguous_with_candidates(tree):
    text = "See a/util.py:1 and b/util.py:4.\n\nThen util.py:5 (`other`) and util.py:3 (`helper`).\n"
    got = by_lines(text, tree)
    other = got[("a/util.py", 5)]
    assert other["resolved_by"] == "context" and other["strict"] == "verified"
    helper = got[("util.py", 3)]  # both files have a line 3, neither holds helper there
    assert helper["bucket"] == "unresolved" and helper["candidates"] == ["a/util.py", "b/util.py"]
    assert helper["ungrounded"] == "basename"


def test_a_basename_is_not_the_file_shorter_than_the_line(tree):
    # a/util.py has 6 lines, b/util.py 9: util.py:8 can only be b/util.py, whose line 8 is
    # `def helper2():`, so `helper` is not there; b/util.py never writes `helper`, so no
    # positive evidence of a wrong line, not ambiguous (issue 34 item 1); a name the file never
    # writes is no subject there (grader 11): n/a, undetermined before.
    c = by_lines("Then util.py:8 (`helper`).\n", tree)[("b/util.py", 8)]
    assert c["context"]["scope"] == "file long enough" and c["bucket"] == "grounded"
    assert c["strict"] == "n/a"
    # a line-only reference after a file too short for it moves to the context's file that has it
    d = by_lines("In b/util.py `helper2` is defined; in a/util.py `helper2` (line 8) is called.\n", tree)
    assert d[("b/util.py", 8)]["context"]["scope"] in ("file long enough", "subject at the line")


# --- strict verification ------------------------------------------------------------------


def test_a_neighbour_passes_the_lenient_window_but_not_the_strict_rule(tree):
    (c,) = grade("`Transport.render` (pkg/transports.py:16)\n", tree)["items"]
    assert (c["verification"], c["strict"]) == ("verified", "mismatch")


def test_a_name_only_in_a_comment_does_not_verify(tree):
    (c,) = grade("`notify` is at pkg/transports.py:20.\n", tree)["items"]
    assert c["strict"] == "mismatch"


def test_a_call_inside_the_named_function_verifies(tree):
    (c,) = grade("Dispatch (`Channel.notify`) calls the transport at pkg/models.py:13.\n", tree)["items"]
    assert c["subject"]["name"] == "Channel.notify" and c["strict"] == "verified"


def test_qualified_subject_checks_the_chain(tree):
    got = by_lines("`A::call` (src/lib.rs:10) and `B::call` (src/lib.rs:5).\n", tree)
    assert got[("src/lib.rs", 10)]["verification"] == "verified"  # lenient: `call` is near
    assert got[("src/lib.rs", 10)]["strict"] == "mismatch"  # line 10 is B's call
    assert got[("src/lib.rs", 5)]["strict"] == "mismatch"
    ok = by_lines("`B::call` (src/lib.rs:10)\n", tree)[("src/lib.rs", 10)]
    assert ok["strict"] == "verified"


def test_a_receivers_name_near_the_line_is_not_enough(tree):
    # Http.post is defined at 28; line 24 names Http (the receiver) but not post.
    (c,) = grade("`Http.post` (pkg/transports.py:24)\n", tree)["items"]
    assert (c["verification"], c["strict"]) == ("verified", "mismatch")


# --- counts, composition, ungrounded ------------------------------------------------------


def test_counts_strict_beside_lenient_and_composition_by_form(tree):
    text = (
        "- `Transport.render` (pkg/transports.py:16)\n"  # path:line, lenient verified, strict mismatch
        "- `Http` (pkg/transports.py:24-29)\n"  # path:range, verified both ways
        "- `nothing` (pkg/models.py:99)\n"  # past the end of the file
        "- `x` (nowhere/gone.py:3)\n"  # no such file
        "- pkg/models.py:Missing\n"
    )  # symbol not defined
    g = grade(text, tree)
    c = g["counts"]
    assert (c["total"], c["grounded"], c["verified"], c["mismatch"]) == (5, 2, 2, 0)
    assert (c["strict_verified"], c["strict_mismatch"], c["strict_na"]) == (1, 1, 3)
    assert c["ungrounded"] == {"basename": 0, "past_eof": 1, "no_such_file": 1, "symbol_not_defined": 1, "ambiguous": 0}
    r = g["rates"]
    assert r["verified_rate"] == 1.0 and r["strict_verified_rate"] == 0.5
    # strict grounding: grounded and not a strict mismatch, over all citations = 1/5
    assert r["grounded_rate"] == 2 / 5 and r["strict_grounded_rate"] == 1 / 5
    forms = c["by_form"]
    assert forms["path:line"] == {
        "total": 3,
        "grounded": 1,
        "verified": 1,
        "mismatch": 0,
        "strict_verified": 0,
        "strict_mismatch": 1,
        "strict_undetermined": 0,
    }
    assert forms["path:range"]["strict_verified"] == 1 and forms["path:symbol"]["total"] == 1
    pooled = pool([g, g])
    assert pooled["counts"]["by_form"]["path:line"]["total"] == 6
    assert pooled["counts"]["ungrounded"]["past_eof"] == 2
    assert pooled["rates"]["strict_verified_rate"] == 0.5


# --- subject and definition fixes found on the corpus (each failed before its fix) ---------


def test_a_module_level_assignment_is_a_definition_over_its_whole_statement(tree):
    # pkg/models.py lines 1-3 are `TRANSPORTS = {` ... `}`: line 2 holds only a dict entry,
    # yet it is inside the definition of TRANSPORTS.
    (c,) = grade("The `TRANSPORTS` registry entry (pkg/models.py:2).\n", tree)["items"]
    assert c["subject"]["name"] == "TRANSPORTS" and c["strict"] == "verified"
    # a function is not a definition of TRANSPORTS: line 10 opens notify(), whose body never reads it
    (d,) = grade("`TRANSPORTS` (pkg/models.py:10)\n", tree)["items"]
    assert d["strict"] == "mismatch"
    # line 7 opens transport(), whose body reads TRANSPORTS: since grader 10 a function's first
    # line stands for its body
    (e,) = grade("`TRANSPORTS` (pkg/models.py:7)\n", tree)["items"]
    assert e["strict"] == "verified"


def test_a_plain_word_before_a_parenthetical_is_prose_not_the_subject(tree):
    # "the re-raise logic (path:14)": `logic` names nothing; no code-like name in the
    # clause, so no subject from the scopes, not a mismatch against `logic`; nor (grader 13, weak.py)
    # `Transport`: its class holds line 14 only around the method that holds it, not as the line's own
    (c,) = grade("Transport has the re-raise logic (pkg/transports.py:14), kept as is.\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_a_capitalised_name_right_before_is_the_subject_in_a_list_of_pairs(tree):
    text = "Overridden by Transport `pkg/transports.py:9`, Http `pkg/transports.py:24`.\n"
    got = by_lines(text, tree)
    assert got[("pkg/transports.py", 24)]["subject"] == {"name": "Http", "from": "label"}
    assert got[("pkg/transports.py", 24)]["strict"] == "verified"


def test_the_next_items_name_after_a_middle_dot_is_not_this_citations_subject(tree):
    # `·` ends the clause: Http is the subject of :24, not Channel (the next item's name)
    text = "Http `pkg/transports.py:24` · Channel `pkg/models.py:6`\n"
    got = by_lines(text, tree)
    assert got[("pkg/transports.py", 24)]["subject"]["name"] == "Http"
    assert got[("pkg/transports.py", 24)]["strict"] == "verified"


def test_a_prose_acronym_before_the_citation_loses_to_the_backticked_name(tree):
    # HTTP (4 capitals) is prose, not a constant; `Http` is the name the citation is about
    (c,) = grade("- `Http` HTTP — pkg/transports.py:24\n", tree)["items"]
    assert c["subject"]["name"] == "Http" and c["strict"] == "verified"


def test_a_json_file_key_is_not_the_subject_and_a_text_member_names_it(tree):
    text = '[{"file": "pkg/transports.py:28", "what": "Http.post sends the request"}]'
    (c,) = grade(text, tree)["items"]
    assert c["subject"] == {"name": "Http.post", "from": "json text"} and c["strict"] == "verified"


def test_each_occurrence_has_its_own_subject_and_verdict(tree):
    # pkg/transports.py:24 is `class Http(Transport):`. First occurrence: `render` (not there:
    # mismatch); second: `Http` (there: verified). The citation is verified once; each
    # occurrence keeps its own verdict.
    text = "`render` (pkg/transports.py:24) is wrong.\n\n- `Http` — pkg/transports.py:24\n"
    (c,) = grade(text, tree)["items"]
    # (render is defined at 19; `Http`, at the line, is attached to the other occurrence, not a
    # rival of this one: a confirmed mismatch since grader 11, undetermined before)
    assert [o["strict"] for o in c["by_occurrence"]] == ["mismatch", "verified"]
    assert c["strict"] == "verified" and c["subject"]["name"] == "Http"


CHAN = numbered(
    "class Channel:",  # 1
    "    @property",  # 2
    "    def transport(self):",  # 3
    "        return object()",  # 4
    "",  # 5
    "    def notify(self, flip):",  # 6
    "        self.transport.notify(flip)",  # 7
)


@pytest.fixture(scope="module")
def chan_tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("chan") / "repo"
    return commit_tree(repo, make_repo(repo, {"pkg/chan.py": CHAN}))


def test_a_call_site_naming_the_whole_chain_verifies(chan_tree):
    # line 7 is inside Channel.notify, a `notify` whose container is Channel, not `transport`:
    # the chain rule alone says mismatch; but line 7 names `self.transport.notify` whole.
    (c,) = grade("Channel.notify calls `self.transport.notify(flip)` at pkg/chan.py:7.\n", chan_tree)["items"]
    assert c["subject"]["name"] == "self.transport.notify" and c["strict"] == "verified"
    # the same subject at line 6, the def line whose body makes the call: since grader 10 a
    # function's first line stands for its body (a reader's `correct` on the development sets)
    (d,) = grade("Channel.notify calls `self.transport.notify(flip)` at pkg/chan.py:6.\n", chan_tree)["items"]
    assert d["strict"] == "verified"


def test_names_joined_by_a_slash_pair_with_citations_joined_the_same_way(tree):
    # pkg/transports.py: `def notify` at 13, `def is_noop` at 16; "a/b path:13,16" means
    # a at 13 and b at 16 (the nearest name, is_noop, would call 13 a mismatch)
    got = by_lines("`notify`/`is_noop` pkg/transports.py:13,16\n", tree)
    assert got[("pkg/transports.py", 13)]["subject"] == {
        "name": "notify",
        "from": "respectively",
        "group": ["notify", "is_noop"],
    }
    assert got[("pkg/transports.py", 16)]["subject"]["name"] == "is_noop"
    assert got[("pkg/transports.py", 13)]["strict"] == got[("pkg/transports.py", 16)]["strict"] == "verified"
    # counts that differ pair nothing: two names, one citation
    (one,) = grade("`notify`/`is_noop` pkg/transports.py:16\n", tree)["items"]
    assert one["subject"]["from"] != "respectively"


DECO = numbered(
    "class Http:",  # 1
    "    @classmethod",  # 2
    "    def put(cls):",  # 3
    "        return 1",  # 4
)


def test_a_decorator_line_is_part_of_the_decorated_definition(tmp_path):
    # `@classmethod` at line 2 belongs to `def put` (lines 2-4 with it); line 1 does not
    t = commit_tree(tmp_path / "repo", make_repo(tmp_path / "repo", {"pkg/deco.py": DECO}))
    (c,) = grade("`put` (pkg/deco.py:2)\n", t)["items"]
    assert c["strict"] == "verified"
    (d,) = grade("`put` (pkg/deco.py:1)\n", t)["items"]
    assert d["strict"] == "mismatch"


def test_a_json_key_names_the_citation_only_when_the_file_names_it(tree):
    # pkg/models.py has `transport` (line 7) and `notify` (line 10), no word `dispatch_flow`
    text = '{"transport": "pkg/models.py:7", "dispatch_flow": "pkg/models.py:10"}'
    got = by_lines(text, tree)
    assert got[("pkg/models.py", 7)]["subject"] == {"name": "transport", "from": "json key"}
    assert got[("pkg/models.py", 7)]["strict"] == "verified"
    assert got[("pkg/models.py", 10)]["subject"] is None and got[("pkg/models.py", 10)]["strict"] == "n/a"
    # a key naming something else of the file is a subject, and catches the wrong line
    (c,) = grade('{"notify": "pkg/models.py:7"}', tree)["items"]
    assert c["subject"]["name"] == "notify" and c["strict"] == "mismatch"


def test_ruby_method_and_setter_notation_are_names(tree):
    # app/models/story.rb: line 5 `def title=(t)`, line 9 `def is_gone?`
    (c,) = grade('"after_save #is_gone?: app/models/story.rb:9"', tree)["items"]
    assert c["subject"]["name"] == "is_gone?" and c["strict"] == "verified"
    (d,) = grade('"app/models/story.rb:5 title= strips the input and stores it"', tree)["items"]
    assert d["subject"]["name"] == "title" and d["strict"] == "verified"


def test_a_capitalised_name_before_a_kind_word_in_a_json_text_member(tree):
    # app/models/story.rb:10 is inside `class Story` (lines 1-12)
    (c,) = grade('{"dependent": "Story model", "location": "app/models/story.rb:10"}', tree)["items"]
    assert c["subject"] == {"name": "Story", "from": "json text"} and c["strict"] == "verified"


def test_the_name_owning_the_parenthetical_a_citation_stands_in(tree):
    # "`is_gone?` (method, line 9)": the citation is in is_gone?'s parenthetical; line 9 is
    # `def is_gone?` (the list item's head, `title=`, is not what it is about)
    text = "- In app/models/story.rb: `title=` (line 5), `is_gone?` (method, line 9)\n"
    got = by_lines(text, tree)
    assert got[("app/models/story.rb", 9)]["subject"] == {"name": "is_gone?", "from": "label"}
    assert got[("app/models/story.rb", 9)]["strict"] == "verified"


def test_names_joined_by_and_pair_with_citations_joined_by_and(tree):
    # `notify` at 13 and `is_noop` at 16 of pkg/transports.py
    got = by_lines("`notify` and `is_noop` at pkg/transports.py:13 and pkg/transports.py:16\n", tree)
    assert got[("pkg/transports.py", 13)]["subject"] == {
        "name": "notify",
        "from": "respectively",
        "group": ["notify", "is_noop"],
    }
    assert got[("pkg/transports.py", 16)]["subject"]["name"] == "is_noop"


def test_the_name_before_a_closed_parenthetical_right_before_the_citation(tree):
    # line 9 is `def is_gone?`; `title` is inside is_gone?'s parenthetical, not the subject
    (c,) = grade("`is_gone?` (a check, not `title`) app/models/story.rb:9\n", tree)["items"]
    assert c["subject"] == {"name": "is_gone?", "from": "label"} and c["strict"] == "verified"


def test_a_heading_clause_ending_in_a_colon_names_the_citation(tree):
    # line 14 (`raise NotImplementedError`) is inside class Transport (9-21), not TransportError:
    # the heading's `Transport` is the subject, the parenthetical after is a note
    (c,) = grade("`Transport` raises the error: pkg/transports.py:14 (TransportError)\n", tree)["items"]
    assert c["subject"] == {"name": "Transport", "from": "label"} and c["strict"] == "verified"


def test_a_kind_word_right_before_gives_the_name_before_it(tree):
    # "Story model at app/models/story.rb:10": `model` is the kind, Story the name (class
    # Story spans 1-12); a plain `model` would be a mismatch
    (c,) = grade("Shared behaviour (Story model at app/models/story.rb:10):\n", tree)["items"]
    assert c["subject"] == {"name": "Story", "from": "label"} and c["strict"] == "verified"


def test_a_nested_item_naming_nothing_takes_its_parent_items_head(tree):
    text = "8. **Http.post** - easy to overlook\n   - File: `pkg/transports.py:28`\n"
    (c,) = grade(text, tree)["items"]
    assert c["subject"] == {"name": "Http.post", "from": "list item"} and c["strict"] == "verified"


def test_a_plain_name_before_a_note_and_a_colon_is_the_heading(tree):
    # "Story has_many taggings (dependent): app/models/story.rb:3": taggings, at line 3
    (c,) = grade('"Story has_many taggings (dependent): app/models/story.rb:3"', tree)["items"]
    assert c["subject"]["name"] == "taggings" and c["strict"] == "verified"


def test_a_json_text_name_the_file_lacks_is_not_the_subject(tree):
    # `audit_done` names nothing of pkg/transports.py: no subject (n/a), not a mismatch
    (c,) = grade('{"action": "audit_done", "base": "pkg/transports.py:9"}', tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_names_and_lines_listed_in_two_orders_check_each_line_against_the_group(tree):
    # notify is at 13, is_noop at 16 of pkg/transports.py; the answer lists the lines the other
    # way round: a reader finds each name of the group at one of them
    got = by_lines("`notify` and `is_noop` at pkg/transports.py:16 and pkg/transports.py:13\n", tree)
    assert got[("pkg/transports.py", 16)]["subject"]["name"] == "is_noop"
    assert got[("pkg/transports.py", 16)]["subject"]["from"] == "respectively, in another order"
    assert got[("pkg/transports.py", 13)]["subject"]["name"] == "notify"
    assert got[("pkg/transports.py", 16)]["strict"] == got[("pkg/transports.py", 13)]["strict"] == "verified"
    # a line that holds neither name (20: a comment inside render) stays a mismatch
    bad = by_lines("`notify` and `is_noop` at pkg/transports.py:16 and pkg/transports.py:20\n", tree)
    assert bad[("pkg/transports.py", 20)]["subject"]["name"] == "is_noop"
    assert bad[("pkg/transports.py", 20)]["strict"] == "mismatch"


def test_a_plural_kind_word_between_the_names_and_their_lines(tree):
    got = by_lines("It uses the `notify`/`is_noop` helpers at pkg/transports.py:13 and pkg/transports.py:16\n", tree)
    assert got[("pkg/transports.py", 13)]["subject"]["name"] == "notify"
    assert got[("pkg/transports.py", 16)]["subject"]["name"] == "is_noop"
    assert got[("pkg/transports.py", 16)]["strict"] == "verified"


def test_a_word_that_is_the_cited_files_own_name_is_no_subject(tree):
    # "transports:" names the file pkg/transports.py, nothing at line 13 (before: a mismatch)
    (c,) = grade("transports: pkg/transports.py:13\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"
    # a Ruby association named by the file's plural (`stories`, story.rb) is the file too
    (d,) = grade("- `has_many :stories` — app/models/story.rb:3\n", tree)["items"]
    assert d["subject"] is None and d["strict"] == "n/a"
    # the class of that name is a name of the code: Transport at 13 is inside class Transport
    (e,) = grade("Transport: pkg/transports.py:13\n", tree)["items"]
    assert e["subject"]["name"] == "Transport" and e["strict"] == "verified"


def test_a_line_only_reference_moves_to_the_file_that_defines_its_subject(tree):
    # the nearest file, pkg/models.py, defines no TransportError, pkg/transports.py does (5-6):
    # the line (7, blank) is wrong, the file is TransportError's
    got = by_lines(
        "The check at pkg/models.py:13 handles `TransportError` (`:7`), raised in pkg/transports.py.\n", tree
    )
    c = got[("pkg/transports.py", 7)]
    assert c["context"]["scope"] == "subject defined in the file" and c["strict"] == "mismatch"
    # a subject the nearest file defines keeps it (Channel.notify in pkg/models.py, 10-13)
    got = by_lines("The check at pkg/models.py:13 handles `notify` (`:2`), also in pkg/transports.py.\n", tree)
    assert ("pkg/models.py", 2) in got and got[("pkg/models.py", 2)]["strict"] == "mismatch"


def test_the_value_of_a_descriptive_json_member_takes_no_name_from_its_siblings(tree):
    # "base_class" names nothing of pkg/transports.py; the sibling's `notify` is another fact
    (c,) = grade('{"base_class": "pkg/transports.py:9", "entry_point": "notify(self, flip)"}', tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"
    # beside a file member, the other member's name is what the citation is about
    (d,) = grade('{"file": "pkg/transports.py:13", "what": "notify(self, flip)"}', tree)["items"]
    assert d["subject"] == {"name": "notify", "from": "json text"} and d["strict"] == "verified"


def test_a_name_deep_in_the_description_after_a_citation_is_not_its_subject(tree):
    # "holds the base of every `Http`": Http is what the description is about, four words in,
    # not what is at line 9 (class Transport); before: subject Http, a mismatch
    (c,) = grade("pkg/transports.py:9 holds the base of every `Http` sender.\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"
    # right after the citation (past a lead word such as `defines`) or in its parenthetical it is
    (d,) = grade("pkg/transports.py:24 defines `Http`.\n", tree)["items"]
    assert d["subject"] == {"name": "Http", "from": "after"} and d["strict"] == "verified"
    (e,) = grade("pkg/transports.py:24 (the subclass that posts to `Http`)\n", tree)["items"]
    assert e["subject"] == {"name": "Http", "from": "after"} and e["strict"] == "verified"


def test_the_next_conjunct_after_a_citation_is_another_clause(tree):
    # "`helper` is defined at a/util.py:1 and `other` calls it": other is the next clause's
    # subject; a/util.py:1 is `def helper():` (before: subject other, a mismatch)
    got = by_lines("`helper` is defined at a/util.py:1 and `other` calls it at b/util.py:8.\n", tree)
    assert got[("a/util.py", 1)]["subject"] == {"name": "helper", "from": "before"}
    assert got[("a/util.py", 1)]["strict"] == "verified"


def test_an_unresolved_bare_file_name_has_the_basename_form(tree):
    # util.py is a/util.py and b/util.py: unresolved, and its form is the one written
    (c,) = grade("util.py:3 is odd\n", tree)["items"]
    assert c["bucket"] == "unresolved" and c["ungrounded"] == "basename" and c["form"] == "basename"
    (d,) = grade("util.py:3,5 are odd\n", tree)["items"][:1]
    assert d["form"] == "basename"


def test_a_bold_heading_with_a_code_span_names_the_citation_after_it(tree):
    # "**`Transport.notify` cascade** — path:13": the heading's code span, line 13 its def
    (c,) = grade("4. **`Transport.notify` cascade** — pkg/transports.py:13\n", tree)["items"]
    assert c["subject"] == {"name": "Transport.notify", "from": "label"} and c["strict"] == "verified"


def test_a_part_of_a_hyphenated_prose_word_is_not_a_name(tree):
    # "IP-delete" is prose; before, `IP` right after the citation was its subject (a mismatch)
    (c,) = grade("pkg/transports.py:9 IP-delete.\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_json_members_by_what_their_keys_say(tree):
    # a locator key (`file_line`) is no label of the citation: the descriptive member's code
    # name is its subject; a group key (`subsystem`) names none
    (c,) = grade('{"file_line": "pkg/transports.py:13", "subsystem": "Core", "depends_how": "Transport.notify"}', tree)[
        "items"
    ]
    assert c["subject"] == {"name": "Transport.notify", "from": "json text"} and c["strict"] == "verified"
    # an item of an array of refs: the object's prose is about the group, not this line
    got = by_lines(
        '{\n  "summary": "calls `is_noop`",\n  "refs": ["pkg/transports.py:13", "pkg/transports.py:24"]\n}', tree
    )
    assert got[("pkg/transports.py", 13)]["subject"] is None and got[("pkg/transports.py", 13)]["strict"] == "n/a"
    # a dotted module path naming the cited file (`pkg.transports`) is the file, no subject
    (d,) = grade('{"name": "pkg.transports", "verification": "pkg/transports.py:13"}', tree)["items"]
    assert d["subject"] is None and d["strict"] == "n/a"


def test_lines_listed_with_one_space_and_a_long_list_under_one_description(tree):
    # ", 24" (one space) is a second line; ", 2 more" is a count
    got = by_lines("pkg/transports.py:9, 24: the classes. And pkg/models.py:6, 2 more.\n", tree)
    assert sorted(got) == [("pkg/models.py", 6), ("pkg/transports.py", 9), ("pkg/transports.py", 24)]
    assert got[("pkg/transports.py", 24)]["form"] == "path:list"
    # three or more lines under one description: it is about the group, no line's subject
    many = by_lines("pkg/transports.py:13,16,19 - `Http` users\n", tree)
    assert all(c["subject"] is None and c["strict"] == "n/a" for c in many.values()) and len(many) == 3
    # so is a name the list is attached to (before: Http, a mismatch at each of these lines)
    head = by_lines("- `Http` — pkg/transports.py:13,16,19\n", tree)
    assert all(c["subject"] is None for c in head.values()) and len(head) == 3
    # two lines keep it: 24 and 28 are both inside class Http (24-29)
    two = by_lines("pkg/transports.py:24,28 - `Http`\n", tree)
    assert [two[("pkg/transports.py", n)]["strict"] for n in (24, 28)] == ["verified", "verified"]


def test_a_capitalised_heading_word_the_file_never_names_is_no_subject(tree):
    # "Revisions:" and "**Permissions**" are headings: pkg/transports.py has neither word
    # (before: each a subject, a mismatch); a class the file names, Transport, is one
    for text in ("Revisions: pkg/transports.py:13\n", "- **Permissions**: pkg/transports.py:13 - easy to miss\n"):
        (c,) = grade(text, tree)["items"]
        assert c["subject"] is None and c["strict"] == "n/a", text
    (d,) = grade("Transport: pkg/transports.py:13\n", tree)["items"]
    assert d["subject"]["name"] == "Transport"


def test_path_segments_and_json_keys_of_arrays_are_not_names(tree):
    # `chat/completions` is a URL path, not a name at line 13 (before: completions, a mismatch)
    (c,) = grade("The endpoint defaults to chat/completions at pkg/transports.py:13.\n", tree)["items"]
    assert c["subject"] is None
    # "rich_text": [...] is a key of the answer's JSON, not a name of the code
    (d,) = grade('{"rich_text": ["pkg/transports.py:13"]}', tree)["items"]
    assert d["subject"] is None and d["strict"] == "n/a"


def test_in_one_line_json_the_sentence_is_the_string_the_citation_stands_in(tree):
    # the other member's `is_noop` is on the same line but in another string
    (c,) = grade('{"a": "uses `is_noop` here", "b": "pkg/transports.py:9, see above"}', tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_a_folder_of_the_cited_path_is_no_subject(tree):
    # "pkg:" groups the citation by its folder (pkg/transports.py); before: subject pkg, a mismatch
    (c,) = grade("- pkg: pkg/transports.py:13 sends the flip\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"


def test_a_table_row_without_a_name_column_takes_the_code_span_after_the_citation(tree):
    text = (
        "| Area | File:line | What depends on it |\n|---|---|---|\n"
        "| **Core** | `pkg/transports.py:24` | `Http` | posts |\n"
        "| **Core** | `pkg/transports.py:9` | `Http` | also |\n"
        "| **Core** | `pkg/transports.py:13` | model itself | prose |\n"
    )
    got = by_lines(text, tree)
    assert got[("pkg/transports.py", 24)]["subject"] == {"name": "Http", "from": "table name cell"}
    assert got[("pkg/transports.py", 24)]["strict"] == "verified"
    assert got[("pkg/transports.py", 9)]["strict"] == "mismatch"  # line 9 is class Transport
    assert got[("pkg/transports.py", 13)]["subject"] is None  # prose names nothing


def test_a_json_member_quoting_the_lines_code_names_its_subject(tree):
    # `"line": "<code>"` beside the citation quotes what is at the line: its first code-like name
    (c,) = grade('{"file": "pkg/models.py:13", "line": "self.transport().notify(flip)", "use": "sends"}', tree)["items"]
    assert c["subject"] == {"name": "self.transport", "from": "json code"} and c["strict"] == "verified"
    (d,) = grade('{"file": "pkg/models.py:12", "line": "self.transport().notify(flip)"}', tree)["items"]
    assert d["strict"] == "mismatch"  # the quote is line 13's
    # a "line" member holding numbers says where, not what
    (e,) = grade('{"file": "pkg/models.py", "line": "10-13"}', tree)["items"]
    assert e["subject"] is None


def test_a_name_written_in_the_plural_of_the_definition_at_the_line(tree):
    # pkg/models.py defines `transport` (7-8) and no `transports`: the plural means it
    (c,) = grade("- `transports` (pkg/models.py:7)\n", tree)["items"]
    assert c["subject"]["name"] == "transports" and c["strict"] == "verified"
    (d,) = grade("- `transports` (pkg/models.py:11)\n", tree)["items"]
    assert d["strict"] == "mismatch"  # 11 is inside notify


def test_a_run_of_three_citations_takes_no_name_from_the_wider_text(tree):
    # three refs joined by commas under one description: the summary's `Http` is about the
    # group, not each line (before: Http at pkg/transports.py:13, a mismatch)
    got = by_lines('{"summary": "`Http` senders", "refs": "pkg/transports.py:13, pkg/models.py:13, a/util.py:1"}', tree)
    assert len(got) == 3 and all(c["subject"] is None for c in got.values())


def test_names_and_citations_listed_with_commas_pair_up(tree):
    got = by_lines(
        "`notify`, `is_noop`, and `render` at pkg/transports.py:13, pkg/transports.py:16, pkg/transports.py:20.\n", tree
    )
    assert [got[("pkg/transports.py", n)]["subject"]["name"] for n in (13, 16, 20)] == ["notify", "is_noop", "render"]
    assert [got[("pkg/transports.py", n)]["strict"] for n in (13, 16, 20)] == ["verified"] * 3
    # a kind word between (`assocs`) is no obstacle; prose words in a comma list are no names
    two = by_lines("`belongs_to`/`has_many` assocs `app/models/story.rb:2`,`app/models/story.rb:3`\n", tree)
    assert two[("app/models/story.rb", 3)]["subject"]["from"] == "respectively"
    prose = by_lines("validation, covering pkg/transports.py:13 and pkg/transports.py:16\n", tree)
    assert all(c["subject"] is None or c["subject"]["from"] != "respectively" for c in prose.values())


def test_a_code_span_declaring_a_qualified_field_and_its_type(tree):
    # `Transport.channel str` is the field channel (line 11), not the class (before: Transport,
    # verified anywhere in the class)
    (c,) = grade("`Transport.channel str` (pkg/transports.py:13)\n", tree)["items"]
    assert c["subject"]["name"] == "Transport.channel" and c["strict"] == "mismatch"
    (d,) = grade("`Transport.channel str` (pkg/transports.py:11)\n", tree)["items"]
    assert d["strict"] == "verified"


def test_an_absolute_path_into_a_folder_without_the_file_is_no_such_file(tree):
    # app/models is a folder of the commit and has no util.py: the answer meant that file
    # (before: the tail util.py, two files, ambiguous)
    (c,) = grade("/Users/me/lobsters/app/models/util.py:1\n", tree)["items"]
    assert c["ungrounded"] == "no_such_file" and c["candidates"] == []


def test_a_name_written_without_its_question_mark(tree):
    (c,) = grade("`Story#is_gone` (app/models/story.rb:9)\n", tree)["items"]
    assert c["strict"] == "verified"  # def is_gone? (9-11)
    (d,) = grade("`Story#is_gone` (app/models/story.rb:5)\n", tree)["items"]
    assert d["strict"] == "mismatch"


def test_a_rails_declaration_out_of_backticks_names_its_symbol(tree):
    # `has_many :user` is about user, which line 3 (has_many :taggings) does not hold
    # (before: the word has_many, on the line, verified it)
    (c,) = grade("app/models/story.rb:3 - has_many :user\n", tree)["items"]
    # the answer writes the declaration as code (grader 10) and story.rb declares `user` at line
    # 2 (`belongs_to :user`): positive evidence of a wrong line
    assert c["subject"]["name"] == "user" and c["strict"] == "mismatch"
    (d,) = grade("app/models/story.rb:3 - has_many :taggings, dependent: :destroy\n", tree)["items"]
    assert d["subject"]["name"] == "taggings" and d["strict"] == "verified"


def test_a_participle_or_an_abbreviation_before_a_citation_is_no_name(tree):
    # `wired path` (before: subject wired, a mismatch) and `(e.g., path)` (before: e.g)
    (c,) = grade("- the sender, wired pkg/transports.py:13\n", tree)["items"]
    assert c["subject"] is None
    (d,) = grade("- **Sender** (e.g., `pkg/transports.py:13`) posts\n", tree)["items"]
    assert d["subject"] is None


def test_an_edit_instruction_names_what_to_change_not_what_is_at_the_line(tree):
    # before: TRANSPORTS (verified) and notify (a mismatch at class Channel)
    (c,) = grade("- pkg/models.py:1 - Add to `TRANSPORTS` if supported\n", tree)["items"]
    assert c["subject"] is None and c["strict"] == "n/a"
    (d,) = grade('{"file": "pkg/models.py:6", "change": "add a `notify` override"}', tree)["items"]
    assert d["subject"] is None and d["strict"] == "n/a"


def test_the_name_after_instead_of_is_not_the_one_meant(tree):
    # before: notify, nearest the parenthetical (a mismatch at def transport)
    (c,) = grade("`Channel` uses `transport` instead of `notify` (pkg/models.py:7)\n", tree)["items"]
    assert c["subject"]["name"] == "transport" and c["strict"] == "verified"


def test_lines_listed_with_colons_after_a_citation(tree):
    # `path:13, :16, :19` cites all three (before: only 13), each paired with its name
    got = by_lines("`notify`/`is_noop`/`render` at pkg/transports.py:13, :16, :20\n", tree)
    assert sorted(n for _, n in got) == [13, 16, 20]
    assert [got[("pkg/transports.py", n)]["subject"]["name"] for n in (13, 16, 20)] == ["notify", "is_noop", "render"]
