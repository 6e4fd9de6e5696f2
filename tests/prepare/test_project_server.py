"""The server kept in the project, as docs/your-server.md documents it (issue 32, item 4):

    command: python3
    args: ["{project}/server/main.py", ...]
    read_only: ["{project}/server"]

with no `install:`. `python3` is the one on PATH outside the sandbox (here a venv's, as an
activated `.venv` gives); the sandbox mounts that interpreter and what it needs (the venv
read-only, the installation it is made from read-only), and nothing else of the project.
`mcptrials validate` checks, without starting anything, that the command resolves inside
the sandbox as it will run; a failed snapshot names the file holding the server's stderr.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from matrix_helpers import FAULTY_SERVER, write_matrix
from mcptrials.cli import main as cli_main
from mcptrials.core.records import write_json
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.prepare.snapshot import make_snapshot

pytestmark = pytest.mark.skipif(not shutil.which("bwrap"), reason="needs Debian's bubblewrap (make test installs it)")

DOCUMENTED = {"command": "python3", "args": ["{project}/server/main.py", "ok"], "read_only": ["{project}/server"]}


def venv_on_path(where: Path, monkeypatch) -> Path:
    """A venv (no pip: fast) outside the project, first on PATH as an activated one is; its
    site-packages holds a module only it has, which the server imports."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    (site,) = where.glob("lib/python*/site-packages")
    (site / "only_in_the_venv.py").write_text("WHERE = 'the venv'\n")
    monkeypatch.setenv("PATH", f"{where / 'bin'}{os.pathsep}{os.environ['PATH']}")
    return where


def project(wd: Path, **tool) -> Path:
    """A project with its server in server/main.py: the fixture server, importing a module
    of the venv first (so it starts only under that venv's python)."""
    (wd / "server").mkdir(parents=True)
    shutil.copy(FAULTY_SERVER, wd / "server" / "faulty.py")
    (wd / "server" / "main.py").write_text(
        "import os, runpy\nimport only_in_the_venv  # noqa: F401\n"
        "runpy.run_path(os.path.join(os.path.dirname(__file__), 'faulty.py'), run_name='__main__')\n"
    )
    write_matrix(wd, tools={"baseline": {"transport": "none"}, "mine": dict(DOCUMENTED, **tool)})
    return wd


def snapshot(wd: Path) -> tuple[dict, Path]:
    m = load_matrix(wd / "config.yaml")
    write_json(
        wd / "checkout.json", checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], wd / "co")
    )
    out = wd / "results" / "snapshots" / "mine" / "tiny" / "tools.json"
    return make_snapshot(
        str(wd / "config.yaml"), "mine", "tiny", wd / "checkout.json", None, None, out, count_tokens=False
    ), out


def test_the_documented_project_server_starts_with_python3_from_path(tmp_path, monkeypatch):
    venv = venv_on_path(tmp_path / "venv", monkeypatch)
    wd = project(tmp_path / "p")
    monkeypatch.chdir(wd)
    rec, out = snapshot(wd)
    assert not rec.get("error"), (rec.get("error"), rec.get("stderr_tail"))
    assert [t["name"] for t in rec["tools"]] == ["echo", "big", "fail"]
    mounts = {m["path"]: m["mode"] for m in rec["sandbox"]["mounts"]}
    assert mounts[str(venv)] == "ro"  # the venv: read-only
    assert all(mode == "ro" for p, mode in mounts.items() if not p.startswith("/tmp/mcptrials-"))
    assert str(wd) not in mounts and "config.yaml" not in mounts  # the project itself: not mounted


def test_the_venv_is_read_only_and_the_project_stays_out(tmp_path, monkeypatch):
    """What the interpreter brings is read-only, and the project is still not there."""
    from mcptrials.prepare.servers import server_command, server_sandbox

    venv = venv_on_path(tmp_path / "venv", monkeypatch)
    wd = project(tmp_path / "p")
    monkeypatch.chdir(wd)
    spec = load_matrix(wd / "config.yaml").specs.tools["mine"]
    ws = tmp_path / "ws"
    ws.mkdir()
    probe = (
        "import json, only_in_the_venv\n"
        "def attempt(f):\n"
        "    try:\n        f(); return 'ok'\n"
        "    except OSError as e:\n        return type(e).__name__\n"
        f"print(json.dumps({{'write_venv': attempt(lambda: open({str(venv / 'x')!r}, 'w')),\n"
        f"  'read_config': attempt(lambda: open({str(wd / 'config.yaml')!r}).read()),\n"
        f"  'read_server': attempt(lambda: open({str(wd / 'server' / 'main.py')!r}).read()),\n"
        "  'module': only_in_the_venv.WHERE}))\n"
    )
    argv, env = server_sandbox(spec, {"workspace": str(ws)}).wrap([server_command(spec), "-c", probe], {}, str(ws))
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    got = __import__("json").loads(out.stdout)
    assert got == {
        "write_venv": "OSError",
        "read_config": "FileNotFoundError",
        "read_server": "ok",
        "module": "the venv",
    }, got
    assert not (venv / "x").exists()


def validate(wd: Path, capsys) -> tuple[int, str]:
    code = cli_main(["validate", "--config", str(wd / "config.yaml")])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_validate_accepts_the_documented_entry(tmp_path, monkeypatch, capsys):
    venv_on_path(tmp_path / "venv", monkeypatch)
    wd = project(tmp_path / "p")
    monkeypatch.chdir(wd)
    code, out = validate(wd, capsys)
    assert code == 0 and ": ok:" in out, out


def test_validate_refuses_a_command_that_cannot_resolve_inside_the_sandbox(tmp_path, monkeypatch, capsys):
    """`mine-serve` is on PATH here, but its `#!/usr/bin/env my-interp` names an interpreter
    that only this machine's PATH has: inside the sandbox it would not start."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "my-interp").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (bin_dir / "mine-serve").write_text("#!/usr/bin/env my-interp\nprint('a server')\n")
    for f in ("my-interp", "mine-serve"):
        (bin_dir / f).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    wd = project(tmp_path / "p", command="mine-serve", args=[])
    monkeypatch.chdir(wd)
    code, out = validate(wd, capsys)
    assert code == 2, out
    assert f"{wd / 'config.yaml'}: field tools.mine.command: 'mine-serve' resolves to {bin_dir / 'mine-serve'}" in out
    assert "'my-interp' is not on the sandbox's PATH" in out
    assert "make `command` the full path of an interpreter" in out and "sandbox: none" in out
    # knowingly unsandboxed: nothing to check
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["tools"]["mine"]["sandbox"] = "none"
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
    assert validate(wd, capsys)[0] == 0


def test_command_problem_sees_what_the_sandbox_mounts(tmp_path):
    from mcptrials.prepare.sandbox import ProcessSandbox, command_needs, command_problem

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python3")
    assert "is not visible inside the sandbox" in command_problem(python, ProcessSandbox())
    needs = command_needs(python)
    assert str(venv) in needs and not any(n.startswith(str(venv) + "/") for n in needs)  # the folder, once
    assert command_problem(python, ProcessSandbox().ro(*needs)) is None
    assert command_needs("/usr/bin/env") == []  # the system: mounted anyway
    # a link on PATH to a venv's script (as pipx makes them): the link, the venv and its Python
    script = venv / "bin" / "mine-serve"
    script.write_text(f"#!{venv}/bin/python3\nprint('a server')\n")
    script.chmod(0o755)
    (tmp_path / "local-bin").mkdir()
    (tmp_path / "local-bin" / "mine-serve").symlink_to(script)
    needs = command_needs(str(tmp_path / "local-bin" / "mine-serve"))
    assert needs[:2] == [str(tmp_path / "local-bin" / "mine-serve"), str(venv)]
    assert command_problem(str(tmp_path / "local-bin" / "mine-serve"), ProcessSandbox().ro(*needs)) is None


def test_a_failed_snapshot_names_the_file_with_the_servers_stderr(tmp_path, monkeypatch):
    from mcptrials.core.failures import failed_stages, status_text

    venv_on_path(tmp_path / "venv", monkeypatch)
    wd = project(tmp_path / "p", args=["{project}/server/main.py", "crash_at_start"])
    monkeypatch.chdir(wd)
    rec, out = snapshot(wd)
    assert rec.get("error")
    (f,) = failed_stages(wd / "results")
    assert f["log"] == "results/snapshots/mine/tiny/server.stderr.log"
    assert "crashing at start" in (wd / f["log"]).read_text()  # the file that holds the cause
    assert "the server's stderr ends:" in f["error"] and "crashing at start" in f["error"]
    assert f["log"] in f["fix"] and f["log"] in status_text([f])


def test_a_failed_index_names_the_file_with_its_output(tmp_path, monkeypatch):
    from mcptrials.prepare.index import build_index

    wd = project(tmp_path / "p", index={"command": "sh", "args": ["-c", "echo cannot index >&2; exit 3"]})
    monkeypatch.chdir(wd)
    m = load_matrix(wd / "config.yaml")
    (tmp_path / "tree").mkdir()
    log_path = tmp_path / "index.log"
    with open(log_path, "w") as log, pytest.raises(RuntimeError) as e:
        build_index(
            "mine",
            m.specs.tools["mine"].config,
            str(tmp_path / "tree"),
            tmp_path / "out" / "tiny",
            set(),
            log,
            tool_spec=m.specs.tools["mine"],
        )
    assert f"its output is in {log_path}" in str(e.value) and "fix tools.mine.index" in str(e.value)
    assert "cannot index" in log_path.read_text()


@pytest.mark.slow
def test_the_documented_entry_runs_in_the_workflow_and_an_edit_is_not_passed_off(tmp_path, monkeypatch, capsys):
    """The issue's path end to end: the entry as documented runs in the real workflow (its
    `python3` is the harness venv's, first on the workflow's PATH as an activated venv puts it);
    then `main.py` is broken and nothing rerun: `compare GOOD results --tool mine` refuses."""
    import json

    from workflow_helpers import copy_workflow, run_snakemake

    wd = tmp_path / "p"
    (wd / "server").mkdir(parents=True)
    shutil.copy(FAULTY_SERVER, wd / "server" / "main.py")
    write_matrix(wd, tools={"baseline": {"transport": "none"}, "mine": DOCUMENTED}, trials=2)
    copy_workflow(wd)
    run_snakemake(wd, "-j2")
    snap = json.loads((wd / "results/snapshots/mine/tiny/tools.json").read_text())
    assert not snap.get("error"), (snap.get("error"), snap.get("stderr_tail"))
    assert [t["name"] for t in snap["tools"]] == ["echo", "big", "fail"]
    good = shutil.copytree(wd / "results", tmp_path / "GOOD")
    with open(wd / "server" / "main.py", "a") as f:
        f.write("raise SystemExit('broken')\n")
    monkeypatch.chdir(wd)
    assert cli_main(["compare", str(good), "results", "--tool", "mine"]) == 2
    err = capsys.readouterr().err
    assert "made with other contents of the project files of tools.mine (server/main.py changed" in err
