"""State checks: what the trial reads after a step (read_state: sql, json, unchanged_except)
and how the grader compares it with the scenario (grade_state), on small files made here;
the command part compares the runner's recorded output with the expect text. The data
pack's real servers and trials are in test_data_pack.py."""

import json
import shutil
import sqlite3

import pytest
import yaml

from matrix_helpers import filled_step as filled
from mcptrials.core import jsonpath
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.scenario import load_scenario
from mcptrials.grade import state
from mcptrials.run import workspace_state

SPEC = {"command": "git log -1 --format=%s", "expect": "fix: handle None"}


def grade_state(spec, record):
    return state.grade_state(filled(state_check=spec)["state_check"], record)


def test_contains_passes_and_fails():
    ok = grade_state(SPEC, {"command": SPEC["command"], "exit_code": 0, "output": "fix: handle None in parse\n"})
    assert ok["passed"] and ok["required"] and ok["exit_code"] == 0
    assert [p["kind"] for p in ok["parts"]] == ["command"]
    bad = grade_state(SPEC, {"command": SPEC["command"], "exit_code": 0, "output": "initial commit\n"})
    assert not bad["passed"] and "lacks" in bad["reason"]


def test_missing_record_fails():
    r = grade_state(dict(SPEC, required=False), None)
    assert not r["passed"] and r["required"] is False and "no state_check record" in r["reason"]


# --- values compare as exact answers do ----------------------------------------------------


def test_same_value_normalises_like_exact_answers():
    sv = state.same_value
    assert sv("1,234.50", 1234.5) and sv(7, "7") and sv("$12", 12) and not sv("8", 7)
    assert sv(0.333, 0.33, tolerance=0.01) and not sv(0.34, 0.33, tolerance=0.001)
    assert sv("  Closed ", "closed") and not sv("Closed", "closed", case_sensitive=True)
    assert sv(None, None) and not sv(None, "") and not sv(0, None)
    assert sv(["p1", 2], ["P1", "2"]) and not sv(["a"], ["a", "b"])
    assert sv(True, True) and not sv(1, True)


# --- a small database and graph --------------------------------------------------------


def make_db(path):
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, status TEXT, assignee INTEGER);
        CREATE TABLE issue_labels (issue_id INTEGER, label TEXT, PRIMARY KEY (issue_id, label));
        CREATE TABLE log (msg TEXT);
        INSERT INTO issues VALUES (1, 'Crash', 'open', 5), (2, 'Slow', 'open', 5), (3, 'Old', 'closed', 5);
        INSERT INTO issue_labels VALUES (1, 'bug'), (2, 'perf');
        INSERT INTO log VALUES ('a');
    """)
    con.commit()
    con.close()


GRAPH = [
    {"type": "entity", "name": "Priya Nair", "entityType": "person", "observations": ["Login: pnair"]},
    {"type": "entity", "name": "Li Chen", "entityType": "person", "observations": ["Login: lchen"]},
    {"type": "relation", "from": "Priya Nair", "to": "Li Chen", "relationType": "reports_to"},
]


@pytest.fixture
def trees(tmp_path):
    """(origin: the state at the pinned commit, workspace: a copy the agent may change)."""
    origin, ws = tmp_path / "origin", tmp_path / "ws"
    origin.mkdir()
    make_db(origin / "t.db")
    (origin / "graph.jsonl").write_text("".join(json.dumps(r) + "\n" for r in GRAPH))
    shutil.copytree(origin, ws)
    return origin, ws


def run_sql(ws, sql):
    con = sqlite3.connect(ws / "t.db")
    con.executescript(sql)
    con.commit()
    con.close()


def check(spec, ws, origin):
    """The step's check as the trial reads it and the grader grades it."""
    spec = filled(state_check=spec)["state_check"]
    return state.grade_state(spec, workspace_state.read_state(spec, ws, origin))


def test_sql_rows_and_value(trees):
    origin, ws = trees
    run_sql(ws, "UPDATE issues SET status = 'closed' WHERE id = 1")
    q = "SELECT id, status FROM issues WHERE assignee = 5"
    ok = check(
        {"sql": {"database": "t.db", "query": q, "rows": [[3, "Closed"], [1, "closed"], [2, "open"]]}}, ws, origin
    )
    assert ok["passed"], ok["reason"]
    part = ok["parts"][0]
    assert part["found"] == [[1, "closed"], [2, "open"], [3, "closed"]] and part["columns"] == ["id", "status"]
    ordered = check(
        {"sql": {"database": "t.db", "query": q, "ordered": True, "rows": [[3, "closed"], [1, "closed"], [2, "open"]]}},
        ws,
        origin,
    )
    assert not ordered["passed"] and "expected" in ordered["reason"]
    count = "SELECT count(*) FROM issues WHERE status = 'closed'"
    assert check({"sql": {"database": "t.db", "query": count, "value": "2"}}, ws, origin)["passed"]
    wrong = check({"sql": {"database": "t.db", "query": count, "value": 3}}, ws, origin)
    assert not wrong["passed"] and wrong["reason"] == "sql: the value is 2, not 3"
    two = check({"sql": {"database": "t.db", "query": "SELECT id, title FROM issues", "value": 1}}, ws, origin)
    assert not two["passed"] and "expected one value, the query returned 3 row(s)" in two["reason"]


def test_sql_errors_are_recorded_and_fail(trees):
    origin, ws = trees
    bad = check({"sql": {"database": "t.db", "query": "SELECT nope FROM issues", "value": 1}}, ws, origin)
    assert not bad["passed"] and "the query failed: OperationalError: no such column: nope" in bad["reason"]
    gone = check({"sql": {"database": "missing.db", "query": "SELECT 1", "value": 1}}, ws, origin)
    assert not gone["passed"] and "no such database file" in gone["reason"]
    # read-only: a query that would write is refused by SQLite, and the file is unchanged
    before = (ws / "t.db").read_bytes()
    w = check({"sql": {"database": "t.db", "query": "DELETE FROM issues", "value": 0}}, ws, origin)
    assert not w["passed"] and "readonly" in w["reason"].lower() and (ws / "t.db").read_bytes() == before


def test_a_symlink_out_of_the_workspace_is_not_read(trees, tmp_path):
    origin, ws = trees
    (ws / "t.db").unlink()
    (ws / "t.db").symlink_to(origin / "t.db")
    r = check({"sql": {"database": "t.db", "query": "SELECT 1", "value": 1}}, ws, origin)
    assert not r["passed"] and "resolves outside the workspace" in r["reason"]


def test_json_contains_value_count_over_jsonl(trees):
    origin, ws = trees
    obs = "$[?(@.name == 'Priya Nair')].observations"
    lines = (ws / "graph.jsonl").read_text().splitlines()
    priya = json.loads(lines[0])
    priya["observations"].append("On call: 2026-W50")
    lines[0] = json.dumps(priya, separators=(",", ":"))  # as the memory server writes it
    (ws / "graph.jsonl").write_text("\n".join(lines) + "\n")
    ok = check({"json": {"file": "graph.jsonl", "path": obs, "contains": "on call: 2026-w50"}}, ws, origin)
    assert ok["passed"] and ok["parts"][0]["found"] == [["Login: pnair", "On call: 2026-W50"]]
    assert not check({"json": {"file": "graph.jsonl", "path": obs, "contains": "On call: 2026-W51"}}, ws, origin)[
        "passed"
    ]
    assert check(
        {"json": {"file": "graph.jsonl", "path": "$[?(@.type == 'relation')].to", "value": "Li Chen"}}, ws, origin
    )["passed"]
    c = check({"json": {"file": "graph.jsonl", "path": "$[?(@.entityType == 'person')]", "count": 3}}, ws, origin)
    assert not c["passed"] and c["reason"] == "json: 2 match(es), expected 3"
    (ws / "graph.jsonl").write_text("{not json\n")
    broken = check({"json": {"file": "graph.jsonl", "path": obs, "count": 1}}, ws, origin)
    assert not broken["passed"] and "graph.jsonl line 1 is not JSON" in broken["reason"]


def test_unchanged_except_database(trees):
    origin, ws = trees
    spec = {
        "unchanged_except": {
            "database": "t.db",
            "allow": [{"table": "issues", "id": 1}, {"table": "issue_labels", "issue_id": 1}],
        }
    }
    untouched = check(spec, ws, origin)
    assert untouched["passed"] and untouched["reason"] == "nothing changed"
    run_sql(ws, "UPDATE issues SET status = 'closed' WHERE id = 1; INSERT INTO issue_labels VALUES (1, 'regression')")
    ok = check(spec, ws, origin)
    assert ok["passed"] and ok["reason"] == "2 change(s), all expected"
    run_sql(ws, "UPDATE issues SET assignee = 6 WHERE id = 2")  # a second row touched
    bad = check(spec, ws, origin)
    part = bad["parts"][0]
    assert not bad["passed"] and part["changes"] == 3
    assert part["unexpected"] == [
        'table issues: row [2] changed: {"id": 2, "title": "Slow", "status": "open", "assignee": 6}'
    ]
    assert "1 change(s) outside the expected ones: table issues: row [2] changed" in bad["reason"]


def test_unchanged_except_matches_the_row_before_or_after(trees):
    """A condition on the row before: only the open issues of assignee 5 may move."""
    origin, ws = trees
    spec = {
        "unchanged_except": {
            "database": "t.db",
            "allow": [{"table": "issues", "assignee": 5, "status": ["open", "in_progress"]}],
        }
    }
    run_sql(ws, "UPDATE issues SET assignee = 6 WHERE status = 'open'")
    assert check(spec, ws, origin)["passed"]
    run_sql(ws, "UPDATE issues SET assignee = 6 WHERE id = 3")  # a closed one too: not allowed
    bad = check(spec, ws, origin)
    assert not bad["passed"] and bad["parts"][0]["unexpected"][0].startswith("table issues: row [3] changed")


def test_unchanged_except_sees_new_tables_deletes_and_keyless_rows(trees):
    origin, ws = trees
    run_sql(ws, "CREATE TABLE notes (x); DELETE FROM issue_labels WHERE issue_id = 2; INSERT INTO log VALUES ('b')")
    r = check({"unchanged_except": {"database": "t.db"}}, ws, origin)
    found = r["parts"][0]["unexpected"]
    assert not r["passed"] and len(found) == 3
    assert found[0] == 'table issue_labels: row [2, "perf"] removed: {"issue_id": 2, "label": "perf"}'
    assert found[1] == 'table log: row {"msg": "b"} added: {"msg": "b"}'  # no primary key: the row is its key
    assert found[2] == "table notes: its schema changed"
    assert check(
        {
            "unchanged_except": {
                "database": "t.db",
                "allow": [{"table": "notes"}, {"table": "log"}, {"table": "issue_labels", "label": "perf"}],
            }
        },
        ws,
        origin,
    )["passed"]


def test_unchanged_except_file(trees):
    origin, ws = trees
    spec = {"unchanged_except": {"file": "graph.jsonl", "allow": [{"name": "Priya Nair"}]}}
    # the same records rewritten in another layout and key order are no change
    (ws / "graph.jsonl").write_text(
        "".join(json.dumps(dict(reversed(list(r.items()))), separators=(",", ":")) + "\n" for r in GRAPH)
    )
    assert check(spec, ws, origin)["reason"] == "nothing changed"
    g = json.loads(json.dumps(GRAPH))
    g[0]["observations"].append("On call: 2026-W50")
    g[1]["observations"] = []
    (ws / "graph.jsonl").write_text("".join(json.dumps(r) + "\n" for r in g))
    r = check(spec, ws, origin)
    assert not r["passed"] and r["parts"][0]["changes"] == 4  # two records edited: each removed and added
    assert r["parts"][0]["unexpected"] == [
        'record removed: {"entityType": "person", "name": "Li Chen", "observations": ["Login: lchen"], "type": "entity"}',
        'record added: {"entityType": "person", "name": "Li Chen", "observations": [], "type": "entity"}',
    ]
    (ws / "graph.jsonl").unlink()
    gone = check(spec, ws, origin)
    assert not gone["passed"] and "graph.jsonl was removed from the workspace" in gone["reason"]


def test_every_part_must_pass_and_each_says_why(trees):
    origin, ws = trees
    run_sql(ws, "UPDATE issues SET status = 'closed' WHERE id = 2")
    spec = {
        "sql": {"database": "t.db", "query": "SELECT status FROM issues WHERE id = 2", "value": "closed"},
        "unchanged_except": {"database": "t.db", "allow": [{"table": "issues", "id": 1}]},
    }
    r = check(spec, ws, origin)
    assert [p["passed"] for p in r["parts"]] == [True, False]
    assert not r["passed"] and r["reason"].startswith("unchanged_except: 1 change(s) outside the expected ones")
    # a record from before the trial read these parts: each part says it was not read
    old = grade_state(spec, {"command": None})
    assert [p["reason"] for p in old["parts"]] == [
        "the trial recorded no sql state (rerun the trial)",
        "the trial recorded no unchanged_except state (rerun the trial)",
    ]


# --- the JSON-path subset ----------------------------------------------------------------


def test_jsonpath_subset():
    doc = {"a": [{"n": "x", "v": 1}, {"n": "y", "v": 2}, {"n": "O'Neil", "v": None}], "b": {"c": {"d": 4}}}
    sel = jsonpath.select
    assert sel(doc, "$.a[*].v") == [1, 2, None] and sel(doc, "$.a[-1].n") == "O'Neil".split("|")
    assert sel(doc, "$['b'].c.d") == [4] and sel(doc, "$.b.*") == [{"d": 4}]
    assert sel(doc, "$.a[?(@.v == 2)].n") == ["y"] and sel(doc, "$.a[?(@.n != 'x')].v") == [2, None]
    assert sel(doc, "$.a[?(@.n == 'O\\'Neil')].v") == [None] and sel(doc, "$.a[?(@.v == null)].n") == ["O'Neil"]
    assert sel(doc, "$.a[5]") == [] and sel(doc, "$.zz.y") == [] and sel(doc, "$") == [doc]
    for bad in ("a.b", "$.a[?(@.v > 1)]", "$..a", "$.a["):
        with pytest.raises(ValueError):
            jsonpath.parse(bad)


# --- bad input, at load time ---------------------------------------------------------------


def scenario_error(tmp_path, state_check) -> str:
    p = tmp_path / "s.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "repo": "r",
                "rubric": {"criteria": [{"name": "c", "weight": 1, "question": "q"}]},
                "steps": [{"name": "s", "prompt": "p", "state_check": state_check}],
            }
        )
    )
    with pytest.raises(ConfigError) as e:
        load_scenario(p)
    return str(e.value)


def test_bad_state_checks_are_refused_naming_file_and_field(tmp_path):
    err = scenario_error(tmp_path, {"json": {"file": "g.jsonl", "path": "$.a[?(@.v > 1)]", "count": 1}})
    assert f"{tmp_path / 's.yaml'}: field steps.0.state_check.json.path: cannot read the JSON path" in err
    err = scenario_error(tmp_path, {"sql": {"database": "../x.db", "query": "SELECT 1", "value": 1}})
    assert "steps.0.state_check.sql.database: '../x.db' must be a path inside the workspace" in err
    err = scenario_error(tmp_path, {"sql": {"database": "x.db", "query": "SELECT 1; DROP TABLE t", "value": 1}})
    assert "steps.0.state_check.sql.query: give one complete SQL statement" in err
    err = scenario_error(tmp_path, {"sql": {"database": "x.db", "query": "SELECT 1"}})
    assert "field steps.0.state_check.sql: give exactly one of: rows, value" in err
    err = scenario_error(tmp_path, {"required": True})
    assert "field steps.0.state_check: give at least one of: command, sql, json, unchanged_except" in err
    err = scenario_error(tmp_path, {"command": "true"})
    assert "expect" in err and "steps.0.state_check" in err
