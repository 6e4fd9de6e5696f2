"""A project runs from any folder: under a path with spaces, with a PATH that does not hold
the venv (the rules run the library from Snakemake's own interpreter), and a finished
project copied elsewhere, results and .snakemake with it, plans nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix_helpers import faulty_tool, write_matrix
from workflow_helpers import copy_workflow

pytestmark = pytest.mark.slow

# No venv on PATH: `mcptrials` is not a command here, only the interpreter running Snakemake knows it.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def snakemake(wd: Path, *args) -> subprocess.CompletedProcess:
    # Relative paths, as a user types them in the project folder.
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "--scheduler", "greedy", *args],
        cwd=wd,
        capture_output=True,
        text=True,
        env={"PATH": BARE_PATH, "HOME": str(wd)},
        timeout=600,
    )
    if p.returncode != 0:
        logs = "\n".join(f"--- {f}\n{f.read_text()[-1500:]}" for f in (wd / "results" / "logs").rglob("*.log"))
        raise AssertionError(f"snakemake {args} failed:\n{p.stdout[-2000:]}\n{p.stderr[-4000:]}\n{logs[-4000:]}")
    return p


def planned_jobs(wd: Path) -> str:
    p = snakemake(wd, "-n")
    out = p.stdout + p.stderr
    return "" if "Nothing to be done" in out else out.split("Job stats:")[-1][:800]


def test_a_spaced_folder_without_the_venv_on_path_runs_and_a_moved_copy_plans_nothing(tmp_path):
    wd = tmp_path / "my project (v1)"
    wd.mkdir()
    write_matrix(wd, tools={"baseline": {"transport": "none"}, "echo": faulty_tool("ok")}, extra={"locked": "locked"})
    copy_workflow(wd)
    assert shutil.which("mcptrials", path=BARE_PATH) is None
    snakemake(wd, "-j2")
    assert (wd / "results" / "report" / "index.html").exists()
    assert planned_jobs(wd) == ""

    # records name the project's files relatively: no absolute path of this folder in them
    for f in (wd / "results").rglob("*.json"):
        assert str(wd) not in f.read_text(), f"{f.relative_to(wd)} holds the project's absolute path"
    checkout = json.loads((wd / "results/checkouts/tiny/checkout.json").read_text())
    assert checkout["tree"] == "results/checkouts/tiny/tree"

    # the finished project, copied elsewhere with its results and .snakemake: nothing to do
    moved = tmp_path / "elsewhere" / "copy of project"
    shutil.copytree(wd, moved, symlinks=True)  # copy2 keeps the files' times, as cp -a or rsync -a do
    shutil.rmtree(wd)  # the original is gone: nothing may point back to it
    assert planned_jobs(moved) == ""
    # and it still runs there: one more trial uses the moved checkout and records
    cfg = (moved / "config.yaml").read_text().replace("trials: 1", "trials: 2")
    (moved / "config.yaml").write_text(cfg)
    snakemake(moved, "-j2")
    new = json.loads((moved / "results/runs/reference/loop/echo/tiny/find-helper/2/transcript.json").read_text())
    assert new["outcome"] == "completed", new["outcome_detail"]
