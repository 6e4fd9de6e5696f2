"""How long reading a step's state takes after the step (run/workspace_state.read_state), on the
data pack's fixture: the sql part, the unchanged_except part of the SQLite database (260
issues, ~1,500 rows in six tables, compared row by row with the checkout's copy) and of the
memory graph (69 JSONL records). Medians of 20 runs, after one write to the copy.

    .venv/bin/python bench/state_check_speed.py
"""

from __future__ import annotations

import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mcptrials.grade.state import grade_state  # noqa: E402
from mcptrials.run.workspace_state import read_state  # noqa: E402

FIXTURE = ROOT / "packs" / "data" / "fixture"
SPECS = {
    "sql (one query)": {
        "sql": {
            "database": "tracker.db",
            "query": "SELECT priority FROM issues WHERE id = 140",
            "value": "p1",
            "ordered": False,
            "case_sensitive": False,
        },
        "required": True,
    },
    "unchanged_except database": {
        "unchanged_except": {"database": "tracker.db", "allow": [{"table": "issues", "id": 140}]},
        "required": True,
    },
    "unchanged_except memory.jsonl": {"unchanged_except": {"file": "memory.jsonl", "allow": []}, "required": True},
}


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp, "ws")
        shutil.copytree(FIXTURE, ws)
        con = sqlite3.connect(ws / "tracker.db")
        con.execute("UPDATE issues SET priority = 'p1' WHERE id = 140")
        con.commit()
        con.close()
        for label, spec in SPECS.items():
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                rec = read_state(spec, ws, FIXTURE)
                times.append((time.perf_counter() - t0) * 1000)
            r = grade_state(spec, rec)
            print(f"{label}: median {statistics.median(times):.1f} ms, max {max(times):.1f} ms (passed {r['passed']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
