"""A small hand-made results/runs tree for the aggregate and report tests.

Matrix: models reference (no cost) and sonnet (priced), tools baseline and git, scenarios
s1, s2, s3 (one step each), 2 trials, judge repeats 2. Every record is validated against
its schema in src/mcptrials/schemas/, so the fixture cannot drift from the contract.

Per trial (both models alike, except cost):
  baseline: keyword 0.5, judge quality [0.5, 0.5], 1 of 2 citations grounded, wall 10 s,
            usage 1000 input, 50 cache write, 300 cache read, 200 output tokens;
            s3 trial 2 has quality [0.3, 0.3].
  git:      keyword 1.0, quality [0.8, 0.6], 3 of 4 grounded, wall 20 s (s3: 10 s),
            twice the baseline's tokens; s2 trial 2 crashed (server_crashed).
  passes:   s1 every trial; s2 all but the crashed one; s3 none.
Costs: the config prices claude-sonnet-4-6 at PRICING (3 / 15 USD per million tokens), so a
sonnet baseline trial costs (1000*3 + 50*3.75 + 300*0.3 + 200*15) / 1e6 = 0.0062775
and a git trial twice that. The records' own cost_usd (baseline 0.10, git 0.40, as if frozen at
run time with another price list, and in another ratio) must never be what the aggregate uses.
Missing trials: build(..., missing={(model, tool, scenario, trial): (outcome, detail)}) gives
those trials an infrastructure outcome (api_failed, harness_failed, not_run): no answer, no
citations, quality [0, 0], keyword 0, wall 2 s, as a failed call would leave them; the
aggregate must leave every one of those figures out.
Held-out anchor: the config says `locked: locked`, a folder with an empty lockfile (pass
locked=None for a config without an anchor).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import jsonschema
import yaml

from mcptrials.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "src" / "mcptrials" / "schemas"
COMMIT = "a" * 40
SCENARIOS = ("s1", "s2", "s3")
TOOLS = ("baseline", "git")
MODELS = ("reference", "sonnet")
HOSTILE = "<script>alert('x')</script> & <b>bold</b>"

PRICING = {"claude-sonnet-4-6": {"input": 3, "output": 15}}

RUBRIC = {
    "criteria": [
        {"name": "map_quality", "weight": 0.6, "question": "Where?"},
        {"name": "specificity", "weight": 0.4, "question": "Precise?"},
    ]
}


@lru_cache(maxsize=None)
def validator(name: str):
    with open(SCHEMAS / name) as f:
        schema = yaml.safe_load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def validate(record: dict, name: str) -> None:
    validator(name).validate(record)


def spec(model: str, tool: str, scenario: str, trial: int, missing: tuple | None = None) -> dict:
    """The hand-chosen figures of one trial; `missing` = (outcome, detail) of an infrastructure failure."""
    if tool == "baseline":
        s = {
            "kw": 0.5,
            "q": [0.5, 0.5],
            "grounded": 1,
            "total": 2,
            "wall": 10.0,
            "cost": 0.10,
            "outcome": "completed",
            "tokens": 1,
        }
        if scenario == "s3" and trial == 2:
            s["q"] = [0.3, 0.3]
    else:
        s = {
            "kw": 1.0,
            "q": [0.8, 0.6],
            "grounded": 3,
            "total": 4,
            "wall": 10.0 if scenario == "s3" else 20.0,
            "cost": 0.40,
            "outcome": "completed",
            "tokens": 2,
        }
        if scenario == "s2" and trial == 2:
            s.update(outcome="server_crashed", q=[0.0, 0.0], kw=0.0, grounded=0, total=0, wall=1.5)
    if missing:
        s.update(outcome=missing[0], detail=missing[1], q=[0.0, 0.0], kw=0.0, grounded=0, total=0, wall=2.0)
    s["passed"] = s["outcome"] == "completed" and (scenario == "s1" or scenario == "s2")
    if model == "reference":
        s["cost"] = None
    return s


def transcript(model, tool, scenario, trial, s) -> dict:
    done = s["outcome"] == "completed"
    answer = f"The helper is in src/util.py:1. {HOSTILE}" if done else ""
    calls = [
        {
            "id": "c1",
            "step": 0,
            "turn": 1,
            "name": "grep",
            "tool": "grep",
            "source": "builtin",
            "arguments": {"pattern": "helper"},
            "result_text": "src/util.py:1:def helper(x): <tag>",
            "result_chars": 34,
            "truncated": False,
            "is_error": False,
            "error_kind": None,
            "latency_ms": 3.0,
            "result_tokens_est": 9,
        }
    ]
    if tool == "git":
        calls.append(
            {
                "id": "c2",
                "step": 0,
                "turn": 2,
                "name": "mcp__git__git_log",
                "tool": "git_log",
                "source": "mcp",
                "arguments": {"max_count": 5, "note": HOSTILE},
                "result_text": "commit abc\n" + "x" * 3000,
                "result_chars": 3011,
                "truncated": False,
                "is_error": not done,
                "error_kind": None if done else "protocol_error",
                "error_code": None if done else -32000,
                "latency_ms": 40.0 if done else 900.0,
                "result_tokens_est": 750,
            }
        )
    errors = {"tool_error": 0, "protocol_error": 0 if done else 1, "api_error": 0, "harness_error": 0}
    events = [] if done else [{"kind": "protocol_error", "step": 0, "message": "connection closed", "code": -32000}]
    t = {
        "schema": "mcptrials/transcript/1",
        "cell": {"model": model, "host": "loop", "tool": tool, "repo": "tiny", "scenario": scenario, "trial": trial},
        "provider": "reference" if model == "reference" else "anthropic",
        "model_id": None if model == "reference" else "claude-sonnet-4-6",
        "outcome": s["outcome"],
        "outcome_detail": None if done else s.get("detail", "server crashed: connection closed"),
        "system_prompt_sha256": "b" * 64,
        "steps": [
            {
                "index": 0,
                "name": "locate",
                "prompt": "Where is `helper`? <cite>",
                "answer_text": answer,
                "audit_text": "grep helper",
                "outcome": s["outcome"],
                "turns": 3,
                "wall_seconds": s["wall"],
                "state_check": None,
            }
        ],
        "tool_calls": calls,
        "errors": errors,
        "error_events": events,
        "usage": {
            "input_tokens": 1000 * s["tokens"],
            "output_tokens": 200 * s["tokens"],
            "cache_creation_input_tokens": 50 * s["tokens"],
            "cache_read_input_tokens": 300 * s["tokens"],
            "api_calls": 3,
            "retries": 0,
            "cost_usd": s["cost"],
        },
        "wall_seconds": s["wall"],
        "feedback_text": "",
        "messages": [],
    }
    validate(t, "transcript.schema.yaml")
    return t


def _counts(s) -> dict:
    return {
        "total": s["total"],
        "grounded": s["grounded"],
        "hallucinated": 0,
        "unresolved": s["total"] - s["grounded"],
        "verified": s["grounded"],
        "mismatch": 0,
        "n/a": 0,
        "gold_total": 1,
        "gold_cited": 1 if s["total"] else 0,
    }


def _rates(s) -> dict:
    tot = s["total"]
    return {
        "grounded_rate": s["grounded"] / tot if tot else None,
        "hallucinated_rate": 0.0 if tot else None,
        "unresolved_rate": (tot - s["grounded"]) / tot if tot else None,
        "verified_rate": 1.0 if s["grounded"] else None,
        "cited_recall": 1.0 if tot else 0.0,
    }


def scored(model, tool, scenario, trial, s) -> dict:
    # coverage = (required hits + 0.5 bonus hits) / (1 + 0.5 * 2): one required, two bonus checks
    req_hit, bonus = {1.0: (True, 2), 0.5: (True, 0), 0.0: (False, 0)}[s["kw"]]
    checks = [
        {
            "type": "word",
            "value": "helper",
            "required": True,
            "case_sensitive": False,
            "hit": req_hit,
            "matched": "helper" if req_hit else None,
            "snippet": "The helper is" if req_hit else None,
        }
    ]
    checks += [
        {
            "type": "phrase",
            "value": f"bonus{i}",
            "required": False,
            "case_sensitive": False,
            "hit": i < bonus,
            "matched": None,
            "snippet": None,
        }
        for i in range(2)
    ]
    cov = (req_hit + 0.5 * bonus) / 2.0
    assert cov == s["kw"]
    cits = [
        {
            "path_as_cited": "src/util.py",
            "resolved_path": "src/util.py",
            "lines": [1],
            "symbol": None,
            "bucket": "grounded" if i < s["grounded"] else "unresolved",
            "verification": "verified",
            "candidates": [],
            "text": f"src/util.py:{i + 1} {HOSTILE}",
            "reason": "line in file",
            "identifiers": [],
            "occurrences": 1,
        }
        for i in range(s["total"])
    ]
    failures = [] if s["passed"] else ["step 0 (locate): exact answer 8 not found"]
    mcp = 1 if tool == "git" else 0
    rec = {
        "schema": "mcptrials/scored/1",
        "grader_version": "1",
        "cell": {"model": model, "host": "loop", "tool": tool, "repo": "tiny", "scenario": scenario, "trial": trial},
        "provider": "reference",
        "model_id": None,
        "outcome": s["outcome"],
        "outcome_detail": None,
        "repo_commit": COMMIT,
        "grading_sha256": "c" * 64,
        "passed": s["passed"],
        "failures": failures,
        "keywords": {"coverage": cov, "required_passed": s["passed"]},
        "citations": {"counts": _counts(s), "rates": _rates(s)},
        "exact": {"steps": 0, "passed": 0},
        "state": {"steps": 0, "passed": 0},
        "steps": [
            {
                "index": 0,
                "name": "locate",
                "present": True,
                "outcome": s["outcome"],
                "answer_chars": 40,
                "keywords": {
                    "checks": checks,
                    "required_total": 1,
                    "required_hits": int(req_hit),
                    "bonus_total": 2,
                    "bonus_hits": bonus,
                    "coverage": cov,
                    "required_passed": req_hit,
                },
                "citations": {
                    "items": cits,
                    "gold": [{"location": "src/util.py:1", "cited": bool(s["total"]), "by": None}],
                    "counts": _counts(s),
                    "rates": _rates(s),
                },
                "exact": None,
                "state": None,
                "required_passed": s["passed"],
                "failures": failures,
            }
        ],
        "efficiency": {
            "tokens": {
                "input_uncached": 1000 * s["tokens"],
                "cache_write": 50 * s["tokens"],
                "cache_read": 300 * s["tokens"],
                "output": 200 * s["tokens"],
                "total": 1550 * s["tokens"],
            },
            "cost_usd": s["cost"],
            "priced_as": None if s["cost"] is None else "claude-sonnet-4-6",
            "turns": 3,
            "api_calls": 3,
            "retries": 0,
            "tool_calls": 1 + mcp,
            "tool_calls_mcp": mcp,
            "tool_calls_builtin": 1,
            "wall_seconds": s["wall"],
            "steps": [{"index": 0, "turns": 3, "wall_seconds": s["wall"], "tool_calls": 1 + mcp}],
        },
        "adoption": {
            "mcp_calls": mcp,
            "builtin_search_calls": 1,
            "tool_fluency": mcp / (mcp + 1),
            "discoverability": {
                "window_turns": 3,
                "first_server_call_turn": 2 if mcp else None,
                "used_within_window": bool(mcp) if tool != "baseline" else None,
                "distinct_server_tools": mcp,
                "server_tools_used": ["git_log"] if mcp else [],
            },
            "tool_errors": {
                "tool_error": 0,
                "protocol_error": 0 if s["outcome"] == "completed" else mcp,
                "harness_error": 0,
            },
            "tool_error_rate": 0.0,
            "per_tool": {},
            "expected_tools": [],
        },
    }
    validate(rec, "scored.schema.yaml")
    return rec


def judged(model, tool, scenario, trial, s) -> dict:
    q = s["q"]
    empty = s["outcome"] != "completed"
    rec = {
        "schema": "mcptrials/judged/1",
        "cell": {"model": model, "host": "loop", "tool": tool, "repo": "tiny", "scenario": scenario, "trial": trial},
        "transcript_outcome": s["outcome"],
        "judge": {
            "provider": "reference",
            "model": None,
            "repeats": 2,
            "temperature": None,
            "note": None,
            "settings_hash": "d" * 64,
            "prompt_file": "judge.md",
            "prompt_sha256": "e" * 64,
        },
        "scenario": {"id": scenario, "rubric_hash": "f" * 64},
        "masking": {"replacement": "[tool]", "names_masked": 0},
        "steps": [
            {
                "index": 0,
                "name": "locate",
                "answered": True,
                "answer_chars": 40,
                "masked_names": 0,
                "empty": empty,
                "criteria": [
                    {
                        "name": c["name"],
                        "weight": c["weight"],
                        "citations": False,
                        "scores": list(q),
                        "rationales": [f"key point {HOSTILE} present"] * 2,
                        "mean": sum(q) / 2,
                    }
                    for c in RUBRIC["criteria"]
                ],
                "quality": list(q),
                "quality_mean": sum(q) / 2,
                "model_calls": 0,
            }
        ],
        "quality": list(q),
        "quality_mean": sum(q) / 2,
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 0,
            "retries": 0,
            "malformed_replies": 0,
            "cost_usd": 0.0,
        },
    }
    validate(rec, "judged.schema.yaml")
    return rec


def run_meta(model, tool, scenario, trial, s) -> dict:
    server = tool != "baseline"
    return {
        "harness_version": "0.1.0",
        "host": "loop",
        "provider": "reference",
        "model": model,
        "model_id": None,
        "tool": tool,
        "tool_spec_sha256": "1" * 64,
        "server_name": "mcp-git" if server else None,
        "server_version": "1.2.3" if server else None,
        "tool_version_label": "2026.10.19" if server else None,
        "tools_sha256": "2" * 64 if server else None,
        "repo": "tiny",
        "repo_url": "repo",
        "commit": COMMIT,
        "scenario": scenario,
        "scenario_sha256": "3" * 64,
        "trial": trial,
        "started_at": "2026-11-01T10:00:00.000+00:00",
        "ended_at": "2026-11-01T10:01:00.000+00:00",
        "server_startup_seconds": 0.5 if server else None,
        "server_peak_rss_kb": 40000 if server else None,
        "server_stderr_tail": "Traceback (most recent call last):\nKeyError: 'GIT_DIR' <b>"
        if s["outcome"] == "server_crashed"
        else "",
    }


def write_config(tmp: Path, tools=TOOLS, scenarios=SCENARIOS, models=MODELS, trials=2, **extra) -> Path:
    """config.yaml and scenarios/*.yaml under tmp; `extra` adds or replaces top-level config fields."""
    (tmp / "scenarios").mkdir(parents=True, exist_ok=True)
    for sc in scenarios:
        data = {
            "title": f"Scenario {sc} <i>",
            "repo": "tiny",
            "suite": "capability",
            "rubric": RUBRIC,
            "steps": [{"name": "locate", "prompt": "Where is `helper`? <cite>"}],
        }
        (tmp / "scenarios" / f"{sc}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    all_tools = {"baseline": {"transport": "none"}, "git": {"command": "mcp-server-git", "version": "2026.10.19"}}
    all_models = {
        "reference": {"provider": "reference"},
        "sonnet": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
    }
    cfg = {
        "tools": {t: all_tools[t] for t in tools},
        "repos": {"tiny": {"url": "repo", "commit": COMMIT}},
        "scenarios": "scenarios/*.yaml",
        "models": {m: all_models[m] for m in models},
        "trials": trials,
        "judge": {"provider": "reference", "repeats": 2},
        "pricing": PRICING,
        "locked": "locked",
    }
    cfg.update(extra)
    if cfg["locked"] and not (tmp / cfg["locked"]).exists():
        # the config's held-out anchor: a folder with a lockfile (its content is not read here);
        # a test that made the folder itself keeps it as it is
        (tmp / cfg["locked"]).mkdir()
        (tmp / cfg["locked"] / "held-out.lock").write_text('{"files": {}, "history": []}\n')
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def write_trial(runs: Path, model, tool, scenario, trial, missing: tuple | None = None) -> None:
    s = spec(model, tool, scenario, trial, missing)
    d = runs / model / "loop" / tool / "tiny" / scenario / str(trial)
    d.mkdir(parents=True, exist_ok=True)
    for name, fn in (("transcript", transcript), ("scored", scored), ("judged", judged), ("run_meta", run_meta)):
        (d / f"{name}.json").write_text(json.dumps(fn(model, tool, scenario, trial, s), indent=1))


def build(
    tmp: Path, tools=TOOLS, scenarios=SCENARIOS, models=MODELS, trials=2, missing: dict | None = None, **extra
) -> tuple[Path, Path]:
    """Write config + scenarios + results/runs under tmp; returns (config path, runs dir).
    missing: {(model, tool, scenario, trial): (outcome, detail)} for trials that are missing."""
    cfg = write_config(tmp, tools, scenarios, models, trials, **extra)
    runs = tmp / "results" / "runs"
    for model in models:
        for tool in tools:
            for sc in scenarios:
                for trial in range(1, trials + 1):
                    write_trial(runs, model, tool, sc, trial, (missing or {}).get((model, tool, sc, trial)))
    return cfg, runs


def find_row(rows, **key):
    """The one table row (a csv.DictReader row) whose fields equal key; asserts there is one."""
    hits = [r for r in rows if all(str(r[k]) == str(v) for k, v in key.items())]
    assert len(hits) == 1, (key, len(hits))
    return hits[0]


def aggregate(cfg: Path, runs: Path, agg: Path) -> Path:
    """`mcptrials aggregate` of the runs into agg (asserting it succeeds); returns agg."""
    assert main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(agg)]) == 0
    return agg


def report(cfg: Path, runs: Path, agg: Path, out: Path, heldout: Path) -> int:
    """`mcptrials report` of an aggregate into out; returns its exit code (a test of a refusal expects 1).
    heldout: the held-out agreement file (a path that does not exist: no held-out numbers)."""
    args = ["report", "--config", str(cfg), "--aggregate", str(agg), "--heldout", str(heldout)]
    return main(args + ["--runs", str(runs), "--out-dir", str(out)])


def aggregate_and_report(tmp: Path, cfg: Path, runs: Path) -> tuple[Path, Path]:
    """Both stages into tmp/aggregate and tmp/report, without held-out numbers; returns (agg, out)."""
    agg, out = aggregate(cfg, runs, tmp / "aggregate"), tmp / "report"
    assert report(cfg, runs, agg, out, tmp / "none.json") == 0
    return agg, out
