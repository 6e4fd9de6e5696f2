"""Scenario-level gold recall (grade/gold_recall.py): the reference bench's rule, on answers
written here for the test."""

from __future__ import annotations

import json

from mcptrials.analyze.trial_rows import gold_recall_columns
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.gold_recall import gold_recall, whole_answer

GOLD = [
    {"id": "model", "group": "contract", "match": ["app/models/order.rb"], "relation": "the model"},
    {"id": "svc", "group": "dependents", "match": ["services/billing.rb"]},
    {"id": "mailer", "group": "dependents", "match": ["app/mailers/order_mailer.rb"]},
    {"id": "helper-a", "group": "dependents", "match": ["admin/utils.rb"]},
    {"id": "helper-b", "group": "dependents", "match": ["shop/utils.rb"]},
    {"id": "root", "group": "specs", "match": ["batch.go"]},
    {"id": "sym", "group": "specs", "match": ["refund_all!"]},
    {"id": "absent", "group": "specs", "match": ["lib/never_named.rb"]},
]


def rows(answer: str) -> dict:
    return {d["id"]: (d["mentioned"], d["cited"]) for d in gold_recall(answer, GOLD)["details"]}


def test_each_pin_form_cites_and_a_bare_path_only_mentions():
    assert rows("see app/models/order.rb:12")["model"] == (True, True)
    assert rows("see app/models/order.rb (line 12)")["model"] == (True, True)
    assert rows('{"file": "app/models/order.rb", "line": 12}')["model"] == (True, True)
    assert rows('{"file": "app/models/order.rb", "lines": ["12", 40]}')["model"] == (True, True)
    assert rows("see app/models/order.rb, which is long")["model"] == (True, False)
    # the line field of another object does not pin it
    assert rows('{"file": "app/models/order.rb"}, {"line": 12}')["model"] == (True, False)
    # a longer name is another file
    assert rows("see app/models/order.rbx:3")["model"] == (True, False)  # named (a substring), not pinned
    assert rows("see myapp/models/order.rb:3")["model"] == (True, False)


def test_basenames_and_suffixes_only_when_unique_among_the_gold():
    assert rows("order_mailer.rb:7")["mailer"] == (True, True)  # unique basename
    assert rows("utils.rb:7")["helper-a"] == (False, False)  # shared basename: no credit
    assert rows("see admin/utils.rb:7")["helper-a"] == (True, True)  # the gold path itself
    assert rows("see admin/utils.rb:7")["helper-b"] == (False, False)
    assert rows("billing.rb:3")["svc"] == (True, True)
    # a one-segment root file: a same-named file deeper in the tree is another file
    assert rows("internal/batch.go:10")["root"] == (True, False)  # named as a substring, pinned to another file
    assert rows("batch.go:10")["root"] == (True, True)


def test_symbols_groups_and_rates():
    g = gold_recall("refund_all! in app/models/order.rb:3 and services/billing.rb", GOLD)
    assert {d["id"]: (d["mentioned"], d["cited"]) for d in g["details"]}["sym"] == (True, True)
    assert (g["total"], g["mentioned"], g["cited"]) == (8, 3, 2)
    assert g["cited_recall"] == 0.25 and g["mention_recall"] == 0.375
    assert g["groups"]["dependents"] == {
        "total": 4,
        "mentioned": 1,
        "cited": 0,
        "mention_recall": 0.25,
        "cited_recall": 0.0,
    }
    assert g["groups"]["contract"]["cited_recall"] == 1.0
    assert "absent" in g["missed_cite"] and gold_recall("x", []) is None and gold_recall("x", None) is None
    cols = gold_recall_columns(g)
    assert (
        cols["cited_recall"] == 0.25 and cols["cited_recall_dependents"] == 0.0 and cols["cited_recall_specs"] == 0.3333
    )
    assert cols["mention_recall"] == 0.375 and gold_recall_columns(None) == {}


def test_the_whole_answer_is_every_steps_part_and_the_schema_takes_the_gold():
    t = {"steps": [{"answer_text": "a.rb:1"}, {"answer_text": None}, {"answer_text": "b.rb:2"}]}
    assert whole_answer(t) == "a.rb:1\n\n\n\nb.rb:2"
    validate_against(
        "scenario.schema.yaml", {"repo": "r", "gold": GOLD, "steps": [{"name": "s", "prompt": "p"}]}, "scenario"
    )
    json.dumps(gold_recall("", GOLD))
