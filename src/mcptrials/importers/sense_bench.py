"""`mcptrials import sense-bench BENCH_DIR --out DIR`: the reference bench as mcptrials files.

Input: the user's copy of the public luuuc/sense repository's `bench/` folder (or the
repository root holding it):

- `scenarios/<repo>.yaml` (name, repo, description, steps[{name, prompt, checks[{type,
  value, required, layer, description}]}], optionally a scenario-level `gold:` list) and
  `scenarios/<repo>.rubric.yaml` (audience, steps[{name, criteria{name: {weight,
  question}}}]); `scenarios/held-out/<name>.yaml|.rubric.yaml|.gold.json`;
- `PINNED_COMMITS.json` (repo -> {commit, url} or {commit, remote});
- `results/<tool>/<repo>/transcript.json` (Claude Code stream-json): only the folder names
  are read here (which tools, which cells exist), never a file's content.

Output DIR: `scenarios/<id>.yaml` (one per bench scenario; its id is the bench's file
stem), `config.yaml` (its repos at their pinned commits, its tools as arms, a recorded
model over its results, trials 1, no held-out anchor) and `import-report.json` (every
check's mapping, what could not be expressed and why, the pins used, the cells found, the
loader's verdict). The written config is loaded with `mcptrials.matrix.config.load_matrix` before
the command finishes.

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

import json
import os
import re
import shutil
from pathlib import Path

import yaml

from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.matrix.tools import BASELINE

# --- what the output says, in one place --------------------------------------

MODEL_NAME = "sense-bench"
RECORDED_FORMAT = "claude-code-stream-json"
# The recorded model's path pattern, relative to the config's folder ({results} is the
# bench's results/ folder as seen from DIR). {scenario}, not {repo}: the bench keys
# results/<tool>/<repo>/ by its per-repo scenario files, whose stems are the repo names
# (so {scenario} = {repo} for them), while a held-out scenario of the same repo (e.g.
# flask-blueprints on flask) has no run there: with {repo} it would be handed the other
# scenario's answer; with {scenario} its recorded file is missing and says so.
PATH_PATTERN = "{results}/{{tool}}/{{scenario}}/transcript.json"
# Issue 14 item 2's scenario field: the bench runs all steps of a scenario as ONE session
# with one final answer. Set to False if the scenario schema does not (yet) know the field.
EMIT_ONE_ANSWER = True
ONE_ANSWER_FIELD = "one_answer"
ANSWER_KEY_FIELD = "answer_key"   # a step's section name in the one answer, when its id differs

# A tool arm of the bench whose server is not run here: a recorded arm (transport
# recorded): no install, no snapshot job, no server; its tools/list comes from each recording.
def recorded_tool(tool: str, where: str) -> dict:
    return {"transport": "recorded", "source": f"the reference bench's {where} (recorded runs only)"}


# The bench's default criteria (SCORING.md, "llm_quality"): used for a step whose rubric
# file has no entry for it (reported).
DEFAULT_CRITERIA = [
    {"name": "map_quality", "weight": 0.40, "question": "Does the answer give file:line targets, in edit-order, that the agent could act on without re-exploring?"},
    {"name": "specificity", "weight": 0.25, "question": "Are citations file:line / file:Symbol, not vague file mentions?"},
    {"name": "justification", "weight": 0.20, "question": "Does the answer explain why each cited symbol matters in the flow?"},
    {"name": "uncertainty", "weight": 0.15, "question": "Where the answer is uncertain (plugin interactions, edge cases), does it say so?"},
]

KNOWN_SCENARIO_KEYS = {"name", "repo", "description", "steps", "gold"}
KNOWN_STEP_KEYS = {"name", "prompt", "checks"}
KNOWN_CHECK_KEYS = {"type", "value", "required", "description", "layer"}
HEX40 = re.compile(r"^[0-9a-f]{40}$")
TOOL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


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
        return {"to": "expected_tools", "value": value,
                "reason": "a tool-usage check (adoption): expected_tools are compared with the calls and reported "
                          "per step, never scored; matched by the exact tool name, where the bench matches a substring "
                          "of the call's name"}
    if kind == "no_grep":
        return {"to": None, "reason": "a tool-usage rule (no grep/Glob/find/Agent/rg call in the session): our graders "
                                      "never score tool use (adoption reports built-in search calls, unscored)"}
    if kind == "response_richness":
        return {"to": None, "reason": "'at least N (its value) distinct source files cited as file.ext:ref': no check of "
                                      "ours counts distinct cited files (citation grading counts and verifies citations, "
                                      "without a minimum)"}
    text_kinds = ("word", "phrase", "contains", "transcript_contains", "exact", "starts_with", "diff_contains")
    if kind not in text_kinds:
        return {"to": None, "reason": f"unknown check type {kind!r}: not one the bench's scorer defines, nor one we map"}
    if not value:
        return {"to": None, "reason": "an empty value: our checks need a non-empty one"}
    if layer == "adoption":
        return {"to": None, "reason": "layer: adoption: the bench keeps it out of keyword coverage, and every check of "
                                      "ours counts towards coverage"}
    if kind == "diff_contains":
        return {"to": "state_check", "value": {"command": "git diff --unified=0", "expect": value, "required": required},
                "reason": "a state check: it runs in a live trial's workspace after the agent; a recorded run has none"}
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


def github_url(url: str) -> str:
    """https://github.com/o/r.git -> https://github.com/o/r (the form our pack and mirrors files use)."""
    m = re.match(r"^(https://github\.com/[^/]+/[^/]+?)(\.git)?/?$", url or "")
    return m.group(1) if m else url


def find_bench(bench_dir: Path) -> Path:
    bench_dir = Path(bench_dir).resolve()
    for cand in (bench_dir, bench_dir / "bench"):
        if (cand / "scenarios").is_dir():
            return cand
    raise BenchImportError(f"{bench_dir}: no scenarios/ folder here or in bench/; give the reference bench's bench/ folder")


def read_pins(path: Path) -> dict:
    """repo -> {commit, url} from a PINNED_COMMITS.json (`url` or the older `remote`)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise BenchImportError(f"{path}: cannot read the pinned commits: {e}") from None
    out = {}
    for repo, v in data.items():
        if repo.startswith("_") or not isinstance(v, dict):
            continue
        out[repo] = {"commit": v.get("commit"), "url": v.get("url") or v.get("remote"), "from": str(path)}
    return out


def parse_pin_arg(arg: str) -> tuple[str, dict]:
    """REPO=COMMIT[,URL]"""
    repo, sep, rest = arg.partition("=")
    commit, _, url = rest.partition(",")
    if not sep or not repo or not commit:
        raise BenchImportError(f"--pin {arg!r}: give REPO=COMMIT or REPO=COMMIT,URL")
    return repo, {"commit": commit.strip(), "url": url.strip() or None, "from": "--pin"}


# --- rubric --------------------------------------------------------------------


def rubric_steps(path: Path | None, report: list, sid: str) -> tuple[dict, str | None]:
    """(bench step name -> our rubric, audience text) from a rubric file."""
    if path is None or not path.exists():
        return {}, None
    data = _load_yaml(path) or {}
    for k in sorted(set(data) - {"audience", "steps"}):
        report.append({"scenario": sid, "what": f"rubric field {k!r}", "reason": "not a field of the bench's rubric format we know; not imported"})
    out = {}
    for st in data.get("steps") or []:
        crits, raw = [], st.get("criteria") or {}
        items = raw.items() if isinstance(raw, dict) else [(c.get("name"), c) for c in raw if isinstance(c, dict)]
        for name, c in items:
            c = c or {}
            extra = sorted(set(c) - {"weight", "question", "name"})
            if extra:
                report.append({"scenario": sid, "step": st.get("name"), "what": f"criterion {name!r} fields {extra}",
                               "reason": "our rubric criteria have name, weight, question (and key_points, citations) only"})
            w, q = c.get("weight"), c.get("question")
            if not isinstance(w, (int, float)) or w <= 0 or not q:
                report.append({"scenario": sid, "step": st.get("name"), "what": f"criterion {name!r}",
                               "reason": "no positive weight or no question: left out"})
                continue
            crits.append({"name": str(name), "weight": float(w), "question": " ".join(str(q).split())})
        if crits:
            out[st.get("name")] = {"criteria": crits}
    return out, (data.get("audience") or None)


# --- one scenario --------------------------------------------------------------


def convert_scenario(path: Path, split: str, sid: str, report: list, mapping: list, one_answer: bool) -> dict:
    src = _load_yaml(path)
    if not isinstance(src, dict) or not src.get("repo") or not isinstance(src.get("steps"), list) or not src["steps"]:
        raise BenchImportError(f"{path}: not a bench scenario (needs repo and a non-empty steps list)")
    for k in sorted(set(src) - KNOWN_SCENARIO_KEYS):
        reason = {"scoring": "the bench's legacy correctness/efficiency weights; our fairness weights are the config's",
                  "system_prompt": "a scenario system prompt: ours is the harness's (prompts/system.md)",
                  "repo_commit": "a per-scenario commit: ours is the repo's pin in the config",
                  "time_budget_minutes": "a time budget: ours are the config's limits"}.get(k, "not a field we map")
        report.append({"scenario": sid, "what": f"scenario field {k!r}", "reason": reason + "; not imported"})
    rub_path = path.with_name(path.name[: -len(".yaml")] + ".rubric.yaml")
    rubrics, audience = rubric_steps(rub_path if rub_path.exists() else None, report, sid)
    if not rub_path.exists():
        report.append({"scenario": sid, "what": "rubric file", "reason": f"{rub_path.name} not found: every step gets the bench's default criteria (SCORING.md)"})

    steps, used = [], set()
    for i, st in enumerate(src["steps"]):
        bname = str(st.get("name") or f"step {i + 1}")
        name = slug(bname)
        n = 2
        while name in used:
            name, n = f"{slug(bname)}-{n}", n + 1
        used.add(name)
        for k in sorted(set(st) - KNOWN_STEP_KEYS):
            report.append({"scenario": sid, "step": bname, "what": f"step field {k!r}", "reason": "not a step field we map; not imported"})
        out = {"name": name, "prompt": str(st.get("prompt") or "").strip() or bname}
        if one_answer and name != slug(bname):
            out[ANSWER_KEY_FIELD] = bname  # the bench renders each step as "### Step N: <name>"
        checks, tools = [], []
        for j, c in enumerate(st.get("checks") or []):
            c = c if isinstance(c, dict) else {"type": None, "value": c}
            m = map_check(c)
            row = {"scenario": sid, "step": bname, "step_name": name, "check": j, "type": c.get("type"),
                   "value": c.get("value"), "required": c.get("required", True), "layer": c.get("layer", "fairness"),
                   "description": c.get("description"), "to": m["to"]}
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
                report.append({"scenario": sid, "step": bname, "check": j, "type": c.get("type"),
                               "value": c.get("value"), "required": row["required"], "layer": row["layer"],
                               "what": "check " + ("kept as " + m["to"] if m["to"] else "not expressed"),
                               "reason": m["reason"]})
            if extra:
                report.append({"scenario": sid, "step": bname, "check": j, "what": f"check fields {extra}", "reason": "not check fields we map; not imported"})
            mapping.append(row)
        if checks:
            out["checks"] = checks
        if tools:
            out["expected_tools"] = tools
        rub = rubrics.get(bname)
        if rub is None:
            rub = {"criteria": [dict(c) for c in DEFAULT_CRITERIA]}
            if rubrics or rub_path.exists():
                report.append({"scenario": sid, "step": bname, "what": "rubric",
                               "reason": f"no entry named {bname!r} in {rub_path.name}: the bench's default criteria (SCORING.md) used"})
        out["rubric"] = rub
        steps.append(out)
    names = {str(s.get("name")) for s in src["steps"]}
    for rname in rubrics:
        if rname not in names:
            report.append({"scenario": sid, "what": f"rubric step {rname!r}", "reason": f"{rub_path.name} names a step the scenario does not have: not imported"})

    gold = src.get("gold") or []
    rows = gold_rows(gold, sid, report)
    if gold:
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
        report.append({"scenario": sid, "what": f"gold ({len(gold)} targets)",
                       "reason": f"scenario-level file targets with their relation: {len(rows)} scenario gold rows "
                                 "(cited and mention recall, overall and per group, graders/gold_recall.py) and "
                                 f"{len(points)} key points of the last step ({steps[-1]['name']}), which the judge sees; "
                                 "none became citations.gold, which need path:N, path:N-M or path:Symbol, not a bare file"})

    desc = " ".join(str(src.get("description") or "").split())
    if audience:
        desc += ("\n\n" if desc else "") + "Judge audience (the bench's rubric): " + " ".join(str(audience).split())
        report.append({"scenario": sid, "what": "rubric audience",
                       "reason": "our rubric has no audience field: kept in the description, which the judge does not see"})
    out_sc = {"title": str(src.get("name") or sid)}
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
            report.append({"scenario": sid, "what": f"gold row {i}", "reason": "no `match` list: not a gold row; left out"})
            continue
        gid = str(g.get("id") or g["match"][0])
        if gid in seen:
            report.append({"scenario": sid, "what": f"gold row {gid!r}", "reason": "a second row with this id; left out"})
            continue
        seen.add(gid)
        extra = sorted(set(g) - set(GOLD_KEYS))
        if extra:
            report.append({"scenario": sid, "what": f"gold row {gid!r} fields {extra}", "reason": "not gold fields we map"})
        row = {"id": gid, "match": [str(x) for x in g["match"]]}
        if g.get("group"):
            row["group"] = str(g["group"])
        if g.get("relation"):
            row["relation"] = " ".join(str(g["relation"]).split())
        out.append(row)
    return out


# --- the whole import ----------------------------------------------------------


def dump_yaml(path: Path, data, header: str = "") -> None:
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(header + text)


def bench_scenarios(bench: Path) -> list[tuple[Path, str, str]]:
    """(file, split, id) of every bench scenario, train first; rubric files left out."""
    found = []
    for d, split in ((bench / "scenarios", "train"), (bench / "scenarios" / "held-out", "held-out")):
        if d.is_dir():
            for p in sorted(d.glob("*.yaml")):
                if not p.name.endswith(".rubric.yaml"):
                    found.append((p, split, p.name[: -len(".yaml")]))
    if not found:
        raise BenchImportError(f"{bench}/scenarios: no scenario files (*.yaml besides *.rubric.yaml)")
    ids = [f[2] for f in found]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise BenchImportError(f"{bench}/scenarios: {dup} name both a scenario and a held-out one; rename one")
    return found


def import_bench(bench_dir, out_dir, pins_file=None, pin_args=(), skip_unpinned=False,
                 one_answer: bool = EMIT_ONE_ANSWER, validate: bool = True) -> dict:
    """Convert; write DIR/scenarios/*.yaml, DIR/config.yaml, DIR/import-report.json; validate.

    Returns the report (also written). Raises ConfigError on a bench it cannot import, and
    after writing everything, when the written config does not load."""
    bench = find_bench(Path(bench_dir))
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()) and not (out / "import-report.json").exists():
        raise BenchImportError(f"{out}: not empty and not an earlier import (no import-report.json); give a new or empty folder")
    if out == bench or bench in out.parents:
        raise BenchImportError(f"{out}: inside the bench folder; write the import elsewhere")

    report: list[dict] = []
    mapping: list[dict] = []
    scenarios = {}
    for path, split, sid in bench_scenarios(bench):
        scenarios[sid] = (path, convert_scenario(path, split, sid, report, mapping, one_answer))

    # held-out gold grades: the bench's anchor, not gold citations
    for g in sorted((bench / "scenarios" / "held-out").glob("*.gold.json")):
        try:
            gd = json.loads(g.read_text())
        except ValueError:
            gd = {}
        graded = sorted(k for k in gd if not k.startswith("_"))
        vc = len(((gd.get("_meta") or {}).get("verified_citations") or {}))
        report.append({"scenario": g.name[: -len(".gold.json")], "what": g.name,
                       "reason": f"hand-assigned scenario-quality grades of the bench's frozen held-out transcripts "
                                 f"({', '.join(graded) or 'none'}) with {vc} hand-verified citations named by claim, not "
                                 "by step: the bench's held-out anchor, not gold citations; not imported (the config has "
                                 "no locked: anchor)"})

    # pins
    pins = {}
    ledger = bench / "PINNED_COMMITS.json"
    if ledger.exists():
        pins.update(read_pins(ledger))
    if pins_file:
        pins.update(read_pins(Path(pins_file)))
    for arg in pin_args:
        repo, pin = parse_pin_arg(arg)
        if pin["url"] is None and repo in pins:
            pin["url"] = pins[repo]["url"]
        pins[repo] = pin
    used = list(dict.fromkeys(sc["repo"] for _, sc in scenarios.values()))
    unpinned = [r for r in used if r not in pins]
    bad = [f"{r} ({pins[r]['commit']!r} from {pins[r]['from']})" for r in used
           if r in pins and not HEX40.match(str(pins[r]["commit"] or ""))]
    nourl = [r for r in used if r in pins and r not in unpinned and not pins[r]["url"]]
    if bad:
        raise BenchImportError(f"{ledger}: not a full 40-hex commit for {', '.join(bad)}; fix it or give --pin REPO=COMMIT[,URL]")
    if nourl:
        raise BenchImportError(f"no URL for repo(s) {', '.join(nourl)}; give --pin REPO=COMMIT,URL")
    if unpinned:
        who = {r: sorted(s for s, (_, sc) in scenarios.items() if sc["repo"] == r) for r in unpinned}
        if not skip_unpinned:
            raise BenchImportError(
                f"{ledger}: no pinned commit for repo(s) {', '.join(f'{r} (scenarios {who[r]})' for r in unpinned)}; "
                "give each as --pin REPO=COMMIT,URL, or another ledger with --pins FILE (e.g. the bench's "
                "PINNED_COMMITS.json of the revision its results were run at), or leave those scenarios out with --skip-unpinned")
        for r in unpinned:
            for s in who[r]:
                del scenarios[s]
                report.append({"scenario": s, "what": "scenario", "reason": f"repo {r!r} has no pinned commit: left out (--skip-unpinned)"})
        if not scenarios:
            raise BenchImportError("every scenario was left out (none has a pinned repo)")
        used = [r for r in used if r not in unpinned]

    # tools from results/<tool>/
    results = bench / "results"
    if not results.is_dir():
        raise BenchImportError(f"{results}: no results/ folder: the recorded model has nothing to answer with")
    tools_found = sorted(p.name for p in results.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    tools = []
    for t in tools_found:
        if not TOOL_NAME.match(t):
            report.append({"what": f"results/{t}", "reason": "not a valid tool name of ours: left out"})
            continue
        tools.append(t)
    if not tools:
        raise BenchImportError(f"{results}: no tool folders")
    train_ids = [s for s, (_, sc) in scenarios.items() if sc["split"] == "train"]
    cells = {t: sorted(s for s in train_ids if (results / t / s / "transcript.json").is_file()) for t in tools}
    missing = [f"{t}/{s}" for t in tools for s in train_ids if s not in cells[t]]
    if missing:
        report.append({"what": "recorded cells", "reason": f"no results/<tool>/<scenario>/transcript.json for {missing}: "
                                                           "those trials will have no recorded answer"})
    held = sorted(s for s, (_, sc) in scenarios.items() if sc["split"] == "held-out")
    if held:
        report.append({"what": "held-out scenarios", "reason": f"{held}: written with split held-out; results/ holds no run "
                                                               "of them, so the config runs splits [train] only"})

    # write
    out.mkdir(parents=True, exist_ok=True)
    sc_dir = out / "scenarios"
    if sc_dir.exists():
        shutil.rmtree(sc_dir)
    sc_dir.mkdir()
    written = []
    for sid, (path, sc) in scenarios.items():
        rel = path.relative_to(bench)
        header = (f"# Imported from the reference bench by `mcptrials import sense-bench`: {rel}"
                  f" (sha256 {file_sha256(path)[:16]}). Regenerate rather than edit.\n")
        f = sc_dir / f"{sid}.yaml"
        dump_yaml(f, sc, header)
        written.append(f)

    results_rel = os.path.relpath(results, out)
    config = {
        "tools": {t: ({"transport": "none"} if t == BASELINE else recorded_tool(t, f"results/{t}")) for t in tools},
        "repos": {r: {"url": github_url(pins[r]["url"]), "commit": pins[r]["commit"]} for r in used},
        "scenarios": "scenarios/*.yaml",
        "splits": ["train"],
        "models": {MODEL_NAME: {"provider": "recorded", "format": RECORDED_FORMAT,
                                "path": PATH_PATTERN.format(results=results_rel)}},
        "trials": 1,
        "judge": {"provider": "reference"},
    }
    header = ("# The reference bench (luuuc/sense bench/) imported by `mcptrials import sense-bench`.\n"
              f"# Source: {bench}\n"
              "# Tools other than baseline are recorded arms (transport: recorded): no server runs here.\n"
              "# No held-out anchor (no locked:). See import-report.json for what could not be expressed.\n")
    dump_yaml(out / "config.yaml", config, header)

    counts = {
        "scenarios": len(scenarios),
        "train": len(train_ids), "held_out": len(held),
        "steps": sum(len(sc["steps"]) for _, sc in scenarios.values()),
        "bench_checks": sum(1 for m in mapping if m["scenario"] in scenarios),
        "checks": sum(1 for m in mapping if m["scenario"] in scenarios and m["to"] == "check"),
        "expected_tools": sum(1 for m in mapping if m["scenario"] in scenarios and m["to"] == "expected_tools"),
        "state_checks": sum(1 for m in mapping if m["scenario"] in scenarios and m["to"] == "state_check"),
        "not_expressed": sum(1 for m in mapping if m["scenario"] in scenarios and m["to"] is None),
        "tools": len(tools), "repos": len(used),
    }
    doc = {
        "generated_by": "mcptrials import sense-bench",
        "bench": str(bench),
        "out": str(out),
        "counts": counts,
        "pins": {r: {"commit": pins[r]["commit"], "url": github_url(pins[r]["url"]), "from": pins[r]["from"]} for r in used},
        "tools": {t: {"recorded_cells": cells[t], "arm": "built-in baseline" if t == BASELINE else "recorded only"} for t in tools},
        "scenarios": {sid: {"file": str(path.relative_to(bench)), "sha256": file_sha256(path), "split": sc["split"],
                            "repo": sc["repo"], "steps": [s["name"] for s in sc["steps"]]}
                      for sid, (path, sc) in scenarios.items()},
        "checks": [m for m in mapping if m["scenario"] in scenarios],
        "not_expressed": [m for m in mapping if m["scenario"] in scenarios and m["to"] != "check"],
        "notes": report,
        "validation": None,
    }
    error = None
    if validate:
        doc["validation"], error = validate_written(out)
    (out / "import-report.json").write_text(json.dumps(doc, indent=2) + "\n")
    doc["written"] = [str(p) for p in [out / "config.yaml", *written, out / "import-report.json"]]
    if error is not None:
        raise ConfigError(f"wrote {out} ({len(written)} scenarios), but the written config does not load: {error}")
    return doc


def validate_written(out: Path) -> tuple[dict, ConfigError | None]:
    """(the import report's `validation`, the error): the written config loaded as a run would."""
    try:
        m = load_matrix(out / "config.yaml")
    except ConfigError as e:
        return {"ok": False, "by": "mcptrials.matrix.config.load_matrix", "error": str(e)}, e
    return {"ok": True, "by": "mcptrials.matrix.config.load_matrix", "cells": sum(1 for _ in m.cells()),
            "run_scenarios": len(m.run_scenarios())}, None


def summary(doc: dict) -> str:
    c = doc["counts"]
    lines = [f"wrote {doc['out']}/config.yaml, {c['scenarios']} scenario(s) in {doc['out']}/scenarios/ "
             f"({c['train']} train, {c['held_out']} held-out), {doc['out']}/import-report.json",
             f"  {c['steps']} steps; {c['bench_checks']} bench checks: {c['checks']} as checks, "
             f"{c['expected_tools']} as expected_tools (never scored), {c['state_checks']} as state checks, "
             f"{c['not_expressed']} not expressed",
             f"  repos: " + ", ".join(f"{r}@{p['commit'][:12]}" for r, p in doc["pins"].items()),
             f"  tools: " + ", ".join(f"{t} ({len(v['recorded_cells'])} recorded)" for t, v in doc["tools"].items()),
             ]
    groups: dict[tuple, list[dict]] = {}
    for r in doc["not_expressed"]:
        groups.setdefault((r["type"], r["to"], r.get("reason", "")), []).append(r)
    if groups:
        lines.append("  checks not scored as checks, by type (scenario/step#check value, r = required):")
    for (kind, to, reason), rows in groups.items():
        lines.append(f"    {kind} x{len(rows)}: {'kept as ' + to if to else 'not expressed'}: {reason}")
        where = [f"{r['scenario']}/{r['step_name']}#{r['check']} {r['value']!r}{' r' if r['required'] else ''}" for r in rows]
        lines.append("      " + "; ".join(where))
    notes: dict[tuple, list[str]] = {}
    for n in doc["notes"]:
        if "check" not in n:
            where = " / ".join(str(n[k]) for k in ("scenario", "step") if n.get(k))
            notes.setdefault((n["what"], n["reason"]), []).append(where)
    if notes:
        lines.append("  other notes:")
    for (what, reason), wheres in notes.items():
        wheres = [w for w in wheres if w]
        lines.append(f"    {what}: {reason}" + (f" [{', '.join(wheres)}]" if wheres else ""))
    v = doc.get("validation")
    if v:
        lines.append(f"  validated with {v['by']}: " + (f"ok, {v['cells']} trial cells" if v["ok"] else f"FAILED: {v['error']}"))
    return "\n".join(lines)
