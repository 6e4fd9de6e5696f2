"""The CI gate end to end: real runs of the real workflow (reference model and judge, the
fixture MCP server sandboxed), then `mcptrials compare` on their results folders.

- the same project run twice, in two folders: exit 0, no regression, tools/list unchanged;
- version 2 of the server broken (it dies at start, so every trial is server_crashed): exit 1
  whatever the margin, the finding did_not_start named first, the JUnit file fails that tool's
  testcase, the Markdown shows the tools/list diff (every tool removed, the server did not start);
- HEAD aggregated over a smaller scenario set: exit 2, and the reason names the scenario.

One repo, two scenarios, two trials, one tool: 4 trials per run.
"""

from __future__ import annotations

import copy
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from mcptrials.cli import main
from workflow_helpers import copy_workflow, run_snakemake

pytestmark = pytest.mark.slow

CALLERS = dict(copy.deepcopy(SCENARIO), title="Who calls the helper")
CALLERS["steps"][0]["prompt"] = "Which function calls `helper`? Cite file:line."


def edit_config(wd: Path, fn) -> None:
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    fn(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs of one project: base (server v1), again (v1 again), broken (v2 dies at start).
    The copies share the repository, so its commit is the same in all three."""
    root = tmp_path_factory.mktemp("gate")
    base = root / "base"
    base.mkdir()
    write_matrix(
        base,
        tools={"echo": faulty_tool("ok", version="1")},
        trials=2,
        scenarios={"find-helper": SCENARIO, "callers": CALLERS},
    )
    copy_workflow(base)
    again, broken = root / "again", root / "broken"
    for wd in (again, broken):
        shutil.copytree(base, wd, symlinks=True)
    edit_config(broken, lambda c: c["tools"].update(echo=faulty_tool("crash_at_start", version="2")))
    for wd in (base, again, broken):
        run_snakemake(wd, "-j2", failed_stages_ok=wd is broken)  # broken's server does not start
    return {"base": base, "again": again, "broken": broken}


def compare(tmp_path, base: Path, head: Path, *extra) -> tuple[int, str, str]:
    md, xml = tmp_path / "comment.md", tmp_path / "junit.xml"
    code = main(
        ["compare", str(base / "results"), str(head / "results"), "--markdown", str(md), "--junit", str(xml), *extra]
    )
    return code, md.read_text(), xml.read_text()


def test_the_same_run_twice_passes(runs, tmp_path, capsys):
    code, md, xml = compare(tmp_path, runs["base"], runs["again"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "no regression" in md and "non-inferior" in md and "tools/list unchanged" in out
    assert "one-sided test at alpha 0.05" in out and "90%" in out  # which test, said
    suite = ET.fromstring(xml).find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    assert suite.find("testcase").get("name") == "echo"
    # the reference agent is deterministic: every paired difference is exactly zero
    assert "Δ +0.000 [+0.000, +0.000]" in out


def test_a_broken_server_version_fails_the_gate(runs, tmp_path, capsys):
    code, md, xml = compare(tmp_path, runs["base"], runs["broken"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "1 regression(s)" in md and "❌ deterministic failure" in md
    assert "did_not_start: HEAD's server did not start" in md
    # the tools/list diff beside it: version 2 offers nothing, its server did not start
    assert "removed: big, echo, fail" in md and "HEAD: the server did not start" in md
    case = ET.fromstring(xml).find("testsuite/testcase")
    failure = case.find("failure")
    assert case.get("name") == "echo" and failure is not None
    assert failure.get("message").startswith("did_not_start: HEAD's server did not start")
    # every HEAD trial crashed: its fairness is 0, so Δ fairness is minus BASE's, with no spread
    summary = json.loads((runs["base"] / "results/aggregate/summary.json").read_text())
    base_fair = summary["tools"][0]["fairness"]
    assert base_fair > 0.05
    assert f"Δ {-base_fair:+.3f} [{-base_fair:+.3f}, {-base_fair:+.3f}]" in out
    # a server that does not start fails whatever the margin (issue 22: it passed as inconclusive)
    assert (
        main(
            [
                "compare",
                str(runs["base"] / "results"),
                str(runs["broken"] / "results"),
                "--margin",
                str(round(base_fair + 0.01, 3)),
                "--lenient",
            ]
        )
        == 1
    )


def test_mismatched_scenario_sets_are_refused(runs, tmp_path, capsys):
    # HEAD: the same records aggregated over one scenario only
    head = tmp_path / "head"
    shutil.copytree(runs["again"], head, symlinks=True, ignore=shutil.ignore_patterns("report"))
    edit_config(head, lambda c: c.update(scenarios="scenarios/find-helper.yaml"))
    assert (
        main(
            [
                "aggregate",
                "--config",
                str(head / "config.yaml"),
                "--runs",
                str(head / "results/runs"),
                "--out-dir",
                str(head / "results/aggregate"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    code, md, xml = compare(tmp_path, runs["base"], head)
    err = capsys.readouterr().err
    assert code == 2
    assert "refused" in err and "scenario sets differ" in err and "only in BASE: callers" in err
    assert "not compared" in md and "only in BASE: callers" in md
    suite = ET.fromstring(xml).find("testsuite")
    assert suite.get("errors") == "1" and suite.find("testcase").get("name") == "comparability"


TERSE = {"tools": {"echo": {"name": "say", "description": "Say the text back, word for word."}}}


def test_a_description_variant_is_compared_like_any_tool(tmp_path, capsys):
    """compare: [[echo, echo-terse]] with a variant (issue 16 part 2) in a real run: the pair in
    summary.json, comparisons.csv and the report; then `mcptrials compare` of the run with itself
    gates both tools and shows no tools/list change, while the variant's own tools.json differs."""
    write_matrix(
        tmp_path,
        tools={"echo": faulty_tool("ok", version="1"), "echo-terse": {"variant_of": "echo", "overrides": TERSE}},
        scenarios={"find-helper": SCENARIO, "callers": CALLERS},
        extra={"compare": [["echo-terse", "echo"]]},
    )
    copy_workflow(tmp_path)
    run_snakemake(tmp_path, "-j2")
    summary = json.loads((tmp_path / "results/aggregate/summary.json").read_text())
    (c,) = summary["comparisons"]
    assert (c["a"], c["b"], c["n_scenarios"], c["n_trials_a"], c["n_trials_b"]) == ("echo-terse", "echo", 2, 2, 2)
    # the reference agent searches with the built-in grep here, so the descriptions change nothing
    assert c["diff"] == 0 and c["verdict"] == "no practical difference"
    report_md = (tmp_path / "results/report/report.md").read_text()
    assert "echo-terse − echo" in report_md
    # the run's identity names the variant, its base and its overrides
    ident = summary["identity"]["tools"]
    assert ident["echo-terse"]["variant_of"] == "echo" and ident["echo"]["variant_of"] is None
    assert len(ident["echo-terse"]["overrides_sha256"]) == 1
    assert "description variant of echo" in report_md
    snaps = {
        t: json.loads((tmp_path / f"results/snapshots/{t}/tiny/tools.json").read_text()) for t in ("echo", "echo-terse")
    }
    assert snaps["echo"]["tools_sha256"] != snaps["echo-terse"]["tools_sha256"]
    code, md, xml = compare(tmp_path, tmp_path, tmp_path)
    assert code == 0
    suite = ET.fromstring(xml).find("testsuite")
    assert suite.get("tests") == "2" and {c.get("name") for c in suite.iter("testcase")} == {"echo", "echo-terse"}
