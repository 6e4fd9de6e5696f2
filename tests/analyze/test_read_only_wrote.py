"""A tool annotated readOnlyHint: true whose call changed the workspace (issue 37 item 5): the
fixture server's `peek` (tests/fixtures/faulty_mcp_server.py, env FAULT_READONLY_WRITES) writes a
file at every call; the loop host records the change around that call (prepare.tree_state), the
read_only_wrote pattern names it with the trial's call, and the report's patterns section lists it."""

from __future__ import annotations

from matrix_helpers import faulty_tool, write_matrix
from mcptrials.analyze.patterns import detect
from mcptrials.prepare.tree_state import changed, fingerprint


def test_the_fingerprint_sees_a_file_made_grown_and_removed(tmp_path):
    (tmp_path / "a").write_text("1")
    (tmp_path / "b").write_text("1")
    before = fingerprint(tmp_path)
    (tmp_path / "a").write_text("12")
    (tmp_path / "b").unlink()
    (tmp_path / "c").write_text("")
    assert changed(before, fingerprint(tmp_path)) == ["a", "b", "c"]
    assert changed(before, before) == []


def test_a_read_only_tool_that_writes_is_caught_in_a_real_trial(tmp_path, fake_api, monkeypatch):
    from fakes.messages_api import reply, text, tool_use

    from mcptrials.matrix.config import load_matrix
    from mcptrials.prepare.checkout import checkout
    from mcptrials.run.runner import run_trial

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    api = fake_api(
        [
            reply(tool_use("mcp__f__peek", {}, id="t1")),
            reply(tool_use("mcp__f__echo", {"text": "a"}, id="t2")),
            reply(text("done")),
        ]
    )
    model = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 2}
    tool = faulty_tool("ok", env={"FAULT_MODE": "ok", "FAULT_READONLY_WRITES": "1"})
    m = load_matrix(write_matrix(tmp_path, tools={"f": tool}, extra={"models": {"claude": model}}))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    t, _ = run_trial(m, "claude", "f", "find-helper", 1, co, None, None, tmp_path / "out")
    peek, echo = [c for c in t["tool_calls"] if c["source"] == "mcp"]
    assert peek["workspace_changed"] == {"count": 1, "paths": [".peek-cache"]}
    assert "workspace_changed" not in echo  # echo is not annotated read-only: not watched
    (f,) = [f for f in detect(t) if f["pattern"] == "read_only_wrote"]
    assert f["call"] == t["tool_calls"].index(peek) and "peek is annotated readOnlyHint" in f["detail"]


def test_replay_names_a_read_only_tool_that_writes_with_its_trials(tmp_path):
    """Through replay: BASE's trial called peek; HEAD's server (the fixture, annotated read-only,
    writing on purpose) changes the replay's workspace, and the surface finding names the trial."""
    import asyncio

    from mcptrials.gate.replay import replay_trial
    from mcptrials.gate.surface import READ_ONLY_WROTE, surface_findings
    from mcptrials.matrix.config import load_matrix
    from mcptrials.prepare.checkout import checkout

    tool = faulty_tool("ok", env={"FAULT_MODE": "ok", "FAULT_READONLY_WRITES": "1"})
    m = load_matrix(write_matrix(tmp_path, tools={"f": tool}))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    calls = [
        {"tool": t, "source": "mcp", "arguments": a, "result_text": "", "is_error": False, "step": 0}
        for t, a in (("peek", {}), ("echo", {"text": "a"}))
    ]
    trial = {"transcript": {"tool_calls": calls}, "meta": {}}
    rep = asyncio.run(replay_trial(m, "f", trial, co, None, tmp_path / "err.log"))
    peek, echo = rep["calls"]
    assert peek["head_wrote"] == [".peek-cache"] and echo["head_wrote"] == []
    (f,) = [
        f
        for f in surface_findings([([{"path": "runs/x/loop/f/tiny/find-helper/1"}], rep)])
        if f["kind"] == READ_ONLY_WROTE
    ]
    assert f["tool"] == "peek" and f["trials"] == ["runs/x/loop/f/tiny/find-helper/1"] and ".peek-cache" in f["detail"]
