"""Results over a host's limit (issue 37 item 5): each host's limit on one tool result
(mcptrials.analyze.result_limits), by hand; and a server that answers too much on purpose
(tests/fixtures/faulty_mcp_server.py, mode huge) through a real trial, the server profile and
the report's section."""

from __future__ import annotations

import pytest

from matrix_helpers import faulty_tool
from mcptrials.analyze.records_summary import server_profile
from mcptrials.analyze.result_limits import host_limits, over_host_limits, over_limits, result_tokens
from mcptrials.report.details import add_profile
from mcptrials.report.render import Doc


def test_each_hosts_limit_and_where_it_comes_from():
    limits = host_limits(25_000)
    assert {h: n for h, (n, _) in limits.items()} == {
        "claude-code": 25_000,
        "codex": 25_000,
        "loop": 25_000,
        "opencode": 12_800,  # 51,200 bytes / 4
    }
    assert "MAX_MCP_OUTPUT_TOKENS" in limits["claude-code"][1] and "50 KB" in limits["opencode"][1]
    assert host_limits(1_000)["opencode"][0] == 12_800  # opencode's own cap does not follow the config


def test_which_hosts_a_result_is_over():
    limits = host_limits(25_000)
    assert result_tokens({"result_tokens_est": 15_000}) == 15_000 and result_tokens({"result_chars": 60_001}) == 15_000
    assert over_limits(15_000, limits) == ["opencode"]
    assert over_limits(12_800, limits) == []  # at the limit is not over it
    assert over_limits(37_500, limits) == ["claude-code", "codex", "loop", "opencode"]
    calls = [
        ("t/1", {"result_tokens_est": 15_000}),
        ("t/2", {"result_tokens_est": 37_500}),
        ("t/2", {"result_tokens_est": 9}),
    ]
    got = over_host_limits(calls, limits)
    assert got["opencode"] | {"source": None} == {
        "limit": 12_800,
        "source": None,
        "calls": 2,
        "max_tokens": 37_500,
        "trials": ["t/1", "t/2"],
    }
    assert got["claude-code"]["calls"] == 1 and got["claude-code"]["trials"] == ["t/2"]


@pytest.mark.parametrize(
    "chars,hosts", [(60_000, ["opencode"]), (150_000, ["claude-code", "codex", "loop", "opencode"])]
)
def test_a_server_answering_too_much_is_named_per_host_in_the_profile(tmp_path, fake_api, monkeypatch, chars, hosts):
    """A real trial of the huge server (its one result of `chars` characters, the loop's cap at the
    schema's 25,000 tokens) through the server profile and the report's section."""
    from fakes.messages_api import reply, text, tool_use

    from mcptrials.matrix.config import load_matrix
    from mcptrials.prepare.checkout import checkout
    from mcptrials.run.runner import run_trial
    from matrix_helpers import write_matrix

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    api = fake_api([reply(tool_use("mcp__f__echo", {"text": "a"})), reply(text("done"))])
    model = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 2}
    tool = faulty_tool("huge", env={"FAULT_MODE": "huge", "FAULT_HUGE_CHARS": str(chars)})
    m = load_matrix(write_matrix(tmp_path, tools={"f": tool}, extra={"models": {"claude": model}}))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    t, meta = run_trial(m, "claude", "f", "find-helper", 1, co, None, None, tmp_path / "out")
    rec = {
        "key": {
            "model_name": "claude",
            "host": "loop",
            "tool": "f",
            "repo": "tiny",
            "scenario": "find-helper",
            "trial": 1,
        },
        "transcript": t,
        "run_meta": meta,
    }
    (p,) = server_profile([rec], limits=host_limits(m.config["limits"]["max_result_tokens"]))
    assert sorted(p["over_host_limit"]) == hosts
    o = p["over_host_limit"]["opencode"]
    assert o["max_tokens"] == chars // 4 and o["trials"] == ["claude/loop/f/tiny/find-helper/1"]
    doc = Doc()
    add_profile(doc, {"server_profile": [p]})
    md = "\n".join(doc.md)
    assert f"f: 1 result(s) over opencode's limit of 12,800 tokens (largest {chars // 4:,}" in md
    assert ("over claude-code's limit of 25,000 tokens" in md) == ("claude-code" in hosts)
