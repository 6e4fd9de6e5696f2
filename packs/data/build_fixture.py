"""Build the data pack's fixture: an issue tracker of a small product team ("Harbor", a
shipping app), as packs/data/fixture/{tracker.sql, tracker.db, memory.jsonl, README.md},
then the bundle packs/data/fixture.bundle (one commit with a fixed id, built like the
demo's: `mcptrials demo-bundle`'s builder).

Everything is a pure function of SEED: running this twice writes the same SQL and JSONL
bytes. The .db file is made from the SQL by the stdlib sqlite3; its bytes can differ with
the SQLite library's version, so the committed .db (inside the bundle) is the fixture of
record and tests compare its *content* with the SQL, not its bytes.

    .venv/bin/python packs/data/build_fixture.py          # prints the commit to pin in configs/data.yaml
"""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixture"
BUNDLE = HERE / "fixture.bundle"
MESSAGE = "harbor tracker export 2026-11-30\n"
SEED = 17
N_ISSUES = 260
N_COMMENTS = 320
TODAY = date(2026, 11, 30)

TEAMS = {"Payments": "payments", "Mobile": "mobile", "Platform": "platform", "Growth": "growth"}
PEOPLE = [  # login, name, team, timezone, manager login
    ("dkim", "Dana Kim", "Payments", "UTC-5", None),
    ("pnair", "Priya Nair", "Payments", "UTC+5:30", "dkim"),
    ("tobrien", "Tom O'Brien", "Payments", "UTC+0", "dkim"),
    ("lchen", "Li Chen", "Mobile", "UTC+8", None),
    ("mrossi", "Marco Rossi", "Mobile", "UTC+1", "lchen"),
    ("afolau", "Ana Folau", "Mobile", "UTC+12", "lchen"),
    ("jokafor", "Jide Okafor", "Platform", "UTC+1", None),
    ("sberg", "Sofia Berg", "Platform", "UTC+1", "jokafor"),
    ("rpatel", "Ravi Patel", "Platform", "UTC+5:30", "jokafor"),
    ("ehughes", "Emma Hughes", "Platform", "UTC+0", "jokafor"),
    ("kwan", "Kai Wan", "Growth", "UTC-8", None),
    ("nsilva", "Nina Silva", "Growth", "UTC-3", "kwan"),
    ("bmensah", "Ben Mensah", "Growth", "UTC+0", "kwan"),
    ("ylevi", "Yael Levi", "Mobile", "UTC+2", "lchen"),
]
LABELS = [("bug", "d73a4a"), ("feature", "a2eeef"), ("security", "b60205"), ("performance", "fbca04"),
          ("ios", "5319e7"), ("android", "0e8a16"), ("api", "1d76db"), ("docs", "0075ca"),
          ("regression", "e99695"), ("duplicate", "cfd3d7")]
MILESTONES = [(1, "v2.3", "2026-09-30"), (2, "v2.4", "2026-12-15"), (3, "v2.5", "2027-02-28")]
COMPONENTS = {  # component -> (team, owner login, labels its issues get, words)
    "billing-service": ("Payments", "pnair", ["api"], ["invoice", "refund", "charge", "VAT", "currency rounding"]),
    "checkout-web": ("Payments", "tobrien", [], ["card form", "3-D Secure", "coupon field", "order summary"]),
    "ios-app": ("Mobile", "mrossi", ["ios"], ["crash on resume", "push token", "dark mode", "tracking map"]),
    "android-app": ("Mobile", "afolau", ["android"], ["background sync", "camera scan", "deep link", "offline queue"]),
    "tracking-api": ("Platform", "sberg", ["api"], ["rate limit", "webhook retries", "pagination", "ETA field"]),
    "auth-gateway": ("Platform", "rpatel", ["security"], ["token refresh", "SSO login", "password reset", "session expiry"]),
    "data-pipeline": ("Platform", "ehughes", ["performance"], ["nightly export", "late events", "backfill job"]),
    "notifications": ("Growth", "nsilva", [], ["email digest", "SMS opt-out", "push campaign", "locale fallback"]),
    "referrals": ("Growth", "bmensah", ["feature"], ["invite link", "reward payout", "fraud check"]),
}
PATTERNS = ["{w} fails for some users", "{w} is slow", "Add {w} support", "{w} shows the wrong value",
            "Flaky test around {w}", "{w}: error 500 after deploy", "Improve logging of {w}", "{w} breaks on retry",
            "Document {w}", "{w} regression in last release"]
COMMENT_BODIES = ["Reproduced on staging.", "Could not reproduce; need logs.", "Fix is in review.",
                  "Blocked on the API change.", "Customer reported this again today.", "Added a failing test.",
                  "Lower priority after the hotfix.", "Same root cause as another ticket.", "Deployed to canary.",
                  "Needs a product decision."]

SCHEMA = """\
CREATE TABLE people (
  id INTEGER PRIMARY KEY,
  login TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  team TEXT NOT NULL
);
CREATE TABLE labels (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  color TEXT NOT NULL
);
CREATE TABLE milestones (
  id INTEGER PRIMARY KEY,
  title TEXT NOT NULL UNIQUE,
  due_on TEXT NOT NULL
);
CREATE TABLE issues (
  id INTEGER PRIMARY KEY,
  title TEXT NOT NULL,
  component TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'closed')),
  priority TEXT NOT NULL CHECK (priority IN ('p0', 'p1', 'p2', 'p3')),
  assignee_id INTEGER REFERENCES people(id),
  reporter_id INTEGER NOT NULL REFERENCES people(id),
  milestone_id INTEGER REFERENCES milestones(id),
  estimate INTEGER,
  created_at TEXT NOT NULL,
  closed_at TEXT
);
CREATE TABLE issue_labels (
  issue_id INTEGER NOT NULL REFERENCES issues(id),
  label_id INTEGER NOT NULL REFERENCES labels(id),
  PRIMARY KEY (issue_id, label_id)
);
CREATE TABLE comments (
  id INTEGER PRIMARY KEY,
  issue_id INTEGER NOT NULL REFERENCES issues(id),
  author_id INTEGER NOT NULL REFERENCES people(id),
  created_at TEXT NOT NULL,
  body TEXT NOT NULL
);
"""


def sql_literal(v) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, int):
        return str(v)
    return "'" + str(v).replace("'", "''") + "'"


def rows() -> dict[str, list[tuple]]:
    """Every table's rows, a pure function of SEED."""
    rnd = random.Random(SEED)
    people = [(i, login, name, team) for i, (login, name, team, _tz, _m) in enumerate(PEOPLE, 1)]
    pid = {p[1]: p[0] for p in people}
    labels = [(i, n, c) for i, (n, c) in enumerate(LABELS, 1)]
    lid = {n: i for i, n, _ in labels}
    by_team = {t: [p[0] for p in people if p[3] == t] for t in TEAMS}
    issues, issue_labels, comments = [], [], []
    comps = sorted(COMPONENTS)
    for i in range(1, N_ISSUES + 1):
        comp = rnd.choice(comps)
        team, _owner, comp_labels, words = COMPONENTS[comp]
        title = rnd.choice(PATTERNS).format(w=rnd.choice(words))
        title = title[0].upper() + title[1:]
        created = date(2026, 1, 5) + timedelta(days=rnd.randrange(0, 320))
        status = rnd.choices(["open", "in_progress", "closed"], [4, 2, 5])[0]
        closed = None
        if status == "closed":
            closed = min(created + timedelta(days=rnd.randrange(1, 60)), TODAY)
        priority = rnd.choices(["p0", "p1", "p2", "p3"], [1, 3, 5, 3])[0]
        assignee = rnd.choice(by_team[team]) if rnd.random() < 0.85 else None
        reporter = rnd.choice(people)[0]
        milestone = rnd.choices([None, 1, 2, 3], [3, 3, 4, 2])[0]
        estimate = rnd.choice([None, 1, 2, 3, 5, 8])
        issues.append((i, title, comp, status, priority, assignee, reporter, milestone, estimate,
                       created.isoformat(), closed.isoformat() if closed else None))
        mine = set(comp_labels)
        kind = "feature" if title.startswith(("Add ", "Improve ", "Document ")) else "bug"
        mine.add(kind)
        if title.startswith("Document "):
            mine.add("docs")
        if "regression" in title:
            mine.add("regression")
        if rnd.random() < 0.08:
            mine.add("performance")
        if rnd.random() < 0.04:
            mine.add("security")
        for name in sorted(mine, key=lid.get):
            issue_labels.append((i, lid[name]))
    for c in range(1, N_COMMENTS + 1):
        issue = rnd.choice(issues)
        when = date.fromisoformat(issue[9]) + timedelta(days=rnd.randrange(0, 40))
        comments.append((c, issue[0], rnd.choice(people)[0], min(when, TODAY).isoformat(), rnd.choice(COMMENT_BODIES)))
    _ = pid
    return {"people": people, "labels": labels, "milestones": MILESTONES, "issues": issues,
            "issue_labels": sorted(issue_labels), "comments": comments}


def seed_sql() -> str:
    out = ["-- Harbor issue tracker, exported 2026-11-30 (tracker.db is built from this file).", "",
           SCHEMA.rstrip(), ""]
    for table, rs in rows().items():
        for r in rs:
            out.append(f"INSERT INTO {table} VALUES ({', '.join(sql_literal(v) for v in r)});")
        out.append("")
    return "\n".join(out)


def memory_lines() -> list[dict]:
    """The knowledge graph the memory server reads: people, teams and components, and who
    owns, belongs to and reports to what (the server's JSONL: one entity or relation a line)."""
    ents, rels = [], []
    for team in TEAMS:
        lead = next(p for p in PEOPLE if p[2] == team and p[4] is None)
        ents.append({"type": "entity", "name": team, "entityType": "team",
                     "observations": [f"Team lead: {lead[1]}", f"Slack channel: #team-{TEAMS[team]}"]})
    oncall_week = 47
    for login, name, team, tz, manager in PEOPLE:
        obs = [f"Login: {login}", f"Timezone: {tz}"]
        if manager is not None:
            obs.append(f"On call: 2026-W{oncall_week}")
            oncall_week = 47 + (oncall_week - 46) % 6
        ents.append({"type": "entity", "name": name, "entityType": "person", "observations": obs})
        rels.append({"type": "relation", "from": name, "to": team, "relationType": "member_of"})
        if manager is not None:
            boss = next(p[1] for p in PEOPLE if p[0] == manager)
            rels.append({"type": "relation", "from": name, "to": boss, "relationType": "reports_to"})
    for comp, (team, owner, _labels, words) in sorted(COMPONENTS.items()):
        ents.append({"type": "entity", "name": comp, "entityType": "component",
                     "observations": [f"Handles: {', '.join(words)}", f"Repository: harbor/{comp}"]})
        owner_name = next(p[1] for p in PEOPLE if p[0] == owner)
        rels.append({"type": "relation", "from": owner_name, "to": comp, "relationType": "owns"})
        rels.append({"type": "relation", "from": team, "to": comp, "relationType": "maintains"})
    return ents + rels


README = """\
# Harbor tracker export

The issue tracker of Harbor's product team, exported on 2026-11-30.

- `tracker.db`: the SQLite database (tables people, labels, milestones, issues,
  issue_labels, comments); `tracker.sql` is the same data as SQL.
- `memory.jsonl`: the team's knowledge graph (people, teams, components; who owns,
  maintains, belongs and reports to what), one JSON entity or relation a line.
"""


def write_fixture(dest: Path = FIXTURE) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    sql = seed_sql()
    (dest / "tracker.sql").write_text(sql)
    (dest / "memory.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n" for x in memory_lines()))
    (dest / "README.md").write_text(README)
    db = dest / "tracker.db"
    db.unlink(missing_ok=True)
    con = sqlite3.connect(db)
    con.executescript(sql)
    con.commit()
    con.execute("VACUUM")   # a compact file, no free pages
    con.close()


def main() -> int:
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from mcptrials.prepare.demo_repo import build_bundle

    write_fixture()
    print(build_bundle(FIXTURE, BUNDLE, message=MESSAGE))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
