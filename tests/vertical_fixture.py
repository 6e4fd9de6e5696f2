"""A small vertical of our own in the reference bench's layout (verticals/<name>/: scenarios,
results/<model>/<arm>/run-N/ with a Claude Code or thin stream, run_meta.json, judged.json) and
its import; shared by tests/importers/test_import_sense_verticals.py and
tests/run/test_host_record_shapes.py. Nothing here comes from the reference bench's files."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from matrix_helpers import make_repo
from mcptrials.cli import main

GOLD = [
    {"id": "util", "group": "contract", "match": ["src/util.py"], "relation": "defines helper"},
    {"id": "app", "group": "dependents", "match": ["src/app.py"], "relation": "calls helper"},
    {"id": "cfg", "group": "dependents", "match": ["conf/settings.py"]},
]
SCEN = {
    "name": "Tiny helper audit",
    "repo": "tiny",
    "description": "Audit helper.",
    "steps": [
        {
            "name": "Find the helper",
            "prompt": "Where is helper defined? Cite file:line.",
            "checks": [{"type": "word", "value": "helper"}],
        },
        {"name": "List its callers", "prompt": "Who calls helper?", "checks": [{"type": "word", "value": "main"}]},
    ],
    "scoring": {"weights": {"correctness": 1.0}},
    "gold": GOLD,
}
RUBRIC = {"steps": [{"name": "Find the helper", "criteria": {"map_quality": {"weight": 1.0, "question": "Cited?"}}}]}

ANSWER = (
    '```json\n{"step1_find_the_helper": {"file": "src/util.py", "line": 1},\n'
    ' "step2_list_its_callers": "main in src/app.py:5 calls it; conf/settings.py names it"}\n```'
)


def claude_stream(answer=ANSWER, mcp=True):
    tools = ["Read", "Bash"] + (["mcp__sense__sense_graph"] if mcp else [])
    return [
        {
            "type": "system",
            "subtype": "init",
            "cwd": "/home/u/tiny",
            "session_id": "s",
            "model": "claude-x-1",
            "tools": tools,
            "mcp_servers": [],
        },
        {
            "type": "assistant",
            "message": {
                "id": "m1",
                "model": "claude-x-1",
                "content": [
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/home/u/tiny/src/util.py"}}
                ],
                "usage": {"input_tokens": 5, "output_tokens": 3},
            },
        },
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "def helper(x):"}],
                    }
                ]
            },
        },
        {
            "type": "assistant",
            "message": {"id": "m2", "model": "claude-x-1", "content": [{"type": "text", "text": answer}]},
        },
        {
            "type": "result",
            "subtype": "success",
            "is_error": False,
            "result": answer,
            "duration_ms": 4000,
            "num_turns": 2,
            "total_cost_usd": 0.01,
            "usage": {"input_tokens": 5, "output_tokens": 30},
        },
    ]


def thin_stream(answer=ANSWER):
    """Codex/Opencode as the bench stores them: Claude Code's shape, no ids, no init, a bare result."""
    return [
        {"type": "assistant", "message": {"content": [{"type": "text", "text": "Looking."}]}},
        {
            "type": "assistant",
            "message": {
                "content": [{"type": "tool_use", "name": "mcp__sense__sense_graph", "input": {"symbol": "helper"}}]
            },
        },
        {
            "type": "assistant",
            "message": {"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "grep -rn helper"}}]},
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "content": [{"type": "text", "text": "helper <- main"}]}]},
        },
        {
            "type": "user",
            "message": {"content": [{"type": "tool_result", "content": [{"type": "text", "text": "src/app.py:5"}]}]},
        },
        *([{"type": "assistant", "message": {"content": [{"type": "text", "text": answer}]}}] if answer else []),
        {
            "type": "result",
            "total_cost_usd": None,
            "duration_ms": None,
            "session_id": "x",
            "usage": {
                "input_tokens": 100,
                "output_tokens": 20,
                "cache_read_input_tokens": 50,
                "cache_creation_input_tokens": 0,
            },
        },
    ]


JUDGED = {
    "judge": {"model": "judge-model-t", "prompt_version": "v-test"},
    "scenario_quality": 0.7,
    "steps": [
        {
            "step": "Find the helper",
            "scores": {
                "map_quality": {"score": 0.8, "rationale": "cites util"},
                "relationship": {"score": 0.1, "rationale": "not weighed"},
            },
        },
        {
            "step": "List its callers",
            "scores": {
                "map_quality": {"score": 0.5, "rationale": "r"},
                "specificity": {"score": 1.0, "rationale": "r"},
            },
        },
    ],
}


def jsonl(events) -> str:
    return "".join(json.dumps(e) + "\n" for e in events)


def write_run(d: Path, events, **meta):
    d.mkdir(parents=True, exist_ok=True)
    (d / "transcript.json").write_text(jsonl(events))
    (d / "run_meta.json").write_text(
        json.dumps({"repo": "tiny", "repo_commit": meta.pop("commit"), "wall_time_seconds": 42, **meta})
    )
    (d / "judged.json").write_text(json.dumps(meta.pop("judged", JUDGED)))


def write_vertical(root: Path, commit: str, url: str) -> Path:
    bench = root / "bench"
    v = bench / "verticals" / "mini"
    (v / "scenarios").mkdir(parents=True)
    (v / "scenarios" / "tiny.yaml").write_text(yaml.safe_dump(SCEN, sort_keys=False))
    (v / "scenarios" / "tiny.rubric.yaml").write_text(yaml.safe_dump(RUBRIC))
    (bench / "PINNED_COMMITS.json").write_text(json.dumps({"tiny": {"commit": commit, "url": url}}))
    r = v / "results"
    short = commit[:7]
    for arm in ("baseline", "sense"):  # Claude Code: no harness field, two runs
        for n in (1, 2):
            write_run(
                r / "claude-x-1" / arm / "tiny" / f"run-{n}",
                claude_stream(mcp=arm == "sense"),
                commit=short,
                model="claude-x-1",
            )
    write_run(
        r / "gpt-z" / "baseline" / "tiny",
        thin_stream(),
        commit=short,
        model="gpt-z",
        harness="codex",
        judged={"note": "not a judgement"},
    )
    write_run(r / "gpt-z" / "sense" / "tiny" / "run-1", thin_stream(), commit=short, model="gpt-z", harness="codex")
    write_run(
        r / "gpt-z" / "sense" / "tiny" / "run-2",
        thin_stream(),
        commit=short,
        model="gpt-z",
        harness="codex",
        valid=False,
        void_reason="rate limited mid-run",
    )
    write_run(r / "_quarantine" / "sense" / "tiny", thin_stream(), commit=short, model="x")
    write_run(r / "gpt-z" / "sense" / "tiny.before-fix", thin_stream(), commit=short, model="gpt-z", harness="codex")
    write_run(r / "v9-sweep" / "sense" / "tiny" / "run-1", claude_stream(), commit=short, model="claude-x-1")
    # the bench's own grading of one run (it credits the row we only see named) and its board
    (r / "gpt-z" / "sense" / "tiny" / "run-1" / "scored.json").write_text(
        json.dumps(
            {
                "gold_recall": {
                    "cited_recall": 1.0,
                    "details": [{"id": i, "cited": True} for i in ("util", "app", "cfg")],
                }
            }
        )
    )
    (r / "report.json").write_text(
        json.dumps(
            {
                "vertical": "mini",
                "models": {
                    "claude-x-1": {
                        "tiny": {
                            "baseline_overall": 0.6667,
                            "sense_overall": 0.6667,
                            "overall_delta": 0.0,
                            "deps_delta": 0.0,
                        }
                    },
                    "gpt-z": {
                        "tiny": {
                            "baseline_overall": 0.6667,
                            "sense_overall": 1.0,
                            "overall_delta": 0.3333,
                            "deps_delta": 0.5,
                        }
                    },
                },
            }
        )
    )
    return bench


def run_import(tmp_path) -> tuple[dict, Path, str]:
    commit = make_repo(tmp_path / "repo")
    bench = write_vertical(tmp_path / "src", commit, str(tmp_path / "repo"))
    out = tmp_path / "out"
    assert main(["import", "sense-bench", str(bench), "--vertical", "mini", "--out", str(out)]) == 0
    return json.loads((out / "import-report.json").read_text()), out, commit
