"""`mcptrials replay` against the demo's real third-party servers (the official filesystem
server from npm and mcp-server-git from PyPI, sandboxed), in a HEAD project that has run
nothing yet: replay checks the repository out itself.

The filesystem server is given absolute paths inside the trial's workspace and answers with
them, so an identical replay proves that BASE's trial folder is replaced in the arguments
and normalised in the results. A HEAD whose filesystem server may only read `acme_shop/`
refuses the search of the whole workspace: "now an error", exit 1, while its reads inside
acme_shop/ stay identical.
"""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from matrix_helpers import ROOT
from mcptrials.cli import main
from mcptrials.matrix.config import load_matrix
from mcptrials.core.records import write_json
from mcptrials.run.runner import run_trial

pytestmark = pytest.mark.slow

CASES = [("filesystem", "limits-and-alerts"), ("git", "commit-history")]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """BASE: real trials of the reference agent, laid out as a results/ folder."""
    from mcptrials.prepare.checkout import checkout

    for tool in ("filesystem", "git"):
        if not (ROOT / ".tools" / tool).is_dir():
            pytest.skip(f".tools/{tool} is not installed: run `make demo` once")
    demo = load_matrix(ROOT / "config.yaml")
    tmp = tmp_path_factory.mktemp("replay-base")
    co = checkout("demo", demo.repo_source("demo"), demo.repos["demo"]["url"], demo.repos["demo"]["commit"], tmp / "co")
    results = tmp / "results"
    for tool, scenario in CASES:
        out = results / "runs" / "reference" / "loop" / tool / "demo" / scenario / "1"
        out.mkdir(parents=True)
        t, meta = run_trial(demo, "reference", tool, scenario, 1, co, None, None, out)
        assert t["outcome"] == "completed" and any(c["source"] == "mcp" for c in t["tool_calls"])
        write_json(out / "transcript.json", t)
        write_json(out / "run_meta.json", meta)
    return results


def head_project(tmp_path, monkeypatch, edit=None):
    """A copy of the demo project with no results, its tools' installs recorded as done (they
    are the shared .tools/), the working folder set to it."""
    wd = tmp_path / "head"
    wd.mkdir()
    for name in ("config.yaml", "scenarios", "demo"):
        (shutil.copytree if (ROOT / name).is_dir() else shutil.copy)(ROOT / name, wd / name)
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg.pop("locked", None)
    if edit:
        edit(cfg)
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    for tool, spec in cfg["tools"].items():
        if spec.get("install"):
            write_json(
                wd / "results/tools" / tool / "install.json",
                {"tool": tool, "requested": [*spec["install"].get("pip", []), *spec["install"].get("npm", [])]},
            )
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(ROOT / ".tools"))
    monkeypatch.chdir(wd)
    return wd


def test_real_servers_replay_identically_with_the_trial_folder_rebased(base, tmp_path, monkeypatch, capsys):
    calls = [
        c
        for p in base.glob("runs/**/transcript.json")
        for c in json.loads(p.read_text())["tool_calls"]
        if c["tool"] == "read_text_file"
    ]
    assert calls and all("mcptrials-trial-" in c["arguments"]["path"] for c in calls)  # absolute, BASE's folder
    wd = head_project(tmp_path, monkeypatch)
    js = tmp_path / "r.json"
    assert main(["replay", str(base), "--json", str(js)]) == 0, capsys.readouterr()
    res = json.loads(js.read_text())
    assert (wd / "results/checkouts/demo/checkout.json").is_file()  # replay checked the repo out
    for tool in ("filesystem", "git"):
        v = res["tools"][tool]
        assert v["calls"] > 0 and v["counts"]["identical"] == v["calls"], v["differences"][:2]


def test_a_narrower_filesystem_server_now_errors(base, tmp_path, monkeypatch, capsys):
    head_project(
        tmp_path,
        monkeypatch,
        lambda c: c["tools"]["filesystem"].update(args=["{workspace}/acme_shop"], version="narrow"),
    )
    assert main(["replay", str(base), "--tool", "filesystem"]) == 1
    out = capsys.readouterr().out
    # the search of the whole workspace is refused now; reads inside acme_shop/ still answer
    assert "now an error: search_files" in out and "+Access denied" in out
    assert "identical 8, now an error 1" in out and "result: 1 tool(s) fail: filesystem" in out
