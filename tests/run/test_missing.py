"""Infrastructure failures are missing data, not zeros (issue 15 item 1).

- mcptrials.core.outcomes: the two kinds of outcome, and the attempts record a missing trial keeps;
- the aggregate on the hand-made runs (tests/runs_fixture.py) with a missing trial: empty scores,
  left out of every mean, pass@k and interval (hand-computed), counted per cell and in the summary;
- the report says so beside the interval, and the trial page says MISSING;
- the real workflow with a model whose API always answers 500 (the anthropic SDK against
  tests/fakes/messages_api.py): its trials are missing, the next invocation plans exactly them
  (and what reads them), they complete once the API answers, and after retries.max_attempts
  failures nothing more is planned.
"""

from __future__ import annotations

import csv
import json
import re

import pytest
import yaml

import runs_fixture as fx
from runs_fixture import find_row as find
from fakes.messages_api import error, reply, text
from matrix_helpers import write_matrix
from mcptrials.core import outcomes
from mcptrials.core.outcomes import (
    ATTRIBUTABLE,
    INFRASTRUCTURE,
    OUTCOMES,
    is_missing,
    missing_reason,
    next_attempt,
    record_attempt,
    retry_attempts,
)
from mcptrials.core.paths import SCHEMA_DIR
from workflow_helpers import MessagesServer, copy_workflow, run_snakemake

# --- the outcome kinds ------------------------------------------------------------------


def test_outcome_kinds_are_defined_once_and_match_the_transcript_schema():
    assert set(ATTRIBUTABLE) == {"completed", "max_turns", "budget_exceeded", "timed_out", "server_crashed"}
    assert set(INFRASTRUCTURE) == {"api_failed", "harness_failed", "not_run"}
    assert not set(ATTRIBUTABLE) & set(INFRASTRUCTURE)
    schema = yaml.safe_load((SCHEMA_DIR / "transcript.schema.yaml").read_text())
    assert set(schema["properties"]["outcome"]["enum"]) == set(OUTCOMES)
    assert [o for o in OUTCOMES if is_missing(o)] == list(INFRASTRUCTURE)
    assert missing_reason("not_run", "budget") == "not_run: budget"
    assert missing_reason("not_run", "budget: spent $0.0120 of $0.0100") == "not_run: budget"  # grouped by reason
    assert missing_reason("api_failed", "500 from the API") == "api_failed"
    assert missing_reason("server_crashed", "died") is None


def _trial(tmp_path, outcome, detail=None, d="results/runs/m/loop/t/tiny/s/1"):
    trial = tmp_path / d
    trial.mkdir(parents=True, exist_ok=True)
    t = {"outcome": outcome, "outcome_detail": detail}
    (trial / "transcript.json").write_text(json.dumps(t))
    (trial / "run_meta.json").write_text(json.dumps({"n": outcome}))
    return trial, t


def test_attempts_are_kept_and_numbered_until_max_attempts(tmp_path):
    runs = tmp_path / "results" / "runs"
    # an attributable outcome keeps no attempts record at all
    trial, t = _trial(tmp_path, "server_crashed")
    assert record_attempt(trial, t, 3) is None and not (trial / "attempts").exists()
    assert retry_attempts(runs, 3) == {}
    key = ("m", "loop", "t", "tiny", "s", "1")
    # attempt 1 fails: kept under attempts/1, next attempt 2
    trial, t = _trial(tmp_path, "api_failed", "HTTP 500")
    st = record_attempt(trial, t, 3)
    assert (st["attempt"], st["runs"], st["failed"], st["missing"]) == (1, 1, 1, True)
    assert json.loads((trial / "attempts/1/transcript.json").read_text())["outcome"] == "api_failed"
    assert (trial / "attempts/1/run_meta.json").is_file()
    retried = []
    assert retry_attempts(runs, 3, retried) == {key: 2} and retried == [key]
    # attempts 2 and 3 fail: after the third, the trial stays missing and its number stays 3
    for n in (2, 3):
        trial, t = _trial(tmp_path, "harness_failed" if n == 2 else "api_failed")
        st = record_attempt(trial, t, 3)
        assert (st["attempt"], st["failed"]) == (n, n)
    assert sorted(p.name for p in (trial / "attempts").iterdir()) == ["1", "2", "3", "attempts.json"]
    retried = []
    assert retry_attempts(runs, 3, retried) == {key: 3} and retried == []  # = the last run's: nothing to rerun
    assert retry_attempts(runs, 4) == {key: 4}  # a larger max_attempts: one more
    assert [h["outcome"] for h in st["history"]] == ["api_failed", "harness_failed", "api_failed"]


def test_a_trial_that_completes_keeps_its_attempt_number(tmp_path):
    runs = tmp_path / "results" / "runs"
    trial, t = _trial(tmp_path, "api_failed")
    record_attempt(trial, t, 3)
    trial, t = _trial(tmp_path, "completed")
    st = record_attempt(trial, t, 3)
    assert (st["attempt"], st["runs"], st["missing"]) == (2, 2, False)
    assert sorted(p.name for p in (trial / "attempts").iterdir()) == ["1", "attempts.json"]  # the good one is the trial
    assert retry_attempts(runs, 3) == {("m", "loop", "t", "tiny", "s", "1"): 2}  # the params it ran with
    # a later rerun of it (another reason) that completes changes nothing; one that fails is retried
    trial, t = _trial(tmp_path, "completed")
    assert record_attempt(trial, t, 3)["attempt"] == 2
    trial, t = _trial(tmp_path, "api_failed")
    st = record_attempt(trial, t, 3)
    assert (st["attempt"], st["failed"], st["runs"]) == (2, 2, 4)
    assert next_attempt(st, 3) == 3


def test_not_run_uses_up_no_attempt(tmp_path):
    trial, t = _trial(tmp_path, "not_run", "budget")
    for n in range(1, 6):
        st = record_attempt(trial, t, 2)
        assert (st["attempt"], st["failed"]) == (n, 0)
        assert next_attempt(st, 2) == n + 1  # always picked up by a later run
    assert (trial / "attempts/5/transcript.json").is_file()


def test_a_recorded_models_missing_trial_is_not_retried(tmp_path):
    # converting the same recording again gives the same result; a new recording changes its params
    trial, t = _trial(tmp_path, "harness_failed", "recording not found")
    st = record_attempt(trial, t, 3, retriable=False)
    assert st["missing"] and next_attempt(st, 3) == 1
    assert retry_attempts(tmp_path / "results" / "runs", 3) == {}


# --- the aggregate: hand-computed, missing trials left out -----------------------------


# a completed git trial of s1 or s2 (reference model): keyword 1, quality 0.7, grounding 0.75,
# efficiency 0.5 * 0.5 + 0.5 * (0.5 + log2(10 / 20) / 6) = 5/12 (no cost; twice the baseline's time)
GIT = 0.10 * 1.0 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 * 5 / 12
MISSING = {
    ("reference", "git", "s1", 2): ("api_failed", "Error code: 500"),
    ("reference", "baseline", "s3", 2): ("not_run", "budget"),
}


@pytest.fixture(scope="module")
def agg(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("missing")
    cfg, runs = fx.build(tmp, missing=MISSING)
    out = tmp / "aggregate"
    fx.aggregate(cfg, runs, out)
    read = lambda name: list(csv.DictReader(open(out / name)))  # noqa: E731
    return (
        tmp,
        cfg,
        runs,
        out,
        read("trials.csv"),
        read("cells.csv"),
        read("tools.csv"),
        json.loads((out / "summary.json").read_text()),
    )


def test_a_missing_trial_has_empty_scores_never_zero(agg):
    trials = agg[4]
    r = find(trials, model="reference", tool="git", scenario="s1", trial=2)
    assert r["outcome"] == "api_failed" and r["missing"] == "True" and r["missing_reason"] == "api_failed"
    for f in (
        "fairness",
        "passed",
        "quality",
        "keyword_coverage",
        "citation_grounding",
        "efficiency",
        "adoption",
        "tool_fluency",
        "discoverability",
    ):
        assert r[f] == "", (f, r[f])
    b = find(trials, model="reference", tool="baseline", scenario="s3", trial=2)
    assert b["missing_reason"] == "not_run: budget" and b["fairness"] == ""
    # the others are scored as before; an attributable failure still scores 0 and is not missing
    ok = find(trials, model="reference", tool="git", scenario="s1", trial=1)
    assert ok["missing"] == "False" and ok["missing_reason"] == "" and float(ok["fairness"]) == pytest.approx(GIT)
    crashed = find(trials, model="reference", tool="git", scenario="s2", trial=2)
    assert crashed["missing"] == "False" and float(crashed["fairness"]) == 0.0 and crashed["passed"] == "False"


def test_cells_count_used_and_missing_trials(agg):
    cells = agg[5]
    c = find(cells, model="reference", tool="git", scenario="s1")
    # one trial left: 0.68083, passed
    assert (c["n"], c["n_missing"], c["missing_reasons"], c["passes"]) == ("1", "1", "api_failed=1", "1")
    assert float(c["fairness"]) == pytest.approx(GIT)
    assert float(c["pass_at_1"]) == 1.0 and c["k"] == "1" and c["fairness_lo"] == ""  # one trial: no interval
    b = find(cells, model="reference", tool="baseline", scenario="s3")
    # trial 1 (quality 0.5, efficiency 0.5: 0.5) only; the not-run trial 2 (quality 0.3 when it ran) is not averaged
    assert (b["n"], b["n_missing"], b["missing_reasons"]) == ("1", "1", "not_run: budget=1")
    assert float(b["fairness"]) == pytest.approx(0.5)
    full = find(cells, model="sonnet", tool="git", scenario="s1")
    assert (full["n"], full["n_missing"], full["missing_reasons"]) == ("2", "0", "")


def test_tools_leave_missing_trials_out_of_means_pass_at_k_and_differences(agg):
    tools = agg[6]
    t = find(tools, model="reference", tool="git")
    # used: s1 0.68083; s2 0.68083, 0 (crashed); s3 0.6975 twice (efficiency 0.5: as fast as the
    # baseline's one completed s3 trial, 10 s)
    assert (t["n_trials"], t["n_missing"], t["missing_reasons"]) == ("5", "1", "api_failed=1")
    assert float(t["fairness"]) == pytest.approx((GIT + GIT + 0 + 2 * 0.6975) / 5)  # 0.551
    assert float(t["pass_at_1"]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert t["k"] == "1"  # s1 has one trial left
    # paired over scenario means: git s1 0.68083, s2 0.34042, s3 0.6975; baseline 0.5 everywhere
    assert float(t["diff"]) == pytest.approx((GIT - 0.5 + GIT / 2 - 0.5 + 0.6975 - 0.5) / 3)
    b = find(tools, model="reference", tool="baseline")
    assert (b["n_trials"], b["n_missing"]) == ("5", "1")
    assert float(b["fairness"]) == pytest.approx(0.5)  # was (5 * 0.5 + 0.39) / 6 with the trial scored
    assert find(tools, model="sonnet", tool="git")["n_missing"] == "0"


def test_summary_carries_the_counts(agg):
    s = agg[7]
    assert s["missing"]["n_missing"] == 2 and s["missing"]["n_used"] == 22 and s["missing"]["n_trials"] == 24
    assert s["missing"]["by_reason"] == {"not_run: budget": 1, "api_failed": 1}
    assert {(x["tool"], x["scenario"], x["trial"]) for x in s["missing"]["trials"]} == {
        ("git", "s1", 2),
        ("baseline", "s3", 2),
    }
    assert any("2 of 24 trial(s) are missing" in n for n in s["notes"])
    mh = {(c["tool"], c["model"]): c for c in s["model_host"]["cells"]}
    assert (mh["git", "reference"]["n_trials"], mh["git", "reference"]["n_missing"]) == (5, 1)
    assert mh["git", "reference"]["pass_at_1"] == pytest.approx(2 / 5)  # s1 #1, s2 #1 of the 5 used
    err = {(e["model"], e["tool"]): e for e in s["errors"]}
    assert err["reference", "git"]["n_missing"] == 1 and err["reference", "git"]["outcomes"]["api_failed"] == 1
    sc = {x["scenario"]: x for x in s["scenarios"]}
    assert (sc["s1"]["trials"], sc["s1"]["n_missing"]) == (7, 1)


def test_the_report_says_what_each_cell_lost(agg):
    tmp, cfg, runs, out = agg[:4]
    rep = tmp / "report"
    assert fx.report(cfg, runs, out, rep, tmp / "none.json") == 0
    md = (rep / "report.md").read_text()
    # headline (tool rows) and the per-scenario cell beside their intervals
    assert re.search(r"\| git \| 0\.551 \[[^]]+\] \(n=5 of 6, 1 missing: api_failed\) \|", md), md[:3000]
    assert "0.681 (n=1 of 2, 1 missing: api_failed)" in md
    assert "0.500 (n=1 of 2, 1 missing: not_run: budget)" in md
    assert "#2 missing (api_failed)" in md
    assert "5 (1 failed; 1 missing)" in md
    assert "Note: 2 of 24 trial(s) are missing" in md
    page = (rep / "trials/reference/git/s1/2.html").read_text()
    assert "MISSING: api_failed" in page and "missing: not scored" in page


# --- the real workflow: an API that always answers 500 ------------------------------------

ANSWER = "`helper` is defined at `src/util.py:1`; it returns x * 2."


def _project(wd, url, max_attempts=None):
    extra = {
        "models": {
            "reference": {"provider": "reference"},
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": url, "max_retries": 0},
        }
    }
    if max_attempts:
        extra["retries"] = {"max_attempts": max_attempts}
    write_matrix(wd, trials=2, extra=extra)
    copy_workflow(wd)


def planned(wd) -> dict[str, set[str]]:
    """rule -> the first output of each job a dry run plans ({} when nothing is to be done)."""
    out = run_snakemake(wd, "-n").stdout
    jobs, rule = {}, None
    for line in out.splitlines():
        m = re.fullmatch(r"(local)?rule (\w+):", line.strip())
        if m:
            rule = m.group(2)
        elif rule and line.strip().startswith("output:"):
            jobs.setdefault(rule, set()).add(line.split("output:")[1].split(",")[0].strip())
            rule = None
    return jobs


CLAUDE = {f"results/runs/claude/loop/baseline/tiny/find-helper/{k}" for k in (1, 2)}


def _swap(api, folder, script, port):
    api.stop()
    return MessagesServer(folder, script, "--exhausted", "repeat", "--port", port)


@pytest.mark.slow
def test_api_failures_are_missing_retried_and_then_complete(tmp_path):
    api = MessagesServer(tmp_path / "api1", [error(500)], "--exhausted", "repeat")
    port = api.url.rsplit(":", 1)[1]
    try:
        wd = tmp_path / "p"
        wd.mkdir()
        _project(wd, api.url)
        run_snakemake(wd, "-j", "2")
        trials = list(csv.DictReader(open(wd / "results/aggregate/trials.csv")))
        claude = [r for r in trials if r["model"] == "claude"]
        assert len(claude) == 2 and {r["outcome"] for r in claude} == {"api_failed"}
        for r in claude:
            assert r["missing"] == "True" and r["missing_reason"] == "api_failed"
            assert r["fairness"] == "" and r["passed"] == "" and r["quality"] == ""  # not 0
        assert {r["missing"] for r in trials if r["model"] == "reference"} == {"False"}
        md = (wd / "results/report/report.md").read_text()
        assert "n=0 of 2, 2 missing: api_failed" in md
        for d in CLAUDE:
            assert json.loads((wd / d / "attempts/1/transcript.json").read_text())["outcome"] == "api_failed"

        # the next invocation plans exactly those trials and what reads them
        jobs = planned(wd)
        assert jobs.get("transcript") == {f"{d}/transcript.json" for d in CLAUDE}
        assert jobs.get("scored") == {f"{d}/scored.json" for d in CLAUDE}
        assert jobs.get("judged") == {f"{d}/judged.json" for d in CLAUDE}
        assert set(jobs) == {"transcript", "scored", "judged", "aggregate", "report", "status"}, jobs
        assert "mcptrials retry: 2 missing trial(s)" in run_snakemake(wd, "-n", "-q").stderr

        # the API answers now (same address): the retried trials complete and count
        api = _swap(api, tmp_path / "api2", [reply(text(ANSWER))], port)
        run_snakemake(wd, "-j", "2")
        trials = list(csv.DictReader(open(wd / "results/aggregate/trials.csv")))
        claude = [r for r in trials if r["model"] == "claude"]
        assert {r["outcome"] for r in claude} == {"completed"} and {r["missing"] for r in claude} == {"False"}
        assert {r["attempts"] for r in claude} == {"2"}
        assert all(r["fairness"] != "" for r in claude)
        for d in CLAUDE:  # the failed attempt is kept for the record
            assert (wd / d / "attempts/1/transcript.json").is_file() and not (wd / d / "attempts/2").exists()
        assert planned(wd) == {}
    finally:
        api.stop()


@pytest.mark.slow
def test_after_max_attempts_nothing_more_is_planned(tmp_path):
    api = MessagesServer(tmp_path / "api", [error(500)], "--exhausted", "repeat")
    try:
        wd = tmp_path / "p"
        wd.mkdir()
        _project(wd, api.url, max_attempts=2)
        target = "results/runs/claude/loop/baseline/tiny/find-helper/1/transcript.json"
        run_snakemake(wd, "-j", "1", target)
        run_snakemake(wd, "-j", "1", target)  # attempt 2: the last one
        d = wd / "results/runs/claude/loop/baseline/tiny/find-helper/1"
        state = outcomes.read_attempts(d)
        assert (state["attempt"], state["failed"], state["missing"]) == (2, 2, True)
        assert sorted(p.name for p in (d / "attempts").iterdir()) == ["1", "2", "attempts.json"]
        out = run_snakemake(wd, "-n", target).stdout + run_snakemake(wd, "-n", target).stderr
        assert "Nothing to be done" in out, out[-2000:]
    finally:
        api.stop()
