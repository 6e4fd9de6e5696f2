"""Issue 25's done-when in small: an imported vertical (tests/vertical_fixture.py, our own
files in the reference bench's layout), run by the workflow with the recorded model and the
recorded judge, gives the citation composition per model and tool, strict beside lenient, by
form and the ungrounded decomposed, in the report's main page, summary.json and
compare-sense-bench --vertical's board.md and composition.csv, with the same figures.

The sense arm's answers are rewritten here so the two arms write different forms:
baseline (the fixture's ANSWER): a JSON member {"file": "src/util.py", "line": 1} and
src/app.py:5 in prose; sense (SENSE_ANSWER below): a path:line, a path:range, a basename
range, a line past the end of its file and a file the commit lacks. The repository is
matrix_helpers.FILES: src/util.py (3 lines, `def helper` at 1), src/app.py (5 lines, `def main`
at 4, `return helper(2)` at 5)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest

from matrix_helpers import make_repo
from mcptrials.cli import main
from vertical_fixture import claude_stream, jsonl, thin_stream, write_vertical

pytestmark = pytest.mark.slow  # the real workflow on the small vertical

SENSE_ANSWER = (
    "`helper` is defined at src/util.py:1. `main` calls it at src/app.py:4-5. `helper` is util.py:1-3 "
    "as a whole.\n\n`main` is also at src/app.py:1. It is not at src/util.py:40, and there is no src/nope.py:2."
)
# per sense trial, six citations (each once: the prose answer is graded whole in both steps):
#   src/util.py:1    path:line   grounded, verified (lenient and strict: `def helper`)
#   src/app.py:4-5   path:range  grounded, verified, verified (`def main` .. its body)
#   util.py:1-3      basename    grounded (the one util.py), verified, verified
#   src/app.py:1     path:line   grounded, verified leniently (`main` 3 lines below), strict mismatch (line 1
#                                neither defines nor names `main`; in its own paragraph, else `helper`, named
#                                beside it and imported at line 1, would leave it undetermined)
#   src/util.py:40   path:line   past the end of the file (3 lines)
#   src/nope.py:2    path:line   no such file at the commit


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from workflow_helpers import copy_workflow, workflow_env

    tmp = tmp_path_factory.mktemp("composition")
    commit = make_repo(tmp / "repo")
    bench = write_vertical(tmp / "src", commit, str(tmp / "repo"))
    res = bench / "verticals" / "mini" / "results"
    for n in (1, 2):
        (res / "claude-x-1" / "sense" / "tiny" / f"run-{n}" / "transcript.json").write_text(
            jsonl(claude_stream(SENSE_ANSWER, mcp=True))
        )
    (res / "gpt-z" / "sense" / "tiny" / "run-1" / "transcript.json").write_text(jsonl(thin_stream(SENSE_ANSWER)))
    out = tmp / "out"
    assert main(["import", "sense-bench", str(bench), "--vertical", "mini", "--out", str(out)]) == 0
    wd = tmp / "run"
    wd.mkdir()
    copy_workflow(wd)
    # the library under test where PYTHONPATH names it (a checkout beside the venv's own)
    given = os.environ.get("PYTHONPATH")
    env = {
        **workflow_env(wd),
        **({"PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in given.split(os.pathsep))} if given else {}),
    }
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(out / "config.yaml"), "-j2", "--scheduler", "greedy"]
    r = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-4000:]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "compare-sense-bench",
            "--vertical",
            "mini",
            "--config",
            str(out / "config.yaml"),
            "--bench",
            str(bench),
        ],
        cwd=wd,
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert "composition.csv (4 model x tool rows)" in r.stderr
    return wd / "results"


def test_summary_json_pools_each_model_and_tool(run):
    comp = {
        (c["model"], c["tool"]): c
        for c in json.loads((run / "aggregate/summary.json").read_text())["citation_composition"]
    }
    assert set(comp) == {(m, t) for m in ("claude-x-1@claude-code", "gpt-z@codex") for t in ("baseline", "sense")}
    base, sense = comp[("claude-x-1@claude-code", "baseline")], comp[("claude-x-1@claude-code", "sense")]
    # baseline: two trials, each the JSON member and the prose path:line, both grounded
    assert (base["n_trials"], base["n_not_checked"], base["n_citations"]) == (2, 0, 4)
    assert {f: v["n"] for f, v in base["by_form"].items()} == {"json-fields": 2, "path:line": 2}
    assert base["by_form"]["json-fields"]["share"] == 0.5 and base["grounded_rate"] == 1.0
    # sense: two trials of six citations each (module docstring)
    assert (sense["n_trials"], sense["n_not_checked"], sense["n_citations"]) == (2, 0, 12)
    assert sense["grounded_rate"] == pytest.approx(8 / 12) and sense["strict_grounded_rate"] == pytest.approx(6 / 12)
    assert sense["verified_rate"] == 1.0 and sense["strict_verified_rate"] == pytest.approx(6 / 8)
    assert sense["strict_undetermined_rate"] == 0.0  # the one wrong line has positive evidence
    assert {k: v["n"] for k, v in sense["ungrounded"].items()} == {
        "basename": 0,
        "past_eof": 2,
        "no_such_file": 2,
        "symbol_not_defined": 0,
        "ambiguous": 0,
    }
    assert sense["ungrounded"]["past_eof"]["share"] == pytest.approx(2 / 12)
    forms = sense["by_form"]
    assert {f: v["n"] for f, v in forms.items()} == {"path:line": 8, "path:range": 2, "basename": 2}
    line = forms["path:line"]
    assert (
        line["share"],
        line["grounded_rate"],
        line["strict_grounded_rate"],
        line["verified_rate"],
        line["strict_verified_rate"],
    ) == pytest.approx((8 / 12, 4 / 8, 2 / 8, 1.0, 2 / 4))
    for f in ("path:range", "basename"):
        assert forms[f]["share"] == pytest.approx(2 / 12)
        assert (
            forms[f]["grounded_rate"],
            forms[f]["strict_grounded_rate"],
            forms[f]["verified_rate"],
            forms[f]["strict_verified_rate"],
        ) == (1.0, 1.0, 1.0, 1.0)
    # gpt-z's sense run-2 is void (valid: false): one trial, the same answer
    g = comp[("gpt-z@codex", "sense")]
    assert (g["n_trials"], g["n_citations"], g["strict_verified_rate"]) == (1, 6, 0.75)


SENSE_ROW = "| sense | 2 | 0 | 12 | 0.667 | 0.500 | 1.000 | 0.750 | 0.000 | 0 (0.000) | 2 (0.167) | 2 (0.167) | 0 (0.000) | 0 (0.000) |"


def test_the_reports_main_page_has_the_tables(run):
    md = (run / "report/report.md").read_text()
    sec = md.split("## Citations: strict beside lenient, by form")[1].split("\n## ")[0]
    assert sec.count("citations per tool") == 2  # one table pair per model
    claude = sec.split("citations per tool")[1]
    assert (
        "| tool | trials | not checked | citations | grounded (lenient) | grounded (strict) | verified (lenient) | "
        "verified (strict) | undetermined (strict) | ungrounded: basename | ungrounded: past eof | ungrounded: no such file | "
        "ungrounded: symbol not defined | ungrounded: ambiguous |"
    ) in claude
    assert "| baseline | 2 | 0 | 4 | 1.000 | 1.000 | " in claude and SENSE_ROW in claude
    # by form, both arms side by side (baseline's six columns, then sense's); forms in FORM_ORDER
    assert (
        "| form | baseline: share | baseline: grounded (lenient) | baseline: grounded (strict) | "
        "baseline: verified (lenient) | baseline: verified (strict) | baseline: undetermined (strict) | sense: share |"
    ) in claude
    rows = [x for x in claude.splitlines() if x.startswith(("| path:", "| basename", "| json-fields"))]
    assert [x.split(" | ")[0] for x in rows] == ["| path:line", "| path:range", "| basename", "| json-fields"]
    assert rows[0].startswith("| path:line | 0.500 (n=2) | 1.000 | ")
    assert rows[0].endswith("| 0.667 (n=8) | 0.500 | 0.250 | 1.000 | 0.500 | 0.000 |")
    assert rows[1] == "| path:range | – | – | – | – | – | – | 0.167 (n=2) | 1.000 | 1.000 | 1.000 | 1.000 | 0.000 |"
    assert rows[3].startswith("| json-fields | 0.500 (n=2) | 1.000 | ") and rows[3].endswith(
        "| – | – | – | – | – | – |"
    )
    html = (run / "report/index.html").read_text()
    assert 'id="citation-composition"' in html and html.count("citation-forms-table") >= 2


def test_the_board_carries_the_same_composition(run):
    summary = {
        (c["model"], c["tool"]): c
        for c in json.loads((run / "aggregate/summary.json").read_text())["citation_composition"]
    }
    rows = list(csv.DictReader((run / "sense-board/composition.csv").open()))
    allrows = {(r["model"], r["tool"]): r for r in rows if r["form"] == "all"}
    assert set(allrows) == set(summary)
    s = allrows[("claude-x-1@claude-code", "sense")]
    assert (s["trials"], s["not_checked"], s["n"], s["ungrounded_past_eof"], s["ungrounded_no_such_file"]) == (
        "2",
        "0",
        "12",
        "2",
        "2",
    )
    assert (
        float(s["grounded"]),
        float(s["grounded_strict"]),
        float(s["verified"]),
        float(s["verified_strict"]),
    ) == pytest.approx((8 / 12, 0.5, 1.0, 0.75))
    forms = {r["form"]: r for r in rows if (r["model"], r["tool"]) == ("claude-x-1@claude-code", "sense")}
    assert set(forms) == {"all", "path:line", "path:range", "basename"}
    assert (
        float(forms["path:line"]["share"]) == pytest.approx(8 / 12) and forms["path:line"]["ungrounded_past_eof"] == ""
    )
    assert float(forms["path:line"]["grounded_strict"]) == 0.25 and float(forms["path:line"]["verified_strict"]) == 0.5
    assert float(s["undetermined_strict"]) == 0.0 and float(forms["path:line"]["undetermined_strict"]) == 0.0
    board = (run / "sense-board/board.md").read_text()
    sec = board.split("## Our citations per model and tool")[1]
    claude = sec.split("### claude-x-1@claude-code")[1].split("### ")[0]
    assert SENSE_ROW in claude
    assert "| sense | path:line | 0.667 (8) | 0.500 | 0.250 | 1.000 | 0.500 | 0.000 |" in claude
    assert (
        claude.index("| sense | path:line") < claude.index("| sense | path:range") < claude.index("| sense | basename")
    )
    assert "### gpt-z@codex" in sec
