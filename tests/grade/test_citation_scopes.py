"""The subject's scopes (grade.citations.subjects.SCOPES), each on plain strings, no repository:
a Site is the text, the citation's span in it and the answer's JSON objects."""

from __future__ import annotations

import pytest

from mcptrials.grade.citations import json_scopes, scopes, structure
from mcptrials.grade.citations.extract import citation_pattern
from mcptrials.grade.citations.subjects import SCOPES, subject

RX = citation_pattern(None)


def is_path(s: str) -> bool:
    return "/" in s or RX.search(s + ":1") is not None


def site(text: str, cite: str, **kw) -> scopes.Site:
    start = text.index(cite)
    return scopes.Site(text, start, start + len(cite), structure.json_objects(text), is_path=is_path, **kw)


def test_the_scopes_are_in_the_documented_order():
    assert [name for name, _ in SCOPES] == [
        "label",
        "after",
        "before",
        "json key",
        "json field",
        "json code",
        "json owner",
        "json text",
        "table name cell",
        "list item",
        "sentence",
    ]


@pytest.mark.parametrize(
    "text, cite, name",
    [
        ("`is_noop(self)` — hc/api/models.py:74", "hc/api/models.py:74", "is_noop"),
        ("Http.post (lib/http.rb:28)", "lib/http.rb:28", "Http.post"),
        ("the send is done in notify at hc/api/transports.py:96", "hc/api/transports.py:96", "notify"),
        ("Story model at app/models/story.rb:3", "app/models/story.rb:3", "Story"),
        ("`domain` (belongs_to, app/models/story.rb:5)", "app/models/story.rb:5", "domain"),
        ("it is built at app/models/story.rb:5", "app/models/story.rb:5", None),  # a verb, not a name
        ('{"file": "app/models/story.rb:5"}', "app/models/story.rb:5", None),  # a JSON key is no label
    ],
)
def test_label(text, cite, name):
    assert scopes.label(site(text, cite)) == name


@pytest.mark.parametrize(
    "text, cite, name",
    [
        ("see hc/api/transports.py:60 defines Transport here", "hc/api/transports.py:60", "Transport"),
        ("hc/api/transports.py:64 (Channel.notify)", "hc/api/transports.py:64", "Channel.notify"),
        ("hc/api/transports.py:16 fills cache from story through `DiffBot`", "hc/api/transports.py:16", None),
        ("a.py:1 and `main` calls it", "a.py:1", None),  # the next conjunct is another clause
        ("a.py:1 Add to `PROVIDERS`", "a.py:1", None),  # an instruction names what to change
    ],
)
def test_after(text, cite, name):
    assert scopes.after(site(text, cite)) == name


def test_before_takes_the_nearest_code_like_name_of_the_clause_and_not_the_one_negated():
    s = site("the `Transport.notify` signature (hc/api/transports.py:64)", "hc/api/transports.py:64")
    assert scopes.before(s) == "Transport.notify"
    s = site("it uses `a_fn` instead of `b_fn` (x.py:88)", "x.py:88")
    assert scopes.before(s) == "a_fn"
    assert scopes.before(site("one `a_fn`, then x.py:88", "x.py:88")) is None  # the comma ended the clause


def test_json_key_needs_a_name_the_file_has_and_never_a_locator():
    text = '{"user": "app/models/story.rb:4", "file": "app/models/story.rb:9"}'
    assert json_scopes.json_key(site(text, "app/models/story.rb:4", key_named=lambda w: True)) == "user"
    assert json_scopes.json_key(site(text, "app/models/story.rb:4", key_named=lambda w: False)) is None
    assert json_scopes.json_key(site(text, "app/models/story.rb:9", key_named=lambda w: True)) is None


def test_json_field_and_json_code_by_the_members_order():
    text = '{"name": "Story#url", "file": "app/models/story.rb:4"}'
    assert json_scopes.json_field(site(text, "app/models/story.rb:4")) == "Story#url"
    assert json_scopes.json_code(site(text, "app/models/story.rb:4")) is None
    text = '{"file": "app/models/issue.rb:111", "line": "scope :like"}'
    assert json_scopes.json_code(site(text, "app/models/issue.rb:111")) == "like"
    assert json_scopes.json_field(site(text, "app/models/issue.rb:111")) is None
    text = '{"file": "app/models/issue.rb:111", "line": "72-93"}'  # a line number: where, not what
    assert json_scopes.json_code(site(text, "app/models/issue.rb:111")) is None


def test_json_owner_is_the_key_owning_the_object():
    text = '{"Engine.ServeHTTP": {"loc": "gin.go:662", "type": "*Engine"}}'
    assert json_scopes.json_owner(site(text, "gin.go:662")) == "Engine.ServeHTTP"
    text = '{"shared_behaviors": {"loc": "gin.go:662"}}'
    assert json_scopes.json_owner(site(text, "gin.go:662", key_named=lambda w: False)) is None


def test_json_text_from_a_sibling_but_not_for_a_descriptive_member_or_an_array_item():
    text = '{"what": "Utils.normalize used by Story#url=", "file": "app/models/story.rb:4"}'
    assert json_scopes.json_text(site(text, "app/models/story.rb:4")) == "Utils.normalize"
    text = '{"base_class": "hc/api/transports.py:60", "entry_point": "notify_all(...)"}'
    assert json_scopes.json_text(site(text, "hc/api/transports.py:60")) is None
    text = '{"what": "`Story#url`", "refs": ["a/b.rb:1", "a/c.rb:2"]}'
    assert json_scopes.json_text(site(text, "a/b.rb:1")) is None


def test_json_key_kind():
    kinds = [json_scopes.json_key_kind(k) for k in ("file_line", "refs", "reason", "subsystem", "user")]
    assert kinds == ["locator", "locator", "prose", "group", None]


def test_table_name_cell():
    text = "| Symbol | Where |\n|---|---|\n| `notify` | `hc/api/a.py:3` |\n"
    assert scopes.table_name_cell(site(text, "hc/api/a.py:3")) == "notify"
    text = "| Where | What |\n|---|---|\n| `hc/api/a.py:410` | `PromotionRule.gifts` |\n"
    assert scopes.table_name_cell(site(text, "hc/api/a.py:410")) == "PromotionRule.gifts"


def test_list_item_and_its_parent_head():
    assert scopes.list_item(site("- `Slackalike.payload` builds it: a/b.py:31\n", "a/b.py:31")) == "Slackalike.payload"
    text = "8. **Slackalike.payload** - the body\n   - File: a/b.py:31\n"
    assert scopes.list_item(site(text, "a/b.py:31")) == "Slackalike.payload"
    assert scopes.list_item(site("no list: `x_y` a/b.py:31", "a/b.py:31")) is None


def test_sentence_takes_a_name_the_file_names():
    text = "The `Story` class is long. It has `story_cache`, see app/models/story.rb:4"
    s = site(text, "app/models/story.rb:4", key_named=lambda w: True)
    assert scopes.sentence(s) == "story_cache"
    s = site(text, "app/models/story.rb:4", key_named=lambda w: w != "story_cache")
    assert scopes.sentence(s) is None  # the other sentence's `Story` is not this one's


def test_subject_takes_the_first_scope_that_names_one():
    text = "- `Story.load` runs; `cache_key` — app/models/story.rb:4"
    start = text.index("app/")
    got = subject(text, start, start + 21, objects=[], before=0, after=len(text), is_path=is_path)
    assert got == {"name": "cache_key", "from": "label"}  # not the list item's `Story.load`
    text = "- `Story.load` calls it at app/models/story.rb:4"
    start = text.index("app/")
    got = subject(text, start, start + 21, objects=[], before=0, after=len(text), is_path=is_path)
    assert got == {"name": "Story.load", "from": "before"}


def test_one_lexicon_for_identifiers_and_subjects():
    """The lenient check's identifiers and the subject's names read the same keywords: a Ruby
    declaration or an article is neither; a constructor's `new` is no identifier to look for at
    a line, but a subject keeps it (`Spree::Order.new` is about Spree::Order)."""
    from mcptrials.grade.citations.context import identifier
    from mcptrials.grade.citations.names import clean_name, code_subject

    assert [identifier(w) for w in ("include", "prepend", "attr_reader", "the", "Foo.new", "Foo.bar")] == [
        None,
        None,
        None,
        None,
        None,
        "bar",
    ]
    assert [clean_name(w) for w in ("include", "the", "Spree::Order.new")] == [None, None, "Spree::Order.new"]
    assert code_subject("include Token", is_path) == "Token"


def test_json_field_a_holder_member_names_the_object():
    # grader 10: `"holder": "dsess.DoltSession", "file": "...:45"` names what the line holds
    text = '{"holder": "dsess.DoltSession", "file": "go/sqle/dsess/session.go:45", "impact": "commits fail"}'
    assert json_scopes.json_field(site(text, "go/sqle/dsess/session.go:45")) == "dsess.DoltSession"


def test_json_field_an_interface_member_is_not_the_objects_name():
    # grader 10: the interface a struct satisfies, beside the struct's line, is not what the line holds
    text = '{"area": "Node Drainer", "file": "nomad/drainer/drainer.go:132", "interface": "RaftApplier"}'
    assert json_scopes.json_field(site(text, "nomad/drainer/drainer.go:132")) is None
