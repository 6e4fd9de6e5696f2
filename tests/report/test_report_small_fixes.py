"""The smaller report fixes of issue 33: an all-missing scenario's table has as many cells in
each row as in its header, the headline says pass@1 once with one trial, the power line counts
the scenarios that had data, a missing trial's page shows no grades, and "What could not run"
points to files that exist after the run."""

import json
import re


import runs_fixture as fx

ALL_S3_MISSING = {
    ("reference", tool, "s3", trial): ("not_run", "checkout failed: unreachable")
    for tool in fx.TOOLS
    for trial in (1, 2)
}


def report_of(tmp, trials=2, missing=None, failed_checkout=False):
    cfg, runs = fx.build(
        tmp, models=("reference",), trials=trials, missing={k: v for k, v in (missing or {}).items() if k[3] <= trials}
    )
    if failed_checkout:
        d = tmp / "results" / "checkouts" / "tiny"
        d.mkdir(parents=True)
        (d / "checkout.json").write_text(
            json.dumps(
                {"stage": "checkout", "repo": "tiny", "failed": True, "error": "repository not reachable", "attempt": 1}
            )
        )
    agg, out = tmp / "aggregate", tmp / "report"
    fx.aggregate(cfg, runs, agg)
    assert fx.report(cfg, runs, agg, out, tmp / "heldout" / "agreement.json") == 0
    return json.loads((agg / "summary.json").read_text()), out


def md_table(md: str, caption: str) -> list[list[str]]:
    """The rows (header first) of the Markdown table under a caption, cells split on unescaped |."""
    lines = md.splitlines()
    i = lines.index(caption) + 2
    rows = []
    while i < len(lines) and lines[i].startswith("|"):
        if not lines[i].startswith("|---"):
            rows.append([c.strip() for c in re.split(r"(?<!\\)\|", lines[i])[1:-1]])
        i += 1
    return rows


def test_an_all_missing_scenario_has_as_many_cells_as_headers(tmp_path):
    summary, out = report_of(tmp_path, missing=ALL_S3_MISSING)
    rows = md_table((out / "report.md").read_text(), "model reference, scenario s3")
    assert len(rows) == 3  # header, baseline, git
    assert {len(r) for r in rows} == {len(rows[0])}, [len(r) for r in rows]
    assert rows[0][-2:] == ["trial 1", "trial 2"]
    assert rows[1][-1].startswith("[#2 missing")


def test_one_trial_says_pass_at_1_once(tmp_path):
    summary, out = report_of(tmp_path, trials=1)
    rows = md_table(
        (out / "report.md").read_text(),
        next(line for line in (out / "report.md").read_text().splitlines() if line.startswith("model reference: ")),
    )
    header = rows[0]
    assert header.count("pass@1") == 1 and not any(h.startswith("pass^") for h in header), header
    assert {len(r) for r in rows} == {len(header)}


def test_the_power_line_counts_the_scenarios_with_data(tmp_path):
    summary, out = report_of(tmp_path, missing=ALL_S3_MISSING)
    power = summary["power"][0]
    assert power["n_scenarios"] == 2, power  # s3 has no trial that counts
    assert power["text"].startswith("with 2 scenario(s) with data (of 3)"), power["text"]
    assert "with 3 scenario(s)" not in (out / "report.md").read_text()


def test_a_missing_trials_page_says_why_and_shows_no_grades(tmp_path):
    summary, out = report_of(tmp_path, missing=ALL_S3_MISSING)
    page = (out / "trials/reference/git/s3/1.html").read_text()
    assert "MISSING" in page and "not_run: checkout failed" in page
    assert "was not graded" in page
    assert "exact answer 8 not found" not in page  # the scored record's failures
    assert "Grader evidence" not in page and "map_quality" not in page and "judge: step quality" not in page
    graded = (out / "trials/reference/git/s1/1.html").read_text()
    assert "Grader evidence" in graded and "map_quality" in graded  # a trial that counts keeps them


def test_what_could_not_run_points_to_files_that_exist(tmp_path):
    summary, out = report_of(tmp_path, failed_checkout=True)
    md = (out / "report.md").read_text()
    assert "What could not run" in md
    assert "results/status.json" not in md  # the failed status job's output: Snakemake deletes it
    assert "results/aggregate/summary.json" in md and "results/logs/status.log" in md
    assert summary["failed_stages"][0]["name"] == "tiny"
