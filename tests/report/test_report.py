"""mcptrials report on the hand-made run of tests/runs_fixture.py: the files, the headline
table, the reference labels, the trial links, escaping, no network references, and the
held-out warning."""

import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from mcptrials.cli import main

import runs_fixture as fx


class Links(HTMLParser):
    """Every src/href value, and the text of each table id."""

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href") and v is not None:
                self.refs.append((tag, k, v))
            if k == "id":
                self.ids.add(v)


def parse(path: Path) -> Links:
    p = Links()
    p.feed(path.read_text())
    return p


NO_ANCHOR = {
    "schema": "mcptrials/heldout/2",
    "anchor": None,
    "n": 0,
    "rho": None,
    "reason": "no held-out anchor for this run: the config names no `locked:` folder",
}


ANCHOR_LOCK = "this config's lockfile"  # run_report puts the sha256 of the fixture's held-out.lock here


def anchored(rho, lockfile=ANCHOR_LOCK) -> dict:
    """The held-out stage's agreement with an anchor (no threshold, no verdict: the report decides)."""
    return {
        "schema": "mcptrials/heldout/2",
        "anchor": "locked",
        "n": 3,
        "rho": rho,
        "lo": -0.5,
        "hi": 1.0,
        "p": 0.3,
        "method": "scipy.stats.spearmanr; percentile bootstrap over pairs, 2000 resamples, seed 0",
        "judge": {"provider": "reference"},
        "judge_settings_hash": "d" * 64,
        "lockfile_sha256": lockfile,
        "items": [{"id": "t1", "scenario": "s1", "gold": 0.9, "judged": 0.8}],
        "usage": {"input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
    }


def write_heldout(d: Path, agreement: dict, lockfile="9" * 64) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "agreement.json").write_text(json.dumps(agreement))
    if agreement.get("anchor", "locked") is not None:
        (d / "lock_verified.json").write_text(
            json.dumps(
                {"locked": "locked", "lockfile_sha256": lockfile, "files": {"gold.json": "0" * 64}, "problems": []}
            )
        )
    return d / "agreement.json"


def run_report(tmp: Path, agreement: dict | None, **config):
    """aggregate + report of the fixture run; returns (exit code of report, report folder)."""
    cfg, runs = fx.build(tmp, **config)
    agg, out = tmp / "aggregate", tmp / "report"
    assert main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(agg)]) == 0
    lockfile = tmp / "locked" / "held-out.lock"
    if agreement is not None and agreement.get("lockfile_sha256") == ANCHOR_LOCK and lockfile.is_file():
        # computed on this config's anchor: the agreement and the verified lock name its lockfile
        sha = hashlib.sha256(lockfile.read_bytes()).hexdigest()
        heldout = write_heldout(tmp / "heldout", dict(agreement, lockfile_sha256=sha), lockfile=sha)
    elif agreement is not None:
        heldout = write_heldout(tmp / "heldout", agreement)
    else:
        heldout = tmp / "heldout" / "agreement.json"
    code = main(
        [
            "report",
            "--config",
            str(cfg),
            "--aggregate",
            str(agg),
            "--heldout",
            str(heldout),
            "--runs",
            str(runs),
            "--out-dir",
            str(out),
        ]
    )
    return code, out


def make_report(tmp: Path, rho: float | None = 0.5, **config):
    code, out = run_report(tmp, None if rho is None else anchored(rho), **config)
    assert code == 0
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return make_report(tmp_path_factory.mktemp("rep"))


def test_files_exist(report):
    assert (report / "index.html").stat().st_size > 0
    assert (report / "report.md").stat().st_size > 0
    pages = list((report / "trials").rglob("*.html"))
    assert len(pages) == 24
    assert (report / "trials/reference/git/s2/2.html").is_file()


def test_headline_table(report):
    html = (report / "index.html").read_text()
    ids = parse(report / "index.html").ids
    assert {"headline-reference", "headline-sonnet"} <= ids
    table = html[html.index('id="headline-reference"') :]
    table = table[: table.index("</table>")]
    assert "Δ vs baseline [95% CI]" in table and "pass^2" in table
    assert "+0.091" in table  # the paired difference of test_aggregate, rounded
    assert "within noise" in table
    # the margin beside the verdicts (the config schema's default `margin:`), the rule under the headline
    assert "verdict (margin ±0.05)" in table
    assert "Verdicts: margin ±0.05 (the config&#x27;s `margin:`" in html
    assert "no practical difference when it lies within ±0.05" in html
    md = (report / "report.md").read_text()
    assert "| tool | fairness [95% CI] | Δ vs baseline [95% CI] |" in md
    assert "| git | 0.573 [" in md


def test_reference_labels(report):
    for name in ("index.html", "report.md"):
        text = (report / name).read_text()
        assert "reference (deterministic agent, no language model)" in text
        assert "reference (deterministic judge" in text
    trial = (report / "trials/reference/git/s1/1.html").read_text()
    assert "reference (deterministic agent, no language model)" in trial


def test_every_link_resolves(report):
    index = parse(report / "index.html")
    trial_links = [v.partition("#")[0] for tag, k, v in index.refs if tag == "a" and v.startswith("trials/")]
    assert len(set(trial_links)) == 24  # every trial; the patterns and feedback sections link some again
    for v in trial_links:
        assert (report / unquote(v)).is_file(), v
    page = report / "trials/sonnet/git/s2/2.html"
    back = [v for tag, k, v in parse(page).refs if tag == "a"]
    assert back and all((page.parent / unquote(v)).resolve().is_file() for v in back)
    md = (report / "report.md").read_text()
    for v in re.findall(r"\]\(([^)]+)\)", md):
        assert (report / unquote(v)).is_file(), v  # trial pages and plots/*.png


def test_no_network_references(report):
    for path in [report / "index.html", *sorted((report / "trials").rglob("*.html"))]:
        for tag, k, v in parse(path).refs:
            assert not re.match(r"\s*(https?:)?//", v, re.I), (path, tag, k, v)
        assert "@import" not in path.read_text()
    imgs = [v for tag, k, v in parse(report / "index.html").refs if tag == "img"]
    assert len(imgs) == 5 and all(v.startswith("data:image/png;base64,") for v in imgs)


def test_transcript_text_is_escaped(report):
    page = (report / "trials/reference/git/s1/1.html").read_text()
    assert "<script>" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<details>" in page  # the 3,000-character tool result is folded
    assert "&lt;i&gt;" in (report / "index.html").read_text()  # scenario titles too


def test_trial_page_has_scores_and_judge(report):
    page = (report / "trials/reference/git/s2/2.html").read_text()
    assert "server_crashed" in page and "FAIL" in page
    assert "scored 0: the trial did not complete" in page
    assert "connection closed" in page  # the error event
    # and the server's own last words, escaped
    words = page[page.index('id="server-stderr"') :]
    assert "KeyError: &#x27;GIT_DIR&#x27; &lt;b&gt;" in words[: words.index("</pre>")]
    assert 'id="server-stderr"' not in ok_page(report)
    ok = (report / "trials/reference/git/s1/1.html").read_text()
    assert "0.681 = 0.10×keyword 1.000" in ok and "0.20×efficiency 0.417" in ok
    assert "map_quality" in ok and "repeat 2: key point" in ok


def ok_page(report):
    return (report / "trials/reference/git/s1/1.html").read_text()


def test_low_heldout_rho_warns_at_the_top(report):
    html = (report / "index.html").read_text()
    warn = html.index("Held-out judge agreement rho = 0.500 (n=3) is below judge.threshold 0.85")
    assert warn < html.index('id="headline-reference"')
    # the same line says the judge is the deterministic stand-in, and what it would mean with a model judge
    line = html[warn : html.index("</p>", warn)]
    assert "the deterministic reference judge" in line and "with a model judge the same warning would mean" in line
    assert "BELOW the threshold" in html
    assert "verified: 1 file(s) match the lockfile" in html
    assert 'id="heldout-items"' in html and "percentile bootstrap over pairs" in html
    assert "against gold of the anchor locked; judge.threshold 0.85" in html


def test_the_answer_comes_before_the_method(report):
    html = (report / "index.html").read_text()
    table = html.index('id="headline-reference"')
    method = html.index("Fairness = 0.10 × keyword")
    assert table < method
    assert html.rindex('<details class="method"><summary>How these figures are computed</summary>', 0, method) > table
    assert "Rank: only the tools better than the baseline" in html


def test_flags_and_sections(report):
    html = (report / "index.html").read_text()
    assert "ready for the regression suite" in html
    assert "likely a defect in the task or its grader" in html
    assert "the smallest difference this run can detect is" in html
    for section in ("errors-table", "profile-table", "judge-criteria", "adoption-table", "identity-table"):
        assert f'id="{section}"' in html


def test_passing_heldout_has_no_warning_and_missing_one_warns(tmp_path):
    ok = make_report(tmp_path / "ok", rho=0.9)
    assert 'class="warning"' not in (ok / "index.html").read_text()
    missing = make_report(tmp_path / "missing", rho=None)
    text = (missing / "index.html").read_text()
    assert "held-out agreement was not computed" in text and "lock was not verified" in text


JUDGE = {"provider": "reference", "repeats": 2}


def test_a_model_judge_below_the_threshold_is_not_trusted():
    from mcptrials.report.heldout import heldout_state

    agreement = {"anchor": "locked", "rho": 0.5, "n": 9}
    model = heldout_state(agreement, None, 0.85, False, judge_provider="anthropic")["warnings"][0]
    assert (
        model == "Held-out judge agreement rho = 0.500 (n=9) is below judge.threshold 0.85: the judge's quality "
        "scores may not be trusted."
    )
    ref = heldout_state(agreement, None, 0.85, False, judge_provider="reference")["warnings"][0]
    assert ref.startswith("Held-out judge agreement rho = 0.500 (n=9) is below judge.threshold 0.85. This run's judge")


def test_the_verdict_uses_the_configs_threshold(tmp_path):
    # the same agreement (rho 0.8): 0.8 >= 0.75 passes; 0.8 < 0.85 (the schema's default) does not
    ok = make_report(tmp_path / "t075", rho=0.8, judge=dict(JUDGE, threshold=0.75))
    html = (ok / "index.html").read_text()
    assert "judge.threshold 0.75: passes" in html and 'class="warning"' not in html
    low = make_report(tmp_path / "t085", rho=0.8)
    assert "judge.threshold 0.85: BELOW the threshold" in (low / "index.html").read_text()


def test_the_old_agreement_shape_is_judged_by_the_config_too(tmp_path):
    # mcptrials/heldout/1 carried its own threshold and verdict: the config's threshold wins
    old = dict(anchored(0.8), schema="mcptrials/heldout/1", threshold=0.5, passes=True)
    del old["anchor"]
    code, out = run_report(tmp_path, old)
    assert code == 0 and "judge.threshold 0.85: BELOW the threshold" in (out / "index.html").read_text()


def test_strict_refuses_the_report_below_the_threshold(tmp_path, capsys):
    code, out = run_report(tmp_path, anchored(0.5), judge=dict(JUDGE, strict=True))
    assert code == 1
    err = capsys.readouterr().err
    assert (
        "the judge agrees with gold at rho 0.500, n=3, below judge.threshold 0.85, and judge.strict is "
        "true: fix the rubric or prompt, or re-grade gold and re-anchor with `mcptrials lock --reason ...`"
    ) in err
    assert not out.exists()  # no report at all, not a stale or partial one


def test_strict_refuses_an_undefined_rho_and_passes_a_good_one(tmp_path, capsys):
    code, out = run_report(tmp_path / "none", anchored(None), judge=dict(JUDGE, strict=True))
    assert code == 1 and not out.exists()
    assert "undefined (rho none, n=3)" in capsys.readouterr().err
    code, out = run_report(tmp_path / "good", anchored(0.9), judge=dict(JUDGE, strict=True))
    assert code == 0 and (out / "index.html").is_file()


def _says_no_anchor(out, reason):
    for name in ("index.html", "report.md"):
        text = (out / name).read_text()
        assert reason in text
        assert "judge.strict does not fail a run without an anchor" in text
        assert "Spearman" not in text and "heldout-items" not in text
        assert "lock was not verified" not in text  # nothing to verify
    assert 'class="warning"' not in (out / "index.html").read_text()


def test_no_anchor_from_the_heldout_stage_says_so_and_strict_does_not_fail(tmp_path):
    code, out = run_report(tmp_path, NO_ANCHOR, judge=dict(JUDGE, strict=True))
    assert code == 0
    _says_no_anchor(out, "no held-out anchor for this run: the config names no `locked:` folder")


def test_a_config_without_anchor_never_quotes_another_configs_agreement(tmp_path):
    # results/heldout/agreement.json left by another config (rho 0.3 over its own anchor): ignored
    code, out = run_report(tmp_path, anchored(0.3), locked=None, judge=dict(JUDGE, strict=True))
    assert code == 0
    _says_no_anchor(out, "no held-out anchor for this run: the config names no `locked:` folder")
    assert "0.300" not in (out / "index.html").read_text().split('id="headline-reference"')[0]
    # a `locked:` folder with no files is no anchor either
    (tmp_path / "empty" / "frozen").mkdir(parents=True)
    code, out = run_report(tmp_path / "empty", anchored(0.3), locked="frozen")
    assert code == 0
    _says_no_anchor(out, "no held-out anchor for this run: its `locked:` folder frozen holds no locked files")


def test_identity_lists_only_the_repos_the_run_uses(tmp_path):
    repos = {"tiny": {"url": "repo", "commit": fx.COMMIT}, "unused": {"url": "elsewhere", "commit": "b" * 40}}
    out = make_report(tmp_path, rho=0.9, models=("reference",), repos=repos)
    html = (out / "index.html").read_text()
    table = html[html.index('id="identity-table"') :]
    table = table[: table.index("</table>")]
    assert "repo tiny" in table and "repo unused" not in table and "elsewhere" not in table


def test_the_report_names_the_interval_and_cost_methods(report):
    html = (report / "index.html").read_text()
    assert "Intervals: 95% logit-transformed t interval" in html
    assert "recomputed from usage with the config&#x27;s pricing (pricing sha256 " in html


def test_an_agreement_on_another_lockfile_is_flagged(tmp_path):
    code, out = run_report(tmp_path, anchored(0.9, lockfile="9" * 64))
    assert code == 0
    html = (out / "index.html").read_text()
    assert "computed on another lockfile than this config&#x27;s anchor" in html
    assert html.index("another lockfile") < html.index('id="headline-reference"')


def test_strict_refuses_when_the_anchored_check_was_not_run(tmp_path, capsys):
    # the config has an anchor but no agreement file: under strict that is a failed check, not a pass
    code, out = run_report(tmp_path, None, judge=dict(JUDGE, strict=True))
    assert code == 1 and not out.exists()
    assert "the held-out agreement was not computed" in capsys.readouterr().err


def test_time_split_into_work_and_server_start_up(report):
    """The headline says which time efficiency compares and shows start-up apart. In the
    fixture a trial's one step records the trial's whole wall time, so work = wall (13.6 s a
    git trial), and each git server took 0.5 s to start (run_meta); the baseline has none."""
    md = (report / "report.md").read_text()
    assert "Efficiency: stats.relative_efficiency of cost and the agent's working time (work_seconds" in md
    assert "| time / trial | work / trial | start-up / trial | trials |" in md
    assert re.search(r"^\| git \|.*\| 13\.6 s \| 13\.6 s \| 0\.500 s \| 6 \(", md, re.M), md[:3000]
    assert re.search(r"^\| baseline \|.*\| 10\.0 s \| 10\.0 s \| – \| 6 \(", md, re.M), md[:3000]
    trial = (report / "trials/reference/git/s1/1.html").read_text()
    assert (
        "the agent&#x27;s work (what efficiency compares)" in trial
        or "the agent's work (what efficiency compares)" in trial
    )


def test_a_never_passed_scenario_with_the_reference_agent_only_says_it_may_need_reasoning(tmp_path):
    """With real models in the run the flag points to the task or its grader; with only the
    reference agent it says the task may need reasoning that agent cannot do."""
    out = make_report(tmp_path, rho=0.9, models=("reference",))
    html = (out / "index.html").read_text()
    summary = json.loads((tmp_path / "aggregate" / "summary.json").read_text())
    assert any(sc["flag"] == "never_passed" for sc in summary["scenarios"])  # the fixture has one
    flags = html[html.index('id="scenario-flags"') :]
    flags = flags[: flags.index("</table>")]
    assert "only the reference agent (no language model) ran" in flags
    assert "likely a defect in the task or its grader" not in flags
