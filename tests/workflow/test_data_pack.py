"""The data pack (configs/data.yaml, packs/data/): servers that change data, graded by the
state they leave.

- the config validates and `snakemake -n` plans the whole matrix;
- the fixture is reproducible: the SQL seed and the graph file are what build_fixture.py
  makes, the database holds exactly the seed's rows, the bundle's commit is the pinned one;
- every scenario follows the method: read-only answers are true on the fixture (computed
  here by queries of our own), every state check passes on the untouched fixture when the
  step only reads and fails there when the step must write (so it can fail);
- a scripted agent through the `anthropic` provider (the real SDK against the test
  Messages API) writes with the real mcp-server-sqlite and server-memory, sandboxed: a
  correct write passes, a wrong value fails, an extra row touched fails saying which;
- the reference agent's run of the whole pack through Snakemake completes; it never calls
  a tool that writes, so its write tasks fail on the state, named.
"""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fakes.messages_api import reply, text, tool_use
from matrix_helpers import ROOT
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.demo_repo import build_bundle, bundle_commit
from mcptrials.grade import state
from mcptrials.run import workspace_state
from mcptrials.grade.scoring import score_trial
from mcptrials.run.runner import run_trial

PACK = ROOT / "configs" / "data.yaml"
MATRIX = load_matrix(PACK)
FIXTURE = ROOT / "packs" / "data" / "fixture"
BUNDLE = ROOT / "packs" / "data" / "fixture.bundle"
TOOLS = ROOT / ".tools"
SCENARIOS = sorted(MATRIX.scenarios.values(), key=lambda s: s.id)
WRITE_TASKS = {
    "label-the-regression": ["label"],
    "close-the-duplicate": ["close"],
    "reassign-open-work": ["reassign"],
    "record-on-call": ["record"],
}


def _builder():
    spec = importlib.util.spec_from_file_location("build_fixture", ROOT / "packs" / "data" / "build_fixture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --- the config and the plan -----------------------------------------------------------


def test_validate_passes():
    p = subprocess.run(
        [sys.executable, "-m", "mcptrials.cli", "validate", "--config", str(PACK)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    assert "1 model(s) x 1 host(s) x 3 tool(s) x 10 scenario(s) x 3 trial(s) = 90 trials" in p.stdout


def test_dry_run_plans_the_whole_matrix():
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "--configfile", str(PACK), "-n", "--forceall", "--cores", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", p.stdout + p.stderr, re.M))
    assert int(counts["transcript"]) == 90 and int(counts["scored"]) == 90 and int(counts["checkout"]) == 1
    assert int(counts["install_tool"]) == 2 and int(counts["tools_snapshot"]) == 3


def test_pack_shape():
    """Read-only and write tasks, tasks where a tool is a mistake, and a multi-step one."""
    assert set(MATRIX.tools) == {"baseline", "sqlite", "memory"}
    assert MATRIX.repos["tracker"]["url"] == "../packs/data/fixture.bundle"
    steps = [st for s in SCENARIOS for st in s.data["steps"]]
    assert all(st.get("state_check") for st in steps), "every step's state is checked"
    assert all("expected_tools" in st for st in steps)
    no_tool = [s.id for s in SCENARIOS if all(st["expected_tools"] == [] for st in s.data["steps"])]
    assert sorted(no_tool) == ["days-open-in-the-prompt", "login-in-the-prompt"]
    writes = {
        s.id: [st["name"] for st in s.data["steps"] if {"sql", "json"} & set(st["state_check"])] for s in SCENARIOS
    }
    assert {k: v for k, v in writes.items() if v} == WRITE_TASKS
    assert any(len(s.data["steps"]) > 1 for s in SCENARIOS)
    for st in steps:  # a read-only step says the data must not change; a write names what may
        assert "unchanged_except" in st["state_check"], st["name"]
    assert all(st.get("exact_answer", {}).get("format") for st in steps if st.get("exact_answer"))


# --- the fixture ---------------------------------------------------------------------------


def test_the_fixture_is_reproducible(tmp_path):
    b = _builder()
    b.write_fixture(tmp_path / "fx")
    for name in ("tracker.sql", "memory.jsonl", "README.md"):
        assert (tmp_path / "fx" / name).read_bytes() == (FIXTURE / name).read_bytes(), name
    shipped = sqlite3.connect(FIXTURE / "tracker.db")
    seeded = sqlite3.connect(":memory:")
    seeded.executescript((FIXTURE / "tracker.sql").read_text())
    assert list(shipped.iterdump()) == list(seeded.iterdump())
    counts = {
        t: shipped.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("people", "labels", "milestones", "issues", "issue_labels", "comments")
    }
    assert counts == {"people": 14, "labels": 10, "milestones": 3, "issues": 260, "issue_labels": 531, "comments": 320}
    pinned = MATRIX.repos["tracker"]["commit"]
    assert bundle_commit(BUNDLE) == pinned
    assert build_bundle(FIXTURE, tmp_path / "again.bundle", message=b.MESSAGE) == pinned


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """The pack's checkout at the pinned commit, as the checkout stage makes it."""
    dest = tmp_path_factory.mktemp("co")
    return checkout(
        "tracker",
        MATRIX.repo_source("tracker"),
        MATRIX.repos["tracker"]["url"],
        MATRIX.repos["tracker"]["commit"],
        dest,
    )


# Our own queries for the read-only answers, on the fixture: (scenario, step) -> (sql, the value)
ANSWERS = {
    ("open-p0-in-v24", "count"): "SELECT count(*) FROM issues i JOIN milestones m ON m.id = i.milestone_id "
    "WHERE m.title = 'v2.4' AND i.status IN ('open', 'in_progress') AND i.priority = 'p0'",
    ("busiest-bug-assignee", "busiest"): "SELECT p.login FROM issues i JOIN people p ON p.id = i.assignee_id "
    "JOIN issue_labels il ON il.issue_id = i.id JOIN labels l ON l.id = il.label_id "
    "WHERE l.name = 'bug' AND i.status <> 'closed' GROUP BY p.login "
    "ORDER BY count(*) DESC LIMIT 1",
    (
        "oldest-open-security",
        "oldest",
    ): "SELECT min(i.created_at) FROM issues i JOIN issue_labels il ON il.issue_id = i.id "
    "JOIN labels l ON l.id = il.label_id WHERE l.name = 'security' AND i.status = 'open'",
    ("label-the-regression", "label"): "SELECT '#' || id FROM issues WHERE title LIKE '%crash on resume%' "
    "AND status = 'open' AND milestone_id = (SELECT id FROM milestones WHERE title = 'v2.4')",
    ("reassign-open-work", "reassign"): "SELECT count(*) FROM issues WHERE status <> 'closed' AND assignee_id = "
    "(SELECT id FROM people WHERE login = 'mrossi')",
}


def test_answers_hold_on_the_fixture(tree):
    con = sqlite3.connect(Path(tree["tree"]) / "tracker.db")
    for (sid, step), sql in ANSWERS.items():
        st = next(s for s in MATRIX.scenarios[sid].data["steps"] if s["name"] == step)
        rows = con.execute(sql).fetchall()
        assert len(rows) == 1 and state.same_value(rows[0][0], st["exact_answer"]["value"]), (sid, rows)
    # the tie-breaker matters nowhere: the busiest assignee leads alone
    top = con.execute(
        ANSWERS[("busiest-bug-assignee", "busiest")]
        .replace("p.login FROM", "count(*) FROM")
        .replace("LIMIT 1", "LIMIT 2")
    ).fetchall()
    assert top[0][0] > top[1][0]
    graph = workspace_state.load_document(Path(tree["tree"]) / "memory.jsonl")
    owns = {r["to"]: r["from"] for r in graph if r.get("relationType") == "owns"}
    boss = {r["from"]: r["to"] for r in graph if r.get("relationType") == "reports_to"}
    team = {r["from"]: r["to"] for r in graph if r.get("relationType") == "member_of"}
    obs = {r["name"]: r["observations"] for r in graph if r["type"] == "entity"}
    assert "Slack channel: #team-platform" in obs[team[boss[owns["tracking-api"]]]]
    assert owns["billing-service"] == "Priya Nair" and "On call: 2026-W50" not in obs["Priya Nair"]


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_state_checks_on_the_untouched_fixture(sc, tree):
    """Read-only steps pass on the fixture as it is; write steps fail there (their check can fail)."""
    ws = Path(tree["tree"])
    for st in sc.data["steps"]:
        spec = st["state_check"]
        r = state.grade_state(spec, workspace_state.read_state(spec, ws, ws))
        by_kind = {p["kind"]: p for p in r["parts"]}
        assert by_kind["unchanged_except"]["passed"] and by_kind["unchanged_except"]["reason"] == "nothing changed"
        if st["name"] in WRITE_TASKS.get(sc.id, []):
            written = by_kind.get("sql") or by_kind.get("json")
            assert not written["passed"] and not r["passed"], (sc.id, written)
            assert "error" not in written["reason"] and "failed" not in written["reason"], written
        else:
            assert r["passed"], (sc.id, r["reason"])


# --- scripted writes through the anthropic provider, real servers ------------------------

INSTALL_MARKS = {
    "sqlite": TOOLS / "sqlite" / "bin" / "mcp-server-sqlite",
    "memory": TOOLS / "memory" / "node_modules" / ".bin" / "mcp-server-memory",
}


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Install the pack's two servers into the checkout's .tools/ with the workflow's own
    command (skipped when already there)."""
    out = tmp_path_factory.mktemp("install")
    for tool, mark in INSTALL_MARKS.items():
        if not mark.exists():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mcptrials.cli",
                    "install-tool",
                    "--config",
                    str(PACK),
                    "--tool",
                    tool,
                    "--out",
                    str(out / f"{tool}.json"),
                ],
                check=True,
                cwd=ROOT,
                env={**os.environ, "MCPTRIALS_TOOLS_DIR": str(TOOLS)},
            )
        assert mark.exists(), mark
    return True


def claude_matrix(tmp_path, api):
    """The pack with a claude model on the test Messages API, merged over it as a second file."""
    over = tmp_path / "claude.yaml"
    over.write_text(
        yaml.safe_dump(
            {"models": {"claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url}}}
        )
    )
    return load_matrix(f"{PACK}{os.pathsep}{over}")


def scripted_trial(tmp_path, fake_api, monkeypatch, tool, scenario, script):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "fake-key-test-data-pack-0123456789")
    monkeypatch.setenv("MCPTRIALS_TOOLS_DIR", str(TOOLS))
    api = fake_api(script)
    tmp_path.mkdir(parents=True, exist_ok=True)
    m = claude_matrix(tmp_path, api)
    co = checkout(
        "tracker", m.repo_source("tracker"), m.repos["tracker"]["url"], m.repos["tracker"]["commit"], tmp_path / "co"
    )
    t, meta = run_trial(m, "claude", tool, scenario, 1, co, None, None, tmp_path / "out")
    assert meta["sandbox"]["mechanism"] == "bubblewrap" and meta["sandbox"]["network"] is False
    scored = score_trial(t, m.scenarios[scenario].data, co["tree"], co["commit"], m.config["pricing"], None)
    return t, scored


def sql(query, id):
    return tool_use(
        "mcp__sqlite__write_query" if not query.lstrip().upper().startswith("SELECT") else "mcp__sqlite__read_query",
        {"query": query},
        id=id,
    )


FIND = "SELECT id, title, status, priority FROM issues WHERE title LIKE '%crash on resume%' AND status = 'open'"


def label_script(priority: str, extra: str | None = None) -> list:
    writes = [
        sql("INSERT INTO issue_labels VALUES (140, (SELECT id FROM labels WHERE name = 'regression'))", "w1"),
        sql(f"UPDATE issues SET priority = '{priority}' WHERE id = 140", "w2"),
    ]
    if extra:
        writes.append(sql(extra, "w3"))
    return [
        reply(
            text("First the schema and the issue."), tool_use("mcp__sqlite__list_tables", {}, id="l"), sql(FIND, "f")
        ),
        reply(*writes),
        reply(text("Labelled and re-prioritised `#140`.")),
    ]


def state_part(scored, kind):
    return next(p for p in scored["steps"][0]["state"]["parts"] if p["kind"] == kind)


@pytest.mark.slow
def test_a_correct_write_passes_the_state_check(tmp_path, installed, fake_api, monkeypatch):
    t, s = scripted_trial(tmp_path, fake_api, monkeypatch, "sqlite", "label-the-regression", label_script("p1"))
    assert t["outcome"] == "completed", t["outcome_detail"]
    calls = {c["id"]: c for c in t["tool_calls"]}
    assert calls["f"]["tool"] == "read_query" and "Crash on resume is slow" in calls["f"]["result_text"]
    assert calls["w1"]["tool"] == "write_query" and "'affected_rows': 1" in calls["w1"]["result_text"]
    rec = t["steps"][0]["state_check"]
    assert rec["sql"]["rows"] == [["p1", "bug,ios,performance,regression"]]
    changes = rec["unchanged_except"]["changes"]
    assert [(c["table"], c["op"]) for c in changes] == [("issue_labels", "added"), ("issues", "changed")]
    assert changes[1]["before"]["priority"] == "p2" and changes[1]["after"]["priority"] == "p1"
    assert s["passed"], s["failures"]
    assert s["steps"][0]["state"]["reason"] == "every part passed"
    assert state_part(s, "unchanged_except")["reason"] == "2 change(s), all expected"
    ad = s["adoption"]["expected_tools"][0]
    assert ad["unexpected"] == [] and ad["precision"] == 1.0 and ad["recall"] == pytest.approx(3 / 4)


@pytest.mark.slow
def test_a_wrong_value_fails_the_state_check(tmp_path, installed, fake_api, monkeypatch):
    t, s = scripted_trial(tmp_path, fake_api, monkeypatch, "sqlite", "label-the-regression", label_script("p0"))
    assert t["outcome"] == "completed" and not s["passed"]
    assert s["steps"][0]["exact"]["passed"]  # the answer names the right issue...
    part = state_part(s, "sql")  # ...the state is wrong
    assert not part["passed"] and part["found"] == [["p0", "bug,ios,performance,regression"]]
    assert state_part(s, "unchanged_except")["passed"]
    assert any("state check: sql: the query returned [['p0'" in f for f in s["failures"])


@pytest.mark.slow
def test_an_extra_row_touched_fails_saying_which(tmp_path, installed, fake_api, monkeypatch):
    t, s = scripted_trial(
        tmp_path,
        fake_api,
        monkeypatch,
        "sqlite",
        "label-the-regression",
        label_script("p1", extra="UPDATE issues SET priority = 'p1' WHERE id = 111"),
    )
    assert t["outcome"] == "completed" and not s["passed"]
    assert state_part(s, "sql")["passed"]
    part = state_part(s, "unchanged_except")
    assert not part["passed"] and part["changes"] == 3
    assert len(part["unexpected"]) == 1 and part["unexpected"][0].startswith("table issues: row [111] changed: ")
    assert any("outside the expected ones: table issues: row [111] changed" in f for f in s["failures"])


OBSERVE = {"observations": [{"entityName": "Priya Nair", "contents": ["On call: 2026-W50"]}]}


@pytest.mark.slow
def test_a_knowledge_graph_write_is_graded_by_the_file(tmp_path, installed, fake_api, monkeypatch):
    script = [
        reply(tool_use("mcp__memory__search_nodes", {"query": "billing-service"}, id="s")),
        reply(tool_use("mcp__memory__add_observations", OBSERVE, id="a")),
        reply(text("Priya Nair owns billing-service; recorded `On call: 2026-W50` on her entity.")),
    ]
    t, s = scripted_trial(tmp_path, fake_api, monkeypatch, "memory", "record-on-call", script)
    assert t["outcome"] == "completed", t["outcome_detail"]
    assert "Priya Nair" in next(c for c in t["tool_calls"] if c["id"] == "s")["result_text"]
    assert s["passed"], s["failures"]
    found = t["steps"][0]["state_check"]["json"]["found"]
    assert found == [["Login: pnair", "Timezone: UTC+5:30", "On call: 2026-W47", "On call: 2026-W50"]]
    # the server rewrote every line in its own layout: one record changed, nothing else
    assert state_part(s, "unchanged_except")["changes"] == 2

    wrong = copy.deepcopy(OBSERVE)
    wrong["observations"].append({"entityName": "Li Chen", "contents": ["On call: 2026-W50"]})
    script[1] = reply(tool_use("mcp__memory__add_observations", wrong, id="a"))
    t2, s2 = scripted_trial(tmp_path / "again", fake_api, monkeypatch, "memory", "record-on-call", script)
    part = state_part(s2, "unchanged_except")
    assert state_part(s2, "json")["passed"] and not part["passed"] and not s2["passed"]
    assert part["unexpected"][0].startswith('record removed: {"entityType": "person", "name": "Li Chen"')
    assert part["unexpected"][1].startswith('record added: {"entityType": "person", "name": "Li Chen"')


@pytest.mark.slow
def test_a_tool_called_where_none_is_needed_is_reported(tmp_path, installed, fake_api, monkeypatch):
    script = [
        reply(sql("SELECT created_at, closed_at FROM issues WHERE id = 57", "q")),
        reply(text("It was open for\n17")),
    ]
    t, s = scripted_trial(tmp_path, fake_api, monkeypatch, "sqlite", "days-open-in-the-prompt", script)
    assert s["passed"]  # reported, never scored
    ad = s["adoption"]["expected_tools"][0]
    assert ad["expected"] == [] and ad["unexpected"] == ["read_query"] and ad["precision"] == 0.0
    assert ad["recall"] is None


# --- the reference agent's run of the whole pack -----------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(1800)  # beyond its own 1,500 s snakemake time-out (pyproject: 900 s a test)
def test_the_reference_run_of_the_pack_completes(tmp_path):
    from workflow_helpers import copy_workflow, run_snakemake, workflow_env

    wd = tmp_path / "proj"
    wd.mkdir()
    copy_workflow(wd)
    cfg = yaml.safe_load(PACK.read_text())
    cfg["repos"]["tracker"]["url"] = str(BUNDLE)
    cfg["scenarios"] = str(ROOT / "packs" / "data" / "scenarios" / "*.yaml")
    cfg["trials"] = 1
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    shutil.rmtree(wd / "locked", ignore_errors=True)
    # The install rule re-installs (a fresh environment each time): into this test's own
    # tools folder, so the servers other tests share are never removed under them. npm and
    # pip need the machine's certificate settings to reach the registry.
    certs = {k: os.environ[k] for k in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "PIP_CERT") if k in os.environ}
    env = {**workflow_env(wd), "MCPTRIALS_TOOLS_DIR": str(tmp_path / "tools"), **certs}
    run_snakemake(wd, "--cores", "2", timeout=1500, env=env)
    rows = list(csv.DictReader((wd / "results" / "aggregate" / "trials.csv").open()))
    assert len(rows) == 30 and all(r["outcome"] == "completed" for r in rows), [r["outcome"] for r in rows]
    passed = {(r["tool"], r["scenario"]) for r in rows if r["passed"] == "True"}
    for tool in ("baseline", "sqlite", "memory"):
        for sid in WRITE_TASKS:  # the reference agent never writes
            assert (tool, sid) not in passed
    # it read nothing it should not have changed: every read-only step's state stayed as it was
    for scored in (wd / "results" / "runs").rglob("scored.json"):
        rec = json.loads(scored.read_text())
        for st in rec["steps"]:
            part = next(p for p in st["state"]["parts"] if p["kind"] == "unchanged_except")
            assert part["passed"], (scored, part)
        if rec["cell"]["scenario"] in WRITE_TASKS:
            assert any("state check" in f for f in rec["failures"]), rec["failures"]
    tools = {r["tool"]: r for r in csv.DictReader((wd / "results" / "aggregate" / "tools.csv").open())}
    assert float(tools["sqlite"]["expected_tools_precision"]) < 1  # it also greps the SQL seed
    assert "expected tools: precision" in (wd / "results" / "report" / "index.html").read_text()


@pytest.mark.slow
def test_a_data_changing_trial_replays_in_its_recorded_order(tmp_path, installed, fake_api, monkeypatch, capsys):
    """`mcptrials replay` of a trial that writes (issue 22): its calls go to a fresh copy of the
    fixture in their recorded order, so the read after the write sees the write again and every
    call is identical; the same trial against a server given another database file is not."""
    from mcptrials.cli import main
    from mcptrials.core.records import write_json

    after = "SELECT COUNT(*) FROM issue_labels WHERE issue_id = 140"
    script = [
        reply(tool_use("mcp__sqlite__read_query", {"query": after}, id="r0")),
        reply(sql("INSERT INTO issue_labels VALUES (140, (SELECT id FROM labels WHERE name = 'regression'))", "w1")),
        reply(tool_use("mcp__sqlite__read_query", {"query": after}, id="r1")),
        reply(text("Labelled `#140`.")),
    ]
    t, _ = scripted_trial(tmp_path / "trial", fake_api, monkeypatch, "sqlite", "label-the-regression", script)
    calls = {c["id"]: c["result_text"] for c in t["tool_calls"]}
    assert calls["r0"] != calls["r1"]  # the write changed what the later read sees
    base = tmp_path / "base"
    out = base / "runs/claude/loop/sqlite/tracker/label-the-regression/1"
    write_json(out / "transcript.json", t)
    write_json(
        out / "run_meta.json", {"commit": MATRIX.repos["tracker"]["commit"], "limits": {"max_result_tokens": 25000}}
    )
    head = tmp_path / "head"
    spec = MATRIX.tools["sqlite"]
    write_json(head / "results/tools/sqlite/install.json", {"requested": spec["install"]["pip"]})  # the shared .tools/
    monkeypatch.chdir(head)
    js = tmp_path / "r.json"
    assert main(["replay", str(base), "--config", str(PACK), "--json", str(js)]) == 0, capsys.readouterr()
    v = json.loads(js.read_text())["tools"]["sqlite"]
    assert v["calls"] == 3 and v["counts"]["identical"] == 3
    # another database file (an empty one the server creates): every call answers "Database error: no
    # such table" as a plain result (no isError): now an error all the same (replay.says_error)
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"tools": {"sqlite": {"args": ["--db-path", "{workspace}/other.db"]}}}))
    assert main(["replay", str(base), "--config", f"{PACK}{os.pathsep}{other}", "--json", str(js)]) == 1
    v = json.loads(js.read_text())["tools"]["sqlite"]
    assert v["counts"]["now an error"] == 3, v["differences"]
