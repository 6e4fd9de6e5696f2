"""The trials' patterns (mcptrials.analyze.patterns over each transcript) and the agent's closing
feedback on the tools, per (model, tool): summary.json `patterns` and `feedback`, patterns.csv."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from mcptrials.analyze.tables import having, per_group
from mcptrials.analyze.trial_rows import read_json
from mcptrials.core.rows import TrialRow
from mcptrials.core.keys import PAGES

if TYPE_CHECKING:  # pandas is imported where a frame is made (trial_rows.trial_frame)
    import pandas as pd


def snapshot_of(snapshots, tool: str, repo: str, cache: dict) -> dict | None:
    """The tools snapshot a trial's server offered (<snapshots>/<tool>/<repo>/tools.json), read
    once per (tool, repo); None when there is none (a run aggregated without its snapshots)."""
    if (tool, repo) not in cache:
        path = Path(snapshots) / tool / repo / "tools.json"
        cache[tool, repo] = read_json(path) if path.is_file() else None
    return cache[tool, repo]


def add_patterns(rows: list[TrialRow], records: list[dict], snapshots) -> list[list[dict]]:
    """mcptrials.analyze.patterns.detect over each record's transcript and scored.json (the records
    load_records already read; nothing is rerun), with the tools its snapshot offered. Sets each
    row's `patterns` ({name: count}, patterns.counts) and returns the findings, aligned with rows."""
    from mcptrials.analyze.patterns import counts, detect

    cache: dict = {}
    out = [
        detect(r["transcript"], r["scored"], snapshot_of(snapshots, r["key"]["tool"], r["key"]["repo"], cache))
        for r in records
    ]
    for row, found in zip(rows, out):
        row["patterns"] = counts(found)
    return out


def pattern_summary(trials: pd.DataFrame, findings: list[list[dict]]) -> dict:
    """summary.json `patterns`: the patterns' definitions; per (model, tool) and pattern, how many
    trials show it, how many findings, and the pages of those trials; the server tools no trial of
    that (model, tool) called though the server ran through (patterns.RAN_THROUGH); and every
    trial's findings by its page (the trial page marks them). The trial frame's rows and findings align."""
    from mcptrials.analyze.patterns import PATTERNS, RAN_THROUGH, THRESHOLDS

    by_page = dict(zip(trials["page"], findings))

    def figures(rs):
        counts = {}
        for name in PATTERNS:
            hit = having(rs, "patterns", lambda p: p.get(name))
            counts[name] = {
                "trials": len(hit),
                "findings": sum(p[name] for p in hit["patterns"]),
                PAGES: hit["page"].tolist(),
            }
        ran = rs.loc[rs["outcome"].isin(RAN_THROUGH), "page"]
        unused = [{name for f in by_page[page] if f["pattern"] == "unused_tool" for name in f["tools"]} for page in ran]
        return {
            "trials": len(rs),
            "patterns": counts,
            "never_used_tools": sorted(set.intersection(*unused)) if unused else [],
        }

    return {
        "definitions": {name: p.description for name, p in PATTERNS.items()},
        "thresholds": THRESHOLDS,
        "by_tool": per_group(trials, ["model", "tool"], figures),
        "findings": {page: f for page, f in by_page.items() if f},
    }


def pattern_csv_rows(patterns: dict) -> list[dict]:
    """patterns.csv: one row per (model, tool, pattern), zero counts included."""
    return [
        {
            "model": t["model"],
            "tool": t["tool"],
            "pattern": name,
            "trials_showing": c["trials"],
            "trials": t["trials"],
            "findings": c["findings"],
            PAGES: " ".join(c[PAGES]),
        }
        for t in patterns["by_tool"]
        for name, c in t["patterns"].items()
    ]


def feedback_names(text: str, tool: str, snapshot: dict | None, calls: list[dict]) -> list[str]:
    """The tools a feedback paragraph names, by the server's own names (and the built-ins'):
    as the model saw them (mcp__<tool>__<name>, tooldefs.model_tool_name) or bare."""
    from mcptrials.prepare.tooldefs import model_tool_name

    seen = {c["name"]: c["tool"] for c in calls}
    for b in (snapshot or {}).get("builtin_tools") or []:
        name = b if isinstance(b, str) else b["name"]
        seen.setdefault(name, name)
    for t in (snapshot or {}).get("tools") or []:
        seen.setdefault(model_tool_name(tool, t["name"]), t["name"])
        seen.setdefault(t["name"], t["name"])
    for own in list(seen.values()):
        seen.setdefault(own, own)
    named = {own for said, own in seen.items() if re.search(rf"(?<![\w.-]){re.escape(said)}(?![\w-])", text)}
    return [own for own in dict.fromkeys(seen.values()) if own in named]


FEEDBACK_START = re.compile(r"feedback on the tools\s*:", re.I)


def feedback_table(records: list[dict], rows: list[TrialRow], snapshots) -> dict:
    """summary.json `feedback`: per tool, every trial's closing feedback on the tools
    (transcript feedback_text, split off the answer by trial.split_feedback), with the tools it names."""
    cache: dict = {}
    out: dict = {}
    for rec, r in zip(records, rows):
        text = (rec["transcript"].get("feedback_text") or "").strip()
        start = FEEDBACK_START.search(text)
        text = text[start.start() :] if start else text  # records where the split kept a line of markup before it
        if not text:
            continue
        snap = snapshot_of(snapshots, r["tool"], r["repo"], cache)
        out.setdefault(r["tool"], []).append(
            {
                "model": r["model"],
                "scenario": r["scenario"],
                "trial": r["trial"],
                "outcome": r["outcome"],
                "page": r["page"],
                "text": text,
                "names": feedback_names(text, r["tool"], snap, rec["transcript"].get("tool_calls") or []),
            }
        )
    return out
