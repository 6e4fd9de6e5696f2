"""State checks: for tools that change data, the state they leave is the main grader.

A step's `state_check` has up to four parts; the step's check passes when every part does:

  command           sh runs it in the workspace (sandboxed, trial.run_state_check); passes
                    when its output contains `expect`.
  sql               a query on a SQLite file of the workspace; passes when its rows equal
                    `rows` (as a multiset unless `ordered`), or its one cell equals `value`.
  json              a JSON-path (mcptrials.core.jsonpath) over a JSON or JSONL file of the
                    workspace; passes when the one match equals `value`, some match (or an
                    element of a matched list) equals `contains`, or there are `count` matches.
  unchanged_except  the file (`database`: SQLite, row by row, keyed by primary key; `file`:
                    JSON/JSONL, record by record) compared with the same file of the checkout
                    at the pinned commit; passes when every change matches an `allow` entry
                    ({table?: name, field: value or [values]}, on the row before or after the
                    change). A write outside the expected change fails and is named.

Two halves, so that an edit of an expectation rescoring only: `read_state`
(run.workspace_state) runs in the trial, right after the step, while the workspace exists, and records what it FOUND (rows,
matches, changes) on the transcript's step; `grade_state` compares that record with the
scenario's expectation. Values compare as exact answers do (grade/exact.py): numbers as
numbers (thousands separators, currency signs, a tolerance), strings trimmed and case-folded
unless case_sensitive, null only with null.

Where the state is read: in the harness, not in a sandbox. The SQLite file is opened with
the stdlib in read-only URI mode (`mode=ro`, `query_only`, `trusted_schema=OFF`), so no
process of the server's runs and nothing is written; a path that resolves outside the
workspace (a symlink the agent left) is refused. The command part keeps its sandbox, since
it runs an arbitrary program over what the server left.
"""

from __future__ import annotations

import json
from decimal import Decimal

from mcptrials.core.values import clean, to_number
from mcptrials.run.workspace_state import MAX_CHANGES, MAX_ROWS


def same_value(got, want, case_sensitive: bool = False, tolerance=None) -> bool:
    """One value against an expected one, normalised as exact answers are."""
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, bool) or isinstance(got, bool):  # true is not 1 (SQLite has no booleans: write 1)
        return isinstance(want, bool) and isinstance(got, bool) and got == want
    if isinstance(want, (list, dict)) or isinstance(got, (list, dict)):
        if isinstance(want, list) and isinstance(got, list):
            return len(got) == len(want) and all(same_value(g, w, case_sensitive, tolerance) for g, w in zip(got, want))
        if isinstance(want, dict) and isinstance(got, dict):
            return set(got) == set(want) and all(same_value(got[k], want[k], case_sensitive, tolerance) for k in want)
        return False
    w = Decimal(str(want)) if isinstance(want, (int, float)) else to_number(str(want))
    if w is not None or tolerance is not None:
        g = Decimal(str(got)) if isinstance(got, (int, float)) else to_number(str(got))
        return w is not None and g is not None and abs(g - w) <= Decimal(str(tolerance or 0))
    a, b = clean(str(got)), clean(str(want))
    return a == b if case_sensitive else a.casefold() == b.casefold()


def _rows_equal(got: list, want: list, ordered: bool, case: bool, tol) -> bool:
    if len(got) != len(want):
        return False
    if ordered:
        return all(same_value(g, w, case, tol) for g, w in zip(got, want))
    left = list(got)
    for w in want:  # a multiset match: each expected row takes one equal row
        hit = next((i for i, g in enumerate(left) if same_value(g, w, case, tol)), None)
        if hit is None:
            return False
        left.pop(hit)
    return True


def _grade_sql(spec: dict, rec: dict) -> dict:
    case, tol = spec["case_sensitive"], spec.get("tolerance")
    part = {
        "kind": "sql",
        "database": spec["database"],
        "query": spec["query"],
        "passed": False,
        "found": rec.get("rows"),
        "columns": rec.get("columns"),
    }
    if rec.get("error"):
        return dict(part, reason=f"the query failed: {rec['error']}")
    rows = rec.get("rows") or []
    if rec.get("truncated"):
        return dict(part, reason=f"the query returned more than {MAX_ROWS} rows")
    if "value" in spec:
        part["expected"] = spec["value"]
        if len(rows) != 1 or len(rows[0]) != 1:
            return dict(
                part,
                reason=f"expected one value, the query returned {len(rows)} row(s)"
                + (f" of {len(rows[0])} column(s)" if rows else ""),
            )
        ok = same_value(rows[0][0], spec["value"], case, tol)
        return dict(part, passed=ok, reason=f"the value is {rows[0][0]!r}" + ("" if ok else f", not {spec['value']!r}"))
    part["expected"] = spec["rows"]
    ok = _rows_equal(rows, spec["rows"], spec["ordered"], case, tol)
    return dict(
        part,
        passed=ok,
        reason=("the rows are the expected ones" if ok else f"the query returned {rows!r}, expected {spec['rows']!r}"),
    )


def _grade_json(spec: dict, rec: dict) -> dict:
    case, tol = spec["case_sensitive"], spec.get("tolerance")
    found = rec.get("found") or []
    part = {
        "kind": "json",
        "file": spec["file"],
        "path": spec["path"],
        "passed": False,
        "found": rec.get("found"),
        "matches": rec.get("matches"),
    }
    if rec.get("error"):
        return dict(part, reason=f"the file could not be read: {rec['error']}")
    if "count" in spec:
        ok = rec.get("matches") == spec["count"]
        return dict(
            part,
            expected={"count": spec["count"]},
            passed=ok,
            reason=f"{rec.get('matches')} match(es)" + ("" if ok else f", expected {spec['count']}"),
        )
    if "contains" in spec:
        pool = [x for f in found for x in (f if isinstance(f, list) else [f])]
        ok = any(same_value(x, spec["contains"], case, tol) for x in pool)
        return dict(
            part,
            expected={"contains": spec["contains"]},
            passed=ok,
            reason=(
                "a match contains the expected value"
                if ok
                else f"no match contains {spec['contains']!r} ({len(found)} match(es))"
            ),
        )
    if len(found) != 1:
        return dict(part, expected={"value": spec["value"]}, reason=f"expected one match, found {rec.get('matches')}")
    ok = same_value(found[0], spec["value"], case, tol)
    return dict(
        part,
        expected={"value": spec["value"]},
        passed=ok,
        reason=f"the match is {found[0]!r}" + ("" if ok else f", not {spec['value']!r}"),
    )


def _allowed(change: dict, allow: list[dict]) -> bool:
    for entry in allow:
        if "table" in entry and entry["table"] != change.get("table"):
            continue
        fields = {k: v for k, v in entry.items() if k != "table"}
        if not fields:
            return True  # {table: X}: any change of that table
        if change["op"] == "schema":
            continue
        for rec in (change.get("before"), change.get("after")):
            if isinstance(rec, dict) and all(
                k in rec and any(same_value(rec[k], w) for w in (v if isinstance(v, list) else [v]))
                for k, v in fields.items()
            ):
                return True
    return False


def _describe(change: dict) -> str:
    where = f"table {change['table']}: " if change.get("table") else ""
    if change["op"] == "schema":
        return f"{where}its schema changed"
    what = f"row {json.dumps(change['key'])}" if "key" in change else "record"
    shown = change["after"] if change["after"] is not None else change["before"]
    return f"{where}{what} {change['op']}: {json.dumps(shown, ensure_ascii=False)[:300]}"


def _grade_unchanged(spec: dict, rec: dict) -> dict:
    kind = "database" if spec.get("database") else "file"
    part = {
        "kind": "unchanged_except",
        kind: spec[kind],
        "allow": spec["allow"],
        "passed": False,
        "changes": rec.get("total"),
        "unexpected": None,
    }
    if rec.get("error"):
        return dict(part, reason=f"the state could not be compared: {rec['error']}")
    changes = rec.get("changes") or []
    bad = [c for c in changes if not _allowed(c, spec["allow"])]
    part["unexpected"] = [_describe(c) for c in bad]
    unseen = (rec.get("total") or 0) - len(changes)
    if bad or unseen:
        why = f"{len(bad)} change(s) outside the expected ones: " + "; ".join(part["unexpected"][:5]) if bad else ""
        if unseen:
            why += ("; " if why else "") + f"{unseen} more change(s) not recorded (over {MAX_CHANGES})"
        return dict(part, reason=why)
    n = len(changes)
    return dict(part, passed=True, reason=("nothing changed" if not n else f"{n} change(s), all expected"))


def grade_state(spec: dict, record: dict | None) -> dict:
    """{command, expect, required, passed, exit_code, output, parts, reason} for one step:
    a part per kind the spec has, each with what was found and why it passed or failed."""
    out = {
        "command": spec.get("command"),
        "expect": spec.get("expect"),
        "required": spec["required"],
        "passed": False,
        "exit_code": None,
        "output": None,
        "parts": [],
    }
    if not record:
        out["reason"] = "the transcript has no state_check record for this step (the run did not reach it)"
        return out
    parts = []
    if spec.get("command"):
        output = record.get("output") or ""
        ok = spec["expect"] in output
        out.update(exit_code=record.get("exit_code"), output=output[-2000:])
        parts.append(
            {
                "kind": "command",
                "passed": ok,
                "found": output[-2000:],
                "reason": "output contains the expected text" if ok else "output lacks the expected text",
            }
        )
    for kind, grade in (("sql", _grade_sql), ("json", _grade_json), ("unchanged_except", _grade_unchanged)):
        if spec.get(kind):
            if record.get(kind) is None:
                parts.append(
                    {
                        "kind": kind,
                        "passed": False,
                        "found": None,
                        "reason": f"the trial recorded no {kind} state (rerun the trial)",
                    }
                )
            else:
                parts.append(grade(spec[kind], record[kind]))
    out["parts"] = parts
    out["passed"] = bool(parts) and all(p["passed"] for p in parts)
    failed = [p for p in parts if not p["passed"]]
    out["reason"] = (
        "; ".join(f"{p['kind']}: {p['reason']}" for p in failed)
        if failed
        else parts[0]["reason"]
        if len(parts) == 1
        else "every part passed"
    )
    return out
