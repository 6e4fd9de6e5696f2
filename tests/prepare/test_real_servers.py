"""End to end with real third-party servers, installed by the workflow's own command into
.tools/: the anthropic provider (real SDK, test Messages-API server) calling the real
`mcp-server-git` and `@modelcontextprotocol/server-filesystem`, and the reference agent."""

import json
import re
import subprocess
import sys

import pytest

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import ROOT, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.run.runner import run_trial
from mcptrials.prepare.snapshot import make_snapshot

pytestmark = pytest.mark.slow

DEMO = load_matrix(ROOT / "config.yaml")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Install git and filesystem as the workflow does (skipped when already there)."""
    out = tmp_path_factory.mktemp("install")
    marks = {
        "git": ROOT / ".tools/git/bin/mcp-server-git",
        "filesystem": ROOT / ".tools/filesystem/node_modules/.bin/mcp-server-filesystem",
    }
    for tool, mark in marks.items():
        if not mark.exists():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mcptrials.cli",
                    "install-tool",
                    "--config",
                    str(ROOT / "config.yaml"),
                    "--tool",
                    tool,
                    "--out",
                    str(out / f"{tool}.json"),
                ],
                check=True,
            )
    return {t: DEMO.tools[t] for t in marks}


def matrix(tmp_path, api, tools):
    extra = {
        "models": {"claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url}},
        "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
    }
    cfg = write_matrix(tmp_path, tools=tools, extra=extra)
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def test_snapshot_of_real_servers(tmp_path, installed, fake_api):
    m, co = matrix(tmp_path, fake_api([]), installed)
    (tmp_path / "co" / "checkout.json").write_text(json.dumps(co))
    for tool, server in (("git", "mcp-git"), ("filesystem", "secure-filesystem-server")):
        snap = make_snapshot(
            str(m.path), tool, "tiny", tmp_path / "co" / "checkout.json", None, None, tmp_path / tool / "tools.json"
        )
        assert snap["server_name"] == server and len(snap["tools"]) >= 10
        assert len(snap["tools_sha256"]) == 64 and snap["commit"] == co["commit"]


def test_anthropic_loop_with_real_git_and_filesystem(tmp_path, installed, fake_api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key-test-real-servers-0123456789")
    api = fake_api(
        [
            reply(
                text("Look at the history and the file."),
                tool_use("mcp__git__git_log", {"repo_path": "{ws}", "max_count": 3}, id="g"),
                tool_use("read_file", {"path": "src/util.py"}, id="r"),
            ),
            reply(text("`helper` is at `src/util.py:1`; it returns `x * 2`.")),
        ]
    )
    m, co = matrix(tmp_path, api, {"git": installed["git"]})
    # the git tool needs the absolute workspace path: fill it in from the first request
    t, meta = run_trial(m, "claude", "git", "find-helper", 1, co, None, None, tmp_path / "out")
    calls = {c["id"]: c for c in t["tool_calls"]}
    # the scripted repo_path is not the workspace: the real server answers with an error
    assert calls["g"]["source"] == "mcp" and calls["g"]["tool"] == "git_log"
    assert calls["r"]["source"] == "builtin" and "return x * 2" in calls["r"]["result_text"]
    assert t["outcome"] == "completed" and meta["server_name"] is None  # no snapshot given
    assert meta["server_protocol_version"] == "2026-07-28" and meta["server_peak_rss_kb"] > 1000

    api2 = fake_api(
        [
            reply(tool_use("mcp__filesystem__list_allowed_directories", {}, id="a")),
            reply(tool_use("mcp__filesystem__search_files", {"path": ".", "pattern": "util"}, id="s")),
            reply(text("Found it: `src/util.py:1`.")),
        ]
    )
    m2, co2 = matrix(tmp_path / "fs", api2, {"filesystem": installed["filesystem"]})
    t2, meta2 = run_trial(m2, "claude", "filesystem", "find-helper", 1, co2, None, None, tmp_path / "out2")
    assert t2["outcome"] == "completed"
    allowed = t2["tool_calls"][0]
    assert allowed["tool"] == "list_allowed_directories" and "workspace" in allowed["result_text"]
    assert meta2["server_protocol_version"] == "2025-11-25"
    assert t2["steps"][0]["answer_text"] == "Found it: `src/util.py:1`."


def test_reference_agent_with_real_filesystem_server(tmp_path, installed):
    cfg = write_matrix(tmp_path, tools={"filesystem": installed["filesystem"]})
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    t, _ = run_trial(m, "reference", "filesystem", "find-helper", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "completed" and t["provider"] == "reference"
    assert any(c["source"] == "mcp" for c in t["tool_calls"])
    assert "src/util.py:1" in t["steps"][0]["answer_text"]
    # same inputs, same transcript (apart from timings)
    t2, _ = run_trial(m, "reference", "filesystem", "find-helper", 1, co, None, None, tmp_path / "out")
    assert [s["answer_text"] for s in t2["steps"]] == [s["answer_text"] for s in t["steps"]]

    def calls(tr):  # each trial has its own sandbox path: compare without it
        return re.sub(
            r"/tmp/mcptrials-trial-[^/]+",
            "SANDBOX",
            json.dumps([(c["name"], c["arguments"]) for c in tr["tool_calls"]]),
        )

    assert calls(t2) == calls(t)
