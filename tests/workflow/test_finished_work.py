"""A paid run never loses or silently re-buys finished work (issue 32): a config `validate`
refuses stops a real run before any job and touches no trial (a dry run prints the same refusal
as a warning); a stage that fails in a later run keeps the finished trials it cannot rerun, byte
for byte; and the plan counts every trial the run will run, rerun ones with their reason, as
many as Snakemake's own job table."""

import hashlib
import re
import shutil
from pathlib import Path

import pytest
import yaml

from matrix_helpers import FAULTY_SERVER, SCENARIO, faulty_tool, write_matrix
from workflow_helpers import copy_workflow, planned, snakemake

pytestmark = pytest.mark.slow


def digests(wd: Path) -> dict[str, str]:
    """Every trial record's sha256, by path."""
    return {
        str(p.relative_to(wd)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((wd / "results/runs").rglob("*.json"))
        if p.name in ("transcript.json", "run_meta.json") and "attempts" not in p.parts
    }


def edit_yaml(path: Path, fn) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def plan_line(out: str) -> str:
    return next(line for line in out.splitlines() if line.startswith("mcptrials plan:"))


@pytest.fixture
def project(tmp_path):
    """Two tools, the second a server kept in the project (its script under server/), 2 trials,
    run once to the end."""
    (tmp_path / "server").mkdir()
    shutil.copy(FAULTY_SERVER, tmp_path / "server" / "main.py")
    mine = faulty_tool("ok", args=["{project}/server/main.py", "ok"], read_only=["{project}/server"])
    write_matrix(tmp_path, tools={"baseline": {"transport": "none"}, "mine": mine}, trials=2)
    copy_workflow(tmp_path)
    snakemake(tmp_path, "-j2")
    return tmp_path


def test_a_mistyped_commit_refuses_before_any_job_and_keeps_every_trial(project):
    before = digests(project)
    assert len(before) == 8
    good = yaml.safe_load((project / "config.yaml").read_text())["repos"]["tiny"]["commit"]
    edit_yaml(project / "config.yaml", lambda d: d["repos"]["tiny"].update(commit="c" * 40))

    dry = snakemake(project, "-n")  # a newcomer's first step: the same refusal, as a warning
    assert dry.returncode == 0
    assert re.search(
        r"mcptrials: warning: a real run refuses to start: .*config.yaml: field repos.tiny.commit: "
        f"{'c' * 40} is not in",
        dry.stderr,
    ), dry.stderr[-2000:]

    real = snakemake(project, "-j2", check=False)
    assert real.returncode != 0
    assert "mcptrials: error:" in real.stderr and "field repos.tiny.commit" in real.stderr
    assert "checkout" not in re.findall(r"rule (\w+):", real.stdout + real.stderr)  # no job ran
    assert digests(project) == before

    edit_yaml(project / "config.yaml", lambda d: d["repos"]["tiny"].update(commit=good))
    assert planned(project) == {}  # reverting the typo plans nothing


def test_a_stage_that_fails_later_keeps_the_finished_trials(project):
    """An install that fails (a wheel that is not there: nothing `validate` can see without
    installing) makes the tool's snapshot unavailable: its finished trials stay byte for byte,
    not `not_run` placeholders; the next invocation tries them again, and says so."""
    before = digests(project)
    edit_yaml(
        project / "config.yaml",
        lambda d: d["tools"]["mine"].update(install={"pip": [str(project / "gone-1.0-py3-none-any.whl")]}),
    )
    snakemake(project, "-j2", failed_stages_ok=True)
    assert digests(project) == before
    mine = sorted((project / "results/runs/reference/loop/mine").rglob("attempts/attempts.json"))
    assert len(mine) == 2 and all('"stale": true' in p.read_text() for p in mine)

    dry = snakemake(project, "-n")
    jobs = planned(project)
    line = plan_line(dry.stderr)
    assert jobs.get("transcript") == 2
    assert "2 trial(s) still to run (2 retry: the install of mine failed)" in line, line


def test_the_plan_counts_the_trials_an_edited_server_reruns(project):
    """The plan line's count equals the dry run's transcript jobs, with the reason."""
    script = project / "server" / "main.py"
    script.write_text(script.read_text() + "\n# an edit\n")
    dry = snakemake(project, "-n")
    jobs = planned(project)
    line = plan_line(dry.stderr)
    assert jobs.get("transcript") == 2, jobs
    assert "2 trial(s) still to run (2 rerun: server files changed)" in line, line

    # the scenario's prompt edited too: the trials of both tools, each with its reasons
    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"][0]["prompt"] += " Be brief."
    (project / "scenarios" / "find-helper.yaml").write_text(yaml.safe_dump(sc, sort_keys=False))
    dry = snakemake(project, "-n")
    line = plan_line(dry.stderr)
    assert planned(project).get("transcript") == 4
    assert (
        "4 trial(s) still to run (2 rerun: scenario changed, 2 rerun: scenario changed, server files changed)" in line
    ), line
