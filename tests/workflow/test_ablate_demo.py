"""Issue 37, done when (on the demo): code-index with `ablate: leave_one_out` (configs/ablate-demo.yaml)
plans, runs and reports through the real workflow and the real server: the arm without the
search tool never calls it (its transcripts, and the proxy refuses it), and the report's
contribution table has a row per left-out tool with its interval."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys

import pytest

from matrix_helpers import ROOT
from workflow_helpers import copy_workflow, workflow_env

pytestmark = pytest.mark.slow

CONFIG = "configs/ablate-demo.yaml"


def test_ablate_demo_plans_runs_and_reports(tmp_path):
    copy_workflow(tmp_path)
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / CONFIG, tmp_path / CONFIG)
    (tmp_path / "demo").mkdir()
    shutil.copy(ROOT / "demo" / "shop.bundle", tmp_path / "demo" / "shop.bundle")
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    cmd = [sys.executable, "-m", "snakemake", "--directory", str(tmp_path), "--snakefile", str(tmp_path / "Snakefile")]
    cmd += ["--configfile", str(tmp_path / CONFIG), "--scheduler", "greedy"]
    env = workflow_env(tmp_path)
    dry = subprocess.run([*cmd, "-n"], capture_output=True, text=True, env=env, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    p = subprocess.run([*cmd, "-j2"], capture_output=True, text=True, env=env, timeout=1800)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    runs = tmp_path / "results" / "runs" / "reference" / "loop"
    arm = "code-index-without-search_code_advanced"
    called = {
        t: [c["tool"] for f in (runs / t).rglob("transcript.json") for c in json.loads(f.read_text())["tool_calls"]]
        for t in ("code-index", arm)
    }
    assert "search_code_advanced" in called["code-index"]  # the full server's agent searches with it
    assert called[arm] and "search_code_advanced" not in called[arm]  # the arm's never does
    snap = json.loads((tmp_path / "results" / "snapshots" / arm / "demo" / "tools.json").read_text())
    assert "search_code_advanced" not in [t["name"] for t in snap["tools"]] and len(snap["tools"]) == 13
    with open(tmp_path / "results" / "aggregate" / "contribution.csv", newline="") as f:
        rows = {r["left_out"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"search_code_advanced", "find_files"}
    search = rows["search_code_advanced"]
    assert search["calls_arm"] == "0" and int(search["calls_full"]) > 0 and search["diff_lo"] and search["diff_hi"]
    report = (tmp_path / "results" / "report" / "report.md").read_text()
    assert "Which tools help: each tool's contribution" in report and "Tokens against fairness" in report
    with open(tmp_path / "results" / "aggregate" / "surface.csv", newline="") as f:
        surface = {r["arm"]: r for r in csv.DictReader(f)}
    assert set(surface) == {"code-index", arm, "code-index-without-find_files"}
    assert int(surface[arm]["definition_tokens"]) < int(surface["code-index"]["definition_tokens"])
    assert sum(r["smallest_within_margin"] == "True" for r in surface.values()) == 1
    assert (tmp_path / "results" / "report" / "plots" / "tokens_fairness.png").is_file()
    print(
        "\n"
        + "\n".join(
            f"{a}: {r['definition_tokens']} tokens, fairness {r['fairness']}, pareto {r['pareto']}, "
            f"smallest {r['smallest_within_margin']}"
            for a, r in surface.items()
        )
    )
    print(
        "\n"
        + "\n".join(
            f"{k}: diff {r['diff']} [{r['diff_lo']}, {r['diff_hi']}] calls {r['calls_full']}" for k, r in rows.items()
        )
    )
