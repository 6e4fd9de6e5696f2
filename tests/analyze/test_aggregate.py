"""mcptrials aggregate on a hand-made results/runs tree (tests/runs_fixture.py), checked against
numbers computed by hand from the fixture's figures."""

import csv
import json
import shutil

import pytest

from mcptrials.analyze.tables import verdict
from mcptrials.cli import main

import runs_fixture as fx
from runs_fixture import find_row as find

W = {"keyword": 0.10, "quality": 0.55, "citation": 0.15, "efficiency": 0.20}
# a completed git trial of s1 or s2 (reference model): keyword 1, quality 0.7, grounding 0.75, efficiency 5/12
GIT_S1 = 0.10 * 1.0 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 * 5 / 12


def run_aggregate(cfg, runs, out):
    assert main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(out)]) == 0
    read = lambda name: list(csv.DictReader(open(out / name)))  # noqa: E731
    return read("trials.csv"), read("cells.csv"), read("tools.csv"), json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agg")
    cfg, runs = fx.build(tmp)
    # Leftovers of an older matrix: a third trial and a removed tool. They must be ignored.
    shutil.copytree(runs / "reference/loop/git/tiny/s1/1", runs / "reference/loop/git/tiny/s1/3")
    shutil.copytree(runs / "reference/loop/git", runs / "reference/loop/old-tool")
    return run_aggregate(cfg, runs, tmp / "aggregate")


def test_only_the_current_matrix_is_read(tables):
    trials, cells, tools, summary = tables
    # 2 models x 2 tools x 3 scenarios x 2 trials
    assert len(trials) == 24
    assert {r["tool"] for r in trials} == {"baseline", "git"}
    assert {r["trial"] for r in trials} == {"1", "2"}
    assert len(cells) == 12 and len(tools) == 4


def test_fairness_of_one_trial_by_hand(tables):
    trials = tables[0]
    r = find(trials, model="reference", tool="git", scenario="s1", trial=1)
    # baseline s1 wall 10 s (its reference: the geometric mean of 10 and 10), this trial 20 s, no
    # cost (reference): efficiency 0.5 * 0.5 + 0.5 * (0.5 + log2(10/20) / 6) = 0.25 + 1/6 = 5/12
    assert float(r["efficiency"]) == pytest.approx(5 / 12)
    # keyword 1.0, quality mean(0.8, 0.6) = 0.7, grounding 3/4
    assert float(r["quality"]) == pytest.approx(0.7)
    assert float(r["citation_grounding"]) == pytest.approx(0.75)
    assert float(r["fairness"]) == pytest.approx(0.10 * 1.0 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 * 5 / 12)  # 0.68083
    assert r["passed"] == "True" and r["outcome"] == "completed"


def test_efficiency_relative_to_the_baseline_with_cost(tables):
    trials = tables[0]
    r = find(trials, model="sonnet", tool="git", scenario="s1", trial=1)
    # twice the baseline's cost, wall 20 vs 10: each part 0.5 - 1/6 = 1/3
    assert float(r["efficiency"]) == pytest.approx(1 / 3)
    assert float(r["fairness"]) == pytest.approx(0.10 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 / 3)  # 0.66417
    # s3: git as fast as the baseline but twice the cost: 0.5 * 1/3 + 0.5 * 0.5
    r = find(trials, model="sonnet", tool="git", scenario="s3", trial=1)
    assert float(r["efficiency"]) == pytest.approx(5 / 12)
    # the baseline against its own reference, measured alike: as cheap and as fast, 0.5
    b = find(trials, model="sonnet", tool="baseline", scenario="s2", trial=1)
    assert float(b["efficiency"]) == pytest.approx(0.5)
    assert b["adoption"] == ""  # the baseline has nothing to adopt


def test_crashed_trial_scores_zero_and_counts(tables):
    trials, cells, tools, _ = tables
    r = find(trials, model="reference", tool="git", scenario="s2", trial=2)
    assert r["outcome"] == "server_crashed"
    assert float(r["fairness"]) == 0.0 and r["passed"] == "False"
    assert r["protocol_error"] == "1"
    c = find(cells, model="reference", tool="git", scenario="s2")
    assert c["n"] == "2" and c["passes"] == "1"
    assert float(c["pass_at_1"]) == pytest.approx(0.5)
    assert float(c["fairness"]) == pytest.approx(GIT_S1 / 2)
    t = find(tools, model="reference", tool="git")
    assert t["n_trials"] == "6" and t["failed_outcomes"] == "1" and t["protocol_error"] == "1"


def test_only_better_tools_are_ranked():
    from mcptrials.analyze.tables import rank_better

    rows = [
        {"tool": "a", "verdict": "worse", "diff": -0.2, "rank": None},
        {"tool": "b", "verdict": "better", "diff": 0.1, "rank": None},
        {"tool": "c", "verdict": "within noise", "diff": 0.3, "rank": None},
        {"tool": "d", "verdict": "better", "diff": 0.25, "rank": None},
    ]
    rank_better(rows)
    assert {r["tool"]: r["rank"] for r in rows} == {"a": None, "b": 2, "c": None, "d": 1}


def test_paired_difference_against_the_baseline(tables):
    tools = tables[2]
    t = find(tools, model="reference", tool="git")
    # per-scenario fairness means, git minus baseline:
    # s1 0.68083 - 0.5; s2 (0.68083 + 0)/2 - 0.5; s3 (git 10 s: efficiency 0.5) 0.6975 - (0.5 + 0.39)/2
    # (a baseline trial: 0.05 + 0.275 + 0.075 + 0.2 * 0.5 = 0.5; s3's second, quality 0.3: 0.39)
    d = [GIT_S1 - 0.5, GIT_S1 / 2 - 0.5, 0.6975 - 0.445]
    assert float(t["diff"]) == pytest.approx(sum(d) / 3)
    assert t["diff_n"] == "3"
    assert float(t["diff_lo"]) < 0 < float(t["diff_hi"])
    assert t["verdict"] == "within noise" and t["rank"] == ""
    assert float(t["holm_t_p"]) == pytest.approx(float(t["t_p"]))  # one tool: Holm changes nothing
    b = find(tools, model="reference", tool="baseline")
    assert float(b["fairness"]) == pytest.approx((5 * 0.5 + 0.39) / 6)
    assert b["verdict"] == "baseline" and b["diff"] == ""


def test_pass_at_k_and_pass_hat_k_per_tool(tables):
    t = find(tables[2], model="reference", tool="git")
    # per scenario (n=2): s1 c=2, s2 c=1, s3 c=0
    assert float(t["pass_at_1"]) == pytest.approx((1 + 0.5 + 0) / 3)
    assert float(t["pass_at_k"]) == pytest.approx((1 + 1 + 0) / 3)
    assert float(t["pass_hat_k"]) == pytest.approx((1 + 0 + 0) / 3)
    assert t["k"] == "2"


def test_summary_flags_noise_and_power(tables):
    summary = tables[3]
    flags = {s["scenario"]: s["flag"] for s in summary["scenarios"]}
    assert flags == {"s1": "saturated", "s2": None, "s3": "never_passed"}
    # judge noise: SD of [0.8, 0.6] = 0.1414 in the 10 completed git trials, 0 in the other 14
    sd = (0.2 / 2**0.5) * 10 / 24
    assert summary["judge_noise"]["fairness_noise"] == pytest.approx(0.55 * sd)
    assert summary["judge_noise"]["overall"]["scenario"]["n_items"] == 24
    assert set(summary["judge_noise"]["by_scenario"]) == {"s1", "s2", "s3"}
    assert "smallest difference" in summary["power"][0]["text"]
    assert summary["power"][0]["mde"]["git"] > 0
    ident = summary["identity"]
    assert ident["models"]["reference"]["label"].startswith("reference (deterministic agent, no language model)")
    assert ident["tools"]["git"]["server_version"] == ["1.2.3"]
    prof = {p["tool"]: p for p in summary["server_profile"]}
    assert prof["git"]["latency_p50_ms"] == pytest.approx(40.0)
    assert prof["git"]["peak_rss_kb_max"] == 40000
    err = {(e["model"], e["tool"]): e for e in summary["errors"]}
    assert err[("reference", "git")]["outcomes"] == {"completed": 5, "server_crashed": 1}


def test_no_baseline_means_efficiency_one_half_and_a_note(tmp_path):
    cfg, runs = fx.build(tmp_path, tools=("git",), models=("sonnet",))
    trials, _, tools, summary = run_aggregate(cfg, runs, tmp_path / "agg")
    assert all(float(r["efficiency"]) == 0.5 for r in trials)
    assert any("no tool named `baseline`" in n for n in summary["notes"])
    assert tools[0]["diff"] == "" and tools[0]["verdict"] == ""


def test_a_missing_record_fails_naming_the_file(tmp_path, capsys):
    cfg, runs = fx.build(tmp_path, models=("reference",), scenarios=("s1",))
    missing = runs / "reference/loop/git/tiny/s1/2/judged.json"
    missing.unlink()
    code = main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(tmp_path / "agg")])
    assert code == 2
    assert str(missing) in capsys.readouterr().err


def test_verdict_rules():
    row = {"diff": 0.05, "diff_lo": 0.01, "diff_hi": 0.09}
    assert verdict(row, None, 0) == "better"
    assert verdict(row, None, 0.05) == "within noise"  # beyond 0 but not beyond the margin
    assert verdict(row, 0.06, 0) == "within noise"  # outside 0 but inside the judge's spread
    assert verdict(dict(row, diff_lo=-0.01), None, 0) == "within noise"
    assert verdict({"diff": -0.2, "diff_lo": -0.3, "diff_hi": -0.1}, 0.05, 0.05) == "worse"
    assert verdict({"diff": 0.2, "diff_lo": None, "diff_hi": None}, None, 0.05) == "within noise"
    assert verdict({"diff": -0.005, "diff_lo": -0.008, "diff_hi": -0.002}, None, 0.05) == "no practical difference"


def test_the_configs_margin_decides_the_verdicts_and_summary_records_it(tables, tmp_path):
    """Issue 33 item 2: the default `margin:` (the schema's 0.05) is in summary.json beside the
    rule; a margin wider than git's interval ([-0.430, +0.567] for the reference model) makes it
    "no practical difference", in the tools and the compare pairs alike."""
    summary = tables[3]
    assert summary["margin"] == 0.05 and "below -margin" in summary["methods"]["verdict"]
    assert find(tables[2], model="reference", tool="git")["verdict"] == "within noise"
    cfg, runs = fx.build(tmp_path, margin=0.6, compare=[["git", "baseline"]])
    _, _, tools, wide = run_aggregate(cfg, runs, tmp_path / "agg")
    assert wide["margin"] == 0.6
    assert find(tools, model="reference", tool="git")["verdict"] == "no practical difference"
    assert {c["verdict"] for c in wide["comparisons"]} == {"no practical difference"}


def test_identical_answers_with_time_noise_are_not_worse():
    """Issue 33: `git`, whose answers equal the baseline's, one trial per cell, working time a
    little off the baseline's either way (factors f and 1/f). The old efficiency, min(1, base /
    value), gave the baseline 1.0 and git less whenever it was slower: "worse" with an interval
    excluding 0. Now both are measured alike (the baseline's own trial scores 0.5), git's
    efficiency parts are 0.5 -/+ log2(f) / 6, the paired difference is 0, and the verdict is "no
    practical difference" at the default margin, "within noise" at margin 0; never "worse"."""
    from mcptrials.analyze.tables import against_baseline
    from mcptrials.analyze.trial_rows import score_rows

    def row(tool, scenario, work):
        return {
            "model": "reference",
            "scenario": scenario,
            "tool": tool,
            "missing": False,
            "completed": True,
            "cost_usd": None,
            "wall_seconds": work,
            "work_seconds": work,
            "server_startup_seconds": None,
            "keyword_coverage": 1.0,
            "quality": 0.8,
            "citation_grounding": 0.75,
        }

    factors = [1.02, 1.05, 1.01, 1.03, 1.04, 1.06]
    rows = []
    for i, f in enumerate(factors + [1 / f for f in factors]):
        rows += [row("baseline", f"s{i}", 1.0 + 0.1 * i), row("git", f"s{i}", (1.0 + 0.1 * i) * f)]
    assert score_rows(rows, W, has_baseline=True) == []
    assert {r["efficiency"] for r in rows if r["tool"] == "baseline"} == {0.5}
    fair = {t: {r["scenario"]: [r["fairness"]] for r in rows if r["tool"] == t} for t in ("baseline", "git")}
    verdicts = {}
    for margin in (0.05, 0.0):
        out = {}
        against_baseline(out, fair["git"], fair["baseline"], None, margin)
        verdicts[margin] = out["verdict"]
        assert out["diff"] == pytest.approx(0.0, abs=1e-12) and out["diff_lo"] < 0 < out["diff_hi"]
    assert verdicts == {0.05: "no practical difference", 0.0: "within noise"}


def test_costs_come_from_usage_at_the_configs_pricing(tables):
    trials, cells, tools, summary = tables
    b = find(trials, model="sonnet", tool="baseline", scenario="s1", trial=1)
    g = find(trials, model="sonnet", tool="git", scenario="s1", trial=1)
    # (1000*3 + 50*3.75 + 300*0.3 + 200*15) / 1e6 = 0.0062775, not the record's frozen 0.10
    assert float(b["cost_usd"]) == pytest.approx(0.0062775)
    assert float(g["cost_usd"]) == pytest.approx(2 * 0.0062775)  # not the frozen 0.40
    assert b["priced_as"] == "claude-sonnet-4-6"
    # the frozen costs (0.10 vs 0.40) would give a cost part of 0.5 - 2/6 and efficiency 0.25 here
    assert float(g["efficiency"]) == pytest.approx(0.5 / 3 + 0.5 / 3)
    assert find(trials, model="reference", tool="git", scenario="s1", trial=1)["cost_usd"] == ""  # no price
    assert float(find(tools, model="sonnet", tool="git")["cost_per_trial"]) == pytest.approx(2 * 0.0062775)
    costs = summary["identity"]["costs"]
    assert costs["method"] == summary["methods"]["costs"] == "recomputed from usage with the config's pricing"
    assert len(costs["pricing_sha256"]) == 64 and costs["priced_models"] == ["claude-sonnet-4-6"]


def _anthropic_judge(runs, model):
    """Turn the model's judged.json into an anthropic judge's, with tokens and a stale cost."""
    for path in (runs / model).rglob("judged.json"):
        j = json.loads(path.read_text())
        j["judge"].update(provider="anthropic", model="claude-haiku-4-5")
        j["usage"].update(input_tokens=10_000, output_tokens=500, api_calls=2, cost_usd=7.0)
        path.write_text(json.dumps(j))


def test_a_new_pricing_changes_every_cost_from_the_same_records(tmp_path):
    cfg_a, runs = fx.build(
        tmp_path,
        models=("sonnet",),
        scenarios=("s1",),
        pricing={"claude-sonnet-4-6": {"input": 3, "output": 15}, "claude-haiku-4-5": {"input": 1, "output": 5}},
    )
    _anthropic_judge(runs, "sonnet")
    trials_a, _, tools_a, sum_a = run_aggregate(cfg_a, runs, tmp_path / "agg_a")
    # the same records, another price list (explicit cache prices)
    cfg_b = fx.write_config(
        tmp_path,
        models=("sonnet",),
        scenarios=("s1",),
        pricing={
            "claude-sonnet-4-6": {"input": 1, "output": 5, "cache_write": 2, "cache_read": 0.5},
            "claude-haiku-4-5": {"input": 0.8, "output": 4},
        },
    )
    trials_b, _, tools_b, sum_b = run_aggregate(cfg_b, runs, tmp_path / "agg_b")
    a = find(trials_a, tool="baseline", trial=1)
    b = find(trials_b, tool="baseline", trial=1)
    assert float(a["cost_usd"]) == pytest.approx(0.0062775)
    # (1000*1 + 50*2 + 300*0.5 + 200*5) / 1e6 = (1000 + 100 + 150 + 1000) / 1e6 = 0.00225
    assert float(b["cost_usd"]) == pytest.approx(0.00225)
    assert float(find(trials_b, tool="git", trial=1)["cost_usd"]) == pytest.approx(0.0045)
    # the judge: (10000*1 + 500*5) / 1e6 = 0.0125, then (10000*0.8 + 500*4) / 1e6 = 0.010; never the stale 7.0
    assert float(a["judge_cost_usd"]) == pytest.approx(0.0125)
    assert float(b["judge_cost_usd"]) == pytest.approx(0.010)
    assert float(find(tools_b, tool="git")["cost_per_trial"]) == pytest.approx(0.0045)
    assert sum_a["identity"]["costs"]["pricing_sha256"] != sum_b["identity"]["costs"]["pricing_sha256"]


def test_a_model_without_a_price_has_unknown_cost_and_a_note(tmp_path):
    cfg, runs = fx.build(tmp_path, models=("sonnet",), scenarios=("s1",), pricing={})
    trials, _, _, summary = run_aggregate(cfg, runs, tmp_path / "agg")
    assert {r["cost_usd"] for r in trials} == {""}
    # efficiency on wall time alone: git 20 s vs baseline 10 s -> 0.5 * 0.5 + 0.5 * 1/3 (cost: 0.5 in every arm)
    assert float(find(trials, tool="git", trial=1)["efficiency"]) == pytest.approx(5 / 12)
    assert any("sonnet (claude-sonnet-4-6): no entry in `pricing`" in n for n in summary["notes"])


def test_fairness_uses_the_configs_weights(tmp_path):
    w = {"keyword": 0.25, "quality": 0.25, "citation": 0.25, "efficiency": 0.25}
    cfg, runs = fx.build(tmp_path, models=("reference",), scenarios=("s1",), weights=w)
    trials, _, _, summary = run_aggregate(cfg, runs, tmp_path / "agg")
    r = find(trials, tool="git", trial=1)
    # keyword 1.0, quality 0.7, grounding 0.75, efficiency 5/12: 0.25 * 2.86667 = 0.71667 (0.68083 with the defaults)
    assert float(r["fairness"]) == pytest.approx(0.25 * (1.0 + 0.7 + 0.75 + 5 / 12))
    assert summary["identity"]["weights"] == w


def test_every_interval_stays_in_the_scores_range(tables):
    trials, cells, tools, summary = tables
    for row in cells + tools:
        lo, hi = row["fairness_lo"], row["fairness_hi"]
        if lo != "":
            assert 0.0 <= float(lo) <= float(row["fairness"]) <= float(hi) <= 1.0, row
    for row in tools:
        if row["adoption_lo"] != "":
            assert 0.0 <= float(row["adoption_lo"]) <= float(row["adoption_hi"]) <= 1.0
    diffs = [r for r in tools if r["diff_lo"] != ""]
    assert diffs
    for row in diffs:
        assert -1.0 <= float(row["diff_lo"]) <= float(row["diff"]) <= float(row["diff_hi"]) <= 1.0
        assert row["diff_method"] == "paired, logit-transformed t interval on [-1, 1], df=2"
    # the git cell of s2 (fairness 0.68083 and 0 over 2 trials): a plain t interval with df=1
    # would be 0.34042 -/+ 12.706 * 0.34042, i.e. [-3.98, 4.67]
    c = find(cells, model="reference", tool="git", scenario="s2")
    assert 0.0 < float(c["fairness_lo"]) < 0.01 and 0.99 < float(c["fairness_hi"]) < 1.0
    t = find(tools, model="reference", tool="git")
    assert t["fairness_method"].startswith("logit-transformed t interval on [0, 1], clustered SE over 3 clusters")
    assert "logit-transformed t interval" in summary["methods"]["interval"]


def test_no_trial_is_missing_when_every_outcome_is_attributable(tables):
    trials, cells, tools, summary = tables
    # server_crashed (reference and sonnet, git, s2 #2) is the tool's: scored 0, not missing
    assert {r["missing"] for r in trials} == {"False"} and {r["missing_reason"] for r in trials} == {""}
    assert {c["n_missing"] for c in cells} == {"0"} and {t["n_missing"] for t in tools} == {"0"}
    assert {c["n"] for c in cells} == {"2"} and {t["n_trials"] for t in tools} == {"6"}
    assert summary["missing"]["n_missing"] == 0 and summary["missing"]["note"] is None
    assert not any("missing" in n for n in summary["notes"])


def test_efficiency_compares_working_time_not_server_start_up():
    """A server trial as quick at the work as the baseline but with 0.5 s of start-up: by wall
    time its time part would be 0.5 + clip(log2(0.05 / 0.55), -3, 3) / 6 = 0 and its efficiency
    0.25; by working time (work_seconds, what score_rows uses) it is 0.5, the baseline's. Cost is
    unknown (None): 0.5 in every arm."""
    from mcptrials.analyze.trial_rows import score_rows

    def row(tool, wall, work, startup):
        return {
            "model": "reference",
            "scenario": "s1",
            "tool": tool,
            "missing": False,
            "completed": True,
            "cost_usd": None,
            "wall_seconds": wall,
            "work_seconds": work,
            "server_startup_seconds": startup,
            "keyword_coverage": 1.0,
            "quality": 1.0,
            "citation_grounding": 1.0,
        }

    rows = [row("baseline", 0.05, 0.05, None), row("git", 0.55, 0.05, 0.5), row("slow", 0.6, 0.1, 0.5)]
    assert score_rows(rows, W, has_baseline=True) == []
    # slow: twice the work: 0.5 * 0.5 + 0.5 * (0.5 - 1/6)
    assert [r["efficiency"] for r in rows] == [0.5, 0.5, pytest.approx(5 / 12)]


def test_what_efficiency_measured_and_rates_without_data(tables):
    """Issue 27 item 6: each row says which parts its efficiency used; a rate with nothing to
    measure is empty (null), never 1.0 or 0.0, with its n beside it."""
    trials, cells, tools, summary = tables
    assert {r["efficiency_basis"] for r in trials if r["model"] == "reference"} == {"time only, no cost"}
    assert {r["efficiency_basis"] for r in trials if r["model"] == "sonnet"} == {"cost and time"}
    assert find(cells, model="reference", tool="git", scenario="s1")["efficiency_basis"] == "time only, no cost"
    assert find(tools, model="sonnet", tool="git")["efficiency_basis"] == "cost and time"
    crashed = find(trials, model="reference", tool="git", scenario="s2", trial=2)
    assert crashed["citations"] == "0" and crashed["citation_grounding"] == "" and crashed["verified_rate"] == ""
    # the tool's grounding is over the trials with citations, its n the citations counted
    git = find(tools, model="reference", tool="git")
    assert git["citations"] == "20"


def test_every_row_has_its_typed_record_s_keys(tmp_path):
    """The rows analyze casts to their types (core.rows) have exactly the declared keys: each
    required one, and no other but a trial's per-group gold columns (`cited_recall_<group>`).
    A run with missing trials and a compare pair, so every kind of row is there."""
    from mcptrials.analyze.records_summary import citation_composition
    from mcptrials.core.rows import CellRow, ComparisonRow, CompositionRow, Summary, ToolRow, TrialRow
    from mcptrials.grade.citations.grading import COUNT_KEYS, pool
    from mcptrials.grade.citations.composition import by_form, ungrounded

    cfg, runs = fx.build(
        tmp_path,
        compare=[["git", "baseline"]],
        missing={("sonnet", "git", "s1", 2): ("api_failed", "x"), ("reference", "baseline", "s3", 1): ("not_run", "y")},
    )
    *_, summary = run_aggregate(cfg, runs, tmp_path / "agg")
    assert set(summary) == Summary.__required_keys__  # no `sequential`: trials is a number here
    # the fixture's citations predate the composition: one trial's, made by grade's own counters
    items = [
        {"form": "path:line", "bucket": "grounded", "verification": "verified", "strict": "verified"},
        {"form": "basename", "bucket": "unresolved", "verification": "n/a", "strict": "n/a", "ungrounded": "basename"},
    ]
    counts = {k: 0 for k in (*COUNT_KEYS, "gold_total", "gold_cited")} | {"total": 2, "grounded": 1, "unresolved": 1}
    counts |= {"verified": 1, "strict_verified": 1, "by_form": by_form(items), "ungrounded": ungrounded(items)}
    record = {"key": {"model": "m", "tool": "t"}, "transcript": {"outcome": "completed"}}
    composition = citation_composition([record | {"scored": {"citations": pool([{"counts": counts}])}}])
    for section, td, rows in (
        ("trials", TrialRow, summary["trials"]),
        ("cells", CellRow, summary["cells"]),
        ("tools", ToolRow, summary["tools"]),
        ("comparisons", ComparisonRow, summary["comparisons"]),
        ("citation_composition", CompositionRow, composition),
    ):
        assert rows, section
        for row in rows:
            extra = {k for k in row if not k.startswith("cited_recall_")} - set(td.__annotations__)
            assert not extra, f"{section}: keys {td.__name__} does not declare: {sorted(extra)}"
            assert td.__required_keys__ <= set(row), f"{section}: {sorted(td.__required_keys__ - set(row))} missing"
