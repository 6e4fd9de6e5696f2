"""Staleness covers a server kept in the project (issue 32, item 5): `mcptrials compare` and
`mcptrials replay` refuse (exit 2) results made from other contents of the project files a
tool's entry names, as `compare` refuses results made for another tool entry.

- compare: summary.json (identity.tools.<tool>.project_files) and each tools.json
  (`project_files`) record the sha256 of each file; an edit of `server/main.py` after the run
  is named, with the fix (rerun snakemake). Results made before the field was recorded are
  compared, with a note that the files were not checked.
- replay: HEAD's index (index.json `project_files`) built from other contents is refused;
  snakemake rebuilds the index of an edited server (the `files:tools.*` row reaches `index`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

import runs_fixture as fx
from matrix_helpers import BASE_PYTHON, FAULTY_SERVER, write_matrix
from mcptrials.cli import main

OWN = {"command": "python3", "args": ["{project}/server/main.py"], "read_only": ["{project}/server"]}


def finished_project(wd: Path, monkeypatch) -> Path:
    """The runs fixture with its `git` tool a server kept in the project, aggregated there."""
    cfg, runs = fx.build(wd, models=("reference",))
    (wd / "server").mkdir()
    (wd / "server" / "main.py").write_text("print('the good server')\n")
    (wd / "server" / "util.py").write_text("X = 1\n")
    data = yaml.safe_load(cfg.read_text())
    data["tools"]["git"] = OWN
    cfg.write_text(yaml.safe_dump(data, sort_keys=False))
    monkeypatch.chdir(wd)
    assert (
        main(["aggregate", "--config", "config.yaml", "--runs", "results/runs", "--out-dir", "results/aggregate"]) == 0
    )
    return wd


def test_compare_refuses_results_made_from_other_project_files(tmp_path, monkeypatch, capsys):
    wd = finished_project(tmp_path / "p", monkeypatch)
    good = shutil.copytree(wd / "results", tmp_path / "GOOD")
    assert main(["compare", str(good), "results", "--tool", "git"]) == 0  # the same files: compared
    assert "non-inferior" in capsys.readouterr().out

    (wd / "server" / "main.py").write_text("raise SystemExit('broken')\n")  # edited, not rerun
    (wd / "server" / "new.py").write_text("Y = 2\n")
    md = tmp_path / "comment.md"
    assert main(["compare", str(good), "results", "--tool", "git", "--markdown", str(md)]) == 2
    err = capsys.readouterr().err
    assert "HEAD's results are stale for its config" in err
    assert "summary.json was made with other contents of the project files of tools.git (server/main.py changed" in err
    assert "server/new.py is new" in err and "util.py" not in err.split("tools.git (")[1].split(")")[0]
    assert "rerun snakemake in" in err and str(wd) in err
    assert "not compared" in md.read_text()

    # its snapshot records them too (as make_snapshot does): a stale tools.json is named as well
    ident = json.loads((wd / "results/aggregate/summary.json").read_text())["identity"]
    recorded = ident["tools"]["git"]["project_files"]
    assert set(recorded) == {"server/main.py", "server/util.py"}
    snap = wd / "results/snapshots/git/tiny/tools.json"
    snap.parent.mkdir(parents=True)
    snap.write_text(json.dumps({"tool": "git", "tools": [], "project_files": recorded}))
    assert main(["compare", str(good), "results", "--tool", "git"]) == 2
    assert (
        "snapshots/git/tiny/tools.json was made with other contents of the project files of tools.git"
        in capsys.readouterr().err
    )


def test_compare_notes_results_older_than_the_record(tmp_path, monkeypatch, capsys):
    """Results aggregated before `project_files` was recorded cannot be checked for them: they
    are compared, and a note says the files were not checked and what records them."""
    wd = finished_project(tmp_path / "p", monkeypatch)
    path = wd / "results/aggregate/summary.json"
    summary = json.loads(path.read_text())
    del summary["identity"]["tools"]["git"]["project_files"]
    path.write_text(json.dumps(summary))
    good = shutil.copytree(wd / "results", tmp_path / "GOOD")
    (wd / "server" / "main.py").write_text("raise SystemExit('broken')\n")
    assert main(["compare", str(good), "results", "--tool", "git"]) == 0
    err = capsys.readouterr().err
    assert "note: HEAD's results record no sha256 of the project files of tools.git (server/main.py" in err


# --- replay ------------------------------------------------------------------------------


def base_results(folder: Path, commit: str) -> Path:
    """A BASE with one recorded trial of `mine` that called its server's `echo`."""
    d = folder / "runs" / "reference" / "loop" / "mine" / "tiny" / "find-helper" / "1"
    d.mkdir(parents=True)
    cell = {"model": "reference", "host": "loop", "tool": "mine", "repo": "tiny", "scenario": "find-helper", "trial": 1}
    call = {
        "source": "mcp",
        "tool": "echo",
        "arguments": {"text": "hi"},
        "result_text": "hi",
        "is_error": False,
        "step": 0,
        "latency_ms": 1.0,
    }
    (d / "transcript.json").write_text(json.dumps({"cell": cell, "tool_calls": [call]}))
    (d / "run_meta.json").write_text(json.dumps({"commit": commit}))
    return folder


def test_replay_refuses_an_index_built_from_other_project_files(tmp_path, monkeypatch, capsys):
    from mcptrials.core.records import write_json
    from mcptrials.dag.rerun import rule_params
    from mcptrials.matrix.config import load_matrix
    from mcptrials.prepare.checkout import checkout
    from mcptrials.prepare.index import index_repo

    wd = tmp_path / "p"
    (wd / "server").mkdir(parents=True)
    shutil.copy(FAULTY_SERVER, wd / "server" / "main.py")
    tool = {
        "command": BASE_PYTHON,
        "args": ["{project}/server/main.py", "ok"],
        "read_only": ["{project}/server"],
        "index": {"command": "sh", "args": ["-c", "echo built > {index}/built.txt"]},
    }
    write_matrix(wd, tools={"mine": tool})
    monkeypatch.chdir(wd)
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(wd / ".tools"))
    m = load_matrix(wd / "config.yaml")
    base = base_results(tmp_path / "BASE", m.repos["tiny"]["commit"])
    # HEAD's checkout and index, as its stages made them
    co = wd / "results/checkouts/tiny/checkout.json"
    write_json(co, checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], co.parent))
    with open(tmp_path / "index.log", "w") as log:
        index_repo(m, "mine", co, None, wd / "results/index/mine/tiny", log=log)
    assert main(["replay", str(base), "--config", "config.yaml"]) == 0  # the same files: replayed
    before = rule_params(load_matrix(wd / "config.yaml"))
    capsys.readouterr()

    with open(wd / "server" / "main.py", "a") as f:
        f.write("# an edit of the server\n")
    assert main(["replay", str(base), "--config", "config.yaml"]) == 2
    err = capsys.readouterr().err
    assert "results/index/mine/tiny/index.json was made with other contents of the project files of tools.mine" in err
    assert "server/main.py changed" in err and "rerun snakemake" in err
    index = json.loads((wd / "results/index/mine/tiny/index.json").read_text())
    assert set(index["project_files"]) == {"server/main.py"}
    # and snakemake does rebuild it: the edit is in the key of the index job, as of the snapshot
    after = rule_params(load_matrix(wd / "config.yaml"))
    assert before["index"][("mine", "tiny")] != after["index"][("mine", "tiny")]
    assert before["tools_snapshot"][("mine", "tiny")] != after["tools_snapshot"][("mine", "tiny")]
