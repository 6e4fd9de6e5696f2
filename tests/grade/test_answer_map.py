"""One answer for many steps (grade/answer_map.py): by JSON top-level keys, by markdown
sections, else the whole answer for every step; scored.json says which, and the judge
judges the same per-step texts."""

from __future__ import annotations

import copy

import yaml

from matrix_helpers import SCENARIO, make_repo
from mcptrials.matrix.scenario import load_scenario
from mcptrials.matrix.schema import validate_against
from mcptrials.grade.answer_map import JSON_KEYS, SECTIONS, WHOLE, headings, map_answer, split_answer, step_answers
from mcptrials.grade.scoring import score_trial
from mcptrials.judge.judging import judge_trial

STEPS = [
    {"name": "locate", "prompt": "Where is helper?"},
    {"name": "callers", "prompt": "Who calls it?", "answer_key": "who calls"},
    {"name": "tests", "prompt": "Is it tested?"},
]

JSON_ANSWER = """I have enough context. Producing the three-step report.

```json
{
  "step1_where": {"file": "src/util.py", "line": 1, "symbol": "helper"},
  "who_calls": [{"file": "src/app.py", "line": 5, "caller": "main"}],
  "tests": "none found"
}
```
"""

SECTIONED = """Here is what I found.

## Step 1: Where `helper` lives
`helper` is defined at `src/util.py:1`.

### Detail
It doubles its argument.

## 2. Callers of helper
`main` calls it at `src/app.py:5`.

**Tests**
None found.
"""


def test_json_answer_maps_by_top_level_keys():
    texts, method = split_answer(JSON_ANSWER, STEPS)
    assert method == JSON_KEYS
    assert texts[0].startswith('"step1_where"') and "src/util.py" in texts[0] and "main" not in texts[0]
    assert texts[1].startswith('"who_calls"') and "src/app.py" in texts[1]  # its answer_key, case aside
    assert texts[2] == '"tests": "none found"'  # its name
    assert map_answer(JSON_ANSWER, STEPS).keys == ["step1_where", "who_calls", "tests"]
    # a whole-answer JSON object, and one wrapped in a single key
    plain = '{"locate": "src/util.py:1", "callers": "x", "who calls": "src/app.py:5", "step3": "no"}'
    m = map_answer(plain, STEPS)
    assert m.method == JSON_KEYS and m.keys == ["locate", "who calls", "step3"]
    wrapped = '{"report": {"1": "src/util.py:1", "2": "src/app.py:5", "3": "no"}}'
    assert map_answer(wrapped, STEPS).keys == ["1", "2", "3"]


def test_markdown_sections_map_by_heading():
    texts, method = split_answer(SECTIONED, STEPS)
    assert method == SECTIONS
    assert texts[0].startswith("## Step 1") and "doubles" in texts[0] and "src/app.py" not in texts[0]  # its ### kept
    assert texts[1].startswith("## 2. Callers") and "src/app.py:5" in texts[1] and "None found" not in texts[1]
    assert texts[2] == "**Tests**\nNone found."
    # headings inside a code block are not headings
    assert [h[2] for h in headings("```\n# not a heading\n```\n# real\n")] == ["real"]


def test_an_answer_that_fits_no_mapping_is_the_whole_answer_for_every_step():
    prose = "helper is at src/util.py:1 and main calls it at src/app.py:5; no tests."
    texts, method = split_answer(prose, STEPS)
    assert method == WHOLE and texts == [prose] * 3
    # headings or keys that name only some of the steps are not a mapping
    partial = "## Step 1\nsrc/util.py:1\n## Callers\nmain\n"
    assert split_answer(partial, [{"name": "a"}, {"name": "b"}, {"name": "c"}])[1] == WHOLE
    assert split_answer('{"a": 1, "zzz": 2}', [{"name": "a"}, {"name": "b"}])[1] == WHOLE
    assert split_answer("", STEPS) == ([""] * 3, WHOLE)


def test_a_transcript_with_an_answer_per_step_is_not_mapped():
    assert step_answers({"steps": [{"index": 0, "answer_text": "x"}]}, STEPS) == (
        None,
        {"method": "per_step", "keys": None},
    )


# --- scored.json and judged.json of a one_answer transcript -----------------------------

ONE = dict(
    copy.deepcopy(SCENARIO),
    one_answer=True,
    steps=[
        SCENARIO["steps"][0],
        {
            "name": "callers",
            "prompt": "Which function calls `helper`? Cite file:line.",
            "answer_key": "Who calls",
            "checks": [{"type": "word", "value": "main"}],
            "citations": {"gold": ["src/app.py:5"]},
            "key_points": ["main calls helper"],
        },
    ],
)


def one_answer_transcript(answer: str) -> dict:
    return {
        "schema": "mcptrials/transcript/1",
        "one_answer": True,
        "cell": {"model": "rec", "host": "loop", "tool": "baseline", "repo": "tiny", "scenario": "one", "trial": 1},
        "provider": "recorded",
        "model_id": "claude-opus-4-7",
        "outcome": "completed",
        "outcome_detail": None,
        "system_prompt_sha256": None,
        "steps": [
            {
                "index": 0,
                "name": "one_answer",
                "prompt": "both",
                "answer_text": answer,
                "audit_text": "",
                "outcome": "completed",
                "turns": 1,
                "state_check": None,
            }
        ],
        "tool_calls": [],
        "errors": {"tool_error": 0, "protocol_error": 0, "api_error": 0, "harness_error": 0},
        "error_events": [],
        "wall_seconds": 1.0,
        "messages": [],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 1,
            "retries": 0,
            "cost_usd": None,
        },
    }


def scenario_file(tmp_path, data):
    p = tmp_path / "one.yaml"
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_scenario(p)


def test_scored_and_judged_grade_each_step_on_its_part(tmp_path):
    commit = make_repo(tmp_path / "repo")
    sc = scenario_file(tmp_path, ONE)
    answer = (
        '{"locate": {"file": "src/util.py", "line": 1, "note": "helper doubles its argument"},\n'
        ' "who_calls": {"file": "src/app.py", "line": 5, "caller": "main"}}'
    )
    t = one_answer_transcript(answer)
    validate_against("transcript.schema.yaml", t, "transcript")
    s = score_trial(t, sc.data, str(tmp_path / "repo"), commit, None, None)
    validate_against("scored.schema.yaml", s, "scored")
    assert s["answer_mapping"] == {"method": "json_keys", "keys": ["locate", "who_calls"]}
    assert s["passed"] is True, s["failures"]
    # `main` is in step 2's part only: step 1 is graded on its own part
    parts = split_answer(answer, sc.data["steps"])[0]
    assert "main" not in parts[0] and s["steps"][0]["answer_chars"] == len(parts[0])
    assert s["steps"][1]["keywords"]["checks"][0]["hit"] is True
    j = judge_trial(t, sc, {"provider": "reference"})
    assert [x["answer_chars"] for x in j["steps"]] == [len(p) for p in split_answer(answer, sc.data["steps"])[0]]
    assert all(x["answered"] and not x["empty"] for x in j["steps"])

    # no mapping: every step is graded on the whole answer, and scored.json says so
    prose = "helper is defined at src/util.py:1; main calls it."
    s = score_trial(one_answer_transcript(prose), sc.data, str(tmp_path / "repo"), commit, None, None)
    assert s["answer_mapping"] == {"method": "whole", "keys": [None, None]}
    assert [st["answer_chars"] for st in s["steps"]] == [len(prose)] * 2


def test_a_live_transcript_of_a_one_answer_scenario_is_graded_per_step(tmp_path):
    commit = make_repo(tmp_path / "repo")
    sc = scenario_file(tmp_path, ONE)
    t = one_answer_transcript("")
    del t["one_answer"]
    t["steps"] = [
        dict(t["steps"][0], name="locate", answer_text="`helper` at src/util.py:1 doubles x"),
        dict(t["steps"][0], index=1, name="callers", answer_text="`main` at src/app.py:5"),
    ]
    s = score_trial(t, sc.data, str(tmp_path / "repo"), commit, None, None)
    assert s["answer_mapping"]["method"] == "per_step" and s["passed"] is True, s["failures"]
