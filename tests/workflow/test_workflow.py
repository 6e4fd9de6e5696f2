"""The Snakemake DAG on a temporary copy: bad input stops it before any job, and reruns
follow content (hashes in params and inputs), not file ages."""

import json
import sys
from pathlib import Path
from subprocess import run

import pytest
import yaml

from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from workflow_helpers import copy_workflow, planned, snakemake

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path):
    sc2 = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc2["title"] = "Who calls the helper"
    sc2["steps"][0]["prompt"] = "Which function calls `helper`? Cite file:line."
    write_matrix(
        tmp_path,
        tools={"baseline": {"transport": "none"}, "echo": faulty_tool("ok")},
        trials=2,
        extra={"locked": "locked"},
        scenarios={"find-helper": SCENARIO, "callers": sc2},
    )
    copy_workflow(tmp_path)
    return tmp_path


def judged_targets(wd: Path) -> list[str]:
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    return [
        f"results/runs/reference/loop/{tool}/tiny/{sc}/{t}/{stage}.json"
        for tool in cfg["tools"]
        for sc in ("find-helper", "callers")
        for t in range(1, cfg["trials"] + 1)
        for stage in ("scored", "judged")
    ]


def edit_yaml(path: Path, fn) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_bad_config_fails_before_any_job(project):
    edit_yaml(project / "config.yaml", lambda d: d["repos"]["tiny"].update(commit="a" * 39))
    p = snakemake(project, "-n", check=False)
    assert p.returncode != 0
    assert "config.yaml: field repos.tiny.commit" in p.stderr and "40" in p.stderr
    assert not (project / "results").exists()


def test_missing_commit_fails_in_checkout_naming_it(project):
    """A commit the local repository does not hold: the real run refuses before any job (as
    `validate` does; the dry run prints it as a warning). Run alone, the checkout job records its
    failure, naming the commit (missing data, mcptrials.core.failures), and the status job fails."""
    edit_yaml(project / "config.yaml", lambda d: d["repos"]["tiny"].update(commit="b" * 40))
    p = snakemake(project, "-j1", "results/checkouts/tiny/checkout.json", check=False)
    assert p.returncode != 0 and f"field repos.tiny.commit: {'b' * 40} is not in repo" in p.stderr
    assert not (project / "results/checkouts/tiny/checkout.json").exists()
    run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "checkout",
            "--config",
            "config.yaml",
            "--repo",
            "tiny",
            "--out",
            "results/checkouts/tiny/checkout.json",
        ],
        cwd=project,
        check=True,
    )
    rec = json.loads((project / "results/checkouts/tiny/checkout.json").read_text())
    assert rec["failed"] and f"commit {'b' * 40} does not exist" in rec["error"]
    p = snakemake(project, "-j1", "results/status.json", check=False)
    assert p.returncode != 0 and f"field repos.tiny.commit: {'b' * 40} is not in repo" in p.stderr


def test_reruns_follow_content(project):
    targets = judged_targets(project)
    full = planned(project, *targets)
    assert full.get("transcript") == 8 and full.get("scored") == 8 and full.get("judged") == 8, str(full)
    snakemake(project, "-j2", *targets)
    assert planned(project, *targets) == {}  # a second run does nothing

    # a touched file without a content change reruns nothing
    (project / "config.yaml").touch()
    assert planned(project, *targets) == {}

    # a changed rubric of one scenario: only that scenario's judged targets
    edit_yaml(
        project / "scenarios" / "callers.yaml",
        lambda d: d["rubric"]["criteria"][0].update(question="Does it name the caller?"),
    )
    assert planned(project, *targets) == {"judged": 4}
    snakemake(project, "-j2", *targets)

    # a changed tool (args): only that tool's snapshot and trials
    edit_yaml(project / "config.yaml", lambda d: d["tools"]["echo"]["args"].append("--slow-seconds=0"))
    assert planned(project, *targets) == {"tools_snapshot": 1, "transcript": 4, "scored": 4, "judged": 4}
    snakemake(project, "-j2", *targets)

    # trials 2 -> 3: only the new trials
    edit_yaml(project / "config.yaml", lambda d: d.update(trials=3))
    new = planned(project, *judged_targets(project))
    assert new == {"transcript": 4, "scored": 4, "judged": 4}


def test_full_pipeline_report_and_lock_drift(project):
    # a server that dies at start: its trials are recorded as crashed, the others go on
    edit_yaml(project / "config.yaml", lambda d: d["tools"].update(broken=faulty_tool("crash_at_start")))
    # the run fails in its last job only (a server did not start: mcptrials.core.failures), after the report
    p = snakemake(project, "-j2", failed_stages_ok=True)
    assert p.returncode != 0 and "mcptrials: snapshot broken/tiny failed:" in p.stdout + p.stderr
    report = project / "results/report/index.html"
    assert report.exists() and (project / "results/report/report.md").exists()
    crashed = list((project / "results/runs/reference/loop/broken").rglob("transcript.json"))
    assert len(crashed) == 4
    assert {json.loads(t.read_text())["outcome"] for t in crashed} == {"server_crashed"}
    assert len(list((project / "results/runs/reference/loop/echo").rglob("judged.json"))) == 4
    import csv

    rows = list(csv.DictReader(open(project / "results/aggregate/trials.csv")))
    broken = [r for r in rows if r["tool"] == "broken"]
    assert len(broken) == 4 and all(float(r["fairness"]) == 0 for r in broken)
    agreement = json.loads((project / "results/heldout/agreement.json").read_text())
    assert agreement["n"] >= 6
    assert set(planned(project)) <= {"status", "all"}  # only the last job, which fails while broken does

    # one byte of a locked transcript: the lock check fails, the report is refused and stays stale
    locked = sorted((project / "locked" / "transcripts").glob("*.json"))[0]
    data = locked.read_bytes()
    locked.write_bytes(data[:-2] + (b" " if data[-2:-1] != b" " else b"\t") + data[-1:])
    p = snakemake(project, "-j2", check=False)
    assert p.returncode != 0
    log = (project / "results/logs/verify_lock.log").read_text()
    assert str(locked.relative_to(project / "locked")) in log and "expected" in log and "mcptrials lock" in log
    assert "report" in planned(project)


def test_index_step_runs_once_per_repo_and_reaches_every_trial(project):
    index = {"command": "sh", "args": ["-c", "ls -R {repo} > {index}/files.txt"]}
    edit_yaml(project / "config.yaml", lambda d: d["tools"]["echo"].update(index=index))
    targets = [t for t in judged_targets(project) if "/echo/" in t]
    assert planned(project, *targets)["index"] == 1
    snakemake(project, "-j2", *targets)
    listing = (project / "results/index/echo/tiny/files.txt").read_text()
    assert "util.py" in listing
    metas = list((project / "results/runs/reference/loop/echo").rglob("run_meta.json"))
    assert len(metas) == 4 and all(json.loads(p.read_text())["index_files"] == 2 for p in metas)


def test_missing_api_key_stops_before_any_job(project):
    edit_yaml(
        project / "config.yaml",
        lambda d: d["models"].update(
            claude={"provider": "anthropic", "model": "claude-sonnet-4-6", "api_key_env": "MCPTRIALS_NO_SUCH_KEY"}
        ),
    )
    assert planned(project).get("transcript") == 16  # a dry run plans without the key
    p = snakemake(project, "-j2", check=False)
    assert p.returncode != 0
    assert "field models.claude" in p.stderr and "$MCPTRIALS_NO_SUCH_KEY" in p.stderr
    assert not (project / "results" / "checkouts").exists()


def test_an_invalid_regex_stops_the_plan_before_any_job(project):
    """`snakemake -n` (and so a real run) loads the scenarios as `validate` does: a regex check
    that does not compile stops it, naming the scenario file, the field and the fix, before
    any trial is paid for (issue 32: it used to fail only the `scored` jobs, after the trials)."""
    from matrix_helpers import LIBRARY_ENV
    from workflow_helpers import run_snakemake, workflow_env

    edit_yaml(
        project / "scenarios" / "callers.yaml",
        lambda d: d["steps"][0]["checks"].append({"type": "regex", "value": "round_money("}),
    )
    p = run_snakemake(project, "-n", check=False, env={**workflow_env(project), **LIBRARY_ENV})
    assert p.returncode != 0
    assert (
        "scenarios/callers.yaml: field steps.0.checks.2.value: 'round_money(' is not a valid regular expression: "
        "missing ), unterminated subpattern at position 11"
    ) in p.stderr, p.stderr[-3000:]
    assert not (project / "results").exists()
