"""`mcptrials import sense-bench BENCH_DIR --vertical NAME`: a small vertical of our own, in
the reference bench's layout (results/<model>/<arm>/<repo>/[run-N/], run_meta.json with or
without `harness`), with streams in the shapes its three agents write (Claude Code's, and
the thinner Codex/Opencode one: no ids, no init, no result text), all written here.

Nothing here comes from the reference bench's files."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import yaml

from matrix_helpers import make_repo
from mcptrials.cli import main
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.importers import sense_verticals as sv
from mcptrials.core.identity import TrialKey
from mcptrials.run.recorded import run_recorded
from mcptrials.run.recorded_streams import SHAPE_THIN, complete
from vertical_fixture import ANSWER, claude_stream, jsonl, run_import, thin_stream, write_vertical


def key(m, model: str, host: str, tool: str, scenario: str = "tiny", trial: int = 1) -> TrialKey:
    """The key of one trial of the imported config (its repo from the scenario)."""
    return TrialKey(model, host, tool, m.scenarios[scenario].repo, scenario, trial)


def test_the_thin_stream_is_completed_and_what_it_lacks_is_said():
    events, info = complete(thin_stream())
    assert info["shape"] == SHAPE_THIN
    assert "an init event (no tools/list, no working directory)" in info["lacks"]
    assert any("own cost" in x for x in info["lacks"]) and any("duration" in x for x in info["lacks"])
    uses = [
        b["id"] for e in events if e["type"] == "assistant" for b in e["message"]["content"] if b["type"] == "tool_use"
    ]
    results = [b["tool_use_id"] for e in events if e["type"] == "user" for b in e["message"]["content"]]
    assert uses == ["recorded-use-1", "recorded-use-2"] and results == uses  # paired in order
    assert len({e["message"]["id"] for e in events if e["type"] == "assistant"}) == 4
    r = events[-1]
    assert r["subtype"] == "success" and r["result"] == ANSWER and r["usage"]["input_tokens"] == 100
    # no final text: an error, never an empty answer taken as one
    r2 = complete(thin_stream(answer=None))[0][-1]
    assert r2["subtype"] == "error_no_final_answer" and r2["is_error"] is True
    # a Claude Code stream is left as it is
    cc = claude_stream()
    assert complete(cc) == (cc, {"shape": "claude-code", "lacks": []})


def test_every_run_is_a_trial_and_what_is_not_says_why(tmp_path):
    doc, out, commit = run_import(tmp_path)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["tools"] == {
        "baseline": {"transport": "none"},
        "sense": {
            "transport": "recorded",
            "source": "the reference bench's verticals/mini/results/<model>/sense (recorded runs only)",
        },
    }
    assert cfg["hosts"] == {"claude-code": {"kind": "loop"}, "codex": {"kind": "loop"}}
    assert cfg["models"]["claude-x-1"] == {
        "provider": "recorded",
        "format": "claude-code-stream-json",
        "path": "recordings/claude-x-1/{tool}/{scenario}/{trial}/transcript.json",
        "model": "claude-x-1",
        "host": "claude-code",
    }
    assert cfg["models"]["gpt-z"]["host"] == "codex" and cfg["trials"] == 2
    assert cfg["repos"] == {"tiny": {"url": str(tmp_path / "repo"), "commit": commit}}
    trials = sorted((r["model"], r["arm"], r["trial"]) for r in doc["runs"])
    assert trials == [
        ("claude-x-1", "baseline", 1),
        ("claude-x-1", "baseline", 2),
        ("claude-x-1", "sense", 1),
        ("claude-x-1", "sense", 2),
        ("gpt-z", "baseline", 1),
        ("gpt-z", "sense", 1),
    ]
    why = {x["path"]: x["reason"] for x in doc["left_out"]}
    assert "void_reason: rate limited mid-run" in why["verticals/mini/results/gpt-z/sense/tiny/run-2"]
    assert "quarantined" in why["verticals/mini/results/_quarantine"]
    assert "not a scenario of the vertical" in why["verticals/mini/results/gpt-z/sense/tiny.before-fix"]
    assert "not the folder 'v9-sweep'" in why["verticals/mini/results/v9-sweep/sense/tiny/run-1"]
    note = next(n for n in doc["notes"] if n["what"] == "trials without a recording")
    assert note["cells_with_fewer_runs"] == ["gpt-z/baseline/tiny (1 of 2)", "gpt-z/sense/tiny (1 of 2)"]
    # recordings/ links to the bench's files, copies nothing
    link = out / "recordings" / "gpt-z" / "sense" / "tiny" / "1" / "transcript.json"
    assert link.is_symlink() and os.readlink(link).endswith("gpt-z/sense/tiny/run-1/transcript.json")
    assert (out / "recordings" / "claude-x-1" / "baseline" / "tiny" / "2" / "judged.json").is_symlink()
    sc = yaml.safe_load((out / "scenarios" / "tiny.yaml").read_text())
    assert sc["gold"][1] == {"id": "app", "match": ["src/app.py"], "group": "dependents", "relation": "calls helper"}
    m = load_matrix(out / "config.yaml")
    assert {(mo, h) for mo, h, *_ in m.cells()} == {("claude-x-1", "claude-code"), ("gpt-z", "codex")}
    assert doc["validation"]["ok"] and doc["validation"]["cells"] == 8


def test_a_thin_recording_converts_with_its_gaps_said(tmp_path):
    _, out, commit = run_import(tmp_path)
    m = load_matrix(out / "config.yaml")
    t, meta = run_recorded(m, key(m, "gpt-z", "codex", "sense"), {"url": "x", "commit": commit}, None)
    assert t["outcome"] == "completed" and t["steps"][0]["answer_text"] == ANSWER
    assert [c["tool"] for c in t["tool_calls"]] == ["sense_graph", "Bash"]
    assert t["tool_calls"][1]["result_text"] == "src/app.py:5"
    assert t["usage"]["input_tokens"] == 100 and t["usage"].get("host_cost_usd") is None
    assert t["wall_seconds"] == 42.0 and "wall_time_seconds" in meta["wall_seconds_from"]
    assert meta["recorded_stream"]["shape"] == SHAPE_THIN and meta["recorded_tools"]["from"] == "unknown"
    assert t["model_id"] == "gpt-z" and t["host"] == "codex"


def test_bad_verticals_and_pins_are_named(tmp_path):
    commit = make_repo(tmp_path / "repo")
    bench = write_vertical(tmp_path / "src", commit, str(tmp_path / "repo"))
    with pytest.raises(ConfigError, match=r"no vertical 'nope'.*use one of: mini, or all"):
        sv.import_vertical(bench, "nope", tmp_path / "o1")
    # a ledger pin that is not the runs' commit, and no mirror: the short commit stays, unresolved
    (bench / "PINNED_COMMITS.json").write_text(json.dumps({"tiny": {"commit": "f" * 40, "url": "u"}}))
    doc = sv.import_vertical(bench, "mini", tmp_path / "o2")
    assert doc["unresolved"] == {
        "tiny": f"short commit {commit[:7]} of the runs, not resolved: PINNED_COMMITS.json "
        f"pins ffffffffffff, not the runs' commit {commit[:7]}; no --mirrors given"
    }
    cfg = yaml.safe_load((tmp_path / "o2" / "config.yaml").read_text())
    assert cfg["repos"]["tiny"]["commit"] == commit[:7]
    # on a mirror: resolved to the full id, and the mirror goes into the config
    mf = tmp_path / "mirrors.yaml"
    mf.write_text(yaml.safe_dump({"mirrors": {"u": str(tmp_path / "repo")}}))
    doc = sv.import_vertical(bench, "mini", tmp_path / "o4", mirrors_file=mf)
    assert doc["unresolved"] == {} and doc["pins"][0]["resolved_by"] == f"mirror {tmp_path / 'repo'}"
    cfg = yaml.safe_load((tmp_path / "o4" / "config.yaml").read_text())
    assert cfg["repos"]["tiny"] == {"url": "u", "commit": commit} and cfg["mirrors"] == {"u": str(tmp_path / "repo")}
    mf.write_text(yaml.safe_dump({"mirrors": {"other": str(tmp_path / "repo")}}))
    doc = sv.import_vertical(bench, "mini", tmp_path / "o5", mirrors_file=mf)
    assert doc["unresolved"]["tiny"].endswith(f"no mirror of u in {mf}")
    # a config with a short commit needs the reason, and recorded models only
    c = yaml.safe_load((tmp_path / "o2" / "config.yaml").read_text())
    del c["repos"]["tiny"]["unresolved"]
    with pytest.raises(ConfigError, match=r"repos\.tiny\.commit: '[0-9a-f]{7}' is a short commit; give the full"):
        load_matrix(tmp_path / "o2" / "config.yaml", overrides=c)
    c = yaml.safe_load((tmp_path / "o2" / "config.yaml").read_text())
    c["models"]["live"] = {"provider": "reference"}
    c["tools"]["sense"] = {"command": "x"}
    with pytest.raises(
        ConfigError, match=r"repos\.tiny\.unresolved: a repository without a checkout.*models\.live tools\.sense"
    ):
        load_matrix(tmp_path / "o2" / "config.yaml", overrides=c)
    docs = sv.import_verticals(bench, "all", tmp_path / "o3", pin_args=[f"tiny={commit},{tmp_path / 'repo'}"])
    assert [d["vertical"] for d in docs] == ["mini"] and (tmp_path / "o3" / "mini" / "config.yaml").is_file()


@pytest.mark.slow
@pytest.mark.parametrize("resolved", [True, False])
def test_the_workflow_grades_every_host_with_recall_per_group(tmp_path, resolved):
    """Issue 23's done-when in small: the import plus snakemake gives a report with both hosts,
    and trials.csv has cited_recall and cited_recall_dependents for every trial; the recorded
    arm has no install and no snapshot. Unresolved (the ledger pins another commit, no mirror):
    no checkout, citations not checked (missing, with the reason), gold recall still graded."""
    from workflow_helpers import copy_workflow, workflow_env
    import subprocess
    import sys

    _, out, commit = run_import(tmp_path)
    if not resolved:
        bench = tmp_path / "src" / "bench"
        (bench / "PINNED_COMMITS.json").write_text(
            json.dumps({"tiny": {"commit": "f" * 40, "url": str(tmp_path / "repo")}})
        )
        assert main(["import", "sense-bench", str(bench), "--vertical", "mini", "--out", str(out)]) == 0
    wd = tmp_path / "run"
    wd.mkdir()
    copy_workflow(wd)
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(out / "config.yaml"), "-j2", "--scheduler", "greedy"]
    r = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, env=workflow_env(wd))
    assert r.returncode == 0, r.stderr[-4000:]
    assert not (wd / "results/snapshots/sense").exists() and not (wd / "results/tools").exists()
    rows = list(csv.DictReader((wd / "results/aggregate/trials.csv").open()))
    assert len(rows) == 8 and {x["host"] for x in rows} == {"claude-code", "codex"}
    done = [x for x in rows if x["missing"] == "False"]
    assert len(done) == 6  # the two codex trials without a recording are missing (not run), not zero
    for x in done:
        # ANSWER pins src/util.py and src/app.py to lines and only names conf/settings.py
        assert (x["cited_recall"], x["cited_recall_dependents"], x["cited_recall_contract"], x["mention_recall"]) == (
            "0.6667",
            "0.5",
            "1.0",
            "1.0",
        ), x
        assert x["keyword_coverage"] == "0.5"  # step 1's part of the answer does not say "helper"; step 2's says "main"
        # the recorded judge: the bench's scores, or not judged (missing) where its file is no judgement
        if (x["model_name"], x["tool"]) == ("gpt-z", "baseline"):
            assert x["quality"] == "" and "no `steps` list" in x["not_judged"], x
        else:
            assert float(x["quality"]) == pytest.approx((0.8 + (0.4 * 0.5 + 0.25) / 0.65) / 2) and x["not_judged"] == ""
        if resolved:
            assert x["citations_not_checked"] == "" and x["citation_grounding"] == "1.0" and x["citations"] == "2", x
        else:
            assert x["citations_not_checked"].startswith(f"short commit {commit[:7]} of the runs, not resolved")
            assert x["citation_grounding"] == x["citations"] == "", x  # missing, never zero
            unjudged = "; quality (not judged)" if x["not_judged"] else ""
            assert x["fairness_without"] == "citation (not checked)" + unjudged and float(x["fairness"]) > 0
    assert (wd / "results/checkouts/tiny/tree").is_dir() is resolved
    # the bench's board beside ours (issue 23 item 5)
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
            str(tmp_path / "src" / "bench"),
        ],
        cwd=wd,
        capture_output=True,
        text=True,
        env=workflow_env(wd),
    )
    assert r.returncode == 0, r.stderr
    means = {x["model"]: x for x in csv.DictReader((wd / "results/sense-board/means.csv").open())}
    assert (
        float(means["claude-x-1"]["bench_mean_delta"]) == 0.0 and float(means["claude-x-1"]["ours_mean_delta"]) == 0.0
    )
    assert means["claude-x-1"]["within_target"] == "True" and means["gpt-z"]["within_target"] == "False"
    assert float(means["gpt-z"]["difference_delta"]) == pytest.approx(-0.3333)
    cells = {(c["model"], c["repo"]): c for c in csv.DictReader((wd / "results/sense-board/board.csv").open())}
    assert cells[("claude-x-1", "tiny")]["reason"] == ""
    why = cells[("gpt-z", "tiny")]["reason"]
    assert "runs we left out" not in why  # its trials 2 have no recording: runs nobody made, not left out
    assert "sense trial 1: gold matching (not pinned in any assistant text by our rule" in why and why.endswith(": cfg")
    assert "| gpt-z | 1 / 1 | +0.33 | +0.00 | -0.33 |" in r.stdout
    for x in rows:
        if x["missing"] == "True":
            assert (
                x["cited_recall"] == ""
                and x["cited_recall_dependents"] == ""
                and x["missing_reason"] == "not_run: no recording"
            )
    report = (wd / "results/report/report.md").read_text()
    assert "codex" in report and "recorded judgements by judge-model-t" in report
    # per-group recall beside the headline
    summary = json.loads((wd / "results/aggregate/summary.json").read_text())
    g = {(v["model"], v["tool"]): v for v in summary["gold_recall"]}
    assert g[("claude-x-1@claude-code", "sense")]["groups"]["dependents"] == {"mean": 0.5, "n": 2}
    assert g[("gpt-z@codex", "baseline")]["n"] == 1 and g[("gpt-z@codex", "baseline")]["cited_recall"] == 0.6667
    assert "Gold recall: the must-find rows, overall and per group" in report and "cited: dependents" in report


@pytest.mark.slow
def test_with_no_repository_reachable_the_recorded_trials_are_graded_and_the_board_reproduced(tmp_path):
    """Issue 32 item 6: the vertical's repository pinned to a full commit at a URL that cannot be
    cloned. The checkout fails (and the run says so, after its report), but the recorded trials
    are converted and graded for everything that needs no repository (cited recall against the
    gold rows, the recorded judge, usage, patterns); only their citation checks are missing,
    named as such in scored.json, trials.csv and the report; the board is the one a checkout gives."""
    from workflow_helpers import copy_workflow, stages_failed_only, workflow_env
    import subprocess
    import sys

    commit = make_repo(tmp_path / "repo")
    nowhere = f"file://{tmp_path}/nowhere/tiny.git"  # a URL (not a local path): the checkout job's to try
    bench = write_vertical(tmp_path / "src", commit, nowhere)
    out = tmp_path / "out"
    assert main(["import", "sense-bench", str(bench), "--vertical", "mini", "--out", str(out)]) == 0
    assert yaml.safe_load((out / "config.yaml").read_text())["repos"] == {"tiny": {"url": nowhere, "commit": commit}}
    wd = tmp_path / "run"
    wd.mkdir()
    copy_workflow(wd)
    cmd = [sys.executable, "-m", "snakemake", "--configfile", str(out / "config.yaml"), "-j2", "--scheduler", "greedy"]
    r = subprocess.run(cmd, cwd=wd, capture_output=True, text=True, env=workflow_env(wd))
    # the failed checkout fails the run, after the report, in the status job only
    assert r.returncode != 0 and stages_failed_only(wd, r), r.stderr[-4000:]
    assert "mcptrials: checkout tiny failed:" in r.stdout + r.stderr
    assert json.loads((wd / "results/checkouts/tiny/checkout.json").read_text())["failed"] is True
    rows = list(csv.DictReader((wd / "results/aggregate/trials.csv").open()))
    assert len(rows) == 8
    done = [x for x in rows if x["missing"] == "False"]
    assert len(done) == 6, [(x["model"], x["tool"], x["trial"], x["missing_reason"]) for x in rows]
    assert {x["missing_reason"] for x in rows if x["missing"] == "True"} == {"not_run: no recording"}
    for x in done:
        assert x["outcome"] == "completed"
        assert (x["cited_recall"], x["cited_recall_dependents"], x["cited_recall_contract"], x["mention_recall"]) == (
            "0.6667",
            "0.5",
            "1.0",
            "1.0",
        ), x
        assert x["keyword_coverage"] == "0.5" and x["tokens_output"] != "" and x["tool_calls"] != ""
        assert x["citations_not_checked"].startswith("checkout failed: repos.tiny.url: cannot clone"), x
        assert x["citation_grounding"] == x["citations"] == x["verified_rate"] == "", x  # missing, never zero
        if (x["model_name"], x["tool"]) != ("gpt-z", "baseline"):
            assert float(x["quality"]) > 0 and x["not_judged"] == ""  # the recorded judge
        assert x["fairness_without"].startswith("citation (not checked)") and float(x["fairness"]) > 0
    scored = json.loads((wd / "results/runs/claude-x-1/claude-code/sense/tiny/tiny/1/scored.json").read_text())
    assert scored["citations_not_checked"].startswith("checkout failed:")
    assert scored["not_graded"] == {"citations": ["grounding", "verification (lenient)", "verification (strict)"]}
    assert scored["citations"]["rates"]["grounded_rate"] is None and scored["gold_recall"]["cited_recall"] == 0.6667
    meta = json.loads((wd / "results/runs/claude-x-1/claude-code/sense/tiny/tiny/1/run_meta.json").read_text())
    assert meta["converted_without"]["checkout"].startswith("checkout failed:") and meta["commit"] == commit
    summary = json.loads((wd / "results/aggregate/summary.json").read_text())
    assert all(t["verdict"] != "did not start" for t in summary["tools"]), summary["tools"]
    assert summary["citation_composition"] == []  # no trial's citations checked: no composition, never zeros
    report = (wd / "results/report/report.md").read_text()
    assert "0 trial(s) could not run because of them" in report
    assert "6 recorded trial(s) were graded without a checkout: their citation checks" in report
    assert "| sense | 0.746 | 0.500 | – (n=0); not checked in 2 of 2 trial(s): no checkout |" in report
    # the board: as with a checkout (the fixture's gpt-z cell differs by the bench's matching, said)
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
        env=workflow_env(wd),
    )
    assert r.returncode == 0, r.stderr
    means = {x["model"]: x for x in csv.DictReader((wd / "results/sense-board/means.csv").open())}
    assert set(means) == {"claude-x-1", "gpt-z"} and means["claude-x-1"]["repos_ours"] == "1"
    for k in ("delta", "deps_delta"):
        assert abs(float(means["claude-x-1"][f"difference_{k}"])) <= 0.05
    assert float(means["gpt-z"]["difference_delta"]) == pytest.approx(-0.3333)
    why = {(c["model"], c["repo"]): c["reason"] for c in csv.DictReader((wd / "results/sense-board/board.csv").open())}
    assert why[("claude-x-1", "tiny")] == "" and why[("gpt-z", "tiny")].endswith(
        "by our rule: the bench's path-compaction oracle or a form): cfg"
    )


def test_the_recorded_judge_reads_the_benchs_judgement(tmp_path):
    from mcptrials.matrix.schema import validate_against
    from mcptrials.judge.recorded import judge_recorded

    _, out, commit = run_import(tmp_path)
    m = load_matrix(out / "config.yaml")
    assert m.config["judge"] == {**m.config["judge"], "provider": "recorded"}
    sc = m.scenarios["tiny"]
    t, _ = run_recorded(m, key(m, "claude-x-1", "claude-code", "sense"), {"url": "x", "commit": commit}, None)
    j = judge_recorded(m, t, sc)
    validate_against("judged.schema.yaml", j, "judged")
    assert j["judge"]["provider"] == "recorded" and j["judge"]["model"] == "judge-model-t"
    assert "v-test" in j["judge"]["note"] and j["recorded"]["scenario_quality"] == 0.7
    s1, s2 = j["steps"]
    # step 1's rubric: map_quality only (weight 1); `relationship` is kept, unweighted
    assert s1["quality_mean"] == pytest.approx(0.8) and {c["name"]: c["weight"] for c in s1["criteria"]} == {
        "map_quality": 1.0,
        "relationship": 0.0,
    }
    # step 2: the bench's default criteria (map_quality 0.40, specificity 0.25)
    assert s2["quality_mean"] == pytest.approx((0.4 * 0.5 + 0.25 * 1.0) / 0.65)
    assert j["quality_mean"] == pytest.approx((s1["quality_mean"] + s2["quality_mean"]) / 2)
    assert j["recorded"]["unweighted"] == ["relationship"]
    # not a judgement, or none at all: not judged, with the reason; never a zero
    t2, _ = run_recorded(m, key(m, "gpt-z", "codex", "baseline"), {"url": "x", "commit": commit}, None)
    j2 = judge_recorded(m, t2, sc)
    validate_against("judged.schema.yaml", j2, "judged")
    assert j2["quality_mean"] is None and "no `steps` list" in j2["not_judged"]
    t3 = dict(t2, cell=dict(t2["cell"], trial=2))
    assert "not found" in judge_recorded(m, t3, sc)["not_judged"]
    # the config's rules
    c = yaml.safe_load((out / "config.yaml").read_text())
    c["models"]["live"] = {"provider": "reference"}
    c["tools"] = {"baseline": {"transport": "none"}}
    with pytest.raises(
        ConfigError,
        match=r"judge\.provider: recorded finds each judgement beside.*models live have none; give judge.path",
    ):
        load_matrix(out / "config.yaml", overrides=c)
    c["judge"]["path"] = "j/{model}/{nope}.json"
    with pytest.raises(ConfigError, match=r"judge\.path: unknown placeholder\(s\) \{nope\}"):
        load_matrix(out / "config.yaml", overrides=c)


def test_the_board_says_why_a_cell_differs(tmp_path):
    """compare-sense-bench --vertical on a hand-made trials.csv: a run we have but could not
    grade, and a row the bench credits from an earlier assistant message (answer scope)."""
    from mcptrials.importers.sense_board import board

    _, out, _ = run_import(tmp_path)
    m = load_matrix(out / "config.yaml")
    vdir = tmp_path / "src" / "bench" / "verticals" / "mini"
    # the bench credits `cfg` on claude-x-1's baseline trial 1; its session pins conf/settings.py:3 in
    # an earlier message than the final answer
    rec = out / "recordings" / "claude-x-1" / "baseline" / "tiny" / "1"
    early = claude_stream()
    early.insert(
        1,
        {
            "type": "assistant",
            "message": {"id": "m0", "content": [{"type": "text", "text": "first look: conf/settings.py:3"}]},
        },
    )
    Path(os.readlink(rec / "transcript.json")).write_text(jsonl(early))
    Path(os.readlink(rec / "scored.json") if (rec / "scored.json").exists() else rec / "scored.json").write_text(
        json.dumps({"gold_recall": {"details": [{"id": i, "cited": True} for i in ("util", "app", "cfg")]}})
    )
    runs = tmp_path / "runs"
    ours = runs / "claude-x-1" / "claude-code" / "baseline" / "tiny" / "tiny" / "1" / "scored.json"
    ours.parent.mkdir(parents=True)
    ours.write_text(
        json.dumps(
            {
                "gold_recall": {
                    "details": [
                        {"id": "util", "cited": True},
                        {"id": "app", "cited": True},
                        {"id": "cfg", "cited": False},
                    ]
                }
            }
        )
    )
    agg = tmp_path / "agg"
    agg.mkdir()
    rows = [
        {
            "model": "claude-x-1@claude-code",
            "host": "claude-code",
            "tool": t,
            "repo": "tiny",
            "scenario": "tiny",
            "trial": n,
            "missing": str(miss),
            "missing_reason": "harness_failed: bad stream" if miss else "",
            "cited_recall": "" if miss else v,
            "cited_recall_dependents": "" if miss else v,
            "passed": "True",
            "cost_usd": "",
        }
        for t, n, v, miss in (
            ("baseline", 1, 0.6667, False),
            ("baseline", 2, 0.6667, True),
            ("sense", 1, 1.0, False),
            ("sense", 2, 1.0, False),
        )
    ]
    with open(agg / "trials.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = board(m, vdir, agg, runs)
    cell = next(c for c in res["cells"] if (c["model"], c["repo"]) == ("claude-x-1", "tiny"))
    assert cell["ours_delta"] == pytest.approx(0.3333) and cell["bench_delta"] == 0.0
    assert "runs we left out: baseline trial 2 (harness_failed: bad stream)" in cell["reason"]
    assert (
        "baseline trial 1: answer scope (pinned in an earlier assistant message, not the final answer): cfg"
        in cell["reason"]
    )
    mean = next(x for x in res["means"] if x["model"] == "claude-x-1")
    assert mean["within_target"] is False and mean["repos_ours"] == 1 and mean["pass^2_sense"] == 1.0


REAL = os.environ.get("MCPTRIALS_SENSE_BENCH")  # opt-in: your copy of the reference bench's bench/ folder


@pytest.mark.skipif(
    not REAL or not (Path(REAL or ".") / "verticals").is_dir(),
    reason="set MCPTRIALS_SENSE_BENCH to a copy of the reference bench's bench/ folder",
)
def test_the_real_verticals_import_and_every_host_parses(tmp_path):
    """Opt-in: the bench's own vertical runs (not committed, never copied): each vertical
    imports and loads, and one run of every host converts with an answer."""
    for doc in sv.import_verticals(REAL, "all", tmp_path):
        m = load_matrix(Path(doc["out"]) / "config.yaml")
        assert doc["validation"]["ok"] and doc["counts"]["runs"] > 0
        for host in sorted({r["host"] for r in doc["runs"]}):
            r = next(x for x in doc["runs"] if x["host"] == host)
            t, meta = run_recorded(
                m,
                key(m, r["model"], host, r["arm"], r["scenario"], r["trial"]),
                {"url": "x", "commit": m.repos[m.scenarios[r["scenario"]].repo]["commit"]},
                None,
            )
            assert t["outcome"] == "completed", (doc["vertical"], host, t.get("outcome_detail"))
            assert t["steps"][0]["answer_text"].strip() and t["tool_calls"]
            assert meta["recorded_stream"]["shape"] == ("claude-code" if host == "claude-code" else SHAPE_THIN)


def test_a_short_commit_several_commits_share_is_settled_by_the_ledger_or_said(tmp_path):
    # saleor's runs name c662d3a, and two commits of its history start with it. Here: empty
    # commits until two share their first 4 hex digits (about 300 on average)
    import subprocess

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    env = dict(
        os.environ,
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
        GIT_AUTHOR_DATE="2026-01-01T00:00:00",
        GIT_COMMITTER_DATE="2026-01-01T00:00:00",
    )
    tree = subprocess.run(
        ["git", "-C", str(repo), "mktree"], input="", capture_output=True, text=True, check=True
    ).stdout.strip()
    seen: dict[str, str] = {}
    for k in range(5000):
        c = subprocess.run(
            ["git", "-C", str(repo), "commit-tree", tree, "-m", str(k)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout.strip()
        if c[:4] in seen:
            first, second = seen[c[:4]], c
            break
        seen[c[:4]] = c
    short = first[:4]
    # the ledger's full id, one of them, settles it
    assert sv.resolve_on_mirror(str(repo), short, hint=second) == (second, None)
    # without one: unresolved, the candidates and the fix said (not "not in the mirror")
    full, why = sv.resolve_on_mirror(str(repo), short)
    assert full is None and why.startswith(f"commit {short} is ambiguous in the mirror")
    assert first[:12] in why and second[:12] in why and "--pin" in why
    # a prefix of one commit resolves; one of none is not in the mirror
    assert sv.resolve_on_mirror(str(repo), first[:12]) == (first, None)
    assert sv.resolve_on_mirror(str(repo), "0123456789ab")[1] == f"commit 0123456789ab is not in the mirror {repo}"
