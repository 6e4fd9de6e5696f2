"""The content-keyed memo of parsed and validated inputs (mcptrials.matrix.memo): a hit only
for the same bytes or equal data, a fresh copy each time, defaults filled into the caller's
own objects, errors never remembered."""

import pytest

from mcptrials.matrix import memo
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.schema import read_yaml, validate_against

SCENARIO = "repo: tiny\nrubric: {criteria: [{name: a, weight: 1, question: q}]}\nsteps:\n  - {name: s, prompt: p}\n"


@pytest.fixture(autouse=True)
def empty_memo():
    memo.clear()
    yield
    memo.clear()


def test_a_file_is_parsed_once_per_content_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    from mcptrials.matrix import schema

    parses = []
    real = schema._yaml_load
    monkeypatch.setattr(schema, "_yaml_load", lambda raw: parses.append(raw) or real(raw))
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text("x: [1, 2]\n")
    b.write_text("x: [1, 2]\n")
    first = read_yaml(a, "f")
    first["x"].append(3)  # a caller changing its copy changes no other's
    assert read_yaml(a, "f") == read_yaml(b, "f") == {"x": [1, 2]}
    assert len(parses) == 1  # the same bytes: parsed once, whatever the path
    a.write_text("x: [1, 5]\n")  # new content: parsed again
    assert read_yaml(a, "f") == {"x": [1, 5]} and len(parses) == 2


def test_validation_remembered_fills_the_callers_own_objects(tmp_path):
    import yaml

    first = yaml.safe_load(SCENARIO)
    validate_against("scenario.schema.yaml", first, "first")
    again = yaml.safe_load(SCENARIO)
    step = again["steps"][0]  # a part held before validating (load_matrix holds its tools so)
    validate_against("scenario.schema.yaml", again, "again")
    assert again == first and again["steps"][0] is step
    assert step["checks"] == [] and "checks" not in yaml.safe_load(SCENARIO)["steps"][0]  # the default, filled in


def test_invalid_data_is_refused_every_time():
    bad = {"repo": "tiny", "steps": "not a list"}
    for _ in range(2):
        with pytest.raises(ConfigError, match="steps"):
            validate_against("scenario.schema.yaml", dict(bad), "s.yaml")
