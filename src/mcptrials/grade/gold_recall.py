"""Scenario-level gold recall: how many of a scenario's must-find rows the answer names
(mention recall) and pins to a line (cited recall), overall and per row `group`.

A scenario's `gold:` rows (scenario.schema.yaml) are `{id, group, match: [path suffixes or
names], relation}`, as the reference bench writes them. This is the bench's own rule
(its SCORING.md, "gold recall"), text only, no checkout:

- a row is MENTIONED when one of its `match` values occurs in the answer (case-insensitive
  substring), or a gold-unique suffix of one of its paths does (below);
- a row is CITED when one of its file-like paths (a code extension, or a `/` and a `.`) is
  pinned to a line: `path:N`, `path (line N)`, or a `"line": N` / `"lines": [N, ...]` field
  within 60 characters of the path in the same JSON object (no newline, `{` or `}` between);
  the path may also be written as its basename when no other gold path has that basename,
  or as a segment-aligned suffix no other gold path ends with. A path of one segment (a
  root file) must not follow a `/` (that would be a same-named file deeper in the tree);
- a row with no file-like path (a symbol) is cited when mentioned; cited implies mentioned.

Deliberately not done (a documented rule of ours, see docs/importing.md, "Importing the
reference bench's verticals"): the bench's path-compaction oracle, which also credits a shortened
path when the repository has one file with that tail and the run's transcript holds the
full path. We grade the answer's text alone, the same way for every arm.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from mcptrials.core.keys import CITED_RECALL, MENTION_RECALL

RULE = "reference-bench gold recall: path pinned to a line in the answer text; no path-compaction oracle"
_CODE_EXT = (
    ".rb",
    ".py",
    ".go",
    ".ts",
    ".tsx",
    ".js",
    ".jsx",
    ".rs",
    ".java",
    ".kt",
    ".cs",
    ".cpp",
    ".cc",
    ".c",
    ".php",
    ".scala",
    ".erb",
)
_WINDOW = 60
_DEEP = r"(?<![\w.\-])"  # before a multi-segment path: a '/' is fine (the path is a tail)
_ROOT = r"(?<![\w./\-])"  # before one segment or a suffix: a '/' means a different file


def file_like(p: str) -> bool:
    return p.lower().endswith(_CODE_EXT) or ("/" in p and "." in p)


def _pinned(anchored: str, hay: str) -> bool:
    """Is the (anchored, escaped) path followed by one of the line-pin forms?"""
    return bool(
        re.search(anchored + r":\d+", hay)
        or re.search(anchored + r"\s*\(line\s+\d+\)", hay)
        or re.search(anchored + r'[^\n{}]{0,%d}?"lines?"\s*:\s*\[?\s*"?\d+' % _WINDOW, hay)
    )


def _unique_suffixes(path: str, others: list[str]) -> list[str]:
    """Segment-aligned tails of `path` that no other gold path ends with (the full path included)."""
    segs = [s for s in path.split("/") if s]
    out = []
    for k in range(1, len(segs) + 1):
        suf = "/".join(segs[-k:])
        if not any(o == suf or o.endswith("/" + suf) for o in others):
            out.append(suf)
    return out


def _rows(gold: list) -> list[dict]:
    """Gold rows as dicts (a bare string is a row matching itself)."""
    return [{"id": g, "match": [g]} if isinstance(g, str) else g for g in gold]


def gold_recall(answer: str, gold: list | None) -> dict | None:
    """The record of one answer against a scenario's gold rows; None when it has none."""
    if not gold:
        return None
    rows = _rows(gold)
    hay = (answer or "").lower()
    paths = [str(p).lower() for r in rows for p in (r.get("match") or []) if file_like(str(p))]
    base_count: dict[str, int] = {}
    for p in paths:
        base_count[os.path.basename(p)] = base_count.get(os.path.basename(p), 0) + 1
    details: list[dict[str, Any]] = []
    groups: dict[str, dict[str, float]] = {}
    for r in rows:
        pats = [str(p).lower() for p in (r.get("match") or [r.get("id")]) if p]
        files = [p for p in pats if file_like(p)]
        mentioned = any(p in hay for p in pats)
        cited = False
        for p in files:
            others = [o for o in paths if o != p]
            anchor = _DEEP if "/" in p else _ROOT
            cited = cited or _pinned(anchor + re.escape(p), hay)
            base = os.path.basename(p)
            if base_count.get(base) == 1:
                cited = cited or bool(re.search(_ROOT + re.escape(base) + r":\d+", hay))
            for suf in _unique_suffixes(p, others):
                esc = _ROOT + re.escape(suf)
                mentioned = mentioned or bool(re.search(esc, hay))
                cited = cited or _pinned(esc, hay)
        if not files:
            cited = mentioned  # a symbol row: naming it is all that can be checked
        mentioned = mentioned or cited
        group = str(r.get("group") or "_")
        details.append({"id": str(r.get("id") or pats[0]), "group": group, "mentioned": mentioned, "cited": cited})
        g = groups.setdefault(group, {"total": 0, "mentioned": 0, "cited": 0})
        g["total"] += 1
        g["mentioned"] += mentioned
        g["cited"] += cited
    for g in groups.values():
        g[MENTION_RECALL] = round(g["mentioned"] / g["total"], 4)
        g[CITED_RECALL] = round(g["cited"] / g["total"], 4)
    n = len(details)
    cited_n = sum(d["cited"] for d in details)
    mentioned_n = sum(d["mentioned"] for d in details)
    return {
        "rule": RULE,
        "total": n,
        "mentioned": mentioned_n,
        "cited": cited_n,
        MENTION_RECALL: round(mentioned_n / n, 4),
        CITED_RECALL: round(cited_n / n, 4),
        "groups": groups,
        "details": details,
        "missed_cite": [d["id"] for d in details if not d["cited"]],
    }


def whole_answer(transcript: Mapping[str, Any]) -> str:
    """The answer a scenario's gold is matched against: every step's answer, in order (a
    one-answer transcript has one)."""
    return "\n\n".join(s.get("answer_text") or "" for s in transcript.get("steps") or [])
