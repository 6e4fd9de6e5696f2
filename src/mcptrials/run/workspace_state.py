"""What a trial's workspace holds after a step, read for the state checks (grade.state says what
the four parts mean and grades them): `read_state` runs in the trial, right after the step,
while the workspace exists, and records what it FOUND (rows, matches, changes) on the
transcript's step.

Where the state is read: in the harness, not in a sandbox. The SQLite file is opened with
the stdlib in read-only URI mode (`mode=ro`, `query_only`, `trusted_schema=OFF`), so no
process of the server's runs and nothing is written; a path that resolves outside the
workspace (a symlink the agent left) is refused.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from mcptrials.core import jsonpath

MAX_ROWS = 200  # rows of a query result kept on the transcript
MAX_FOUND = 50  # JSON-path matches kept
MAX_CHANGES = 100  # changes kept (all are counted)
BASELINE = "the same file in the checkout at the pinned commit"
READ_BY = f"the harness, read-only (Python sqlite3, SQLite {sqlite3.sqlite_version})"


def _inside(workspace: Path, rel: str) -> Path:
    p = (Path(workspace) / rel).resolve()
    if not p.is_relative_to(Path(workspace).resolve()):
        raise ValueError(f"{rel} resolves outside the workspace ({p}); not read")
    return p


def _connect(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise FileNotFoundError(f"{path.name}: no such database file")
    con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    con.execute("PRAGMA query_only = ON")
    con.execute("PRAGMA trusted_schema = OFF")
    return con


def _jsonable(v):
    return v.hex() if isinstance(v, bytes) else v


def read_sql(spec: dict, workspace: Path) -> dict:
    out = {
        "database": spec["database"],
        "query": spec["query"],
        "columns": None,
        "rows": None,
        "row_count": None,
        "truncated": False,
        "error": None,
        "read_by": READ_BY,
    }
    try:
        con = _connect(_inside(workspace, spec["database"]))
        try:
            cur = con.execute(spec["query"])
            rows = cur.fetchmany(MAX_ROWS + 1)
            out["columns"] = [d[0] for d in cur.description or []]
        finally:
            con.close()
        out.update(
            rows=[[_jsonable(v) for v in r] for r in rows[:MAX_ROWS]],
            row_count=len(rows[:MAX_ROWS]),
            truncated=len(rows) > MAX_ROWS,
        )
    except (sqlite3.Error, OSError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def load_document(path: Path):
    """A JSON file's value; a JSONL file (.jsonl, .ndjson) is the list of its lines' values."""
    text = path.read_text()
    if path.suffix in (".jsonl", ".ndjson"):
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path.name} line {n} is not JSON: {e.msg}") from None
        return out
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path.name} is not JSON: {e.msg} at line {e.lineno}") from None


def read_json(spec: dict, workspace: Path) -> dict:
    out = {"file": spec["file"], "path": spec["path"], "found": None, "matches": None, "error": None}
    try:
        found = jsonpath.select(load_document(_inside(workspace, spec["file"])), spec["path"])
        out.update(found=found[:MAX_FOUND], matches=len(found))
    except (OSError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def _table_rows(con: sqlite3.Connection) -> dict[str, tuple[str, dict]]:
    """{table: (its CREATE statement, {key: row as {column: value}})}, keyed by primary key
    (the whole row for a table without one)."""
    out = {}
    tables = con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    ).fetchall()
    for name, ddl in tables:
        info = con.execute(f'PRAGMA table_info("{name}")').fetchall()
        cols = [c[1] for c in info]
        pk = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5]]
        rows = {}
        for r in con.execute(f'SELECT * FROM "{name}"'):
            row = {c: _jsonable(v) for c, v in zip(cols, r)}
            key = json.dumps([row[c] for c in pk] if pk else row, sort_keys=True)
            rows[key] = row
        out[name] = (ddl, rows)
    return out


def _db_changes(new: Path, old: Path) -> list[dict]:
    a, b = _connect(old), _connect(new)
    try:
        before, after = _table_rows(a), _table_rows(b)
    finally:
        a.close()
        b.close()
    changes = []
    for table in sorted(set(before) | set(after)):
        (ddl0, r0), (ddl1, r1) = before.get(table, (None, {})), after.get(table, (None, {}))
        if ddl0 != ddl1:
            changes.append({"table": table, "op": "schema", "before": ddl0, "after": ddl1})
        for key in sorted(set(r0) | set(r1)):
            x, y = r0.get(key), r1.get(key)
            if x != y:
                op = "added" if x is None else "removed" if y is None else "changed"
                changes.append({"table": table, "op": op, "key": json.loads(key), "before": x, "after": y})
    return changes


def _records(doc) -> list:
    return doc if isinstance(doc, list) else [doc]


def _file_changes(new: Path, old: Path) -> list[dict]:
    """Records (lines of a JSONL file, elements of a top-level list, else the document)
    removed and added, compared as canonical JSON: a record edited is one of each."""
    canon = lambda r: json.dumps(r, sort_keys=True, ensure_ascii=False)  # noqa: E731
    before = [canon(r) for r in _records(load_document(old))]
    after = [canon(r) for r in _records(load_document(new))]
    left, changes = list(after), []
    for r in before:
        if r in left:
            left.remove(r)
        else:
            changes.append({"op": "removed", "before": json.loads(r), "after": None})
    changes += [{"op": "added", "before": None, "after": json.loads(r)} for r in left]
    return changes


def read_changes(spec: dict, workspace: Path, origin: Path | None) -> dict:
    kind = "database" if spec.get("database") else "file"
    rel = spec[kind]
    out = {kind: rel, "baseline": BASELINE, "changes": None, "total": None, "error": None, "read_by": READ_BY}
    try:
        if origin is None:
            raise ValueError("the trial has no checkout to compare with")
        new, old = _inside(workspace, rel), Path(origin) / rel
        if not old.is_file():
            raise FileNotFoundError(f"{rel} is not in the checkout at the pinned commit")
        if not new.exists():
            raise FileNotFoundError(f"{rel} was removed from the workspace")
        changes = _db_changes(new, old) if kind == "database" else _file_changes(new, old)
        out.update(changes=changes[:MAX_CHANGES], total=len(changes))
    except (sqlite3.Error, OSError, ValueError) as e:
        out["error"] = f"{type(e).__name__}: {e}"
    return out


def read_state(spec: dict, workspace: Path, origin: Path | None) -> dict:
    """What the trial records of a step's sql, json and unchanged_except parts (the command
    part is trial.run_state_check's); `origin` is the checkout the workspace was copied from."""
    out = {}
    if spec.get("sql"):
        out["sql"] = read_sql(spec["sql"], workspace)
    if spec.get("json"):
        out["json"] = read_json(spec["json"], workspace)
    if spec.get("unchanged_except"):
        out["unchanged_except"] = read_changes(spec["unchanged_except"], workspace, origin)
    return out
