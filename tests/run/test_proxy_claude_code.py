"""Description variants with real installed software (slow: the module fixture installs it).

- under the real Claude Code CLI (host `claude-code`), against the SSE Messages-API test
  server: the CLI starts our proxy from the MCP config we write, inside its own sandbox
  (bubblewrap), and the proxy starts the real server. The model is offered the variant's
  names and descriptions, its call of a renamed tool reaches the real tool, and both hosts
  record the same;
- a variant of the demo's real third-party server, mcp-server-git.
"""

import asyncio
import json
import shutil

import pytest

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import SCENARIO
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.grade.usage import adoption
from mcptrials.run.runner import run_trial
from test_claude_code import installed  # noqa: F401  (the module fixture: the CLI and the git server, installed)
from variant_helpers import (
    KEY,
    OVERRIDES,
    anthropic_extra,
    proxy_mounted,
    variant_project,
    variant_snapshot,
    variant_tools,
)

pytestmark = pytest.mark.slow


def test_both_hosts_see_the_variant_and_reach_the_real_tool(tmp_path, installed, fake_api, monkeypatch):  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    sc = dict(SCENARIO, steps=[dict(SCENARIO["steps"][0], expected_tools=["say"])])
    one = [
        reply(tool_use("mcp__terse__say", {"text": "helper doubles x"}, id="toolu_s1")),
        reply(text("`helper` is defined at `src/util.py:1`.")),
    ]
    api = fake_api(one + one)
    m, co = variant_project(
        tmp_path,
        variant_tools(),
        extra=dict(anthropic_extra(api, hosts={"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}})),
    )
    snap = variant_snapshot(m, tmp_path, "terse")
    seen = {}
    for host in ("loop", "cc"):
        before = len(api.message_requests())
        t, meta = run_trial(m, "claude", "terse", "find-helper", 1, co, snap, None, tmp_path / host, host=host)
        assert t["outcome"] == "completed", (host, t["outcome_detail"], meta.get("server_stderr_tail"))
        first = api.message_requests()[before]["body"]
        offered = {d["name"]: d for d in first["tools"] if d["name"].startswith("mcp__")}
        assert "mcp__terse__echo" not in offered, host
        say = offered["mcp__terse__say"]
        assert say["input_schema"]["properties"]["text"]["description"] == "The words to say.", host
        (c,) = [c for c in t["tool_calls"] if c["source"] == "mcp"]
        assert (c["tool"], c["is_error"]) == ("say", False), host
        assert "helper doubles x" in c["result_text"], host  # the real echo tool answered
        assert (meta["variant_of"], meta["overrides_sha256"]) == ("faulty", canonical_hash(OVERRIDES))
        assert proxy_mounted(meta["sandbox"]), host
        assert KEY not in json.dumps(t) + json.dumps(meta)
        seen[host] = (say["description"], sorted(offered), sorted(adoption(t, sc)["per_tool"]))
    # Claude Code sends the server's description as it got it from the proxy
    assert seen["loop"][0] == "Say the text back, word for word." and seen["cc"][0].startswith(seen["loop"][0])
    assert seen["loop"][1:] == seen["cc"][1:] == (["mcp__terse__big", "mcp__terse__fail", "mcp__terse__say"], ["say"])


def test_a_variant_of_a_real_third_party_server(tmp_path, installed):  # noqa: F811
    """mcp-server-git (PyPI, protocol 2026-07-28) behind the proxy, sandboxed, as the loop host
    opens it: git_log renamed and redescribed, its call answered by the real server."""
    from mcptrials.prepare.servers import open_server
    from test_claude_code import DEMO

    git_v = {
        "variant_of": "git",
        "overrides": {
            "tools": {
                "git_log": {
                    "name": "history",
                    "description": "The commit history, newest first.",
                    "parameters": {"max_count": "How many commits to show."},
                }
            }
        },
    }
    m, co = variant_project(tmp_path, {"git": DEMO.tools["git"], "git-v": git_v})
    base, var = variant_snapshot(m, tmp_path, "git"), variant_snapshot(m, tmp_path, "git-v")
    names = [t["name"] for t in var["tools"]]
    assert "history" in names and "git_log" not in names and len(names) == len(base["tools"])
    assert sorted(set(names) - {"history"}) == sorted({t["name"] for t in base["tools"]} - {"git_log"})
    hist = next(t for t in var["tools"] if t["name"] == "history")
    assert hist["input_schema"]["properties"]["max_count"]["description"] == "How many commits to show."
    assert var["protocol_version"] == base["protocol_version"] and var["tools_sha256"] != base["tools_sha256"]

    spec, ws = m.specs.tools["git-v"], tmp_path / "ws"
    shutil.copytree(co["tree"], ws, symlinks=True)
    (tmp_path / "h").mkdir()
    (tmp_path / "t").mkdir()
    values = {
        "workspace": str(ws),
        "repo": str(ws),
        "home": str(tmp_path / "h"),
        "tmp": str(tmp_path / "t"),
        "index": "",
    }

    async def call():
        async with open_server(spec, values, tmp_path / "err.log", set()) as s:
            r = await s.client.call_tool("history", {"repo_path": str(ws), "max_count": 1})
            return s.sandbox, r

    sandbox, r = asyncio.run(call())
    assert sandbox["mechanism"] == "bubblewrap" and proxy_mounted(sandbox)
    assert not r.is_error and "Commit history" in r.content[0].text and m.repos["tiny"]["commit"] in r.content[0].text
