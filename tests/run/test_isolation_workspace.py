"""A trial's workspace is its own: writing into it never changes the shared checkout that
every trial's workspace is made from (mcptrials.run.trial.Sandbox.create).

- mode copy: a copy of the checkout. A workspace of hard links would fail this (a write
  through a link changes the checkout's file): a control makes one and shows the check
  notices, so the first test cannot pass by not looking.
- mode read-only (a scenario's `workspace: read-only`): the checkout itself, bound read-only
  at the workspace path in every bubblewrap sandbox. A real server in bwrap tries every way to
  change it (tests/fixtures/hostile_mcp_server.py --mutate) and fails each; the same server
  with the workspace bound read-write (the protection off) changes the checkout, so the test
  can fail. Removing the trial's folders removes the link, never the checkout."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import BASE_PYTHON, HOSTILE, ROOT, SCENARIO, make_repo, write_matrix
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.prepare.checkout import checkout
from mcptrials.run.runner import run_trial
from mcptrials.run.trial import READ_ONLY, Sandbox

KEY = "fake-key-isolation-0123456789abcdef"
bwrap = pytest.mark.skipif(not shutil.which("bwrap"), reason="needs Debian's bubblewrap (make test installs it)")


def digest(tree: Path) -> dict[str, tuple[str, int]]:
    """Every entry of the tree: a file's content sha256 and mode, a symlink's target, a folder."""
    out = {}
    for f in sorted(tree.rglob("*")):
        rel = str(f.relative_to(tree))
        if f.is_symlink():
            out[rel] = (f"-> {os.readlink(f)}", 0)
        elif f.is_file():
            out[rel] = (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mode)
        else:
            out[rel] = ("dir", f.stat().st_mode)
    return out


def write_like_a_server(workspace: Path) -> None:
    """What a server may do to the files it was given: rewrite in place (no new inode), append,
    truncate, change a mode, and write into the git directory."""
    with open(workspace / "src" / "util.py", "r+") as f:
        f.write("# changed in place\n")
    with open(workspace / "README.md", "a") as f:
        f.write("appended\n")
    os.truncate(workspace / "src" / "app.py", 0)
    os.chmod(workspace / "src" / "util.py", 0o777)
    with open(workspace / ".git" / "HEAD", "r+") as f:
        f.write("ref: refs/heads/other\n")


def changed_by_a_server(checkout: Path, create) -> bool:
    before = digest(checkout)
    sb = create(str(checkout), None)
    try:
        write_like_a_server(sb.workspace)
    finally:
        sb.remove()
    return digest(checkout) != before


def test_a_server_writing_into_its_workspace_leaves_the_checkout_unchanged(tmp_path):
    make_repo(tmp_path / "checkout")
    assert not changed_by_a_server(tmp_path / "checkout", Sandbox.create)


def test_the_check_notices_a_workspace_of_hard_links(tmp_path, monkeypatch):
    make_repo(tmp_path / "checkout")
    linked = shutil.copytree

    def hard_links(src, dst, symlinks=False, ignore=None, copy_function=None, *rest):
        # the protection off: the workspace shares the checkout's inodes (copytree recurses through here)
        return linked(src, dst, symlinks, ignore, os.link, *rest)

    monkeypatch.setattr("mcptrials.run.trial.shutil.copytree", hard_links)
    assert changed_by_a_server(tmp_path / "checkout", Sandbox.create)


# --- workspace: read-only -----------------------------------------------------------------


def test_removing_a_read_only_workspace_never_deletes_the_checkout(tmp_path):
    make_repo(tmp_path / "checkout")
    before = digest(tmp_path / "checkout")
    sb = Sandbox.create(str(tmp_path / "checkout"), None, READ_ONLY)
    assert sb.workspace.is_symlink() and sb.workspace.resolve() == (tmp_path / "checkout").resolve()
    assert (sb.workspace / "src" / "util.py").read_text().startswith("def helper")  # nothing copied, all there
    sb.remove()
    assert not sb.root.exists()
    assert digest(tmp_path / "checkout") == before
    sb.remove()  # a second removal (nothing left) neither fails nor reaches the checkout
    assert digest(tmp_path / "checkout") == before


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


def mutating_trial(tmp_path, fake_api, workspace="read-only", sandbox="bubblewrap"):
    """One trial whose server (the hostile one, stdlib only) tries every change to its
    workspace when called: (its report, transcript, run_meta, the checkout's folder, the
    checkout's digest before the trial)."""
    sc = dict(copy.deepcopy(SCENARIO), workspace=workspace)
    tool = {"command": BASE_PYTHON, "args": [str(HOSTILE), "--mutate", "{workspace}"], "read_only": [str(HOSTILE)]}
    api = fake_api([reply(tool_use("mcp__hostile__probe", {}, id="p")), reply(text("`src/util.py:1`"))])
    model = {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
    cfg = write_matrix(
        tmp_path,
        tools={"hostile": tool},
        scenarios={"find-helper": sc},
        extra={"sandbox": sandbox, "models": {"claude": model}},
    )
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    before = digest(Path(co["tree"]))
    t, meta = run_trial(m, "claude", "hostile", "find-helper", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "completed", t["outcome_detail"]
    (call,) = [c for c in t["tool_calls"] if c["tool"] == "probe"]
    return json.loads(call["result_text"])["mutate"], t, meta, Path(co["tree"]), before


@bwrap
def test_a_server_cannot_change_the_checkout_through_a_read_only_workspace(tmp_path, fake_api, api_key):
    tried, t, meta, tree, before = mutating_trial(tmp_path, fake_api)
    assert len(tried) == 11 and not any(tried.values()), tried  # each attempt failed (a read-only file system)
    assert digest(tree) == before
    assert meta["workspace"] == "read-only" and "workspace_note" not in meta
    (ws,) = [x for x in meta["sandbox"]["mounts"] if x["path"].endswith("/workspace")]
    assert ws["mode"] == "ro"


@bwrap
def test_the_check_notices_a_read_only_workspace_bound_read_write(tmp_path, fake_api, api_key, monkeypatch):
    """The control: the protection off (the link bound read-write), the same server changes
    the shared checkout, so the test above can fail."""
    monkeypatch.setattr("mcptrials.prepare.sandbox.bind_args", lambda m: ["--bind", os.path.realpath(m.path), m.path])
    tried, t, meta, tree, before = mutating_trial(tmp_path, fake_api)
    # every change but the hard link, which fails across two mounts even read-write (EXDEV)
    assert [k for k, worked in tried.items() if not worked] == ["hard_link"], tried
    assert digest(tree) != before and not (tree / "README.md").exists() and (tree / "new.txt").exists()


def test_with_sandbox_none_a_read_only_workspace_is_copied_and_says_so(tmp_path, fake_api, api_key):
    tried, t, meta, tree, before = mutating_trial(tmp_path, fake_api, sandbox="none")
    assert all(tried.values())  # its own copy: every change worked there
    assert digest(tree) == before
    assert meta["workspace"] == "copy" and "sandbox none" in meta["workspace_note"]


def test_the_workspace_mode_is_recorded(tmp_path, fake_api, api_key):
    _, _, meta, _, _ = mutating_trial(tmp_path, fake_api, workspace="copy", sandbox="none")
    assert meta["workspace"] == "copy" and "workspace_note" not in meta


# --- bad input ----------------------------------------------------------------------------


def test_read_only_with_a_state_check_is_refused(tmp_path):
    sc = dict(copy.deepcopy(SCENARIO), workspace="read-only")
    sc["steps"][0]["state_check"] = {"command": "cat src/util.py", "expect": "def helper"}
    cfg = write_matrix(tmp_path, scenarios={"find-helper": sc})
    with pytest.raises(ConfigError) as e:
        load_matrix(cfg)
    err = str(e.value)
    assert f"{tmp_path / 'scenarios' / 'find-helper.yaml'}: field workspace: read-only" in err, err
    assert "state_check" in err and "drop `workspace: read-only` or the state check" in err


def test_read_only_under_a_cli_host_is_refused(tmp_path):
    sc = dict(copy.deepcopy(SCENARIO), workspace="read-only")
    extra = {
        "models": {"claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"}},
        "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
    }
    cfg = write_matrix(tmp_path, scenarios={"find-helper": sc}, extra=extra)
    with pytest.raises(ConfigError) as e:
        load_matrix(cfg)
    err = str(e.value)
    assert f"{tmp_path / 'scenarios' / 'find-helper.yaml'}: field workspace: read-only" in err, err
    assert "'cc' (kind claude-code)" in err and "hosts of kind loop" in err
    # the same config with the scenario copying loads
    (tmp_path / "scenarios" / "find-helper.yaml").write_text(yaml.safe_dump(dict(sc, workspace="copy")))
    load_matrix(cfg)


# --- the same trial either way --------------------------------------------------------------

TRIAL_ROOT = re.compile(r"/(?:[^\s\"'/]+/)*mcptrials-trial-[a-z0-9_]{8}")  # as gate.replay's
TIMES = ("seconds", "latency_ms", "_at")


def comparable(record):
    """A record with its trial folder's path and its clock readings left out."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if not any(t in k for t in TIMES)}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return TRIAL_ROOT.sub("<trial>", x) if isinstance(x, str) else x

    return strip(record)


@bwrap
@pytest.mark.parametrize("tool, scenario_id", [("baseline", "checkout-flow"), ("git", "commit-history")])
def test_a_read_only_trial_is_the_same_trial_as_a_copy_one(tmp_path, tool, scenario_id):
    """The reference model on the demo's Q&A scenarios (checkout-flow with the built-in tools;
    commit-history with the demo's git server, which runs git in the workspace): the transcript
    does not depend on whether the workspace is a copy or the read-only checkout."""
    demo = yaml.safe_load((ROOT / "config.yaml").read_text())
    if tool != "baseline" and not (ROOT / ".tools" / tool).is_dir():
        pytest.skip(f"the demo's {tool} server is not installed (.tools/{tool})")
    scenario = yaml.safe_load((ROOT / "scenarios" / f"{scenario_id}.yaml").read_text())
    records = {}
    for mode in ("copy", "read-only"):
        wd = tmp_path / mode
        (wd / "scenarios").mkdir(parents=True)
        (wd / "scenarios" / f"{scenario_id}.yaml").write_text(yaml.safe_dump(dict(scenario, workspace=mode)))
        cfg = {
            "tools": {tool: demo["tools"][tool]},
            "repos": {"demo": dict(demo["repos"]["demo"], url=str(ROOT / "demo" / "shop.bundle"))},
            "scenarios": "scenarios/*.yaml",
            "models": demo["models"],
            "limits": demo["limits"],
            "trials": 1,
        }
        (wd / "config.yaml").write_text(yaml.safe_dump(cfg))
        m = load_matrix(wd / "config.yaml")
        co = checkout("demo", m.repo_source("demo"), "repo", m.repos["demo"]["commit"], wd / "co")
        records[mode] = run_trial(m, "reference", tool, scenario_id, 1, co, None, None, wd / "out")
    (t0, meta0), (t1, meta1) = records["copy"], records["read-only"]
    assert t0["outcome"] == "completed" and t0["tool_calls"]
    assert tool == "baseline" or any(c["source"] == "mcp" and not c["is_error"] for c in t0["tool_calls"])
    assert (meta0["workspace"], meta1["workspace"]) == ("copy", "read-only")
    assert comparable(t1) == comparable(t0)
    assert [c["is_error"] for c in t1["tool_calls"]] == [c["is_error"] for c in t0["tool_calls"]]
