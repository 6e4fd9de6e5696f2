"""The real servers of the demo and the code-intel pack under the default sandbox (issue 13,
item 3): filesystem, git, code-index, serena (with the npm pyright) and tree-sitter, each
installed as the workflow does, its index step run if it has one, its tools snapshotted and
one reference trial run against the tests' tiny Python repository, all under bubblewrap
without network. The tool entries are copied from configs/code-intel.yaml, so this test
follows the pack."""

import copy
import json
import os
import re
import subprocess
import sys
import time

import pytest
import yaml

from matrix_helpers import ROOT, write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.index import build_index
from mcptrials.run.runner import run_trial
from mcptrials.prepare.snapshot import make_snapshot

pytestmark = pytest.mark.slow

PACK_CONFIG = ROOT / "configs" / "code-intel.yaml"
PACK_TOOLS = yaml.safe_load(PACK_CONFIG.read_text())["tools"]
SERVERS = ["filesystem", "git", "code-index", "serena", "tree-sitter"]
TOOLS = ROOT / ".tools"


def installed_marks(tool: str) -> list:
    """The files whose presence means the tool is installed: its command (in the venv's bin
    or the npm prefix's .bin), and for serena the pyright language server its index points at."""
    spec = PACK_TOOLS[tool]
    kinds = spec.get("install") or {}
    cmd = spec["command"]
    marks = [TOOLS / tool / ("bin" if kinds.get("pip") else "node_modules/.bin") / cmd]
    if tool == "serena":
        marks.append(TOOLS / tool / "node_modules" / ".bin" / "pyright-langserver")
    return marks


INSTALL_SECONDS: dict = {}


def install(tool: str, tmp_path) -> float | None:
    """Install the tool into the checkout's .tools/ with the workflow's own command, unless
    it is already there; return the install's seconds (None when reused)."""
    if tool not in INSTALL_SECONDS:
        if all(p.exists() for p in installed_marks(tool)):
            INSTALL_SECONDS[tool] = None
        else:
            t0 = time.monotonic()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mcptrials.cli",
                    "install-tool",
                    "--config",
                    str(PACK_CONFIG),
                    "--tool",
                    tool,
                    "--out",
                    str(tmp_path / f"{tool}-install.json"),
                ],
                check=True,
                cwd=ROOT,
                env={**os.environ, "MCPTRIALS_TOOLS_DIR": str(TOOLS)},
            )
            INSTALL_SECONDS[tool] = round(time.monotonic() - t0, 1)
            assert all(p.exists() for p in installed_marks(tool)), installed_marks(tool)
    return INSTALL_SECONDS[tool]


def assert_bubblewrap(record: dict, what: str) -> None:
    assert record and record["mechanism"] == "bubblewrap", (what, record)
    assert record["network"] is False, (what, record)
    assert record["version"], (what, record)


def prepare(tool: str, tmp_path, extra: dict | None = None):
    """A test project whose only tool is the pack's entry for `tool`; its checkout, its index
    (when the tool has an index step) and its tools snapshot, made as the workflow makes them."""
    spec = copy.deepcopy(PACK_TOOLS[tool])
    m = load_matrix(write_matrix(tmp_path, tools={tool: spec}, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    (tmp_path / "co" / "checkout.json").write_text(json.dumps(co))
    index_dir = index_rec = None
    if spec.get("index"):
        index_dir = tmp_path / "index"
        with open(tmp_path / "index.log", "w") as log:
            index_rec = build_index(
                tool, m.tools[tool], co["tree"], index_dir, m.specs.key_env_names(), log, tool_spec=m.specs.tools[tool]
            )
    snap = make_snapshot(
        str(m.path), tool, "tiny", tmp_path / "co" / "checkout.json", None, index_dir, tmp_path / "snap" / "tools.json"
    )
    return m, co, index_dir, index_rec, snap


def mcp_calls(transcript: dict) -> list[dict]:
    return [c for c in transcript["tool_calls"] if c["source"] == "mcp"]


def unsandboxed(calls: list[dict]) -> list:
    """A call and its result without the trial's own folder, to compare two trials."""
    return [
        (
            c["tool"],
            re.sub(r"/tmp/mcptrials-trial-[^/\"']+", "TRIAL", json.dumps(c["arguments"])),
            re.sub(r"/tmp/mcptrials-trial-[^/\"']+", "TRIAL", c["result_text"]),
            c["is_error"],
        )
        for c in calls
    ]


@pytest.mark.parametrize("tool", SERVERS)
def test_pack_server_snapshots_and_runs_a_trial_sandboxed(tool, tmp_path, monkeypatch):
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(TOOLS))
    install_s = install(tool, tmp_path)
    assert "sandbox" not in PACK_TOOLS[tool] and not PACK_TOOLS[tool].get("network")  # the pack's default
    t0 = time.monotonic()
    m, co, index_dir, index_rec, snap = prepare(tool, tmp_path / "bwrap")
    prep_s = time.monotonic() - t0
    assert m.specs.sandbox == "bubblewrap" and m.specs.tools[tool].sandbox == "bubblewrap"
    if index_rec is not None:
        assert_bubblewrap(index_rec["sandbox"], "index")
    assert not snap.get("error"), (snap.get("error"), snap.get("stderr_tail"))
    assert snap["tools"], snap.get("stderr_tail")
    assert_bubblewrap(snap["sandbox"], "snapshot")

    t0 = time.monotonic()
    t, meta = run_trial(m, "reference", tool, "find-helper", 1, co, snap, index_dir, tmp_path / "bwrap" / "out")
    trial_s = time.monotonic() - t0
    assert_bubblewrap(meta["sandbox"], "trial")
    mcp = mcp_calls(t)
    errors = [c for c in mcp if c["is_error"]]
    print(
        f"\n[{tool}] install {'reused' if install_s is None else f'{install_s} s'}; "
        f"{'index + ' if index_rec else ''}snapshot {len(snap['tools'])} tools ({snap['server_name']} "
        f"{snap['server_version']}, {prep_s:.1f} s); trial {t['outcome']} in {trial_s:.1f} s; "
        f"{len(t['tool_calls'])} calls, {len(mcp)} MCP, {len(errors)} MCP errors"
    )
    for c in mcp:
        print(
            f"  {'ERR' if c['is_error'] else 'ok '} {c['tool']} {json.dumps(c['arguments'])[:160]} -> "
            f"{c['result_text'][:200]!r}"
        )
    assert t["outcome"] == "completed", (t.get("outcome_detail"), meta.get("server_stderr_tail"))
    assert meta["live_tools_sha256"] == snap["tools_sha256"]
    if mcp and len(errors) == len(mcp):
        # Every call failed: the sandbox is not the cause only if the same trial without it
        # fails the same way (tree-sitter: the reference agent passes the workspace path as
        # `project`, which the server only knows after register_project_tool).
        m2, co2, index2, _, snap2 = prepare(tool, tmp_path / "none", extra={"sandbox": "none"})
        t2, meta2 = run_trial(m2, "reference", tool, "find-helper", 1, co2, snap2, index2, tmp_path / "none" / "out")
        assert meta2["sandbox"]["mechanism"] == "none" and t2["outcome"] == "completed"
        assert unsandboxed(mcp_calls(t2)) == unsandboxed(mcp), "the server's calls fail only inside the sandbox"
        print(f"  (the same {len(errors)} errors without the sandbox: not the sandbox's doing)")


# One documented call per server whose reference trial makes no successful MCP call (git: the
# reference agent does not call git tools for a "where is it defined" question; tree-sitter:
# see above), made in the server's sandbox as a trial starts it: (tool, arguments, expected).
PROBES = {
    "git": [
        ("git_log", {"repo_path": "{workspace}", "max_count": 3}, "init"),
        ("git_show", {"repo_path": "{workspace}", "revision": "HEAD"}, "def helper(x)"),
    ],
    "tree-sitter": [
        ("register_project_tool", {"path": "{workspace}", "name": "tiny"}, '"python": 2'),
        ("get_symbols", {"project": "tiny", "file_path": "src/util.py"}, '"name": "helper"'),
        ("find_usage", {"project": "tiny", "symbol": "helper", "language": "python"}, "src/app.py"),
    ],
}


@pytest.mark.parametrize("tool", sorted(PROBES))
def test_server_tools_answer_inside_the_sandbox(tool, tmp_path, monkeypatch):
    import asyncio

    from mcptrials.prepare.servers import open_server
    from mcptrials.run.trial import Sandbox

    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(TOOLS))
    install(tool, tmp_path)
    m = load_matrix(write_matrix(tmp_path, tools={tool: copy.deepcopy(PACK_TOOLS[tool])}))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    folders = Sandbox.create(co["tree"], None)  # the trial's own folders: workspace, home, tmp, index
    values = folders.values()

    async def probe():
        async with open_server(m.specs.tools[tool], values, tmp_path / "server.log", m.specs.key_env_names()) as s:
            assert_bubblewrap(s.sandbox, "server")
            out = []
            for name, args, _ in PROBES[tool]:
                args = {
                    k: v.replace("{workspace}", values["workspace"]) if isinstance(v, str) else v
                    for k, v in args.items()
                }
                r = await s.client.call_tool(name, args)
                out.append((r.is_error, "".join(getattr(c, "text", "") for c in r.content)))
            return out

    try:
        results = asyncio.run(probe())
    finally:
        folders.remove()
    for (name, _, expected), (is_error, text) in zip(PROBES[tool], results):
        print(f"\n[{tool}] {name}: {'ERR' if is_error else 'ok'} {text[:160]!r}")
        assert not is_error and expected in text, (name, text[:500])
