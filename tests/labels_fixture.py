"""A finished project for the citation labels (`mcptrials label`, analyze.calibration): the
hand-made run of runs_fixture (model reference; tools baseline and git; s1-s3; 2 trials), a
checkout of `tiny` at results/checkouts/tiny/tree (matrix_helpers.FILES), and in every trial two
line citations of one occurrence each, at the answer's `src/util.py:1` ([17, 30]): the first
strict `verified`, the second `undetermined` (the grader's 0/1: 1 and 0), except in git's crashed
trial (s2, 2: no answer). So baseline has N = 6 trials x 2 = 12 occurrences, git 10, and each a
raw verified rate of 0.5."""

from __future__ import annotations

import json
from pathlib import Path

import runs_fixture as fx
from matrix_helpers import make_repo

SPAN = [17, 30]  # "src/util.py:1" in "The helper is in src/util.py:1. ..."


def citation(line: int, strict: str) -> dict:
    return {
        "path_as_cited": "src/util.py",
        "resolved_path": "src/util.py",
        "lines": [line],
        "symbol": None,
        "bucket": "grounded",
        "verification": "verified",
        "strict": strict,
        "candidates": [],
        "text": f"src/util.py:{line}",
        "reason": "line in file",
        "identifiers": [],
        "occurrences": 1,
        "spans": [SPAN],
        "by_occurrence": [{"span": SPAN, "subject": {"name": "helper", "from": "sentence"}, "strict": strict}],
    }


def build(tmp: Path) -> dict:
    cfg, runs = fx.build(tmp, models=("reference",))
    commit = make_repo(tmp / "results" / "checkouts" / "tiny" / "tree")
    for path in sorted(runs.rglob("scored.json")):
        rec = json.loads(path.read_text())
        rec["repo_commit"] = commit
        done = rec["outcome"] == "completed"  # the crashed trial (git, s2, 2) has no answer, so no citation
        rec["steps"][0]["citations"]["items"] = [citation(1, "verified"), citation(3, "undetermined")] if done else []
        fx.validate(rec, "scored.schema.yaml")
        path.write_text(json.dumps(rec, indent=1))
    return {"config": cfg, "runs": runs, "checkouts": tmp / "results" / "checkouts", "locked": tmp / "locked"}
