"""The exchanged records' types (mcptrials.core.record_types) against the on-disk contract:
every key of each TypedDict is a property its JSON Schema defines, a key is required exactly
when the schema requires it (nested objects too), and the fixture's records, validated
against the schemas, have every required key."""

from __future__ import annotations

import types
import typing

import pytest
import yaml

import runs_fixture
from mcptrials.core.paths import SCHEMA_DIR
from mcptrials.core.record_types import JudgedRecord, ScoredRecord, TranscriptRecord

RECORDS = [
    (TranscriptRecord, "transcript.schema.yaml", runs_fixture.transcript),
    (ScoredRecord, "scored.schema.yaml", runs_fixture.scored),
    (JudgedRecord, "judged.schema.yaml", runs_fixture.judged),
]


def _is_typeddict(tp) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp)


def _typeddict_of(tp):
    """The TypedDict an annotation names (`X` or `X | None`), else None."""
    if _is_typeddict(tp):
        return tp
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if _is_typeddict(a)]
        return inner[0] if inner else None
    return None


def _resolve(node: dict, root: dict) -> dict:
    ref = node.get("$ref")
    if ref:
        assert ref.startswith("#/"), ref
        for part in ref[2:].split("/"):
            root = root[part]
        return root
    return node


def _check(td, node: dict, root: dict, where: str) -> int:
    """Assert `td` against schema `node`; the number of TypedDicts checked."""
    node = _resolve(node, root)
    props = node.get("properties", {})
    keys = set(td.__annotations__)
    assert keys <= set(props), f"{where}: not in the schema: {sorted(keys - set(props))}"
    assert td.__required_keys__ == set(node.get("required", ())), (
        f"{where}: required {sorted(td.__required_keys__)}, the schema requires {sorted(node.get('required', ()))}"
    )
    checked = 1
    for key, tp in typing.get_type_hints(td).items():
        inner = _typeddict_of(tp)
        sub = _resolve(props[key], root)
        if inner is not None and "properties" in sub:
            checked += _check(inner, sub, root, f"{where}.{key}")
    return checked


@pytest.mark.parametrize("td,schema_file,_build", RECORDS, ids=[r[1] for r in RECORDS])
def test_every_key_is_a_schema_property_and_required_as_the_schema_says(td, schema_file, _build):
    schema = yaml.safe_load((SCHEMA_DIR / schema_file).read_text())
    assert _check(td, schema, schema, td.__name__) >= 2  # the record and its nested objects


@pytest.mark.parametrize("td,schema_file,build", RECORDS, ids=[r[1] for r in RECORDS])
def test_a_fixture_record_has_every_required_key(td, schema_file, build):
    """runs_fixture's records are validated against the schemas as they are built."""
    for tool in runs_fixture.TOOLS:
        rec = build("sonnet", tool, "s1", 1, runs_fixture.spec("sonnet", tool, "s1", 1))
        _has_keys(td, rec, td.__name__)


def _has_keys(td, rec: dict, where: str) -> None:
    missing = td.__required_keys__ - set(rec)
    assert not missing, f"{where}: the record lacks {sorted(missing)}"
    for key, tp in typing.get_type_hints(td).items():
        inner = _typeddict_of(tp)
        if inner is not None and isinstance(rec.get(key), dict):
            _has_keys(inner, rec[key], f"{where}.{key}")


def test_a_steps_exact_answer_type_matches_the_schema():
    """A step's `exact` (a list item the record's check above does not reach)."""
    from mcptrials.core.record_types import ExactAnswer

    schema = yaml.safe_load((SCHEMA_DIR / "scored.schema.yaml").read_text())
    node = schema["$defs"]["step"]["properties"]["exact"]["oneOf"][1]
    _check(ExactAnswer, node, schema, "ExactAnswer")
    assert set(node["properties"]) == set(ExactAnswer.__annotations__)
