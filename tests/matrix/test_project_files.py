"""The server author's loop (issue 27): a server of one's own, kept in the project.

- `{project}` in a tool's args, env and read_only is the project folder; a relative
  read_only path is from the project, and the config keeps the placeholder;
- the content of what a tool names in the project is a rerun key of its snapshot (and so
  of its trials): an edit of the script changes that tool's snapshot params and nobody
  else's, a project copied elsewhere keeps them; a finished project plans the edited
  server's snapshot and trials (the real workflow, `snakemake -n`);
- `mcptrials validate` refuses a command that cannot start, a read_only path and a `locked:`
  folder that do not exist, each naming the file, the field and the fix;
- the snapshot's server.stderr.log holds this run's stderr only.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from matrix_helpers import BASE_PYTHON, FAULTY_SERVER, SCENARIO, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.cli import main as cli_main
from mcptrials.matrix.config import load_matrix
from mcptrials.core.records import write_json
from mcptrials.dag.rerun import rule_params
from mcptrials.prepare.snapshot import make_snapshot


def own_server(**extra) -> dict:
    """A server script of the project (a copy of the fixture server), named with {project}."""
    spec = {"command": BASE_PYTHON, "args": ["{project}/server.py", "ok"], "read_only": ["{project}/server.py"]}
    spec.update(extra)
    return spec


def make_project(wd: Path, **extra) -> Path:
    wd.mkdir(parents=True, exist_ok=True)
    shutil.copy(FAULTY_SERVER, wd / "server.py")
    write_matrix(wd, tools={"baseline": {"transport": "none"}, "mine": own_server(**extra)})
    return wd


def test_project_placeholder_and_relative_read_only(tmp_path, monkeypatch):
    wd = make_project(tmp_path / "p", env={"DATA": "{project}/data"}, read_only=["server.py", "{project}/lib"])
    monkeypatch.chdir(wd)
    m = load_matrix(wd / "config.yaml")
    spec = m.specs.tools["mine"]
    assert spec.args == (f"{wd}/server.py", "ok")
    assert spec.read_only == (f"{wd}/server.py", f"{wd}/lib")  # relative: from the project
    assert spec.config["env"] == {"DATA": f"{wd}/data"}
    assert m.tools["mine"]["args"] == ["{project}/server.py", "ok"]  # the config keeps the placeholder


def snapshot_params(wd: Path) -> dict:
    return rule_params(load_matrix(wd / "config.yaml"))


def test_editing_your_own_server_changes_its_snapshot_key(tmp_path, monkeypatch):
    wd = make_project(tmp_path / "p")
    monkeypatch.chdir(wd)
    before = snapshot_params(wd)
    with open(wd / "server.py", "a") as f:
        f.write("# an edit of the server\n")
    after = snapshot_params(wd)
    snap = ("mine", "tiny")
    assert before["tools_snapshot"][snap] != after["tools_snapshot"][snap]
    assert before["tools_snapshot"][("baseline", "tiny")] == after["tools_snapshot"][("baseline", "tiny")]
    # the trials follow the snapshot (its tools.json is their input), not a param of their own
    assert before["transcript"] == after["transcript"]
    assert before["install_tool"] == after["install_tool"]

    # a project copied elsewhere (the same content) keeps its keys: paths are project-relative
    moved = tmp_path / "elsewhere"
    shutil.copytree(wd, moved)
    monkeypatch.chdir(moved)
    assert snapshot_params(moved)["tools_snapshot"] == after["tools_snapshot"]


def test_files_outside_the_project_and_in_tool_installs_are_not_keys(tmp_path, monkeypatch):
    """The fixture server outside the project is system-like: no content key; neither is .tools/."""
    wd = tmp_path / "p"
    wd.mkdir()
    (wd / ".tools" / "mine").mkdir(parents=True)
    (wd / ".tools" / "mine" / "data.txt").write_text("v1")
    write_matrix(
        wd,
        tools={
            "baseline": {"transport": "none"},
            "mine": {
                "command": BASE_PYTHON,
                "args": [str(FAULTY_SERVER), "ok"],
                "read_only": [str(FAULTY_SERVER), "{project}/.tools/mine/data.txt"],
            },
        },
    )
    monkeypatch.chdir(wd)
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(wd / ".tools"))
    from mcptrials.matrix.projectfiles import content_hashes
    from mcptrials.prepare.servers import tools_dir

    m = load_matrix(wd / "config.yaml")
    assert content_hashes(m.specs.tools["mine"].config, wd, tools_dir()) == {}
    before = snapshot_params(wd)
    (wd / ".tools" / "mine" / "data.txt").write_text("v2")
    assert snapshot_params(wd) == before


def test_a_project_folder_named_whole_leaves_out_what_the_harness_writes(tmp_path, monkeypatch):
    """read_only: ["{project}"] hashes the project's files, not results/, .snakemake/ or .tools/."""
    wd = make_project(tmp_path / "p", read_only=["{project}"])
    monkeypatch.chdir(wd)
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(wd / ".tools"))
    before = snapshot_params(wd)
    for d in ("results/runs", ".snakemake/metadata", ".tools/mine"):
        (wd / d).mkdir(parents=True)
        (wd / d / "x.json").write_text("{}")
    assert snapshot_params(wd) == before
    (wd / "server.py").write_text("# edited\n")
    assert snapshot_params(wd)["tools_snapshot"] != before["tools_snapshot"]


# --- validate ----------------------------------------------------------------------------


def validate(wd: Path, capsys) -> tuple[int, str]:
    code = cli_main(["validate", "--config", str(wd / "config.yaml")])
    out = capsys.readouterr()
    return code, out.out + out.err


@pytest.mark.parametrize(
    "edit, field, fix",
    [
        ({"command": "does-not-exist"}, "tools.mine.command", "add an `install:` entry"),
        ({"command": "{project}/bin/serve"}, "tools.mine.command", "fix the path"),
        ({"read_only": ["{project}/sever.py"]}, "tools.mine.read_only[0]", "fix the path"),
        ({"read_only": ["lib/missing"]}, "tools.mine.read_only[0]", "fix the path"),
        ({"index": {"command": "no-such-indexer"}}, "tools.mine.index.command", "add an `install:` entry"),
    ],
)
def test_validate_refuses_a_server_that_cannot_start(tmp_path, monkeypatch, capsys, edit, field, fix):
    wd = make_project(tmp_path / "p", **edit)
    monkeypatch.chdir(wd)
    code, out = validate(wd, capsys)
    assert code == 2, out
    assert f"{wd / 'config.yaml'}: field {field}:" in out and fix in out


def test_validate_accepts_what_will_start(tmp_path, monkeypatch, capsys):
    # a command its install will bring (not installed yet), a path command, existing read_only paths
    wd = make_project(tmp_path / "p", command="not-installed-yet", install={"pip": ["six==1.16.0"]})
    monkeypatch.chdir(wd)
    code, out = validate(wd, capsys)
    assert code == 0 and ": ok:" in out, out
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    (wd / "bin").mkdir()
    (wd / "bin" / "serve").write_text(f'#!/bin/sh\nexec {BASE_PYTHON} "$@"\n')
    (wd / "bin" / "serve").chmod(0o755)
    cfg["tools"]["mine"] = own_server(command="bin/serve")  # relative: from the project
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    code, out = validate(wd, capsys)
    assert code == 0 and ": ok:" in out, out


def test_validate_refuses_a_locked_folder_that_does_not_exist(tmp_path, monkeypatch, capsys):
    wd = tmp_path / "p"
    wd.mkdir()
    write_matrix(wd, extra={"locked": "lokced"})
    monkeypatch.chdir(wd)
    code, out = validate(wd, capsys)
    assert code == 2 and f"{wd / 'config.yaml'}: field locked: 'lokced'" in out and "remove `locked:`" in out


# --- the snapshot's stderr ---------------------------------------------------------------


def test_the_snapshot_stderr_log_is_this_runs_only(tmp_path, monkeypatch):
    wd = make_project(tmp_path / "p", args=["{project}/server.py", "crash_at_start"])
    monkeypatch.chdir(wd)
    m = load_matrix(wd / "config.yaml")
    write_json(
        wd / "checkout.json", checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], wd / "co")
    )
    out = wd / "results" / "snapshots" / "mine" / "tiny" / "tools.json"

    def snap():
        return make_snapshot(
            str(wd / "config.yaml"), "mine", "tiny", wd / "checkout.json", None, None, out, count_tokens=False
        )

    first = snap()
    assert first.get("error") and "crashing at start" in first["stderr_tail"]
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["tools"]["mine"]["args"] = ["{project}/server.py", "ok"]  # fixed: it starts now
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    second = snap()
    assert not second.get("error") and [t["name"] for t in second["tools"]] == ["echo", "big", "fail"]
    assert "started in mode ok" in second["stderr_tail"]
    assert "crashing at start" not in second["stderr_tail"]
    assert "crashing at start" not in (out.parent / "server.stderr.log").read_text()


# --- the real workflow ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_finished_project_reruns_an_edited_server(tmp_path):
    from workflow_helpers import planned
    from workflow_helpers import copy_workflow, run_snakemake

    wd = make_project(tmp_path / "p")
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["trials"] = 2
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    copy_workflow(wd)
    run_snakemake(wd, "-j2")
    snapshot = yaml.safe_load((wd / "results" / "snapshots" / "mine" / "tiny" / "tools.json").read_text())
    assert not snapshot.get("error") and len(snapshot["tools"]) == 3  # {project}/server.py started
    assert planned(wd) == {}
    with open(wd / "server.py", "a") as f:
        f.write("# an edit of the server\n")
    got = planned(wd)
    assert got.get("tools_snapshot") == 1 and got.get("transcript") == 2 * len([SCENARIO]), got
    assert got.get("checkout") is None and got.get("install_tool") is None
