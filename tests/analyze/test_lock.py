"""The held-out anchor: lock, verify (modified, missing, unlisted files), history, and the
judge's Spearman agreement with gold on a small hand-made locked set."""

import json
from pathlib import Path
import shutil
import subprocess

import pytest
import yaml

from mcptrials.cli import main
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.analyze.lock import (
    LOCKFILE,
    git_untracked,
    LockError,
    heldout_agreement,
    read_lockfile,
    verify_lock,
    write_lock,
)

SCENARIO = {
    "repo": "demo",
    "split": "held-out",
    "steps": [
        {
            "name": "explain",
            "prompt": "How does the loader work?",
            "key_points": ["reads config.yaml", "caches the result", "retries three times"],
            "rubric": {"criteria": [{"name": "coverage", "weight": 1, "question": "Does it state the key points?"}]},
        }
    ],
}

# Reference-judge quality of each answer = the share of the 3 key points it states.
ANSWERS = {
    "none": "It loads things.",  # 0
    "one": "It reads config.yaml.",  # 1/3
    "two": "It reads config.yaml and caches the result.",  # 2/3
    "all": "It reads config.yaml, caches the result and retries three times.",  # 1
}


def make_set(root, gold):
    (root / "transcripts").mkdir(parents=True)
    (root / "scenarios").mkdir()
    (root / "scenarios" / "loader.yaml").write_text(yaml.safe_dump(SCENARIO))
    for tid, answer in ANSWERS.items():
        t = {
            "schema": "mcptrials/transcript/1",
            "cell": {"model": "m", "tool": "t", "repo": "demo", "scenario": "loader", "trial": 1},
            "outcome": "completed",
            "tool_calls": [],
            "steps": [{"index": 0, "name": "explain", "prompt": "p", "answer_text": answer}],
        }
        (root / "transcripts" / f"{tid}.json").write_text(json.dumps(t))
    (root / "gold.json").write_text(
        json.dumps(
            {
                "graded_by": "tester",
                "graded_at": "2026-01-01",
                "items": {tid: {"scenario": "loader", "quality": q, "notes": "hand-graded"} for tid, q in gold.items()},
            }
        )
    )
    return root


@pytest.fixture
def locked(tmp_path):
    root = make_set(tmp_path / "locked", {"none": 0.1, "one": 0.4, "two": 0.5, "all": 0.9})
    write_lock(root, "first anchor", who="alice")
    return root


def test_lock_then_verify_passes(locked, tmp_path):
    assert verify_lock(locked) == []
    data = read_lockfile(locked)
    assert set(data["files"]) == {
        "gold.json",
        "scenarios/loader.yaml",
        "transcripts/all.json",
        "transcripts/none.json",
        "transcripts/one.json",
        "transcripts/two.json",
    }
    assert data["files"]["gold.json"] == file_sha256(locked / "gold.json")
    out = tmp_path / "results" / "lock" / "verified.json"
    assert main(["verify-lock", "--locked", str(locked), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["files"] == data["files"]


def test_one_byte_edit_fails_naming_the_file(locked, tmp_path, capsys):
    path = locked / "transcripts" / "two.json"
    before = file_sha256(path)
    raw = bytearray(path.read_bytes())
    raw[-2] = ord(" ") if raw[-2] != ord(" ") else ord("\t")
    path.write_bytes(bytes(raw))
    after = file_sha256(path)
    [p] = verify_lock(locked)
    assert (p["kind"], p["path"], p["expected"], p["actual"]) == ("modified", str(path), before, after)

    out = tmp_path / "verified.json"
    out.write_text("{}")  # a stale pass from an earlier run
    assert main(["verify-lock", "--locked", str(locked), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and before in err and after in err and "mcptrials lock --reason" in err
    assert not out.exists()


def test_unlisted_and_missing_files_fail(locked):
    (locked / "transcripts" / "extra.json").write_text("{}")
    (locked / "scenarios" / "loader.yaml").unlink()
    problems = {p["kind"]: p for p in verify_lock(locked)}
    assert set(problems) == {"unlisted", "missing"}
    assert problems["unlisted"]["path"].endswith("transcripts/extra.json") and problems["unlisted"]["expected"] is None
    assert problems["missing"]["path"].endswith("scenarios/loader.yaml") and problems["missing"]["actual"] is None


def test_missing_lockfile_fails(locked):
    (locked / LOCKFILE).unlink()
    [p] = verify_lock(locked)
    assert p["kind"] == "lockfile" and "mcptrials lock --reason" in p["message"]


def test_relock_appends_history(locked):
    path = locked / "gold.json"
    gold = json.loads(path.read_text())
    gold["items"]["two"]["quality"] = 0.6
    path.write_text(json.dumps(gold))
    assert verify_lock(locked)[0]["kind"] == "modified"
    assert main(["lock", "--locked", str(locked), "--reason", "regraded two", "--who", "bob"]) == 0
    assert verify_lock(locked) == []
    history = read_lockfile(locked)["history"]
    assert [(h["who"], h["reason"]) for h in history] == [("alice", "first anchor"), ("bob", "regraded two")]
    assert history[1]["when"].endswith("+00:00")  # UTC, ISO 8601


def test_lock_refuses_a_broken_set(locked):
    (locked / "transcripts" / "ungraded.json").write_text("{}")
    with pytest.raises(ConfigError, match="no gold score for transcript"):
        write_lock(locked, "oops", who="x")
    with pytest.raises(ConfigError, match="--reason is required"):
        write_lock(locked, "  ", who="x")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_lock_refuses_git_ignored_files(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.bak\n")
    root = make_set(tmp_path / "locked", {tid: 0.5 for tid in ANSWERS})
    (root / "gold.json.bak").write_text("backup")
    with pytest.raises(ConfigError, match=r"git ignores .*gold\.json\.bak"):
        write_lock(root, "anchor", who="x")
    (root / "gold.json.bak").unlink()
    assert git_untracked(root) == ["gold.json", "scenarios/loader.yaml"] + [
        f"transcripts/{t}.json" for t in sorted(ANSWERS)
    ]


def test_agreement_hand_computed(locked):
    res = heldout_agreement(locked, {"provider": "reference"})
    judged = {i["id"]: i["judged"] for i in res["items"]}
    assert judged == {"none": 0.0, "one": pytest.approx(1 / 3), "two": pytest.approx(2 / 3), "all": 1.0}
    # same order as gold (0.1 < 0.4 < 0.5 < 0.9): rho = 1
    assert res["rho"] == pytest.approx(1.0) and res["n"] == 4
    assert res["lo"] is not None and res["lo"] <= res["rho"] <= res["hi"]
    assert res["judge"]["provider"] == "reference"
    # the verdict against judge.threshold is the report's: nothing here depends on it
    assert "passes" not in res and "threshold" not in res


def test_heldout_uses_the_configs_own_anchor_and_never_judges_the_threshold(tmp_path, capsys):
    # gold ranks 2,1,3,4 against judged ranks 1,2,3,4: d = (1,-1,0,0), rho = 1 - 6*2/(4*15) = 0.8
    root = make_set(tmp_path / "locked", {"none": 0.4, "one": 0.1, "two": 0.5, "all": 0.9})
    write_lock(root, "anchor", who="x")
    base = {
        "tools": {"baseline": {"transport": "none"}},
        "repos": {"demo": {"url": "./r", "commit": "0" * 40}},
        "scenarios": "locked/scenarios/*.yaml",
        "splits": ["held-out"],
        "models": {"ref": {"provider": "reference"}},
    }
    out = tmp_path / "agreement.json"
    records = []
    for judge in ({"provider": "reference"}, {"provider": "reference", "threshold": 0.95, "strict": True}):
        cfg = tmp_path / "config.yaml"
        cfg.write_text(yaml.safe_dump(dict(base, locked="locked", judge=judge)))
        assert main(["heldout", "--config", str(cfg), "--out", str(out)]) == 0  # strict fails the report, not this
        records.append(json.loads(out.read_text()))
    assert records[0]["rho"] == pytest.approx(0.8)
    assert Path(records[0]["anchor"]).resolve() == root.resolve()  # the config's folder, named relatively
    assert records[0] == records[1]  # threshold and strict change nothing the check computes

    # a config naming no anchor: the record says so, and why; nothing is judged
    cfg.write_text(yaml.safe_dump(dict(base, judge={"provider": "reference"})))
    assert main(["heldout", "--config", str(cfg), "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["anchor"] is None and rec["rho"] is None and rec["n"] == 0
    assert rec["reason"] == "no held-out anchor for this run: config.yaml names no `locked:` folder"

    # an anchor that freezes none of the config's held-out scenarios is no anchor for it
    other = tmp_path / "scenarios"
    other.mkdir()
    (other / "elsewhere.yaml").write_text((root / "scenarios" / "loader.yaml").read_text())
    cfg.write_text(yaml.safe_dump(dict(base, locked="locked", scenarios="scenarios/*.yaml")))
    assert main(["heldout", "--config", str(cfg), "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert (
        rec["anchor"] is None
        and "holds no frozen transcript of this config's held-out scenarios (elsewhere)" in rec["reason"]
    )


def test_agreement_refuses_a_drifted_set(locked):
    (locked / "gold.json").write_text((locked / "gold.json").read_text() + " ")
    with pytest.raises(LockError, match="gold.json: modified"):
        heldout_agreement(locked, {"provider": "reference"})
