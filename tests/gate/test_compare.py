"""Paired comparisons of any two tools (the config's `compare:`) and `mcptrials compare` of two
results folders, on hand-made records (tests/runs_fixture.py) and hand-computed numbers.
The gate on real runs of the workflow is tests/gate/test_compare_gate.py."""

from __future__ import annotations

import copy
import csv
import json
import math
import shutil
import xml.etree.ElementTree as ET

import pytest
import yaml

import runs_fixture as fx
from mcptrials.cli import main
from mcptrials.gate.comparable import Refused, refusal_reasons
from mcptrials.gate.compare import compare_runs
from mcptrials.gate.compare_report import junit, markdown, text_report
from mcptrials.gate.tools_diff import schema_change, tools_list_diff
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.stats.paired import margin_test, paired_difference

# --- the config's compare: ----------------------------------------------------------------


@pytest.mark.parametrize(
    "pairs, field, words",
    [
        ([["git", "nope"]], "compare.0", ["'nope' is not a tool of the config", "baseline, git"]),
        ([["git", "git"]], "compare.0", ["compares a tool with itself", "two different tools"]),
        ([["git", "baseline"], ["baseline", "git"]], "compare.1", ["same comparison as compare.0", "remove one"]),
        ([["git"]], "compare.0", ["is too short"]),
    ],
)
def test_bad_compare_pairs_are_refused_naming_file_field_and_fix(tmp_path, pairs, field, words):
    cfg = fx.write_config(tmp_path, compare=pairs)
    with pytest.raises(ConfigError) as e:
        load_matrix(cfg)
    msg = str(e.value)
    assert str(cfg) in msg and f"field {field}" in msg
    for w in words:
        assert w in msg


def test_compare_defaults_to_no_pairs(tmp_path):
    assert load_matrix(fx.write_config(tmp_path)).config["compare"] == []


def aggregate(tmp, cfg, runs):
    out = tmp / "results" / "aggregate"
    assert main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(out)]) == 0
    return json.loads((out / "summary.json").read_text()), out


def add_tool_copy(tmp, runs, new="git2"):
    """A third tool with git's records: same figures, so its comparisons equal git's."""
    cfg = yaml.safe_load((tmp / "config.yaml").read_text())
    cfg["tools"][new] = dict(cfg["tools"]["git"])
    (tmp / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    for model in fx.MODELS:
        shutil.copytree(runs / model / "loop" / "git", runs / model / "loop" / new)


def test_a_pair_is_the_same_statistics_as_against_the_baseline(tmp_path):
    cfg, runs = fx.build(tmp_path, compare=[["git", "baseline"]])
    s, out = aggregate(tmp_path, cfg, runs)
    c = next(r for r in s["comparisons"] if r["model"] == "reference")
    t = next(r for r in s["tools"] if r["model"] == "reference" and r["tool"] == "git")
    # by hand (as tests/analyze/test_aggregate.py): per-scenario fairness means, git minus baseline
    git = 0.10 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 * 5 / 12  # efficiency 5/12: twice the baseline's time
    d = [git - 0.5, git / 2 - 0.5, 0.6975 - (0.5 + 0.39) / 2]
    assert c["diff"] == pytest.approx(sum(d) / 3)
    for ck, tk in (
        ("diff", "diff"),
        ("diff_lo", "diff_lo"),
        ("diff_hi", "diff_hi"),
        ("t_p", "t_p"),
        ("wilcoxon_p", "wilcoxon_p"),
        ("diff_method", "diff_method"),
        ("verdict", "verdict"),
    ):
        assert c[ck] == t[tk], ck
    assert c["holm_t_p"] == pytest.approx(c["t_p"])  # one pair: Holm changes nothing
    assert (c["n_scenarios"], c["n_trials_a"], c["n_trials_b"], c["n_missing_a"]) == (3, 6, 6, 0)
    assert c["fairness_a"] == pytest.approx(t["fairness"])
    rows = list(csv.DictReader(open(out / "comparisons.csv")))
    assert len(rows) == 2 and {r["model"] for r in rows} == {"reference", "sonnet"}
    assert float(fx.find_row(rows, model="reference")["diff"]) == pytest.approx(sum(d) / 3)


def test_a_reversed_pair_flips_the_sign(tmp_path):
    cfg, runs = fx.build(tmp_path, compare=[["baseline", "git"]])
    s, _ = aggregate(tmp_path, cfg, runs)
    c = next(r for r in s["comparisons"] if r["model"] == "reference")
    t = next(r for r in s["tools"] if r["model"] == "reference" and r["tool"] == "git")
    assert c["diff"] == pytest.approx(-t["diff"])
    assert c["diff_lo"] == pytest.approx(-t["diff_hi"]) and c["diff_hi"] == pytest.approx(-t["diff_lo"])
    assert c["t_p"] == pytest.approx(t["t_p"])


def test_holm_across_the_configured_pairs(tmp_path):
    cfg, runs = fx.build(tmp_path)
    add_tool_copy(tmp_path, runs)
    data = yaml.safe_load(cfg.read_text())
    data["compare"] = [["git", "baseline"], ["git2", "baseline"], ["git", "git2"]]
    cfg.write_text(yaml.safe_dump(data, sort_keys=False))
    s, _ = aggregate(tmp_path, cfg, runs)
    ref = [r for r in s["comparisons"] if r["model"] == "reference"]
    p = ref[0]["t_p"]
    assert ref[1]["t_p"] == pytest.approx(p)
    # git - git2: identical records, every difference 0: no p-value, not a test, so m = 2:
    # sorted p, p: adjusted min(1, 2p) then max(2p, min(1, 1p)) = 2p for both
    assert ref[2]["diff"] == 0 and ref[2]["t_p"] is None and ref[2]["holm_t_p"] is None
    assert ref[0]["holm_t_p"] == pytest.approx(min(1.0, 2 * p)) and ref[1]["holm_t_p"] == pytest.approx(min(1.0, 2 * p))
    assert ref[2]["verdict"] == "no practical difference"  # the interval [0, 0] lies within the margin


def test_missing_trials_stay_out_and_are_counted(tmp_path):
    gone = {("reference", "git", "s1", 1): ("api_failed", "api: 529 overloaded")}
    cfg, runs = fx.build(tmp_path, missing=gone, compare=[["git", "baseline"]])
    s, _ = aggregate(tmp_path, cfg, runs)
    c = next(r for r in s["comparisons"] if r["model"] == "reference")
    assert (c["n_trials_a"], c["n_missing_a"], c["missing_reasons_a"]) == (5, 1, "api_failed=1")
    # s1's mean is its one remaining trial, which has the same fairness: the difference is unchanged
    git = 0.10 + 0.55 * 0.7 + 0.15 * 0.75 + 0.20 * 5 / 12
    assert c["diff"] == pytest.approx((git - 0.5 + git / 2 - 0.5 + 0.6975 - 0.445) / 3)


def test_the_report_has_the_comparisons_section(tmp_path):
    cfg, runs = fx.build(tmp_path, compare=[["git", "baseline"]])
    s, out = aggregate(tmp_path, cfg, runs)
    report = tmp_path / "report"
    assert (
        main(["report", "--config", str(cfg), "--aggregate", str(out), "--runs", str(runs), "--out-dir", str(report)])
        == 0
    )
    md = (report / "report.md").read_text()
    assert "Tools compared with each other" in md and "git − baseline" in md
    c = next(r for r in s["comparisons"] if r["model"] == "reference")
    assert f"{c['diff']:+.3f} [{c['diff_lo']:+.3f}, {c['diff_hi']:+.3f}]" in md
    assert 'id="comparisons"' in (report / "index.html").read_text()


def test_no_pairs_no_section_and_a_header_only_csv(tmp_path):
    cfg, runs = fx.build(tmp_path)
    s, out = aggregate(tmp_path, cfg, runs)
    assert s["comparisons"] == []
    assert (out / "comparisons.csv").read_text().startswith("model,a,b,n_scenarios")


# --- the gate's test, by hand ------------------------------------------------------------------

T_95_DF2 = 2.919985580  # t quantile 0.95 with 2 degrees of freedom (tables), the 90% two-sided interval


def by_hand_interval(d):
    """paired_difference(bounds=(-1, 1), level=0.90) by hand: logit-transformed t interval on [-1, 1]."""
    n = len(d)
    m = sum(d) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (n - 1))
    se = sd / math.sqrt(n)
    u = (m + 1) / 2
    g = math.log(u / (1 - u))
    half = T_95_DF2 * se / (2 * u * (1 - u))
    expit = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    return m, -1 + 2 * expit(g - half), -1 + 2 * expit(g + half)


def test_margin_test_by_hand():
    d = {"s1": -0.1, "s2": -0.2, "s3": -0.3}
    pd_ = paired_difference(d, {k: 0.0 for k in d}, level=0.90, bounds=(-1, 1))
    m, lo, hi = by_hand_interval(list(d.values()))
    # m = -0.2, sd 0.1, se 0.057735; u 0.4, g -0.405465, half 0.351220: [-0.36127, -0.02712]
    assert (pd_["mean_diff"], pd_["lo"], pd_["hi"]) == pytest.approx((m, lo, hi))
    assert (lo, hi) == pytest.approx((-0.36127, -0.02712), abs=1e-5)
    assert margin_test(pd_, 0.02)["verdict"] == "regression"  # hi -0.027 < -0.02
    assert margin_test(pd_, 0.05)["verdict"] == "inconclusive"  # -0.361 <= -0.05 <= -0.027
    assert margin_test(pd_, 0.4)["verdict"] == "non-inferior"  # lo -0.361 > -0.4
    assert margin_test({"lo": None, "hi": None}, 0.05)["verdict"] == "inconclusive"  # one scenario: no interval
    with pytest.raises(ValueError, match="margin"):
        margin_test(pd_, -0.1)


# --- mcptrials compare on hand-made summaries ------------------------------------------------

IDENTITY = {
    "scenarios": {s: {"sha256": s * 8} for s in ("s1", "s2", "s3")},
    "repos": {"tiny": {"url": "repo", "commit": "a" * 40}},
    "grading": {"grader_versions": ["2"], "grading_sha256": {"s1": ["g"]}, "rubric_sha256": {"s1": ["r"]}},
    "judge": {"provider": "reference", "model": None, "repeats": 1, "prompt_sha256": ["p"], "settings_hash": ["h"]},
    "weights": {"keyword": 0.1, "quality": 0.55, "citation": 0.15, "efficiency": 0.2},
    "harness_versions": ["0.1.0"],
    "started": "2026-12-01T10:00:00",
    "aggregate_version": "1",
}


def trial(scenario, fairness, passed=True, cost=0.01, errors=0, tool="git", missing=False):
    return {
        "model": "m",
        "model_name": "m",
        "host": "loop",
        "tool": tool,
        "scenario": scenario,
        "fairness": None if missing else fairness,
        "passed": None if missing else passed,
        "cost_usd": cost,
        "tool_error": errors,
        "protocol_error": 0,
        "api_error": 0,
        "harness_error": 0,
        "missing": missing,
    }


def results(fair: dict, snapshot=None, identity=None, **kw) -> dict:
    """A loaded results folder (as compare.load_results gives) with two trials per scenario."""
    rows = [trial(s, f, **kw) for s, pair in fair.items() for f in pair]
    snaps = {("git", "tiny"): snapshot} if snapshot else {}
    return {
        "folder": "x",
        "summary": {"identity": copy.deepcopy(identity or IDENTITY), "trials": rows},
        "snapshots": snaps,
    }


BASE_FAIR = {"s1": (0.6, 0.6), "s2": (0.5, 0.7), "s3": (0.8, 0.8)}
HEAD_FAIR = {"s1": (0.5, 0.5), "s2": (0.3, 0.5), "s3": (0.5, 0.5)}  # per scenario -0.1, -0.2, -0.3


def test_compare_runs_pairs_by_scenario_and_gates_by_hand():
    base, head = results(BASE_FAIR), results(HEAD_FAIR, errors=1, cost=0.03)
    r = compare_runs(base, head, margin=0.02)
    row = r["rows"][0]
    f = row["figures"]["fairness"]
    m, lo, hi = by_hand_interval([-0.1, -0.2, -0.3])
    assert (f["base"], f["head"], f["mean_diff"], f["lo"], f["hi"]) == pytest.approx(
        (sum(map(sum, BASE_FAIR.values())) / 6, sum(map(sum, HEAD_FAIR.values())) / 6, m, lo, hi)
    )
    assert row["gate"]["verdict"] == "regression" and row["status"] == "fail" and r["failed"] == [row]
    # cost +0.02 per trial in every scenario (no spread), error rate 0 -> 1, pass rate unchanged
    c = row["figures"]["cost_usd"]
    assert c["mean_diff"] == pytest.approx(0.02) and c["lo"] == pytest.approx(0.02)
    assert row["figures"]["error_rate"]["mean_diff"] == 1.0 and row["figures"]["pass_rate"]["mean_diff"] == 0.0
    # margin 0.05: inconclusive ([-0.361, -0.027] straddles -0.05), but the estimate -0.2 is below -0.05
    probable = compare_runs(base, head)  # the default: the schema's `margin:` 0.05 (HEAD's summary has none)
    assert probable["margin"] == 0.05 and probable["margin_from"].startswith("the config schema's default")
    assert probable["rows"][0]["gate"]["verdict"] == "probable regression" and probable["failed"]
    assert compare_runs(base, head, lenient=True)["failed"] == []  # --lenient passes it
    # V = omega2 + sigma2/2 + sigma2/2 = 0.01/3 * 3 = 0.01, delta |-0.2 + 0.05| = 0.15: n = 5 (by hand in
    # test_scenarios_to_decide_margin_by_hand)
    assert probable["rows"][0]["gate"]["to_decide"]["scenarios"] == 5
    assert compare_runs(base, head, strict=True)["failed"]  # ... and --strict
    assert compare_runs(base, head, margin=0.4)["rows"][0]["gate"]["verdict"] == "non-inferior"


def test_the_default_margin_is_the_configs_margin_as_heads_summary_records_it():
    """Issue 33 item 2: without --margin the gate uses HEAD's `margin:` (the headline's smallest
    difference that matters), recorded in its summary.json; --margin still wins."""
    base, head = results(BASE_FAIR), results(HEAD_FAIR)
    head["summary"]["margin"] = 0.4
    r = compare_runs(base, head)
    assert (r["margin"], r["margin_from"]) == (0.4, "HEAD's config `margin:` (its summary.json)")
    assert r["rows"][0]["gate"]["verdict"] == "non-inferior"  # lo -0.361 > -0.4
    assert "margin 0.4 (from HEAD's config `margin:`" in text_report(r)
    r = compare_runs(base, head, margin=0.02)
    assert (r["margin"], r["margin_from"]) == (0.02, "--margin") and r["rows"][0]["gate"]["verdict"] == "regression"


def test_missing_trials_are_left_out_of_the_pairs():
    head = results(HEAD_FAIR)
    head["summary"]["trials"].append(trial("s1", None, missing=True))
    row = compare_runs(results(BASE_FAIR), head, margin=0.02)["rows"][0]
    assert (row["n_head"], row["missing_head"]) == (6, 1)
    assert row["figures"]["fairness"]["mean_diff"] == pytest.approx(-0.2)


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda i: i["scenarios"].pop("s3"), ["scenario sets differ", "only in BASE: s3"]),
        (lambda i: i["scenarios"]["s1"].update(sha256="other"), ["scenario sets differ", "changed: s1"]),
        (lambda i: i["repos"]["tiny"].update(commit="b" * 40), ["commits differ", "aaaaaaaaaaaa -> bbbbbbbbbbbb"]),
        (lambda i: i["grading"].update(grader_versions=["3"]), ["grader versions differ", "BASE 2, HEAD 3"]),
        (lambda i: i["grading"]["rubric_sha256"].update(s1=["x"]), ["rubrics differ for s1"]),
        (lambda i: i["judge"].update(model="claude-haiku-4-5"), ["judge differs (model)"]),
        (lambda i: i["weights"].update(quality=0.5, keyword=0.15), ["fairness weights differ"]),
        (lambda i: i.pop("grading"), ["HEAD records no grader version", "rerun `mcptrials aggregate`"]),
        (lambda i: i.update(aggregate_version="2"), ["aggregate versions differ (BASE 1, HEAD 2)", "efficiency"]),
        (lambda i: i.pop("aggregate_version"), ["HEAD unrecorded: an older mcptrials", "rerun `mcptrials aggregate`"]),
    ],
)
def test_refusals_say_why(edit, words):
    ident = copy.deepcopy(IDENTITY)
    edit(ident)
    base, head = results(BASE_FAIR), results(BASE_FAIR, identity=ident)
    reasons = refusal_reasons(base["summary"], head["summary"])
    assert len(reasons) == 1
    for w in words:
        assert w in reasons[0]
    with pytest.raises(Refused):
        compare_runs(base, head)
    assert refusal_reasons(base["summary"], base["summary"]) == []


def snap(tools, **extra):
    return {"tools": tools, "server_version": "1.0", "tools_sha256": str(hash(json.dumps(tools))), **extra}


SEARCH = {
    "name": "search",
    "description": "Search the code.",
    "input_schema": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
}
READ = {"name": "read", "description": "Read a file.", "input_schema": {"type": "object", "properties": {}}}


def test_tools_list_diff():
    new_search = {
        "name": "search",
        "description": "Search the code by symbol name.",
        "input_schema": {
            "type": "object",
            "properties": {"q": {"type": "string", "minLength": 1}, "limit": {"type": "integer"}},
            "required": ["q", "limit"],
        },
    }
    outline = {"name": "outline", "description": "Outline a file.", "input_schema": {"type": "object"}}
    d = tools_list_diff(snap([SEARCH, READ]), snap([new_search, outline], server_version="2.0"))
    assert d["added"] == ["outline"] and d["removed"] == ["read"]
    assert d["descriptions"] == [
        {"tool": "search", "base": "Search the code.", "head": "Search the code by symbol name."}
    ]
    assert d["schemas"] == [{"tool": "search", "change": "added limit; changed q; required ['q'] -> ['limit', 'q']"}]
    assert d["server_version"] == ["1.0", "2.0"]
    same = tools_list_diff(snap([SEARCH]), snap([SEARCH]))
    assert not (same["added"] or same["removed"] or same["descriptions"] or same["schemas"])
    assert schema_change({"properties": {"a": {}}}, {"properties": {}}) == "removed a"


def test_markdown_and_junit_of_a_regression():
    new_search = dict(SEARCH, description="Find <things>.")
    base = results(BASE_FAIR, snapshot=snap([SEARCH, READ]))
    head = results(HEAD_FAIR, snapshot=snap([new_search]))
    for row in base["summary"]["trials"]:
        row["server_tools_used"] = ["search"]  # `read` was offered, never called: its removal is no finding
    r = compare_runs(base, head, margin=0.02)
    md = markdown(r)
    assert md.startswith("### mcptrials: ❌ 1 regression(s)")
    assert "| git | m@loop | ❌ regression |" in md and "one-sided test at alpha 0.05" in md
    assert "removed: read" in md and "Find &lt;things&gt;." in md  # a server's text is escaped
    b, h = (x["snapshots"][("git", "tiny")]["tools_sha256"][:12] for x in (base, head))
    assert f"| changed {b} → {h} |" in md  # which tools/list each side had
    suite = ET.fromstring(junit(r)).find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    failure = suite.find("testcase/failure")
    assert "regression" in failure.get("message") and "-margin -0.02" in failure.get("message")
    assert "description of search" in failure.text
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["margin"] == "0.02" and props["repos"] == "tiny@" + "a" * 40 and "mcptrials" in props


def write_results(folder, res):
    (folder / "aggregate").mkdir(parents=True)
    (folder / "aggregate" / "summary.json").write_text(json.dumps(res["summary"]))
    for (tool, repo), s in res["snapshots"].items():
        (folder / "snapshots" / tool / repo).mkdir(parents=True)
        (folder / "snapshots" / tool / repo / "tools.json").write_text(json.dumps(s))
    return folder


def test_the_command_exit_codes(tmp_path, capsys):
    base = write_results(tmp_path / "base", results(BASE_FAIR, snapshot=snap([SEARCH])))
    head = write_results(tmp_path / "head", results(HEAD_FAIR, snapshot=snap([SEARCH])))
    ident = copy.deepcopy(IDENTITY)
    ident["scenarios"].pop("s2")
    other = write_results(tmp_path / "other", results(BASE_FAIR, identity=ident))
    nc = "--no-config-check"  # hand-made folders: no config beside them
    assert main(["compare", str(base), str(base), nc]) == 0
    assert "result: no regression" in capsys.readouterr().out
    assert main(["compare", str(base), str(head), "--margin", "0.02", nc]) == 1
    assert "result: 1 regression(s): git (m@loop)" in capsys.readouterr().out
    assert main(["compare", str(base), str(head), nc]) == 1  # default margin 0.05: probable regression
    assert "probable regression; about 5 scenarios at 2 trial(s) each" in capsys.readouterr().out
    assert main(["compare", str(base), str(head), nc, "--lenient"]) == 0
    assert main(["compare", str(base), str(head), nc, "--margin", "0.3"]) == 0  # inconclusive, estimate above -margin
    assert main(["compare", str(base), str(head), nc, "--margin", "0.3", "--strict"]) == 1
    assert main(["compare", str(base), str(other), nc]) == 2
    assert "scenario sets differ (scenarios only in BASE: s2)" in capsys.readouterr().err
    assert main(["compare", str(base), str(head), "--tool", "nope", nc]) == 2
    assert "--tool nope: neither run has that tool; use one of: git" in capsys.readouterr().err
    assert main(["compare", str(base), str(tmp_path / "nowhere")]) == 2
    assert "aggregate/summary.json: not found" in capsys.readouterr().err
    assert main(["compare", str(base), str(head), "--margin", "-1", nc]) == 2
    # without a config beside HEAD, and no --config: refused, saying how to go on
    assert main(["compare", str(base), str(head)]) == 2
    assert "HEAD's config" in capsys.readouterr().err


# --- the documented GitHub Actions workflow ----------------------------------------------------


def doc_blocks():
    from matrix_helpers import ROOT

    text = (ROOT / "docs" / "ci-github-actions.md").read_text()
    return [b.split("\n", 1)[1] for b in text.split("```yaml")[1:] for b in [b.split("```")[0]]]


def documented_command(name: str) -> tuple[dict, list[str], dict]:
    """(its job, the words of the documented `mcptrials NAME` line, its step) of the workflow."""
    import shlex

    wf = yaml.safe_load(doc_blocks()[1])
    for job in wf["jobs"].values():
        for step in job["steps"]:
            for ln in step.get("run", "").replace("\\\n", " ").splitlines():
                if ln.strip().startswith(f"mcptrials {name} "):
                    return job, shlex.split(ln.replace('"$MARGIN"', "0.05")), step
    raise AssertionError(f"no `mcptrials {name}` line in the documented workflow")


def test_the_documented_workflow_parses_and_calls_compare_with_real_flags():
    from mcptrials.cli import build_parser

    job, words, _ = documented_command("compare")
    args = build_parser("compare").parse_args(words[1:])
    assert (args.base, args.head, args.tool, args.margin) == (
        "stored",
        "server/.mcptrials/results",
        ["my-server"],
        0.05,
    )
    assert args.markdown == "comment.md" and args.junit == "junit.xml"
    uses = {s.get("uses", "").split("@")[0] for s in job["steps"]}
    assert {
        "actions/cache/save",
        "actions/cache/restore",
        "marocchino/sticky-pull-request-comment",
        "mikepenz/action-junit-report",
    } <= uses
    # the gate's exit code fails the job
    assert any("steps.compare.outputs.code != '0'" in str(s.get("if")) for s in job["steps"])


def test_the_documented_replay_job_runs_on_every_pull_request_without_secrets():
    from mcptrials.cli import build_parser

    job, words, step = documented_command("replay")
    args = build_parser("replay").parse_args(words[1:])
    assert (args.base, args.tool, args.markdown, args.junit) == (
        "../../stored",
        ["my-server"],
        "../../replay.md",
        "../../replay.xml",
    )
    assert args.config == "config.yaml:$RUNNER_TEMP/ci.local.yaml" and step["working-directory"] == "server/.mcptrials"
    # forks included: no condition on the head repository, no secret anywhere in the job
    assert job["if"] == "github.event_name == 'pull_request'"
    assert "secrets." not in json.dumps(job)
    assert any("steps.replay.outputs.code != '0'" in str(s.get("if")) for s in job["steps"])
    # the paid job is the one that is limited to branches with the secrets
    wf = yaml.safe_load(doc_blocks()[1])
    assert "head.repo.full_name == github.repository" in wf["jobs"]["mcptrials"]["if"]


def test_the_documented_pack_config_validates(tmp_path):
    from matrix_helpers import SCENARIO

    config = doc_blocks()[0]
    (tmp_path / "config.yaml").write_text(config)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "find-route.yaml").write_text(yaml.safe_dump(dict(SCENARIO, repo="flask")))
    m = load_matrix(tmp_path / "config.yaml")
    assert list(m.tools) == ["my-server"] and m.trials == 2


# --- findings: deterministic failures, before any statistics (issue 22) -------------------------


def test_scenarios_to_decide_margin_by_hand():
    from mcptrials.stats.power import scenarios_to_decide_margin

    # V = 0.01, delta = 0.15; (t_0.95,df + t_0.80,df) * sqrt(V / n) from t tables:
    # n=3: (2.920 + 1.061) * 0.05774 = 0.2298; n=4: (2.353 + 0.978) * 0.05 = 0.1666; n=5: (2.132 + 0.941) * 0.04472 = 0.1374
    assert scenarios_to_decide_margin(0.15, 0.01) == 5
    assert scenarios_to_decide_margin(0.1666, 0.01) == 4  # just above n=4's 0.16655
    assert scenarios_to_decide_margin(0.5, 0.0) == 2  # no spread: the smallest paired design
    with pytest.raises(ValueError, match="delta"):
        scenarios_to_decide_margin(0, 0.01)


def rows_of(tool="git", outcome="completed", calls=4, errors=0, used=("search",), n=2, fair=0.5):
    return [
        dict(
            trial(s, fair, tool=tool),
            outcome=outcome,
            tool_calls_mcp=calls,
            server_tool_errors=errors,
            server_tools_used=list(used),
            repo="tiny",
        )
        for s in ("s1", "s2", "s3")
        for _ in range(n)
    ]


def test_findings_name_each_deterministic_failure():
    from mcptrials.gate.findings import findings

    ok = snap([SEARCH, READ])
    same = {"tiny": (ok, ok)}
    assert findings("git", True, rows_of(), rows_of(), same) == []
    # the server did not start / no snapshot at all
    dead = {"tiny": (ok, dict(snap([]), error="McpError: Connection closed"))}
    f = findings("git", True, rows_of(), rows_of(outcome="server_crashed", calls=0, used=()), dead)
    assert [x["kind"] for x in f] == ["did_not_start", "ended_badly"]
    assert "Connection closed" in f[0]["message"] and "from 0% to 100%" in f[1]["message"]
    assert findings("git", True, rows_of(), rows_of(), {"tiny": (ok, None)})[0]["kind"] == "did_not_start"
    # a called tool renamed (same input schema) or gone; an uncalled one removed is no finding
    renamed = snap([dict(SEARCH, name="search_code"), READ])
    f = findings("git", True, rows_of(), rows_of(), {"tiny": (ok, renamed)})
    assert [x["message"] for x in f] == [
        "search, which BASE's trials called, is renamed to search_code (same input schema) in HEAD's tools/list (tiny)"
    ]
    assert findings("git", True, rows_of(), rows_of(), {"tiny": (ok, snap([SEARCH]))}) == []  # read never called
    # a BASE made before server_tools_used: every tool BASE offered counts
    old = [{k: v for k, v in r.items() if k != "server_tools_used"} for r in rows_of()]
    assert findings("git", True, old, rows_of(), {"tiny": (ok, snap([SEARCH]))})[0]["kind"] == "tool_gone"
    # error rate: 0/24 -> 6/24 = 0.25 > 0.2 fails; 4/24 = 0.17 does not; the rise is configurable
    assert [x["kind"] for x in findings("git", True, rows_of(), rows_of(errors=1), same)] == ["server_errors"]
    few = [dict(r, server_tool_errors=1 if i < 4 else 0) for i, r in enumerate(rows_of())]
    assert findings("git", True, rows_of(), few, same) == []
    assert findings("git", True, rows_of(), few, same, error_rise=0.1)[0]["kind"] == "server_errors"
    # the baseline has no server: only the outcome share is checked
    assert findings("baseline", False, rows_of(), rows_of(outcome="timed_out"), {})[0]["kind"] == "ended_badly"


def test_a_finding_fails_whatever_the_interval_and_is_named_first():
    ok = snap([SEARCH, READ])
    base = results(BASE_FAIR, snapshot=ok)
    head = results(BASE_FAIR, snapshot=dict(snap([]), error="boom"))  # fairness unchanged, server dead
    r = compare_runs(base, head, margin=0.5, lenient=True)
    row = r["rows"][0]
    assert row["status"] == "fail" and row["gate"]["verdict"] == "deterministic failure"
    assert text_first_line_of(r) == "git (m@loop): FINDING did_not_start: HEAD's server did not start (tiny): boom"
    md = markdown(r)
    assert md.index("did_not_start") < md.index("| tool |")
    failure = ET.fromstring(junit(r)).find("testsuite/testcase/failure")
    assert failure.get("message").startswith("did_not_start: HEAD's server did not start")


def text_first_line_of(result):
    from mcptrials.gate.compare_report import text_report

    return next(ln for ln in text_report(result).splitlines() if ln.startswith("git"))


def test_a_tool_in_one_run_only_is_refused_even_strict():
    base, head = results(BASE_FAIR), results(BASE_FAIR, tool="git2")
    with pytest.raises(Refused, match="git2 \\(m@loop\\) is only in HEAD"):
        compare_runs(base, head, strict=True)
    with pytest.raises(Refused, match="only in HEAD"):
        compare_runs(base, head, tools=["git2"])
