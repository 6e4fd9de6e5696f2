"""The share of citations verified, beside grounding: per cell and tool in the aggregate
tables, in the report's components table and on the trial page (tests/runs_fixture.py, with
one trial's verified rate changed by hand)."""

import csv
import json

import pytest


import runs_fixture as fx


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("verified")
    cfg, runs = fx.build(tmp)
    f = runs / "reference/loop/git/tiny/s1/1/scored.json"
    rec = json.loads(f.read_text())
    rec["citations"]["rates"]["verified_rate"] = 0.25  # 1 verified, 3 mismatch
    f.write_text(json.dumps(rec))
    agg, out = fx.aggregate_and_report(tmp, cfg, runs)
    return agg, out


def test_the_aggregate_tables_carry_the_verified_share(built):
    agg, _ = built
    rows = lambda name: list(csv.DictReader(open(agg / name)))  # noqa: E731
    tool = next(r for r in rows("tools.csv") if (r["model"], r["tool"]) == ("reference", "git"))
    # s1/1 0.25, four trials 1.0, the crashed s2/2 has no citations (none): (0.25 + 4) / 5
    assert float(tool["verified_rate"]) == pytest.approx(0.85)
    cell = next(r for r in rows("cells.csv") if (r["model"], r["tool"], r["scenario"]) == ("reference", "git", "s1"))
    assert float(cell["verified_rate"]) == pytest.approx(0.625)
    summary = json.loads((agg / "summary.json").read_text())
    assert any(t["tool"] == "git" and t["verified_rate"] == pytest.approx(0.85) for t in summary["tools"])


def test_the_report_shows_it_beside_grounding(built):
    _, out = built
    md = (out / "report.md").read_text()
    assert "| tool | judge quality | keyword coverage | citation grounding (n citations) | citations verified |" in md
    # model reference, tool git: quality and keywords with the crashed trial's zeros, grounding 0.750
    # over the five trials with citations, then citations verified 0.850; model sonnet keeps 1.000
    assert "| git | 0.583 | 0.833 | 0.750 (n=20) | 0.850 |" in md
    assert "| git | 0.583 | 0.833 | 0.750 (n=20) | 1.000 |" in md
    # the reference model has no cost: its efficiency says it measured time only; sonnet's both
    assert "| 0.496 (time only, no cost) |" in md and "| 0.413 | 3,100 |" in md
    page = (out / "trials/reference/git/s1/1.html").read_text()
    assert "1 unresolved; verified 0.250)" in page
