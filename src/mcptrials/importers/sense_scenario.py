"""One reference-bench scenario as ours (`mcptrials import sense-bench`, and the verticals'
import): its steps and checks, its `.rubric.yaml`, its scenario-level gold. What cannot be
expressed is appended to the import's report, each check's mapping to its mapping rows.

Check types (the bench's `lib/scorer.py` `evaluate_check`, SCORING.md):

| bench | meaning | ours |
|---|---|---|
| `word`, `phrase` | `(?<!\\w)value(?!\\w)`, case-insensitive | `word` (the same boundaries) |
| `contains`, `transcript_contains` | substring, case-insensitive | `phrase` (substring) |
| `exact` | verbatim substring, case-sensitive | `regex` of the escaped value, case_sensitive |
| `starts_with` | a line of the answer starts with it (after leading blanks), case-insensitive | `regex` `^[^\\S\\n]*<escaped>` (multiline) |
| `diff_contains` | value in `git diff --unified=0` | `state_check` (one per step) |
| `mcp_tool_used` | a tool call's name contains it (adoption) | `expected_tools`: reported, never scored (reported) |
| `no_grep` | no grep/Glob/find/Agent/rg call (adoption) | none (reported) |
| `response_richness` | >= N distinct source files cited as `file.ext:ref` | none (reported) |
| any `layer: adoption` text check | kept out of the bench's keyword coverage | none (reported): every check of ours counts |
| anything else | | none (reported) |
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from mcptrials.matrix.errors import ConfigError

# Issue 14 item 2's scenario field: the bench runs all steps of a scenario as ONE session
# with one final answer.
ONE_ANSWER_FIELD = "one_answer"
ANSWER_KEY_FIELD = "answer_key"  # a step's section name in the one answer, when its id differs

# The bench's default criteria (SCORING.md, "llm_quality"): used for a step whose rubric
# file has no entry for it (reported).
DEFAULT_CRITERIA = [
    {
        "name": "map_quality",
        "weight": 0.40,
        "question": "Does the answer give file:line targets, in edit-order, that the agent could act on without re-exploring?",
    },
    {
        "name": "specificity",
        "weight": 0.25,
        "question": "Are citations file:line / file:Symbol, not vague file mentions?",
    },
    {
        "name": "justification",
        "weight": 0.20,
        "question": "Does the answer explain why each cited symbol matters in the flow?",
    },
    {
        "name": "uncertainty",
        "weight": 0.15,
        "question": "Where the answer is uncertain (plugin interactions, edge cases), does it say so?",
    },
]

KNOWN_SCENARIO_KEYS = {"name", "repo", "description", "steps", "gold"}
KNOWN_STEP_KEYS = {"name", "prompt", "checks"}
KNOWN_CHECK_KEYS = {"type", "value", "required", "description", "layer"}


class BenchImportError(ConfigError):
    """A bench folder that cannot be imported as it is (reported like a config error)."""


# --- checks --------------------------------------------------------------------


def map_check(check: dict) -> dict:
    """One bench check -> {"to": "check"|"expected_tools"|"state_check"|None, "value": ..., "reason": ...}.

    `to` None means not expressed (dropped); "expected_tools" is expressed but never
    scored, so it carries a reason too and is reported.
    """
    kind = check.get("type")
    value = check.get("value")
    value = "" if value is None else str(value)
    required = check.get("required", True)
    required = required if isinstance(required, bool) else True
    layer = check.get("layer", "fairness")
    if kind == "mcp_tool_used":
        return {
            "to": "expected_tools",
            "value": value,
            "reason": "a tool-usage check (adoption): expected_tools are compared with the calls and reported "
            "per step, never scored; matched by the exact tool name, where the bench matches a substring "
            "of the call's name",
        }
    if kind == "no_grep":
        return {
            "to": None,
            "reason": "a tool-usage rule (no grep/Glob/find/Agent/rg call in the session): our graders "
            "never score tool use (adoption reports built-in search calls, unscored)",
        }
    if kind == "response_richness":
        return {
            "to": None,
            "reason": "'at least N (its value) distinct source files cited as file.ext:ref': no check of "
            "ours counts distinct cited files (citation grading counts and verifies citations, "
            "without a minimum)",
        }
    text_kinds = ("word", "phrase", "contains", "transcript_contains", "exact", "starts_with", "diff_contains")
    if kind not in text_kinds:
        return {
            "to": None,
            "reason": f"unknown check type {kind!r}: not one the bench's scorer defines, nor one we map",
        }
    if not value:
        return {"to": None, "reason": "an empty value: our checks need a non-empty one"}
    if layer == "adoption":
        return {
            "to": None,
            "reason": "layer: adoption: the bench keeps it out of keyword coverage, and every check of "
            "ours counts towards coverage",
        }
    if kind == "diff_contains":
        return {
            "to": "state_check",
            "value": {"command": "git diff --unified=0", "expect": value, "required": required},
            "reason": "a state check: it runs in a live trial's workspace after the agent; a recorded run has none",
        }
    if kind in ("word", "phrase"):
        out = {"type": "word", "value": value, "required": required}
    elif kind in ("contains", "transcript_contains"):
        out = {"type": "phrase", "value": value, "required": required}
    elif kind == "exact":
        out = {"type": "regex", "value": re.escape(value), "required": required, "case_sensitive": True}
    else:  # starts_with
        out = {"type": "regex", "value": r"^[^\S\n]*" + re.escape(value), "required": required}
    return {"to": "check", "value": out}


# --- small helpers -------------------------------------------------------------


def slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", str(name)).strip("-").lower()
    return s or "step"


def _load_yaml(path: Path):
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise BenchImportError(f"{path}: does not parse as YAML: {e}") from None


# --- rubric --------------------------------------------------------------------


def rubric_steps(path: Path | None, report: list, sid: str) -> tuple[dict, str | None]:
    """(bench step name -> our rubric, audience text) from a rubric file."""
    if path is None or not path.exists():
        return {}, None
    data = _load_yaml(path) or {}
    for k in sorted(set(data) - {"audience", "steps"}):
        report.append(
            {
                "scenario": sid,
                "what": f"rubric field {k!r}",
                "reason": "not a field of the bench's rubric format we know; not imported",
            }
        )
    out = {}
    for st in data.get("steps") or []:
        crits, raw = [], st.get("criteria") or {}
        items = raw.items() if isinstance(raw, dict) else [(c.get("name"), c) for c in raw if isinstance(c, dict)]
        for name, c in items:
            c = c or {}
            extra = sorted(set(c) - {"weight", "question", "name"})
            if extra:
                report.append(
                    {
                        "scenario": sid,
                        "step": st.get("name"),
                        "what": f"criterion {name!r} fields {extra}",
                        "reason": "our rubric criteria have name, weight, question (and key_points, citations) only",
                    }
                )
            w, q = c.get("weight"), c.get("question")
            if not isinstance(w, (int, float)) or w <= 0 or not q:
                report.append(
                    {
                        "scenario": sid,
                        "step": st.get("name"),
                        "what": f"criterion {name!r}",
                        "reason": "no positive weight or no question: left out",
                    }
                )
                continue
            crits.append({"name": str(name), "weight": float(w), "question": " ".join(str(q).split())})
        if crits:
            out[st.get("name")] = {"criteria": crits}
    return out, (data.get("audience") or None)


# --- one scenario --------------------------------------------------------------


def convert_scenario(path: Path, split: str, sid: str, report: list, mapping: list, one_answer: bool) -> dict:
    """One bench scenario file (and its .rubric.yaml) as our scenario; what cannot be expressed
    goes to `report`, every check's mapping to `mapping`."""
    src = _load_yaml(path)
    if not isinstance(src, dict) or not src.get("repo") or not isinstance(src.get("steps"), list) or not src["steps"]:
        raise BenchImportError(f"{path}: not a bench scenario (needs repo and a non-empty steps list)")
    for k in sorted(set(src) - KNOWN_SCENARIO_KEYS):
        reason = {
            "scoring": "the bench's legacy correctness/efficiency weights; our fairness weights are the config's",
            "system_prompt": "a scenario system prompt: ours is the harness's (prompts/system.md)",
            "repo_commit": "a per-scenario commit: ours is the repo's pin in the config",
            "time_budget_minutes": "a time budget: ours are the config's limits",
        }.get(k, "not a field we map")
        report.append({"scenario": sid, "what": f"scenario field {k!r}", "reason": reason + "; not imported"})
    rub_path = path.with_name(path.name[: -len(".yaml")] + ".rubric.yaml")
    rubrics, audience = rubric_steps(rub_path if rub_path.exists() else None, report, sid)
    if not rub_path.exists():
        report.append(
            {
                "scenario": sid,
                "what": "rubric file",
                "reason": f"{rub_path.name} not found: every step gets the bench's default criteria (SCORING.md)",
            }
        )

    used: set = set()
    steps = [
        convert_step(st, i, used, sid, rubrics, rub_path, report, mapping, one_answer)
        for i, st in enumerate(src["steps"])
    ]
    names = {str(s.get("name")) for s in src["steps"]}
    for rname in rubrics:
        if rname not in names:
            report.append(
                {
                    "scenario": sid,
                    "what": f"rubric step {rname!r}",
                    "reason": f"{rub_path.name} names a step the scenario does not have: not imported",
                }
            )

    gold = src.get("gold") or []
    rows = gold_rows(gold, sid, report)
    if gold:
        gold_key_points(gold, rows, steps, sid, report)
    return scenario_doc(src, split, sid, audience, rows, steps, report, one_answer)


def convert_step(
    st: dict, i: int, used: set, sid: str, rubrics: dict, rub_path: Path, report: list, mapping: list, one_answer: bool
) -> dict:
    """Step `i` of a bench scenario as our step (its name made unique among `used`), with its checks and
    its rubric: the entry of that name in the rubric file's `rubrics`, else the bench's defaults."""
    bname = str(st.get("name") or f"step {i + 1}")
    name = slug(bname)
    n = 2
    while name in used:
        name, n = f"{slug(bname)}-{n}", n + 1
    used.add(name)
    for k in sorted(set(st) - KNOWN_STEP_KEYS):
        report.append(
            {
                "scenario": sid,
                "step": bname,
                "what": f"step field {k!r}",
                "reason": "not a step field we map; not imported",
            }
        )
    out: dict[str, Any] = {"name": name, "prompt": str(st.get("prompt") or "").strip() or bname}
    if one_answer and name != slug(bname):
        out[ANSWER_KEY_FIELD] = bname  # the bench renders each step as "### Step N: <name>"
    checks, tools = convert_checks(st, out, sid, bname, report, mapping)
    if checks:
        out["checks"] = checks
    if tools:
        out["expected_tools"] = tools
    rub = rubrics.get(bname)
    if rub is None:
        rub = {"criteria": [dict(c) for c in DEFAULT_CRITERIA]}
        if rubrics or rub_path.exists():
            report.append(
                {
                    "scenario": sid,
                    "step": bname,
                    "what": "rubric",
                    "reason": f"no entry named {bname!r} in {rub_path.name}: the bench's default criteria (SCORING.md) used",
                }
            )
    out["rubric"] = rub
    return out


def convert_checks(st: dict, out: dict, sid: str, bname: str, report: list, mapping: list) -> tuple[list, list]:
    """(checks, expected tools) of bench step `st` (our step `out` so far: a diff_contains check
    becomes its state_check); each check's row goes to `mapping`, what it cannot be to `report`."""
    name = out["name"]
    checks, tools = [], []
    for j, c in enumerate(st.get("checks") or []):
        c = c if isinstance(c, dict) else {"type": None, "value": c}
        m = map_check(c)
        row = {
            "scenario": sid,
            "step": bname,
            "step_name": name,
            "check": j,
            "type": c.get("type"),
            "value": c.get("value"),
            "required": c.get("required", True),
            "layer": c.get("layer", "fairness"),
            "description": c.get("description"),
            "to": m["to"],
        }
        extra = sorted(set(c) - KNOWN_CHECK_KEYS)
        if m["to"] == "check":
            checks.append(m["value"])
            row["as"] = m["value"]
        elif m["to"] == "expected_tools":
            if m["value"] and m["value"] not in tools:
                tools.append(m["value"])
            row["as"] = m["value"]
        elif m["to"] == "state_check":
            if "state_check" in out:
                m = {"to": None, "reason": "a second diff_contains check in one step: a step has one state_check"}
                row["to"] = None
            else:
                out["state_check"] = m["value"]
                row["as"] = m["value"]
        if m.get("reason"):
            row["reason"] = m["reason"]
            report.append(
                {
                    "scenario": sid,
                    "step": bname,
                    "check": j,
                    "type": c.get("type"),
                    "value": c.get("value"),
                    "required": row["required"],
                    "layer": row["layer"],
                    "what": "check " + ("kept as " + m["to"] if m["to"] else "not expressed"),
                    "reason": m["reason"],
                }
            )
        if extra:
            report.append(
                {
                    "scenario": sid,
                    "step": bname,
                    "check": j,
                    "what": f"check fields {extra}",
                    "reason": "not check fields we map; not imported",
                }
            )
        mapping.append(row)
    return checks, tools


def gold_key_points(gold: list, rows: list, steps: list, sid: str, report: list) -> None:
    """The bench's gold targets as key points of the last step (the judge sees them), in place."""
    points = []
    for g in gold:
        if not isinstance(g, dict):
            continue
        where = " or ".join(str(p) for p in (g.get("match") or []))
        rel = g.get("relation")
        text = f"{where}: {rel}" if where and rel else (where or rel)
        if text:
            points.append(" ".join(str(text).split()))
    if points:
        steps[-1]["key_points"] = points
    report.append(
        {
            "scenario": sid,
            "what": f"gold ({len(gold)} targets)",
            "reason": f"scenario-level file targets with their relation: {len(rows)} scenario gold rows "
            "(cited and mention recall, overall and per group, grade/gold_recall.py) and "
            f"{len(points)} key points of the last step ({steps[-1]['name']}), which the judge sees; "
            "none became citations.gold, which need path:N, path:N-M or path:Symbol, not a bare file",
        }
    )


def scenario_doc(
    src: dict, split: str, sid: str, audience, rows: list, steps: list, report: list, one_answer: bool
) -> dict:
    """Our scenario file's data, in the order its fields are written; the rubric's audience is kept in
    the description (our rubric has no such field)."""
    desc = " ".join(str(src.get("description") or "").split())
    if audience:
        desc += ("\n\n" if desc else "") + "Judge audience (the bench's rubric): " + " ".join(str(audience).split())
        report.append(
            {
                "scenario": sid,
                "what": "rubric audience",
                "reason": "our rubric has no audience field: kept in the description, which the judge does not see",
            }
        )
    out_sc: dict[str, Any] = {"title": str(src.get("name") or sid)}
    if desc:
        out_sc["description"] = desc
    out_sc["repo"] = str(src["repo"])
    out_sc["split"] = split
    if one_answer:
        out_sc[ONE_ANSWER_FIELD] = True
    if rows:
        out_sc["gold"] = rows
    out_sc["steps"] = steps
    return out_sc


GOLD_KEYS = ("id", "group", "match", "relation")


def gold_rows(gold: list, sid: str, report: list) -> list[dict]:
    """The bench's scenario-level gold as our scenario `gold:` rows (a bare string is a row
    matching itself); a row without an id or a match list is reported and left out."""
    out, seen = [], set()
    for i, g in enumerate(gold):
        g = {"id": g, "match": [g]} if isinstance(g, str) else g
        if not isinstance(g, dict) or not g.get("match") or not isinstance(g.get("match"), list):
            report.append(
                {"scenario": sid, "what": f"gold row {i}", "reason": "no `match` list: not a gold row; left out"}
            )
            continue
        gid = str(g.get("id") or g["match"][0])
        if gid in seen:
            report.append(
                {"scenario": sid, "what": f"gold row {gid!r}", "reason": "a second row with this id; left out"}
            )
            continue
        seen.add(gid)
        extra = sorted(set(g) - set(GOLD_KEYS))
        if extra:
            report.append(
                {"scenario": sid, "what": f"gold row {gid!r} fields {extra}", "reason": "not gold fields we map"}
            )
        row = {"id": gid, "match": [str(x) for x in g["match"]]}
        if g.get("group"):
            row["group"] = str(g["group"])
        if g.get("relation"):
            row["relation"] = " ".join(str(g["relation"]).split())
        out.append(row)
    return out
