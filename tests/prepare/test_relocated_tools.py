"""A tool's venv that no longer sits where it was built (a project copied or moved, issue 27):
its scripts' `#!` lines name the old folder, which the sandbox does not have, so no server
would start. servers.relocate_venv rewrites them when the server is started, and the real
server then starts sandboxed from its new place."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

from matrix_helpers import BASE_PYTHON, FAULTY_SERVER
from mcptrials.prepare.servers import relocate_venv


def build_tool_env(tools: Path) -> Path:
    env = tools / "mytool"
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(env)], check=True)
    script = env / "bin" / "mytool-server"
    script.write_text(
        f"#!{env}/bin/python\nimport runpy, sys\nsys.argv = [{str(FAULTY_SERVER)!r}, 'ok']\n"
        f"runpy.run_path({str(FAULTY_SERVER)!r}, run_name='__main__')\n"
    )
    script.chmod(0o755)
    return env


def test_a_moved_venv_is_relocated_and_its_server_starts(tmp_path, monkeypatch):
    from matrix_helpers import write_matrix
    from mcptrials.matrix.config import load_matrix
    from mcptrials.prepare.servers import open_server

    built = build_tool_env(tmp_path / "built" / ".tools")
    (tmp_path / "moved").mkdir()
    shutil.move(str(tmp_path / "built" / ".tools"), str(tmp_path / "moved" / ".tools"))
    env = tmp_path / "moved" / ".tools" / "mytool"
    script = env / "bin" / "mytool-server"
    assert script.read_text().startswith(f"#!{built}/bin/python")  # names the folder it was built in
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(tmp_path / "moved" / ".tools"))
    cfg = write_matrix(
        tmp_path / "project", tools={"mytool": {"command": "mytool-server", "read_only": [str(FAULTY_SERVER)]}}
    )
    m = load_matrix(cfg)
    spec = m.specs.tools["mytool"]
    ws = tmp_path / "ws"
    for d in ("workspace", "home", "tmp", "index"):
        (ws / d).mkdir(parents=True)
    values = {k: str(ws / k) for k in ("workspace", "home", "tmp", "index")}
    values["repo"] = values["workspace"]

    async def tools():
        async with open_server(spec, values, tmp_path / "err.log", set()) as s:
            return [t["name"] for t in await s.list_tools()]

    assert asyncio.run(tools()) == ["echo", "big", "fail"]  # started sandboxed, from its new place
    assert script.read_text().startswith(f"#!{env}/bin/python\n")
    assert relocate_venv(env) == 0  # nothing left to rewrite


def test_relocate_touches_only_scripts_that_name_another_folder(tmp_path):
    env = build_tool_env(tmp_path / ".tools")
    other = env / "bin" / "plain-shell"
    other.write_text("#!/bin/sh\necho hi\n")
    assert relocate_venv(env) == 0
    (env / "bin" / "mytool-server").write_text("#!/old/place/bin/python3.11\nprint('x')\n")
    assert relocate_venv(env) == 1
    assert (env / "bin" / "mytool-server").read_text() == f"#!{env}/bin/python3.11\nprint('x')\n"
    assert other.read_text() == "#!/bin/sh\necho hi\n"
