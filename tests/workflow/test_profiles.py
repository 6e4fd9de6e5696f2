"""The run profiles on a small matrix: `--profile profiles/local` runs it end to end, and
`--profile profiles/slurm` plans the grading jobs as group jobs (tests/workflow/test_slurm.py runs
that profile on a real Slurm)."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from matrix_helpers import LIBRARY_ENV, ROOT, TOOLS_ENV, write_matrix

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path):
    write_matrix(tmp_path, trials=2)  # baseline x 1 scenario x 2 trials, reference model and judge
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    for sub in ("workflow", "locked"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    return tmp_path


def snakemake(wd: Path, profile: str, *args) -> subprocess.CompletedProcess:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": str(wd), **TOOLS_ENV}
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "--profile", str(ROOT / "profiles" / profile), *args],
        cwd=wd,
        env=env,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, (
        f"snakemake --profile profiles/{profile} {args} failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
    )
    return p


def test_local_profile_runs_the_matrix(project):
    snakemake(project, "local")
    assert (project / "results/report/index.html").exists()
    assert len(list((project / "results/runs").rglob("judged.json"))) == 2
    again = snakemake(project, "local", "-n")
    assert "Nothing to be done" in again.stdout + again.stderr


def test_slurm_profile_groups_grading(project):
    out = snakemake(project, "slurm", "-n").stdout
    # one group job holds the scored and judged jobs of both trials; transcripts stay apart
    groups = re.findall(r"Group job grade \(jobs in lexicogr\. order\):", out)
    assert len(groups) == 1, out[-3000:]
    group = out.split("Group job grade")[1]
    assert group.count("rule scored:") == 2 and group.count("rule judged:") == 2
    assert "rule transcript:" not in group


def test_a_deterministic_failure_is_not_retried_by_the_profile(tmp_path):
    """The profiles' `restart-times: 2` retry what can pass on a second try; a rule whose failure
    is deterministic sets `retries: 0` (workflow/rules/common.smk, Retries). Here verify_lock
    fails (a locked file changed): it runs once and its error shows once, not three times."""
    write_matrix(tmp_path, extra={"locked": "locked"})
    shutil.copy(ROOT / "Snakefile", tmp_path / "Snakefile")
    for sub in ("workflow", "locked"):
        shutil.copytree(ROOT / sub, tmp_path / sub)
    with open(tmp_path / "locked" / "gold.json", "a") as f:
        f.write("\n")
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        **TOOLS_ENV,
        **LIBRARY_ENV,
    }
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "--profile",
            str(ROOT / "profiles" / "local"),
            "results/heldout/lock_verified.json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "modified" in (tmp_path / "results/logs/verify_lock.log").read_text(), out[-3000:]
    assert out.count("Error in rule verify_lock:") == 1, out[-5000:]
