"""The regression gate on real runs of the real workflow (issue 22): `mcptrials compare` (two
runs) and `mcptrials replay` (BASE's recorded calls against HEAD's server, no model).

One project (the test server with its `search_code` tool, sandboxed; the reference agent
searches with it) run as BASE, then HEAD versions of the server, each a copy of the project
with only the tool entry changed:

| HEAD            | what changed                                | compare | replay |
|-----------------|---------------------------------------------|---------|--------|
| again           | nothing                                     | 0       | 0      |
| dead            | dies at start                               | 1, did_not_start named first | 1, did not start |
| renamed         | search_code offered as find_code            | 1, tool_gone (renamed) | 1, tool gone |
| errors          | a search for `helper` is an isError result  | 1, server_errors | 1, now an error |
| slow            | every call 0.3 s slower, same answers        | 0       | 0, the slower calls listed |
| empty           | every search finds nothing                  | (not run: the agent falls back to grep) | 1, now empty |
| stale           | the config changed, nothing rerun           | 2, stale | – |

One repo, two scenarios, two trials: 4 trials per run.
"""

from __future__ import annotations

import copy
import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from mcptrials.cli import main
from workflow_helpers import copy_workflow, run_snakemake

pytestmark = pytest.mark.slow

CALLERS = dict(copy.deepcopy(SCENARIO), title="Who calls the helper")
CALLERS["steps"][0]["prompt"] = "Which function calls `helper`? Cite file:line."


def search_tool(mode="ok", version="1", **env):
    spec = faulty_tool(mode, version=version)
    spec["env"] = dict(spec["env"], FAULT_SEARCH="1", **env)
    return spec


HEADS = {
    "again": search_tool(),
    "dead": search_tool("crash_at_start", version="2"),
    "renamed": search_tool(version="2", FAULT_RENAME="search_code:find_code"),
    "errors": search_tool(version="2", FAULT_ERROR_ON="helper"),
    "slow": search_tool("slow", version="2", FAULT_SLOW_SECONDS="0.3"),
}
REPLAY_ONLY = {
    "empty": search_tool(version="2", FAULT_EMPTY="1"),
    # a surface with faults on purpose: every result over the cap, a tool with a broken outputSchema
    "surface": search_tool("huge", version="2", FAULT_STRUCTURED="1"),
}


def set_tool(wd: Path, spec: dict) -> None:
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    cfg["tools"]["search"] = spec
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("gate22")
    base = root / "base"
    base.mkdir()
    write_matrix(
        base, tools={"search": search_tool()}, trials=2, scenarios={"find-helper": SCENARIO, "callers": CALLERS}
    )
    copy_workflow(base)
    run_snakemake(base, "-j2")
    out = {"base": base}
    for name, spec in {**HEADS, **REPLAY_ONLY}.items():
        wd = root / name
        shutil.copytree(base, wd, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
        set_tool(wd, spec)
        if name in HEADS:
            run_snakemake(wd, "-j2", failed_stages_ok=name == "dead")  # its server does not start
        out[name] = wd
    return out


def compare(tmp_path, runs, head: str, *extra) -> tuple[int, str, str]:
    md, xml = tmp_path / "comment.md", tmp_path / "junit.xml"
    code = main(
        [
            "compare",
            str(runs["base"] / "results"),
            str(runs[head] / "results"),
            "--markdown",
            str(md),
            "--junit",
            str(xml),
            *extra,
        ]
    )
    return code, md.read_text(), xml.read_text()


def replay(tmp_path, runs, head: str, monkeypatch, *extra) -> tuple[int, dict, str, str]:
    monkeypatch.chdir(runs[head])  # replay runs in the HEAD project
    md, xml, js = tmp_path / "replay.md", tmp_path / "replay.xml", tmp_path / "replay.json"
    code = main(
        [
            "replay",
            str(runs["base"] / "results"),
            "--config",
            "config.yaml",
            "--markdown",
            str(md),
            "--junit",
            str(xml),
            "--json",
            str(js),
            *extra,
        ]
    )
    return code, json.loads(js.read_text()) if js.exists() else {}, md.read_text(), xml.read_text()


def test_base_called_the_server(runs):
    """The premise: the reference agent used search_code in BASE (else nothing would be gated)."""
    summary = json.loads((runs["base"] / "results/aggregate/summary.json").read_text())
    assert all(r["server_tools_used"] == ["search_code"] for r in summary["trials"])
    assert all(r["server_tool_errors"] == 0 and r["tool_calls_mcp"] > 0 for r in summary["trials"])


# --- compare -----------------------------------------------------------------------------------


def test_compare_the_same_server_again_passes(runs, tmp_path, capsys):
    code, md, xml = compare(tmp_path, runs, "again")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "non-inferior" in out and "FINDING" not in out and "rule: a tool fails on any finding" in out
    assert ET.fromstring(xml).find("testsuite").get("failures") == "0"


def test_compare_fails_a_server_that_does_not_start_naming_it_first(runs, tmp_path, capsys):
    code, md, xml = compare(tmp_path, runs, "dead", "--lenient", "--margin", "0.99")  # whatever the interval
    out = capsys.readouterr().out
    assert code == 1, out
    lines = [ln for ln in out.splitlines() if ln.startswith("search (")]
    assert lines[0].startswith("search (reference@loop): FINDING did_not_start: HEAD's server did not start")
    assert "FINDING ended_badly: trials ending server_crashed or timed_out rose from 0% to 100%" in out
    assert md.index("did_not_start") < md.index("| tool |") and "❌ 1 regression(s)" in md
    failure = ET.fromstring(xml).find("testsuite/testcase/failure")
    assert failure.get("message").startswith("did_not_start: HEAD's server did not start")


def test_compare_fails_a_renamed_tool(runs, tmp_path, capsys):
    code, md, _ = compare(tmp_path, runs, "renamed")
    out = capsys.readouterr().out
    assert code == 1, out
    assert (
        "FINDING tool_gone: search_code, which BASE's trials called, is renamed to find_code (same input schema) "
        "in HEAD's tools/list (tiny)"
    ) in out


def test_compare_fails_a_tool_that_now_errors(runs, tmp_path, capsys):
    code, _, _ = compare(tmp_path, runs, "errors")
    out = capsys.readouterr().out
    assert code == 1, out
    assert "FINDING server_errors: the server tools' error rate rose from 0% to 100%" in out
    # the threshold is the user's: a rise of 100% is above any share below 1
    assert compare(tmp_path, runs, "errors", "--error-rise", "1")[0] == 0


def test_compare_passes_a_slower_but_correct_server(runs, tmp_path, capsys):
    code, _, _ = compare(tmp_path, runs, "slow")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "FINDING" not in out


def test_compare_refuses_results_stale_for_their_config(runs, tmp_path, capsys):
    """HEAD's config changed (a new server version) but its results are BASE's (a failed stage)."""
    head = tmp_path / "stale"
    shutil.copytree(runs["base"], head, symlinks=True)
    set_tool(head, HEADS["renamed"])
    md = tmp_path / "c.md"
    assert main(["compare", str(runs["base"] / "results"), str(head / "results"), "--markdown", str(md)]) == 2
    err = capsys.readouterr().err
    assert "HEAD's results are stale for its config" in err and "summary.json was made for another tools.search" in err
    assert "not compared" in md.read_text()
    # the same folder with the config as it was is compared (and passes)
    set_tool(head, search_tool())
    assert main(["compare", str(runs["base"] / "results"), str(head / "results")]) == 0


def test_compare_refuses_a_tool_base_never_ran(runs, tmp_path, capsys):
    head = tmp_path / "newtool"
    shutil.copytree(runs["again"], head, symlinks=True)
    summary = head / "results/aggregate/summary.json"
    data = json.loads(summary.read_text())
    for r in data["trials"]:
        r["tool"] = "search2"
    summary.write_text(json.dumps(data))
    for flags in ([], ["--strict"], ["--tool", "search2"]):
        assert main(["compare", str(runs["base"] / "results"), str(head / "results"), "--no-config-check", *flags]) == 2
        assert "only in HEAD" in capsys.readouterr().err


# --- replay ------------------------------------------------------------------------------------


def test_replay_of_the_same_server_is_identical(runs, tmp_path, monkeypatch, capsys):
    code, res, md, xml = replay(tmp_path, runs, "again", monkeypatch)
    assert code == 0, capsys.readouterr()
    v = res["tools"]["search"]
    assert v["calls"] > 0 and v["counts"]["identical"] == v["calls"] and v["trials"] == 4
    assert "✅ no regression" in md and ET.fromstring(xml).find("testsuite").get("failures") == "0"
    # against itself too: BASE's own project replays BASE
    assert replay(tmp_path, runs, "base", monkeypatch)[0] == 0


@pytest.mark.parametrize(
    "head, cls",
    [("dead", "did not start"), ("renamed", "tool gone"), ("errors", "now an error"), ("empty", "now empty")],
)
def test_replay_classifies_each_broken_server(runs, tmp_path, monkeypatch, capsys, head, cls):
    code, res, md, xml = replay(tmp_path, runs, head, monkeypatch)
    out = capsys.readouterr().out
    assert code == 1, out
    v = res["tools"]["search"]
    assert v["counts"][cls] == v["calls"] > 0 and v["status"] == "fail"
    assert f"{cls}: search_code" in out and cls in md
    failure = ET.fromstring(xml).find("testsuite/testcase/failure")
    assert failure is not None and cls in failure.get("message")
    if cls in ("now an error", "now empty"):  # a short diff of BASE's result against HEAD's
        d = v["differences"][0]
        assert d["arguments"] == {"pattern": "helper"} and "+" in d["diff"] and "src/util.py:1" in d["diff"]


def test_replay_passes_a_slower_server_and_shows_its_latency(runs, tmp_path, monkeypatch, capsys):
    code, res, md, _ = replay(tmp_path, runs, "slow", monkeypatch)
    assert code == 0, capsys.readouterr()
    v = res["tools"]["search"]
    assert v["counts"]["identical"] == v["calls"]
    slow = v["slowest"][0]
    assert slow["head_latency_ms"] >= 300 > slow["base_latency_ms"]  # the server sleeps 0.3 s per call


def test_replay_strict_fails_a_changed_result(runs, tmp_path, monkeypatch, capsys):
    """A server whose results differ in content (a debug line appended to each): changed, which
    passes by default and fails with --strict."""
    wd = tmp_path / "changed"
    shutil.copytree(runs["again"], wd, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    set_tool(wd, search_tool(version="3", FAULT_LEAK="v3"))
    runs = dict(runs, changed=wd)
    code, res, _, _ = replay(tmp_path, runs, "changed", monkeypatch)
    v = res["tools"]["search"]
    assert code == 0 and v["counts"]["changed"] == v["calls"] > 0
    assert (
        "+src/util.py:1: def helper(x):" not in v["differences"][0]["diff"]
        and "debug: token v3" in v["differences"][0]["diff"]
    )
    assert replay(tmp_path, runs, "changed", monkeypatch, "--strict")[0] == 1


def test_replay_cannot_replay_says_why(runs, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(runs["again"])
    base = str(runs["base"] / "results")
    assert main(["replay", base, "--tool", "nope"]) == 2
    assert "--tool nope: BASE never ran it" in capsys.readouterr().err
    assert main(["replay", str(tmp_path)]) == 2  # no runs/ at all
    assert "BASE holds no recorded trials" in capsys.readouterr().err
    other = tmp_path / "other"
    shutil.copytree(runs["again"], other, symlinks=True, ignore=shutil.ignore_patterns("results", ".snakemake"))
    cfg = yaml.safe_load((other / "config.yaml").read_text())
    cfg["repos"]["tiny"]["commit"] = "0" * 40
    (other / "config.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(other)
    assert main(["replay", base]) == 2
    assert "replay needs the same commit" in capsys.readouterr().err


# --- the documented GitHub Actions commands, on real runs ------------------------------------------


def test_the_documented_ci_commands_on_real_runs(runs, tmp_path, monkeypatch, capsys):
    """docs/ci-github-actions.md's store step on main's real run, then its replay and compare
    lines (the tool renamed my-server -> search) in a pull request's checkout whose server renamed
    a tool: both exit 1 and name it."""
    import subprocess

    from test_compare import documented_command

    ws = tmp_path / "ws"
    (ws / "server").mkdir(parents=True)
    shutil.copytree(runs["base"], ws / "server/.mcptrials", symlinks=True)
    from test_compare import doc_blocks

    wf = yaml.safe_load(doc_blocks()[1])
    store = next(s for s in wf["jobs"]["mcptrials"]["steps"] if s.get("name") == "Store main's results")
    subprocess.run(["bash", "-ec", store["run"]], cwd=ws, check=True)
    stored = ws / "stored"
    assert (stored / "aggregate/summary.json").is_file() and list(stored.glob("snapshots/*/*/tools.json"))
    transcripts = list(stored.glob("runs/**/transcript.json"))
    assert len(transcripts) == 4 and all((t.parent / "run_meta.json").is_file() for t in transcripts)
    assert not list(stored.glob("runs/**/scored.json"))  # only what replay reads

    # the pull request's checkout: the renamed server, its pack run
    shutil.rmtree(ws / "server/.mcptrials")
    shutil.copytree(runs["renamed"], ws / "server/.mcptrials", symlinks=True)
    rt = tmp_path / "runner_temp"
    rt.mkdir()
    (rt / "ci.local.yaml").write_text(yaml.safe_dump({"tools": {"search": {"version": "2"}}}))

    def words(name):
        return [
            w.replace("$RUNNER_TEMP", str(rt)).replace("my-server", "search") for w in documented_command(name)[1][1:]
        ]

    monkeypatch.chdir(ws / "server/.mcptrials")
    assert main(words("replay")) == 1
    assert "tool gone: search_code" in capsys.readouterr().out
    assert "tool gone" in (ws / "replay.md").read_text()
    monkeypatch.chdir(ws)
    assert main(words("compare")) == 1
    assert "FINDING tool_gone: search_code" in capsys.readouterr().out
    assert "renamed to find_code" in (ws / "comment.md").read_text()


def test_replay_names_what_is_wrong_with_heads_surface(runs, tmp_path, monkeypatch, capsys):
    """Issue 37 item 5 through replay: HEAD's results over the host's limit (150,000 characters
    against the cap of 25,000 tokens) with the trials that show them, and the tools HEAD offers
    that no BASE trial called."""
    _, res, md, _ = replay(tmp_path, runs, "surface", monkeypatch)
    out = capsys.readouterr().out
    found = res["tools"]["search"]["surface"]
    over = [f for f in found if f["kind"] == "result over the host's limit"]
    assert over and all(f["tool"] == "search_code" and f["trials"] for f in over)
    # 150,000 characters = 37,500 tokens: over every host's limit, each named
    assert (
        "about 37,500 tokens, over claude-code's 25,000, codex's 25,000, loop's 25,000, opencode's 12,800"
        in (over[0]["detail"])
    )
    never = sorted(f["tool"] for f in found if f["kind"] == "never called")
    assert never == ["big", "echo", "fail", "stats"]
    assert "surface: result over the host's limit: search_code" in out and "surface finding(s)" in md
