"""score_trial end to end on a real git repo, scored.schema.yaml, pass rules, `mcptrials score`."""

import argparse
from pathlib import Path
import copy
import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from mcptrials.matrix.schema import validate_against
from mcptrials.cli import score as graders_cli
from mcptrials.grade.scoring import score_trial
from mcptrials.core.paths import SCHEMA_DIR
from test_graders_citations import make_repo

SCENARIO = {
    "repo": "demo",
    "rubric": {"criteria": [{"name": "q", "weight": 1, "question": "Is it right?"}]},
    "steps": [
        {
            "name": "find",
            "prompt": "Where is the app factory?",
            "checks": [
                {"type": "word", "value": "create_app"},
                {"type": "word", "value": "getcwd"},
                {"type": "phrase", "value": "factory function", "required": False},
            ],
            "citations": {"gold": ["src/app.py:14", "src/app.py:Flask"]},
            "expected_tools": ["mcp__code__search"],
        },
        {
            "name": "count",
            "prompt": "How many lines?",
            "exact_answer": {"value": 15},
            "state_check": {"command": "cat marker", "expect": "done"},
        },
    ],
}
validate_against("scenario.schema.yaml", SCENARIO, "SCENARIO")  # as load_scenario does: the schema's defaults filled


def make_transcript(outcome="completed"):
    call = {
        "id": "c1",
        "step": 0,
        "turn": 1,
        "name": "mcp__code__search",
        "tool": "search",
        "source": "mcp",
        "arguments": {"query": "getcwd"},
        "result_text": "src/app.py:15: getcwd",
        "result_chars": 21,
        "truncated": False,
        "is_error": False,
        "error_kind": None,
        "latency_ms": 12.0,
        "result_tokens_est": 5,
    }
    return {
        "schema": "mcptrials/transcript/1",
        "cell": {"model": "m1", "host": "loop", "tool": "code", "repo": "demo", "scenario": "sc", "trial": 1},
        "provider": "reference",
        "model_id": "model-x",
        "outcome": outcome,
        "outcome_detail": None,
        "steps": [
            {
                "index": 0,
                "name": "find",
                "prompt": "Where?",
                "outcome": "completed",
                "turns": 2,
                "wall_seconds": 1.0,
                "answer_text": "The `create_app` factory is at src/app.py:14; see also helpers.py:1.",
                "audit_text": "search(getcwd) -> src/app.py:15: getcwd",
                "state_check": None,
            },
            {
                "index": 1,
                "name": "count",
                "prompt": "How many?",
                "outcome": "completed",
                "turns": 1,
                "wall_seconds": 0.5,
                "answer_text": "It has `15` lines.",
                "audit_text": "",
                "state_check": {"command": "cat marker", "exit_code": 0, "output": "done\n"},
            },
        ],
        "tool_calls": [call],
        "errors": {"tool_error": 0, "protocol_error": 0, "api_error": 0, "harness_error": 0},
        "error_events": [],
        "usage": {
            "input_tokens": 100,
            "output_tokens": 10,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 3,
            "retries": 0,
            "cost_usd": None,
        },
        "wall_seconds": 1.5,
        "messages": [],
    }


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("score"))


def scored_validator():
    with open(SCHEMA_DIR / "scored.schema.yaml") as f:
        schema = yaml.safe_load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_fixture_transcript_is_valid():
    validate_against("transcript.schema.yaml", make_transcript(), "fixture")


def test_score_trial_record(repo):
    repo_dir, a, _ = repo
    rec = score_trial(
        make_transcript(), copy.deepcopy(SCENARIO), str(repo_dir), a, {"model-x": {"input": 1, "output": 2}}, None
    )
    scored_validator().validate(json.loads(json.dumps(rec)))
    # `getcwd` is only in the tool call's arguments, result and audit text: it must not count
    kw0 = rec["steps"][0]["keywords"]
    assert [c["hit"] for c in kw0["checks"]] == [True, False, False]
    assert kw0["coverage"] == pytest.approx(1 / 2.5)
    assert rec["passed"] is False
    assert rec["failures"] == ["step 0 (find): required word check 'getcwd' not in the answer"]
    cit = rec["steps"][0]["citations"]
    assert [(c["bucket"], c["verification"]) for c in cit["items"]] == [("grounded", "verified"), ("unresolved", "n/a")]
    assert [g["cited"] for g in cit["gold"]] == [True, False]  # Flask is not named in the answer
    assert rec["citations"]["rates"]["grounded_rate"] == 0.5
    assert rec["steps"][1]["exact"]["passed"] and rec["steps"][1]["state"]["passed"]
    assert rec["exact"] == {"steps": 1, "passed": 1} and rec["state"] == {"steps": 1, "passed": 1}
    assert rec["efficiency"]["cost_usd"] == pytest.approx((100 * 1 + 10 * 2) / 1e6)
    assert rec["adoption"]["tool_fluency"] == 1.0
    assert rec["adoption"]["expected_tools"][0]["missing"] == []
    assert rec["cell"] == make_transcript()["cell"] and rec["repo_commit"] == a and rec["grader_version"]


def _scenario_all_hit():
    sc = copy.deepcopy(SCENARIO)
    sc["steps"][0]["checks"][1]["required"] = False
    return sc


def test_pass_rules(repo):
    repo_dir, a, _ = repo
    assert score_trial(make_transcript(), _scenario_all_hit(), repo_dir, a, None, None)["passed"] is True
    # a trial that did not complete never passes, whatever its answers
    rec = score_trial(make_transcript("max_turns"), _scenario_all_hit(), repo_dir, a, None, None)
    assert rec["passed"] is False and rec["failures"] == ["outcome max_turns: only a completed trial can pass"]
    # a wrong exact answer fails when required, not when optional
    t = make_transcript()
    t["steps"][1]["answer_text"] = "It has 16 lines."
    assert score_trial(t, _scenario_all_hit(), repo_dir, a, None, None)["passed"] is False
    sc = _scenario_all_hit()
    sc["steps"][1]["exact_answer"]["required"] = False
    assert score_trial(t, sc, repo_dir, a, None, None)["passed"] is True
    # a missing state-check record fails
    t = make_transcript()
    t["steps"][1]["state_check"] = None
    rec = score_trial(t, _scenario_all_hit(), repo_dir, a, None, None)
    assert rec["passed"] is False and "state check" in rec["failures"][0]
    # a crashed trial with a missing step is still scored (and fails)
    t = make_transcript("server_crashed")
    t["steps"] = t["steps"][:1]
    rec = score_trial(t, _scenario_all_hit(), repo_dir, a, None, None)
    scored_validator().validate(json.loads(json.dumps(rec)))
    assert rec["steps"][1]["present"] is False and rec["passed"] is False


def test_score_command(repo, tmp_path):
    repo_dir, a, _ = repo
    (tmp_path / "transcript.json").write_text(json.dumps(make_transcript()))
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(_scenario_all_hit()))
    (tmp_path / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "tools": {"baseline": {"transport": "none"}},
                "repos": {"demo": {"url": ".", "commit": a}},
                "scenarios": "sc.yaml",
                "models": {"m1": {"provider": "reference"}},
                "pricing": {"model-x": {"input": 1, "output": 2}},
                "citation_extensions": ["py"],
            }
        )
    )
    out = tmp_path / "out" / "scored.json"
    p = argparse.ArgumentParser()
    graders_cli.register(p.add_subparsers())
    args = p.parse_args(
        [
            "score",
            "--transcript",
            str(tmp_path / "transcript.json"),
            "--scenario",
            str(tmp_path / "sc.yaml"),
            "--repo-dir",
            str(repo_dir),
            "--commit",
            a,
            "--config",
            str(tmp_path / "config.yaml"),
            "--out",
            str(out),
        ]
    )
    assert args.func(args) == 0
    rec = json.loads(out.read_text())
    scored_validator().validate(rec)
    assert rec["passed"] is True and rec["citation_extensions"] == ["py"]
    assert rec["efficiency"]["priced_as"] == "model-x" and len(rec["scenario_sha256"]) == 64
    assert [p.name for p in out.parent.iterdir()] == ["scored.json"]  # no temp file left


def test_a_scoring_error_names_the_scenario_file_the_field_and_the_fix(repo, tmp_path):
    """`mcptrials score` on a scenario whose grading part cannot be used (an exact answer that
    does not parse with its date_format): the error names the scenario FILE too, not only
    `scenario field steps.1...` (issue 32)."""
    from mcptrials.matrix.errors import ConfigError

    repo_dir, a, _ = repo
    sc = _scenario_all_hit()
    sc["steps"][1]["exact_answer"] = {"value": "2026-13-45", "date_format": "%Y-%m-%d"}
    (tmp_path / "transcript.json").write_text(json.dumps(make_transcript()))
    (tmp_path / "sc.yaml").write_text(yaml.safe_dump(sc))
    p = argparse.ArgumentParser()
    graders_cli.register(p.add_subparsers())
    args = p.parse_args(
        [
            "score",
            "--transcript",
            str(tmp_path / "transcript.json"),
            "--scenario",
            str(tmp_path / "sc.yaml"),
            "--repo-dir",
            str(repo_dir),
            "--commit",
            a,
            "--out",
            str(tmp_path / "scored.json"),
        ]
    )
    with pytest.raises(ConfigError) as e:
        args.func(args)
    assert str(e.value).startswith(
        f"{tmp_path / 'sc.yaml'}: field steps.1.exact_answer.value: '2026-13-45' "
        "does not parse with date_format '%Y-%m-%d'"
    ), e.value
    assert "fix one of them" in str(e.value)
    # a scenario given as data (not loaded from its file) is graded with the file it names
    sc = _scenario_all_hit()
    sc["steps"][0]["checks"][0] = {"type": "regex", "value": "create_app(", "required": True, "case_sensitive": False}
    with pytest.raises(
        ConfigError,
        match=r"^scenarios/x\.yaml: field steps\.0\.checks\.0\.value: 'create_app\(' is not "
        r"a valid regular expression: missing \)",
    ):
        score_trial(make_transcript(), sc, repo_dir, a, None, None, source="scenarios/x.yaml")


def test_scoring_imports_no_heavy_libraries(repo):
    repo_dir, a, _ = repo
    code = (
        "import sys, json; from mcptrials.grade.scoring import score_trial; "
        f"from test_graders_scoring import make_transcript, SCENARIO; "
        f"score_trial(make_transcript(), SCENARIO, {str(repo_dir)!r}, {a!r}, None, None); "
        "print(json.dumps([m for m in ('pandas', 'scipy', 'matplotlib', 'snakemake') if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(Path(__file__).parent)
    )
    assert json.loads(out.stdout) == []
