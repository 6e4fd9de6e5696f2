"""Issue 37, done when (on the demo): code-index with `ablate: leave_one_out` (configs/ablate-demo.yaml)
plans, runs and reports through the real workflow and the real server: the arm without the
search tool never calls it (its transcripts, and the proxy refuses it), and the report's
contribution table has a row per left-out tool with its interval; and the subsets run on the data
pack's memory server (configs/ablate-data.yaml) gives Shapley values that sum to the full server's
difference from the empty surface."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from matrix_helpers import ROOT
from workflow_helpers import copy_workflow, workflow_env

pytestmark = pytest.mark.slow

CONFIG = "configs/ablate-demo.yaml"


def run_config(tmp_path, config: str, files: dict[str, str]):
    """The workflow on a copy of `config` (its paths relative to configs/) and the project files it
    names (source -> destination under tmp_path): a dry run, then the run."""
    copy_workflow(tmp_path)
    (tmp_path / "configs").mkdir()
    shutil.copy(ROOT / config, tmp_path / config)
    for src, dest in files.items():
        (tmp_path / dest).parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, tmp_path / dest)
    cmd = [sys.executable, "-m", "snakemake", "--directory", str(tmp_path), "--snakefile", str(tmp_path / "Snakefile")]
    cmd += ["--configfile", str(tmp_path / config), "--scheduler", "greedy"]
    # The install rule re-installs (a fresh environment each time): into this test's own tools folder,
    # so the servers other tests share are never removed under them; npm and pip need the machine's
    # certificate settings to reach the registry (as tests/workflow/test_data_pack.py does).
    certs = {k: os.environ[k] for k in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_CERT") if k in os.environ}
    env = {**workflow_env(tmp_path), "MCPTRIALS_TOOLS_DIR": str(tmp_path / "tools"), **certs}
    dry = subprocess.run([*cmd, "-n"], capture_output=True, text=True, env=env, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    p = subprocess.run([*cmd, "-j2"], capture_output=True, text=True, env=env, timeout=1800)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]


def test_ablate_demo_plans_runs_and_reports(tmp_path):
    run_config(tmp_path, CONFIG, {"demo/shop.bundle": "demo/shop.bundle", "scenarios": "scenarios"})
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


def test_memory_subsets_shapley_values_sum_to_full_minus_empty(tmp_path):
    files = {"packs/data/fixture.bundle": "packs/data/fixture.bundle", "packs/data/scenarios": "packs/data/scenarios"}
    run_config(tmp_path, "configs/ablate-data.yaml", files)
    with open(tmp_path / "results" / "aggregate" / "shapley.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["name"] for r in rows] == ["read_graph", "search_nodes", "open_nodes"]
    assert {r["method"] for r in rows} == {"exact"}
    total = sum(float(r["shapley"]) for r in rows)
    assert total == pytest.approx(float(rows[0]["v_full"]) - float(rows[0]["v_empty"]), abs=1e-9)
    print("\n" + "\n".join(f"{r['name']}: {float(r['shapley']):+.4f} (calls {r['calls_full']})" for r in rows))


def test_ablate_demo_confirms_the_arm_without_the_search_on_held_out(tmp_path):
    """The demo's confirmed arm (configs/ablate-demo.yaml `confirm:`) through the workflow: its train and
    held-out differences side by side in confirmation.csv and the report."""
    run_config(tmp_path, CONFIG, {"demo/shop.bundle": "demo/shop.bundle", "scenarios": "scenarios"})
    with open(tmp_path / "results" / "aggregate" / "confirmation.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["arm"] == "code-index-without-search_code_advanced" and row["heldout_n"] == "1"
    assert row["verdict"] in ("held", "did not hold") and int(row["train_n"]) == 4
    report = (tmp_path / "results" / "report" / "report.md").read_text()
    assert "Confirmed on held-out scenarios" in report and row["verdict"] in report
    print(f"\ntrain {row['train_diff']} held-out {row['heldout_diff']}: {row['verdict']}")
