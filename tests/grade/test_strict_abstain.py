"""Issue 34 item 1: a strict `mismatch` needs positive evidence, else `undetermined` (each rule
of docs/grading.md's list on plain strings, no repository)."""

from __future__ import annotations

from mcptrials.grade.citations import structure, subjects
from mcptrials.grade.citations.verify import CLEAR_SCOPES, written_as_code
from mcptrials.grade.citations.strict import abstain_reason, verdict

SOURCE = "class Engine:\n    def serve(self):\n        return 1\n\n    def handle(self):\n        return self.serve()\n"
LINES = SOURCE.split("\n")


def test_a_name_defined_away_from_the_line_with_nothing_else_there_is_a_confirmed_mismatch():
    assert verdict("a.py", SOURCE, [3], "handle", LINES) == "mismatch"
    assert abstain_reason("a.py", SOURCE, [3], "handle", LINES, named=[]) is None


def test_a_name_the_file_never_writes_is_no_evidence():
    assert "neither defined nor written" in abstain_reason("a.py", SOURCE, [3], "render", LINES, named=[])


def test_a_field_or_call_the_file_writes_elsewhere_is_evidence():
    src = "type P struct {\n\tdbs map[string]int\n}\n\nfunc (p *P) Get() int {\n\treturn len(p.dbs)\n}\n"
    assert abstain_reason("p.go", src, [5], "dbs", src.split("\n"), named=[]) is None


def test_another_name_of_the_clause_at_the_line_or_its_definition_abstains():
    # `serve` is named beside `handle`: line 3 lies in serve, so the reader may mean it
    assert "is at the cited line" in abstain_reason("a.py", SOURCE, [3], "handle", LINES, named=["serve"])
    # a qualifier of the subject is where it lives, not another name (the caller drops it)
    assert abstain_reason("a.py", SOURCE, [3], "Engine.handle", LINES, named=[]) is None


def test_prose_and_unknown_languages_have_no_definitions_to_point_elsewhere():
    readme = "# Title\n\nhandle requests\n\nmore\n"
    assert abstain_reason("README.md", readme, [5], "handle", readme.split("\n"), named=[]) is not None


def test_only_the_clause_or_the_owning_json_member_names_a_subject_clearly():
    assert {"label", "after", "before", "json field", "json key", "json owner"} <= CLEAR_SCOPES
    assert not {"json text", "list item", "sentence"} & CLEAR_SCOPES


def test_a_plain_prose_word_is_not_written_as_code():
    text = "The router shows the map at gin.go:12 and `Engine.run` at gin.go:40."
    span = [text.index("gin.go:12"), text.index("gin.go:12") + 9]
    for word in ("shows", "map", "Router", "field", "extraction"):
        assert not written_as_code(text, span, {"name": word, "from": "label"})
    assert written_as_code(text, span, {"name": "run", "from": "after"})  # backticked in its line
    assert written_as_code(text, span, {"name": "is_noop", "from": "label"})  # code-like
    assert written_as_code(text, span, {"name": "user", "from": "json key"})  # by place


def _subject_in(text: str, marker: str) -> dict | None:
    k = text.index(marker)
    start, end = text.rfind('"', 0, k) + 1, text.find('"', k)
    return subjects.subject(
        text,
        start,
        end,
        objects=structure.json_objects(text),
        before=0,
        after=len(text),
        is_path=lambda s: "/" in s or s.endswith((".go", ".py")),
        key_named=lambda n: n in ("ServeHTTP", "wsgi_app"),
        plain_named=lambda n: True,
    )


def test_the_key_owning_a_json_object_is_its_subject():
    text = '{"Engine.ServeHTTP": {"loc": "gin.go:662", "type": "*Engine", "does": "http.Handler implementation"}}'
    assert _subject_in(text, "gin.go:662") == {"name": "Engine.ServeHTTP", "from": "json owner"}
    text = '{"method": "Flask.wsgi_app", "file_line": "src/flask/app.py:1565"}'
    assert _subject_in(text, "app.py:1565") == {"name": "Flask.wsgi_app", "from": "json field"}


def test_an_owning_key_the_file_never_names_is_the_answers_own_structure():
    text = '{"shared_behaviors": {"loc": "gin.go:662", "does": "serves"}}'
    got = _subject_in(text, "gin.go:662")
    assert got is None or got["from"] != "json owner"


def test_fairness_citation_part_counts_only_confirmed_mismatches_hand_computed():
    from mcptrials.grade.citations.grading import citation_rates, empty_counts

    counts = dict(empty_counts(), total=10, grounded=8, strict_verified=3, strict_mismatch=2, strict_undetermined=3)
    r = citation_rates(counts)
    assert r["strict_grounded_rate"] == 0.6  # (8 - 2) / 10: the 3 undetermined stay grounded
    assert r["strict_verified_rate"] == 0.6  # 3 / (3 + 2)
    assert r["strict_undetermined_rate"] == 0.375  # 3 / (3 + 2 + 3)
