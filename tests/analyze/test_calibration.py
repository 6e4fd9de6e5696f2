"""The citation labels (analyze.citation_labels: the sample, the labels file and its lock) and
the calibration table (analyze.calibration) on labels_fixture's finished project, by hand."""

import csv
import json

import pytest

import labels_fixture as lf
from mcptrials.analyze.aggregate import aggregate, write_aggregate
from mcptrials.analyze.calibration import calibration_warnings
from mcptrials.analyze.citation_labels import (
    LABELS,
    answer_context,
    draw_sample,
    file_context,
    occurrences,
    save_label,
)
from mcptrials.analyze.lock import verify_lock
from mcptrials.analyze.trial_rows import load_records
from mcptrials.cli import main
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError


@pytest.fixture
def project(tmp_path):
    p = lf.build(tmp_path)
    p["m"] = load_matrix(p["config"])
    p["records"] = load_records(p["m"], p["runs"])
    return p


def label(occ: dict, verdict: str) -> dict:
    return {**{k: occ[k] for k in ("id", "trial", "step", "span", "file", "lines")}, "verdict": verdict, "seed": 7}


def test_the_sample_is_stratified_seeded_and_reproducible(project):
    occs = occurrences(project["records"])
    assert len(occs) == 22 and len({o["id"] for o in occs}) == 22  # 2 tools x 6 trials x 2 citations, less a crash
    a = draw_sample(occs, 5, seed=1)
    # 5 per (model, tool): a stratum never lends its place to another
    assert [(o["trial"]["tool"]) for o in a] == ["baseline"] * 5 + ["git"] * 5
    assert [o["id"] for o in draw_sample(list(reversed(occs)), 5, seed=1)] == [o["id"] for o in a]  # order-free
    b = draw_sample(occs, 5, seed=2)
    assert [o["id"] for o in b] != [o["id"] for o in a]  # another seed, another sample
    # a stratum's draw does not depend on the others': git's five are the same without baseline's
    only_git = draw_sample([o for o in occs if o["trial"]["tool"] == "git"], 5, seed=1)
    assert [o["id"] for o in only_git] == [o["id"] for o in a[5:]]
    assert len(draw_sample(occs, 50, seed=1)) == 22  # fewer than asked: all of them


def test_the_contexts_shown(project):
    ctx = answer_context("Intro line.\nThe helper is in src/util.py:1. Then more. Next line\n", [29, 42])
    assert ctx == {"before": "The helper is in ", "cited": "src/util.py:1", "after": "."}
    ctx = answer_context("First. See <b>a.py:3</b> then", [14, 20])  # after the previous full stop
    assert ctx == {"before": "See <b>", "cited": "a.py:3", "after": "</b> then"}
    assert answer_context("x.py:1 is it", [0, 6])["before"] == ""
    code = file_context(["a", "b", "c", "d", "e", "f"], [3], context=1)
    assert code == {"first": 2, "rows": [[2, "b", False], [3, "c", True], [4, "d", False]]}
    assert file_context(None, [3]) == {"first": None, "rows": []}


def test_calibration_by_hand_and_the_lock(project):
    occs = {
        (o["trial"]["tool"], o["trial"]["scenario"], o["trial"]["trial"], o["lines"][0]): o
        for o in occurrences(project["records"])
    }
    locked = project["locked"]
    # baseline: grader 1 (verified), 1, 0 (undetermined); reader correct, wrong line, correct; one can't tell
    save_label(locked, label(occs["baseline", "s1", 1, 1], "correct"), "first session")
    save_label(locked, label(occs["baseline", "s1", 2, 1], "wrong line"), None)
    save_label(locked, label(occs["baseline", "s2", 1, 3], "correct"), None)
    save_label(locked, label(occs["baseline", "s3", 1, 3], "can't tell"), None)
    # git: grader 1, 0; reader correct, wrong file: both agree
    save_label(locked, label(occs["git", "s1", 1, 1], "correct"), None)
    save_label(locked, label(occs["git", "s1", 1, 3], "wrong file"), None)
    assert verify_lock(locked) == []  # pinned by its own lockfile; held-out.lock does not list it
    history = json.loads((locked / "citation_labels.lock").read_text())["history"]
    assert [h["reason"] for h in history] == ["first session"]  # one entry per session
    cal = aggregate(project["m"], project["runs"])["calibration"]
    rows = {r["tool"]: r for r in cal["rows"]}
    b = rows["baseline"]
    assert (b["n_citations"], b["n_labelled"], b["n_cant_tell"]) == (12, 3, 1)
    assert b["agreement"] == pytest.approx(1 / 3) and b["raw_verified_rate"] == 0.5
    # rectifier (reader - grader) = 0, -1, 1: mean 0, so PPI = 0.5 + 0 = 0.5;
    # se = sqrt((12 * 0.25 / 11) / 12 + 1 / 3) = sqrt(0.022727 + 0.333333) = 0.596708: the interval clips to [0, 1]
    assert b["ppi_verified_rate"] == pytest.approx(0.5) and (b["ppi_lo"], b["ppi_hi"]) == (0.0, 1.0)
    g = rows["git"]
    assert (g["n_citations"], g["n_labelled"], g["agreement"], g["ppi_verified_rate"]) == (10, 2, 1.0, 0.5)
    assert cal["seeds"] == [7] and cal["n_stale"] == 0
    assert len(cal["warnings"]) == 2
    assert "reference / baseline" in cal["warnings"][0] and "0.33 of 3" in cal["warnings"][0]
    assert "reads baseline's answers worse than git's" in cal["warnings"][1]
    # the CSV beside the tables
    paths = write_aggregate({**aggregate(project["m"], project["runs"])}, project["runs"].parent / "aggregate")
    table = list(csv.DictReader(open(paths["calibration"])))
    assert [(r["tool"], r["n_labelled"]) for r in table] == [("baseline", "3"), ("git", "2")]
    # a hand edit is drift: refused by the aggregate and by verify-lock alike
    data = json.loads((locked / LABELS).read_text())
    data["labels"][0]["verdict"] = "wrong file"
    (locked / LABELS).write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="modified outside `mcptrials label`"):
        aggregate(project["m"], project["runs"])
    assert [p["kind"] for p in verify_lock(locked)] == ["labels"]
    assert main(["label", "--config", str(project["config"]), "--repin", "--reason", "fixed a label by hand"]) == 0
    assert verify_lock(locked) == [] and aggregate(project["m"], project["runs"])["calibration"]["rows"]


def test_without_labels_nothing_changes(project):
    result = aggregate(project["m"], project["runs"])
    assert result["calibration"] is None
    out = project["runs"].parent / "aggregate"
    (out).mkdir()
    (out / "citation_calibration.csv").write_text("stale")
    assert "calibration" not in write_aggregate(result, out)
    assert not (out / "citation_calibration.csv").exists()


def test_warnings_thresholds():
    row = {"model": "m", "n_labelled": 10}
    assert calibration_warnings([{**row, "tool": "a", "agreement": 0.9}, {**row, "tool": "b", "agreement": 1.0}]) == []
    got = calibration_warnings([{**row, "tool": "a", "agreement": 0.89}, {**row, "tool": "b", "agreement": 1.0}])
    assert len(got) == 2 and "m / a" in got[0] and "reads a's answers worse than b's" in got[1]


def test_a_bad_verdict_is_refused(project):
    occ = occurrences(project["records"])[0]
    with pytest.raises(ConfigError, match="one of correct"):
        save_label(project["locked"], label(occ, "maybe"), None)
