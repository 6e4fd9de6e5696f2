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

Each scenario is converted by mcptrials.importers.sense_scenario (its check-type table).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import yaml

from mcptrials.importers.sense_scenario import BenchImportError, convert_scenario
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
# Set to False if the scenario schema does not (yet) know the one-answer field (sense_scenario).
EMIT_ONE_ANSWER = True


# A tool arm of the bench whose server is not run here: a recorded arm (transport
# recorded): no install, no snapshot job, no server; its tools/list comes from each recording.
def recorded_tool(tool: str, where: str) -> dict:
    return {"transport": "recorded", "source": f"the reference bench's {where} (recorded runs only)"}


HEX40 = re.compile(r"^[0-9a-f]{40}$")
TOOL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


# --- small helpers -------------------------------------------------------------


def github_url(url: str) -> str:
    """https://github.com/o/r.git -> https://github.com/o/r (the form our pack and mirrors files use)."""
    m = re.match(r"^(https://github\.com/[^/]+/[^/]+?)(\.git)?/?$", url or "")
    return m.group(1) if m else url


def find_bench(bench_dir: Path) -> Path:
    bench_dir = Path(bench_dir).resolve()
    for cand in (bench_dir, bench_dir / "bench"):
        if (cand / "scenarios").is_dir():
            return cand
    raise BenchImportError(
        f"{bench_dir}: no scenarios/ folder here or in bench/; give the reference bench's bench/ folder"
    )


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


def import_bench(
    bench_dir,
    out_dir,
    pins_file=None,
    pin_args=(),
    skip_unpinned=False,
    one_answer: bool = EMIT_ONE_ANSWER,
    validate: bool = True,
) -> dict:
    """Convert; write DIR/scenarios/*.yaml, DIR/config.yaml, DIR/import-report.json; validate.

    Returns the report (also written). Raises ConfigError on a bench it cannot import, and
    after writing everything, when the written config does not load."""
    bench = find_bench(Path(bench_dir))
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()) and not (out / "import-report.json").exists():
        raise BenchImportError(
            f"{out}: not empty and not an earlier import (no import-report.json); give a new or empty folder"
        )
    if out == bench or bench in out.parents:
        raise BenchImportError(f"{out}: inside the bench folder; write the import elsewhere")

    report: list[dict] = []
    mapping: list[dict] = []
    scenarios = {}
    for path, split, sid in bench_scenarios(bench):
        scenarios[sid] = (path, convert_scenario(path, split, sid, report, mapping, one_answer))
    note_held_out_gold(bench, report)
    pins, used = bench_pins(bench, pins_file, pin_args, skip_unpinned, scenarios, report)
    results = bench / "results"
    tools = result_tools(results, report)
    train_ids = [s for s, (_, sc) in scenarios.items() if sc["split"] == "train"]
    cells = recorded_cells(results, tools, train_ids, report)
    held = sorted(s for s, (_, sc) in scenarios.items() if sc["split"] == "held-out")
    if held:
        report.append(
            {
                "what": "held-out scenarios",
                "reason": f"{held}: written with split held-out; results/ holds no run "
                "of them, so the config runs splits [train] only",
            }
        )

    written = write_scenarios(out, bench, scenarios)
    write_config(out, bench, tools, {r: pins[r] for r in used}, os.path.relpath(results, out))
    mapped = [m for m in mapping if m["scenario"] in scenarios]
    doc = {
        "generated_by": "mcptrials import sense-bench",
        "bench": str(bench),
        "out": str(out),
        "counts": import_counts(scenarios, mapped, len(train_ids), len(held), len(tools), len(used)),
        "pins": {
            r: {"commit": pins[r]["commit"], "url": github_url(pins[r]["url"]), "from": pins[r]["from"]} for r in used
        },
        "tools": {
            t: {"recorded_cells": cells[t], "arm": "built-in baseline" if t == BASELINE else "recorded only"}
            for t in tools
        },
        "scenarios": {
            sid: {
                "file": str(path.relative_to(bench)),
                "sha256": file_sha256(path),
                "split": sc["split"],
                "repo": sc["repo"],
                "steps": [s["name"] for s in sc["steps"]],
            }
            for sid, (path, sc) in scenarios.items()
        },
        "checks": mapped,
        "not_expressed": [m for m in mapped if m["to"] != "check"],
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


def note_held_out_gold(bench: Path, report: list) -> None:
    """The held-out gold grades (scenarios/held-out/*.gold.json) are the bench's anchor, not gold
    citations: each is reported, none imported."""
    for g in sorted((bench / "scenarios" / "held-out").glob("*.gold.json")):
        try:
            gd = json.loads(g.read_text())
        except ValueError:
            gd = {}
        graded = sorted(k for k in gd if not k.startswith("_"))
        vc = len(((gd.get("_meta") or {}).get("verified_citations") or {}))
        report.append(
            {
                "scenario": g.name[: -len(".gold.json")],
                "what": g.name,
                "reason": f"hand-assigned scenario-quality grades of the bench's frozen held-out transcripts "
                f"({', '.join(graded) or 'none'}) with {vc} hand-verified citations named by claim, not "
                "by step: the bench's held-out anchor, not gold citations; not imported (the config has "
                "no locked: anchor)",
            }
        )


def bench_pins(
    bench: Path, pins_file, pin_args, skip_unpinned: bool, scenarios: dict, report: list
) -> tuple[dict, list]:
    """(pins by repo, the repos used, in scenario order): the bench's PINNED_COMMITS.json, then
    `pins_file`, then each --pin. A scenario on an unpinned repo is an error, or with
    `skip_unpinned` is left out of `scenarios` (in place) and reported."""
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
    bad = [
        f"{r} ({pins[r]['commit']!r} from {pins[r]['from']})"
        for r in used
        if r in pins and not HEX40.match(str(pins[r]["commit"] or ""))
    ]
    nourl = [r for r in used if r in pins and r not in unpinned and not pins[r]["url"]]
    if bad:
        raise BenchImportError(
            f"{ledger}: not a full 40-hex commit for {', '.join(bad)}; fix it or give --pin REPO=COMMIT[,URL]"
        )
    if nourl:
        raise BenchImportError(f"no URL for repo(s) {', '.join(nourl)}; give --pin REPO=COMMIT,URL")
    if unpinned:
        who = {r: sorted(s for s, (_, sc) in scenarios.items() if sc["repo"] == r) for r in unpinned}
        if not skip_unpinned:
            raise BenchImportError(
                f"{ledger}: no pinned commit for repo(s) {', '.join(f'{r} (scenarios {who[r]})' for r in unpinned)}; "
                "give each as --pin REPO=COMMIT,URL, or another ledger with --pins FILE (e.g. the bench's "
                "PINNED_COMMITS.json of the revision its results were run at), or leave those scenarios out with --skip-unpinned"
            )
        for r in unpinned:
            for s in who[r]:
                del scenarios[s]
                report.append(
                    {
                        "scenario": s,
                        "what": "scenario",
                        "reason": f"repo {r!r} has no pinned commit: left out (--skip-unpinned)",
                    }
                )
        if not scenarios:
            raise BenchImportError("every scenario was left out (none has a pinned repo)")
        used = [r for r in used if r not in unpinned]
    return pins, used


def result_tools(results: Path, report: list) -> list[str]:
    """The tools of results/<tool>/ (a folder name that is not a valid tool name is reported, left out)."""
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
    return tools


def recorded_cells(results: Path, tools: list, train_ids: list, report: list) -> dict[str, list[str]]:
    """Tool -> the train scenarios with a recorded transcript; the cells without one are reported."""
    cells = {t: sorted(s for s in train_ids if (results / t / s / "transcript.json").is_file()) for t in tools}
    missing = [f"{t}/{s}" for t in tools for s in train_ids if s not in cells[t]]
    if missing:
        report.append(
            {
                "what": "recorded cells",
                "reason": f"no results/<tool>/<scenario>/transcript.json for {missing}: "
                "those trials will have no recorded answer",
            }
        )
    return cells


def write_scenarios(out: Path, bench: Path, scenarios: dict) -> list[Path]:
    """DIR/scenarios/<id>.yaml for each converted scenario (the folder rewritten whole), each headed by
    its source file and sha256."""
    out.mkdir(parents=True, exist_ok=True)
    sc_dir = out / "scenarios"
    if sc_dir.exists():
        shutil.rmtree(sc_dir)
    sc_dir.mkdir()
    written = []
    for sid, (path, sc) in scenarios.items():
        rel = path.relative_to(bench)
        header = (
            f"# Imported from the reference bench by `mcptrials import sense-bench`: {rel}"
            f" (sha256 {file_sha256(path)[:16]}). Regenerate rather than edit.\n"
        )
        f = sc_dir / f"{sid}.yaml"
        dump_yaml(f, sc, header)
        written.append(f)
    return written


def write_config(out: Path, bench: Path, tools: list, pins: dict, results_rel: str) -> None:
    """DIR/config.yaml: the tools as recorded arms (baseline built in), the pinned repos, the recorded
    model over the bench's results (`results_rel`, from DIR), trials 1, no held-out anchor."""
    config = {
        "tools": {t: ({"transport": "none"} if t == BASELINE else recorded_tool(t, f"results/{t}")) for t in tools},
        "repos": {r: {"url": github_url(pin["url"]), "commit": pin["commit"]} for r, pin in pins.items()},
        "scenarios": "scenarios/*.yaml",
        "splits": ["train"],
        "models": {
            MODEL_NAME: {
                "provider": "recorded",
                "format": RECORDED_FORMAT,
                "path": PATH_PATTERN.format(results=results_rel),
            }
        },
        "trials": 1,
        "judge": {"provider": "reference"},
    }
    header = (
        "# The reference bench (luuuc/sense bench/) imported by `mcptrials import sense-bench`.\n"
        f"# Source: {bench}\n"
        "# Tools other than baseline are recorded arms (transport: recorded): no server runs here.\n"
        "# No held-out anchor (no locked:). See import-report.json for what could not be expressed.\n"
    )
    dump_yaml(out / "config.yaml", config, header)


def import_counts(scenarios: dict, mapped: list, train: int, held_out: int, tools: int, repos: int) -> dict:
    """The import report's `counts`: scenarios and steps written, and how their bench checks were mapped."""
    return {
        "scenarios": len(scenarios),
        "train": train,
        "held_out": held_out,
        "steps": sum(len(sc["steps"]) for _, sc in scenarios.values()),
        "bench_checks": len(mapped),
        "checks": sum(1 for m in mapped if m["to"] == "check"),
        "expected_tools": sum(1 for m in mapped if m["to"] == "expected_tools"),
        "state_checks": sum(1 for m in mapped if m["to"] == "state_check"),
        "not_expressed": sum(1 for m in mapped if m["to"] is None),
        "tools": tools,
        "repos": repos,
    }


def validate_written(out: Path) -> tuple[dict, ConfigError | None]:
    """(the import report's `validation`, the error): the written config loaded as a run would."""
    try:
        m = load_matrix(out / "config.yaml")
    except ConfigError as e:
        return {"ok": False, "by": "mcptrials.matrix.config.load_matrix", "error": str(e)}, e
    return {
        "ok": True,
        "by": "mcptrials.matrix.config.load_matrix",
        "cells": sum(1 for _ in m.cells()),
        "run_scenarios": len(m.run_scenarios()),
    }, None


def summary(doc: dict) -> str:
    c = doc["counts"]
    lines = [
        f"wrote {doc['out']}/config.yaml, {c['scenarios']} scenario(s) in {doc['out']}/scenarios/ "
        f"({c['train']} train, {c['held_out']} held-out), {doc['out']}/import-report.json",
        f"  {c['steps']} steps; {c['bench_checks']} bench checks: {c['checks']} as checks, "
        f"{c['expected_tools']} as expected_tools (never scored), {c['state_checks']} as state checks, "
        f"{c['not_expressed']} not expressed",
        "  repos: " + ", ".join(f"{r}@{p['commit'][:12]}" for r, p in doc["pins"].items()),
        "  tools: " + ", ".join(f"{t} ({len(v['recorded_cells'])} recorded)" for t, v in doc["tools"].items()),
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in doc["not_expressed"]:
        groups.setdefault((r["type"], r["to"], r.get("reason", "")), []).append(r)
    if groups:
        lines.append("  checks not scored as checks, by type (scenario/step#check value, r = required):")
    for (kind, to, reason), rows in groups.items():
        lines.append(f"    {kind} x{len(rows)}: {'kept as ' + to if to else 'not expressed'}: {reason}")
        where = [
            f"{r['scenario']}/{r['step_name']}#{r['check']} {r['value']!r}{' r' if r['required'] else ''}" for r in rows
        ]
        lines.append("      " + "; ".join(where))
    notes: dict[tuple, list[str]] = {}
    for n in doc["notes"]:
        if "check" not in n:
            place = " / ".join(str(n[k]) for k in ("scenario", "step") if n.get(k))
            notes.setdefault((n["what"], n["reason"]), []).append(place)
    if notes:
        lines.append("  other notes:")
    for (what, reason), wheres in notes.items():
        wheres = [w for w in wheres if w]
        lines.append(f"    {what}: {reason}" + (f" [{', '.join(wheres)}]" if wheres else ""))
    v = doc.get("validation")
    if v:
        lines.append(
            f"  validated with {v['by']}: " + (f"ok, {v['cells']} trial cells" if v["ok"] else f"FAILED: {v['error']}")
        )
    return "\n".join(lines)
