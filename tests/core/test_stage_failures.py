"""A repository that cannot be checked out, or a tool that does not install, is missing data:
the report still builds (issue 27 item 2).

One project, real workflow: repo `tiny` (a local repository) and repo `gone` (a file:// URL
of a path that does not exist yet), tools baseline and `broken` (a pip package that does not exist: its install
fails). The run grades tiny's baseline trials, lists gone's and broken's trials as missing with
their reason, opens its report with what could not run, and exits non-zero only after the
report is written. Making `gone` reachable (the same repository at that path) and running
again runs exactly its trials.
"""

from __future__ import annotations

import copy
import csv
import json
import shutil
import subprocess

import pytest
import yaml

from matrix_helpers import SCENARIO, write_matrix
from workflow_helpers import copy_workflow, run_snakemake, snakemake_cmd, stages_failed_only, workflow_env

pytestmark = pytest.mark.slow

ON_GONE = dict(copy.deepcopy(SCENARIO), repo="gone", title="Find the helper, elsewhere")
BROKEN = {"install": {"pip": ["mcptrials-no-such-package-for-tests==0.0.1"]}, "command": "nothing-here", "version": "1"}


def failed_only_at_status(wd, run) -> None:
    """The run's non-zero exit is its status job's, after the report, and no other job erred: an
    unrelated failure (a transcript job that crashed) would otherwise show up further down as a
    stale `not_run` trial with no hint of its cause."""
    assert run.returncode != 0
    logs = "\n".join(f"--- {f}\n{f.read_text()[-1500:]}" for f in (wd / "results" / "logs").rglob("*.log"))
    assert stages_failed_only(wd, run), f"a job other than status failed:\n{run.stderr[-4000:]}\n{logs[-4000:]}"


def trials(wd):
    return {(r["tool"], r["scenario"]): r for r in csv.DictReader(open(wd / "results/aggregate/trials.csv"))}


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    wd = tmp_path_factory.mktemp("stagefail")
    write_matrix(
        wd,
        tools={"baseline": {"transport": "none"}, "broken": BROKEN},
        scenarios={"find-helper": SCENARIO, "on-gone": ON_GONE},
    )
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    # a URL (not a local path, which `validate` and the run's start would refuse): only its
    # checkout job can find that it is not there
    cfg["repos"]["gone"] = {"url": f"file://{wd}/gone-repo", "commit": cfg["repos"]["tiny"]["commit"]}
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    copy_workflow(wd)
    run = run_snakemake(wd, "-j2", "--keep-going", check=False)
    return wd, run


def test_the_report_is_built_and_the_run_fails_after_it(failed_run):
    wd, run = failed_run
    failed_only_at_status(wd, run)
    assert (wd / "results/report/index.html").is_file() and not (wd / "results/status.json").exists()
    out = run.stdout + run.stderr
    assert "mcptrials: checkout gone failed:" in out and "mcptrials: install broken failed:" in out


def test_what_could_run_is_graded_and_the_rest_is_missing_with_its_reason(failed_run):
    wd, _ = failed_run
    t = trials(wd)
    ok = t[("baseline", "find-helper")]
    assert ok["missing"] == "False" and ok["outcome"] == "completed" and ok["fairness"] != ""
    assert t[("baseline", "on-gone")]["missing_reason"] == "not_run: checkout failed"
    assert t[("broken", "find-helper")]["missing_reason"] == "not_run: install failed"
    assert t[("broken", "on-gone")]["missing"] == "True"
    assert all(t[k]["fairness"] == "" for k in t if t[k]["missing"] == "True")  # never a zero
    summary = json.loads((wd / "results/aggregate/summary.json").read_text())
    assert {(f["stage"], f["name"]) for f in summary["failed_stages"]} == {("checkout", "gone"), ("install", "broken")}
    broken = next(r for r in summary["tools"] if r["tool"] == "broken")
    assert broken["verdict"] == "did not start" and broken["rank"] is None
    rec = json.loads((wd / "results/checkouts/gone/checkout.json").read_text())
    assert rec["failed"] and rec["stage"] == "checkout" and "gone-repo" in rec["error"]


def test_the_report_opens_with_what_could_not_run(failed_run):
    wd, _ = failed_run
    html = (wd / "results/report/index.html").read_text()
    assert html.index('id="failed-stages"') < html.index('id="headline"')
    table = html[html.index('id="failed-stages-table"') :]
    table = table[: table.index("</table>")]
    assert "gone" in table and "broken" in table and "make the repository reachable" in table
    assert "3 trial(s) could not run because of them" in html


def test_a_reachable_repository_then_runs_exactly_its_trials(failed_run):
    wd, _ = failed_run
    shutil.copytree(wd / "repo", wd / "gone-repo", symlinks=True)  # the same commit, now at the url
    plan = subprocess.run(snakemake_cmd(wd, "-n"), capture_output=True, text=True, env=workflow_env(wd))
    jobs = plan.stdout + plan.stderr
    assert "checkout" in jobs
    # what the failed stages held back is tried again (gone's trials; broken's, whose install is
    # retried too); the trials that ran, baseline on tiny, stay as they are
    planned = [ln for ln in jobs.splitlines() if "transcript.json" in ln and "output:" in ln]
    assert planned and all("/gone/" in ln or "/broken/" in ln for ln in planned), planned
    assert not [ln for ln in planned if "baseline/tiny" in ln]
    line = next(ln for ln in jobs.splitlines() if ln.startswith("mcptrials plan:"))
    assert f"{len(planned)} trial(s) still to run" in line, line  # the plan counts what the DAG runs
    run = run_snakemake(wd, "-j2", "--keep-going", check=False)
    failed_only_at_status(wd, run)  # broken still does not install
    t = trials(wd)
    assert t[("baseline", "on-gone")]["outcome"] == "completed" and t[("baseline", "on-gone")]["missing"] == "False"
    assert t[("broken", "on-gone")]["missing_reason"] == "not_run: install failed"
