"""Citations in real answer shapes: basename-only and partial paths and line-only references
resolved from the answer's own context (JSON objects, table rows, list items, paragraphs),
the offsets of every occurrence, and verification from structured answers."""

import json

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import commit_tree
from mcptrials.grade.citations.structure import json_objects, list_item_bounds, table_row


def numbered(*lines):
    return "".join(line + "\n" for line in lines)


HANDLER = numbered(
    "//! Handlers.",  # 1
    "use crate::response::Response;",  # 2
    "",  # 3
    "pub trait Handler<T, S> {",  # 4
    "    type Future;",  # 5
    "",  # 6
    "    fn call(self, req: Request, state: S) -> Self::Future;",  # 7
    "",  # 8
    "    fn with_state(self, state: S) -> HandlerService<Self, T, S> {",  # 9
    "        HandlerService::new(self, state)",  # 10
    "    }",  # 11
    "}",  # 12
    "",  # 13
    "pub struct HandlerService<H, T, S> {",  # 14
    "    handler: H,",  # 15
    "    state: S,",  # 16
    "}",  # 17
    "// end of handlers",  # 18
    "// (padding)",  # 19
    "// (padding)",  # 20
)
ROUTING = numbered(
    "//! Routing.",  # 1
    "pub struct Router<S> { inner: S }",  # 2
    "",  # 3
    "impl<S> Router<S> {",  # 4
    "    pub fn route(self, path: &str) -> Self {",  # 5
    "        self",  # 6
    "    }",  # 7
    "",  # 8
    "    pub fn merge(self, other: Router<S>) -> Self {",  # 9
    "        self",  # 10
    "    }",  # 11
    "}",  # 12
    "// (padding)",  # 13
    "// (padding)",  # 14
    "// (padding)",  # 15
    "// (padding)",  # 16
    "// (padding)",  # 17
    "// (padding)",  # 18
)
EXTENSION = numbered(
    "pub struct Extension<T>(pub T);",  # 1
    "",  # 2
    "impl<S, T> Layer<S> for Extension<T> {",  # 3
    "    type Service = AddExtension<S, T>;",  # 4
    "",  # 5
    "    fn layer(&self, inner: S) -> Self::Service {",  # 6
    "        AddExtension { inner, value: self.0.clone() }",  # 7
    "    }",  # 8
    "}",  # 9
    "// (padding)",  # 10
    "// (padding)",  # 11
    "// (padding)",  # 12
    "// (padding)",  # 13
    "// (padding)",  # 14
)
FILES = {
    "axum/src/handler/mod.rs": HANDLER,
    "axum/src/routing/mod.rs": ROUTING,
    "axum/src/extension.rs": EXTENSION,
    "README.md": "# axum\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("ctx") / "repo"
    return commit_tree(repo, make_repo(repo, FILES))


def items(text, tree):
    return grade_citations(text, tree)["items"]


# --- answers in the shapes real models write --------------------------------------------

PROSE = (
    "The trait lives in axum/src/handler/mod.rs:4 and `call` is declared at (mod.rs:7).\n"
    "\n"
    "Routing is in axum/src/routing/mod.rs:4.\n"
    "\n"
    "Later, mod.rs:9 is cited again with nothing closer.\n"
)
JSON_ANSWER = json.dumps(
    {
        "summary": "Handlers and routing",
        "items": [
            {
                "file": "axum/src/handler/mod.rs",
                "line": 7,
                "signature": "fn call(self, req: Request, state: S) -> Self::Future",
                "note": "with_state wraps it (mod.rs:9)",
            },
            {"file": "axum/src/handler/mod.rs", "line": 18, "signature": "fn call(self, req: Request, state: S)"},
            {"file": "routing/mod.rs", "line": 5, "symbol": "Router::route"},
            {"file": "axum/src/extension.rs", "line": 6, "description": "builds the service"},
            {"line": 3, "description": "an object without a file"},
        ],
    },
    indent=2,
)
TABLE = (
    "Here is the map.\n"
    "\n"
    "| Symbol | File | Where |\n"
    "|---|---|---|\n"
    "| `call` | axum/src/handler/mod.rs | mod.rs:7 |\n"
    "| `route` | axum/src/routing/mod.rs | line 5 |\n"
    "| `merge` | axum/src/routing/mod.rs | mod.rs:17 |\n"
)
LISTS = (
    "- axum/src/extension.rs: the `layer` method at line 6, and `AddExtension` at `:4`.\n"
    "- `route` is at line 5 of axum/src/routing/mod.rs.\n"
)


def test_prose_basename_resolves_from_the_nearest_path_and_stays_unresolved_when_two_precede(tree):
    got = {c["text"]: c for c in items(PROSE, tree)}
    near = got["mod.rs:7"]
    assert (near["resolved_path"], near["resolved_by"], near["bucket"]) == (
        "axum/src/handler/mod.rs",
        "context",
        "grounded",
    )
    assert near["context"]["scope"] == "paragraph" and near["context"]["from"] == "axum/src/handler/mod.rs"
    assert near["verification"] == "verified"  # `call` is on line 7
    assert got["axum/src/handler/mod.rs:4"]["resolved_by"] == "exact"
    # Two different mod.rs precede in the answer and nothing closer names one: unresolved.
    far = got["mod.rs:9"]
    assert far["bucket"] == "unresolved" and far["resolved_by"] is None
    assert far["candidates"] == ["axum/src/handler/mod.rs", "axum/src/routing/mod.rs"]
    assert far["context"] == {"scope": "section", "ambiguous": ["axum/src/handler/mod.rs", "axum/src/routing/mod.rs"]}
    assert "names 2 of them" in far["reason"]


def test_two_paths_with_that_basename_in_the_same_paragraph_stay_unresolved(tree):
    text = "Compare axum/src/handler/mod.rs:4 with axum/src/routing/mod.rs:4; see mod.rs:7."
    c = {c["text"]: c for c in items(text, tree)}["mod.rs:7"]
    assert c["bucket"] == "unresolved" and c["context"]["scope"] == "paragraph"
    # A suffix that is unique at the commit still resolves as before, whatever the context.
    assert items("routing/mod.rs:5", tree)[0]["resolved_by"] == "suffix"


def test_json_answer_file_fields_and_line_members(tree):
    got = items(JSON_ANSWER, tree)
    by = {(c["resolved_path"], tuple(c["lines"] or ())): c for c in got}
    right = by[("axum/src/handler/mod.rs", (7,))]
    assert right["resolved_by"] == "context" and right["context"]["scope"] == "json file field"
    assert right["text"] == '"line": 7' and right["verification"] == "verified"
    assert right["identifiers"] == ["call"]
    wrong = by[("axum/src/handler/mod.rs", (18,))]  # in range (20 lines) but `call` is 11 lines away
    assert wrong["bucket"] == "grounded" and wrong["verification"] == "mismatch"
    note = by[("axum/src/handler/mod.rs", (9,))]  # mod.rs:9 inside the object: its file field decides
    assert note["text"] == "mod.rs:9" and note["resolved_by"] == "context"
    assert note["verification"] == "verified"  # `call` (the signature) is 2 lines away
    route = by[("axum/src/routing/mod.rs", (5,))]  # a partial file field, unique at the commit
    assert route["resolved_by"] == "context" and route["verification"] == "verified"
    ext = by[("axum/src/extension.rs", (6,))]  # no identifier in its object: n/a
    assert ext["bucket"] == "grounded" and ext["verification"] == "n/a"
    assert len(got) == 5  # the object without a file (nor any of its enclosing objects') gives no citation


def test_markdown_table_rows_use_their_file_column(tree):
    got = {c["text"]: c for c in items(TABLE, tree)}
    call = got["mod.rs:7"]
    assert (call["resolved_path"], call["context"]["scope"], call["verification"]) == (
        "axum/src/handler/mod.rs",
        "table file column",
        "verified",
    )
    route = got["line 5"]
    assert (route["resolved_path"], route["lines"], route["verification"]) == (
        "axum/src/routing/mod.rs",
        [5],
        "verified",
    )
    merge = got["mod.rs:17"]  # in range, but `merge` is on line 9: 8 away
    assert merge["resolved_path"] == "axum/src/routing/mod.rs" and merge["verification"] == "mismatch"


def test_line_only_references_in_lists_and_prose(tree):
    got = items(LISTS, tree)
    assert [(c["text"], c["resolved_path"], c["lines"], c["verification"]) for c in got] == [
        ("line 6", "axum/src/extension.rs", [6], "verified"),
        ("`:4`", "axum/src/extension.rs", [4], "verified"),
        ("line 5", "axum/src/routing/mod.rs", [5], "verified"),  # its own item, not the paragraph's first path
    ]
    assert all(c["context"]["scope"] == "list item" for c in got)
    # A nested item that names no file takes the paragraph's nearest path before it.
    nested = items("- axum/src/extension.rs: the type.\n  - `layer` at `:6`.\n", tree)
    assert [(c["text"], c["lines"], c["context"]["scope"]) for c in nested] == [("`:6`", [6], "paragraph")]
    # Nothing in its paragraph names a file: no citation at all.
    assert items("See axum/src/extension.rs.\n\nNothing here names a file, line 4.", tree) == []


def test_spans_point_at_every_occurrence(tree):
    text = "See axum/src/handler/mod.rs:7 (`mod.rs:7`) and again axum/src/handler/mod.rs:7."
    got = items(text, tree)
    assert len(got) == 1 and got[0]["occurrences"] == 3
    assert [text[a:b] for a, b in got[0]["spans"]] == [
        "axum/src/handler/mod.rs:7",
        "mod.rs:7",
        "axum/src/handler/mod.rs:7",
    ]
    line = {c["text"]: c for c in items(JSON_ANSWER, tree)}['"line": 18']
    assert [JSON_ANSWER[a:b] for a, b in line["spans"]] == ['"line": 18']


def test_verification_from_the_same_line_and_list_item(tree):
    text = (
        "- `merge` joins two routers:\n"
        "  axum/src/routing/mod.rs:9 and axum/src/routing/mod.rs:2\n"
        "\n"
        "| fn | where |\n|---|---|\n| `with_state` | axum/src/handler/mod.rs:17 |\n"
    )
    v = {c["text"]: c["verification"] for c in items(text, tree)}
    # the list item names `merge`: on line 9 (verified), 7 lines from line 2 (mismatch)
    assert v == {
        "axum/src/routing/mod.rs:9": "verified",
        "axum/src/routing/mod.rs:2": "mismatch",
        "axum/src/handler/mod.rs:17": "mismatch",
    }  # with_state is line 9, 8 lines away


def test_structure_helpers():
    text = 'x {"a": {"file": "p.rs", "n": 3, "ok": true}, "l": [1, {"b": null}]} y "not json'
    objs = json_objects(text)
    assert [(text[o.start : o.end][:12], [(m.key, m.value) for m in o.members]) for o in objs] == [
        ('{"a": {"file', []),
        ('{"file": "p.', [("file", "p.rs"), ("n", 3), ("ok", True)]),
        ('{"b": null}', [("b", None)]),
    ]
    assert json_objects('{"s": "a \\" b {", "t": 1}')[0].get("t")[0].value == 1
    tbl = "| A | File |\n|---|---|\n| `x\\|y` | a.py |\n"
    row = table_row(tbl, tbl.index("a.py"))
    assert [c[0] for c in row.cells] == ["`x\\|y`", "a.py"] and row.file_cell[0] == "a.py"
    assert table_row(tbl, 2).file_cell is None  # the header row itself
    lst = "intro\n- one\n  more\n- two\n"
    lo, hi = list_item_bounds(lst, lst.index("more"))
    assert lst[lo:hi] == "- one\n  more"
    assert list_item_bounds(lst, 1) is None


def test_the_same_lines_cited_with_a_full_path_decide_before_any_scope(tree):
    text = (
        "`route` is axum/src/routing/mod.rs:5.\n\n## Handlers\n\nSee axum/src/handler/mod.rs:4.\n\n"
        "Router::route (mod.rs:5) again."
    )
    c = {c["text"]: c for c in items(text, tree)}
    # The section names only handler/mod.rs, but routing/mod.rs:5 was cited: one citation, two spans.
    route = c["axum/src/routing/mod.rs:5"]
    assert route["occurrences"] == 2 and [text[a:b] for a, b in route["spans"]][1] == "mod.rs:5"
    # Both files cited at the same line: that does not decide; the section then does.
    text2 = (
        "axum/src/routing/mod.rs:5 and axum/src/handler/mod.rs:5.\n\n## Handlers\n\n"
        "See axum/src/handler/mod.rs:4; mod.rs:5 again."
    )
    got = [c for c in items(text2, tree) if c["resolved_path"] == "axum/src/handler/mod.rs" and c["lines"] == [5]]
    assert got[0]["occurrences"] == 2


def test_table_identifiers_come_from_the_name_columns_only(tree):
    text = (
        "| Function | File:line | Notes |\n|---|---|---|\n"
        "| with_state | axum/src/handler/mod.rs:9 | wraps |\n"
        "| with_state | axum/src/handler/mod.rs:2 | Response |\n"
    )
    got = {c["text"]: c for c in items(text, tree)}
    assert got["axum/src/handler/mod.rs:9"]["verification"] == "verified"  # with_state is on line 9
    # Response is on line 2, but the Notes column is no name column: with_state is 7 lines away
    wrong = got["axum/src/handler/mod.rs:2"]
    assert wrong["identifiers"] == ["with_state"] and wrong["verification"] == "mismatch"


def test_comma_lists_of_lines_cite_each_line(tree):
    text = (
        "Uses: axum/src/routing/mod.rs:2,5,9-11.\n\n"
        "Handlers: axum/src/handler/mod.rs:4 and `mod.rs:7,21`. Not a.rs:1, 2."
    )
    got = [(c["resolved_path"], c["lines"], c["bucket"], c["resolved_by"]) for c in items(text, tree)]
    assert got == [
        ("axum/src/routing/mod.rs", [2], "grounded", "exact"),
        ("axum/src/routing/mod.rs", [5], "grounded", "exact"),
        ("axum/src/routing/mod.rs", [9, 11], "grounded", "exact"),
        ("axum/src/handler/mod.rs", [4], "grounded", "exact"),
        ("axum/src/handler/mod.rs", [7], "grounded", "context"),  # a basename list: each item
        ("axum/src/handler/mod.rs", [21], "hallucinated", "context"),  # resolves like its head
        (None, [1], "unresolved", None),
        (None, [2], "unresolved", None),
    ]  # ", 2" (one space) is an item too
    c = {c["text"]: c for c in items(text, tree)}["axum/src/routing/mod.rs:2,5"]
    assert [text[a:b] for a, b in c["spans"]] == ["5"]


def test_prose_line_references_skip_paths_that_name_no_file(tree):
    # `request.json` is an attribute, not a file of the commit: "line 6" takes extension.rs
    text = "axum/src/extension.rs builds it; `request.json` is parsed at line 6."
    (c,) = items(text, tree)
    assert (c["resolved_path"], c["lines"], c["verification"]) == ("axum/src/extension.rs", [6], "n/a")
    assert items("`request.json` is parsed at line 6.", tree) == []
    # a JSON "file" member counts whatever it names: a made-up file is an unresolved citation
    (made_up,) = items('{"file": "src/made_up.rs", "line": 3}', tree)
    assert made_up["bucket"] == "unresolved" and made_up["reason"] == "no such file at the commit"


def test_json_numbers_as_a_model_writes_them_do_not_stop_the_grader():
    # `"line": 01` is not JSON (json.loads raises on it: the grader crashed on such an answer);
    # it is read as written, 1. Digits of another script are no JSON number: no member.
    assert [(m.key, m.value) for o in json_objects('{"line": 01}') for m in o.members] == [("line", 1)]
    assert [m for o in json_objects('{"line": \u0661\u0662}') for m in o.members] == []
    got = [(m.key, m.value) for o in json_objects('{"a": 1.5e3, "b": true, "c": -7, "d": null}') for m in o.members]
    assert got == [("a", 1500.0), ("b", True), ("c", -7), ("d", None)]
