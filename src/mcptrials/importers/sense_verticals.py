"""`mcptrials import sense-bench BENCH_DIR --vertical NAME|all --out DIR`: the reference
bench's vertical runs (many models, three agents) as mcptrials files.

Input: the bench's `verticals/<name>/` (its README describes the layout):

- `scenarios/<repo>.yaml` and `<repo>.rubric.yaml`: converted as the main import converts
  its scenarios (sense_scenario.convert_scenario), scenario-level `gold:` rows included;
- `results/<model>/<arm>/<repo>/` with `transcript.json`, `scored.json`, `judged.json`,
  `run_meta.json`, or `run-N/` folders holding them when the cell was run N times;
- the bench's `PINNED_COMMITS.json` for full commits and URLs (the runs name short ones).

Every run becomes one trial of (model, host, arm, repo, scenario, trial): the model by the
bench's results folder name (its sanitised id), the host from `run_meta.json`'s `harness`
(`claude-code` where absent, as the verticals' README says), `run-N/` as trial N, a cell
without them as trial 1. Folders starting with `_` (quarantined, partial sweeps), a cell
whose folder is not a scenario of the vertical (e.g. `solidus.before-steering`), and runs
with `valid: false` are not trials: `import-report.json` lists each with its reason.

Output DIR: `scenarios/`, `config.yaml` (one recorded model per bench model, each under
its host; `baseline` built in, every other arm `transport: recorded`), `recordings/<model>/
<arm>/<scenario>/<trial>/` holding symbolic links to the run's files (nothing of the bench
is copied), and `import-report.json`. With `all`, one such folder per vertical, DIR/<name>/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import yaml

from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.matrix.tools import BASELINE
from mcptrials.importers.sense_bench import (
    RECORDED_FORMAT,
    TOOL_NAME,
    dump_yaml,
    github_url,
    parse_pin_arg,
    read_pins,
    recorded_tool,
    validate_written,
)
from mcptrials.importers.sense_scenario import BenchImportError, convert_scenario
from mcptrials.core.keys import GOLD_ROWS

DEFAULT_HARNESS = "claude-code"  # the verticals' README: run_meta.json of Claude Code runs has no `harness`
RUN_DIR = re.compile(r"^run-(\d+)$")
RUN_FILES = ("transcript.json", "judged.json", "scored.json", "run_meta.json")
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
SHORT = re.compile(r"^[0-9a-f]{7,40}$")


def find_bench(bench_dir: Path) -> Path:
    """The bench/ folder holding verticals/ (given itself or the repository root)."""
    bench_dir = Path(bench_dir).resolve()
    for cand in (bench_dir, bench_dir / "bench"):
        if (cand / "verticals").is_dir():
            return cand
    raise BenchImportError(
        f"{bench_dir}: no verticals/ folder here or in bench/; give the reference bench's bench/ folder"
    )


def verticals(bench: Path) -> list[str]:
    d = bench / "verticals"
    return sorted(p.name for p in d.iterdir() if p.is_dir() and (p / "scenarios").is_dir()) if d.is_dir() else []


def _read_json(path: Path, left_out: list, what: str) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        left_out.append({"path": what, "reason": f"{path.name} does not read as JSON ({e}): not a trial"})
        return None
    return data if isinstance(data, dict) else None


def find_runs(results: Path, scenario_ids: set[str]) -> tuple[list[dict], list[dict]]:
    """(runs, left out) of a vertical's results/: a run is {model, arm, scenario, trial, dir,
    meta}; everything that is not a trial is listed with its reason."""
    runs, left_out = [], []
    rel = lambda p: str(p.relative_to(results.parents[2]))  # noqa: E731 - from the bench/ folder, as reported
    for mdir in sorted(p for p in results.iterdir() if p.is_dir()):
        if mdir.name.startswith(("_", ".")):
            left_out.append(
                {"path": rel(mdir), "reason": "a folder starting with _ or . (quarantined or partial): not a model"}
            )
            continue
        if not MODEL_NAME.match(mdir.name):
            left_out.append({"path": rel(mdir), "reason": "not a model name of ours ([A-Za-z0-9][A-Za-z0-9_.-]*)"})
            continue
        for adir in sorted(p for p in mdir.iterdir() if p.is_dir()):
            if adir.name.startswith(("_", ".")) or not TOOL_NAME.match(adir.name):
                left_out.append(
                    {
                        "path": rel(adir),
                        "reason": "a folder starting with _ (quarantined or partial), or "
                        "not a tool name of ours: not an arm",
                    }
                )
                continue
            for cdir in sorted(p for p in adir.iterdir() if p.is_dir()):
                if cdir.name.startswith(("_", ".")):
                    left_out.append({"path": rel(cdir), "reason": "a folder starting with _ (quarantined or partial)"})
                    continue
                if cdir.name not in scenario_ids:
                    left_out.append(
                        {
                            "path": rel(cdir),
                            "reason": f"{cdir.name!r} is not a scenario of the vertical "
                            "(scenarios/<name>.yaml): not a cell",
                        }
                    )
                    continue
                numbered = sorted(
                    (int(run.group(1)), p) for p in cdir.iterdir() if p.is_dir() and (run := RUN_DIR.match(p.name))
                )
                others = [p for p in cdir.iterdir() if p.is_dir() and not RUN_DIR.match(p.name)]
                for p in others:
                    left_out.append({"path": rel(p), "reason": "not a run-N folder: not a trial"})
                cands = numbered or ([(1, cdir)] if (cdir / "transcript.json").is_file() else [])
                if not cands:
                    left_out.append({"path": rel(cdir), "reason": "no transcript.json and no run-N folder: no run"})
                for n, rdir in cands:
                    if n < 1:
                        left_out.append({"path": rel(rdir), "reason": "run-0: trials count from 1"})
                        continue
                    if not (rdir / "transcript.json").is_file():
                        left_out.append({"path": rel(rdir), "reason": "no transcript.json: no answer to grade"})
                        continue
                    meta: dict = {}
                    if (rdir / "run_meta.json").is_file():
                        read = _read_json(rdir / "run_meta.json", left_out, rel(rdir))
                        if read is None:
                            continue
                        meta = read
                    if meta.get("valid") is False:
                        left_out.append(
                            {
                                "path": rel(rdir),
                                "reason": "valid: false in run_meta.json (void_reason: "
                                f"{meta.get('void_reason') or 'none given'})",
                            }
                        )
                        continue
                    runs.append(
                        {
                            "model": mdir.name,
                            "arm": adir.name,
                            "scenario": cdir.name,
                            "trial": n,
                            "dir": rdir,
                            "meta": meta,
                            "path": rel(rdir),
                        }
                    )
    return runs, left_out


def _link_runs(out: Path, runs: list[dict]) -> None:
    """DIR/recordings/<model>/<arm>/<scenario>/<trial>/<file> -> the bench's own files."""
    rec = out / "recordings"
    if rec.exists():
        shutil.rmtree(rec)
    for r in runs:
        d = rec / r["model"] / r["arm"] / r["scenario"] / str(r["trial"])
        d.mkdir(parents=True)
        for f in RUN_FILES:
            if (r["dir"] / f).is_file():
                os.symlink((r["dir"] / f).resolve(), d / f)


def read_mirrors(path) -> dict[str, str]:
    """URL -> absolute mirror path, from a mirrors file in the pack's format (`mirrors: {URL:
    path}`, relative paths from the file's folder)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise BenchImportError(f"{path}: cannot read the mirrors file: {e}") from None
    mirrors = data.get("mirrors") if isinstance(data, dict) else None
    if not isinstance(mirrors, dict):
        raise BenchImportError(f"{path}: field mirrors: give a mapping of repository URL -> local clone or bundle")
    return {github_url(str(u)): str((path.parent / str(p)).resolve()) for u, p in mirrors.items()}


def resolve_on_mirror(mirror: str, short: str, hint: str = "") -> tuple[str | None, str | None]:
    """(the full id of a short commit in a mirror, None) or (None, why not). A short id that
    several commits of the mirror start with (saleor's c662d3a is two) is settled by `hint`,
    the ledger's full id, when it is one of them; else it stays unresolved, the candidates said."""
    import subprocess

    if Path(mirror).is_file():  # a bundle: its refs' history, read by listing it
        return None, f"the mirror {mirror} is a bundle"
    p = subprocess.run(
        ["git", "-C", mirror, "rev-parse", "--verify", "--quiet", f"{short}^{{commit}}"], capture_output=True, text=True
    )
    full = p.stdout.strip()
    if p.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", full):
        return full, None
    objs = subprocess.run(
        ["git", "-C", mirror, "rev-parse", f"--disambiguate={short}"], capture_output=True, text=True
    ).stdout.split()
    commits = [
        o
        for o in objs
        if subprocess.run(["git", "-C", mirror, "cat-file", "-t", o], capture_output=True, text=True).stdout.strip()
        == "commit"
    ]
    if len(commits) == 1:
        return commits[0], None
    if hint in commits:
        return hint, None
    if commits:
        return None, (
            f"commit {short} is ambiguous in the mirror {mirror} ({len(commits)} commits start with it: "
            f"{', '.join(c[:12] for c in commits)}); give --pin REPO=COMMIT"
        )
    return None, f"commit {short} is not in the mirror {mirror}"


def _pins(bench: Path, used: list[str], runs: list[dict], pins_file, pin_args, mirrors_file) -> tuple[dict, list, dict]:
    """(repo -> config entry, how each commit was found, the mirrors used). The runs name short
    commits: a --pin wins; with --mirrors, each is resolved on its repository's mirror (no
    mirror, or not in it: unresolved, short, citations not checked); without, on the bench's
    ledger (a pin that is not the runs' commit: unresolved, said)."""
    pins = {}
    ledger = bench / "PINNED_COMMITS.json"
    if ledger.exists():
        pins.update(read_pins(ledger))
    if pins_file:
        pins.update(read_pins(Path(pins_file)))
    explicit = {}
    for arg in pin_args:
        repo, pin = parse_pin_arg(arg)
        if pin["url"] is None and repo in pins:
            pin["url"] = pins[repo]["url"]
        explicit[repo] = pin
    mirrors = read_mirrors(mirrors_file) if mirrors_file else None
    entries, notes, used_mirrors, problems = {}, [], {}, []
    for repo in used:
        seen = sorted(
            {str(r["meta"].get("repo_commit")) for r in runs if r["repo"] == repo and r["meta"].get("repo_commit")},
            key=len,
        )
        short = seen[-1] if seen else None
        if short and (not SHORT.match(short) or any(not short.startswith(c) for c in seen)):
            problems.append(f"{repo} (its runs were made at {', '.join(seen)}: not one commit)")
            continue
        pin = explicit.get(repo) or pins.get(repo) or {}
        url = github_url(pin.get("url") or "")
        if not url:
            problems.append(f"{repo} (no URL: not in {ledger.name}; give --pin {repo}=COMMIT,URL)")
            continue
        full, how, why = None, None, None
        if repo in explicit:
            full, how = explicit[repo]["commit"], "--pin"
        elif mirrors is not None:
            if url not in mirrors:
                why = f"no mirror of {url} in {mirrors_file}"
            elif short is None:
                why = "the runs name no repo_commit"
            else:
                full, why = resolve_on_mirror(mirrors[url], short, str(pins.get(repo, {}).get("commit") or ""))
                how = f"mirror {mirrors[url]}"
                if full is not None:
                    used_mirrors[url] = mirrors[url]
        else:
            led = str(pins.get(repo, {}).get("commit") or "")
            if re.fullmatch(r"[0-9a-f]{40}", led) and (short is None or led.startswith(short)):
                full, how = led, pins[repo]["from"]
            else:
                why = (
                    f"{ledger.name} pins {led[:12] or 'nothing'}, not the runs' commit {short}; no --mirrors given"
                    if led
                    else f"not in {ledger.name}; no --mirrors given"
                )
        if full is not None and not re.fullmatch(r"[0-9a-f]{40}", full):
            problems.append(f"{repo} ({full!r} from {how} is not a full 40-hex commit)")
            continue
        if full is not None and short and not full.startswith(short):
            problems.append(f"{repo} (the runs were made at {short}, {how} gives {full[:12]})")
            continue
        if full is not None:
            entries[repo] = {"url": url, "commit": full}
            notes.append({"repo": repo, "commit": full, "runs_commit": seen, "resolved_by": how})
        elif short is None:
            problems.append(f"{repo} (the runs name no commit and {why})")
        else:
            reason = f"short commit {short} of the runs, not resolved: {why}"
            entries[repo] = {"url": url, "commit": short, "unresolved": reason}
            notes.append(
                {"repo": repo, "commit": short, "runs_commit": seen, "resolved_by": None, "unresolved": reason}
            )
    if problems:
        raise BenchImportError(
            f"{ledger}: cannot pin repo(s) {'; '.join(problems)}; give each as --pin REPO=COMMIT,URL "
            "(the full commit the runs' short one names)"
        )
    return entries, notes, used_mirrors


def import_vertical(
    bench_dir, name: str, out_dir, pins_file=None, pin_args=(), mirrors_file=None, validate: bool = True
) -> dict:
    """Convert one vertical; write DIR/{scenarios/, recordings/, config.yaml, import-report.json}."""
    bench = find_bench(Path(bench_dir))
    names = verticals(bench)
    if name not in names:
        raise BenchImportError(
            f"{bench}/verticals: no vertical {name!r} (with a scenarios/ folder); use one of: "
            f"{', '.join(names) or 'none found'}, or all"
        )
    vdir = bench / "verticals" / name
    out = Path(out_dir).resolve()
    if out.exists() and any(out.iterdir()) and not (out / "import-report.json").exists():
        raise BenchImportError(
            f"{out}: not empty and not an earlier import (no import-report.json); give a new or empty folder"
        )
    if out == vdir or bench in out.parents or out == bench:
        raise BenchImportError(f"{out}: inside the bench folder; write the import elsewhere")
    results = vdir / "results"
    if not results.is_dir():
        raise BenchImportError(f"{results}: no results/ folder: the vertical has no runs to import")

    report: list[dict] = []
    mapping: list[dict] = []
    scenarios = vertical_scenarios(vdir, report, mapping)
    runs, left_out, host_of = model_runs(results, scenarios)
    used = list(dict.fromkeys(scenarios[s][1]["repo"] for s in sorted({r["scenario"] for r in runs})))
    repos, pin_notes, mirrors = _pins(bench, used, runs, pins_file, pin_args, mirrors_file)
    # scenarios without a run, and their repos, are left out of the config (reported)
    ran = {r["scenario"] for r in runs}
    for sid in sorted(set(scenarios) - ran):
        report.append({"scenario": sid, "what": "scenario", "reason": "no run of it in results/: not imported"})
        del scenarios[sid]

    arms = sorted({r["arm"] for r in runs}, key=lambda a: (a != BASELINE, a))
    models = list(dict.fromkeys(r["model"] for r in runs))
    trials = max(r["trial"] for r in runs)
    note_missing_trials(runs, models, arms, scenarios, trials, report)

    write_vertical_scenarios(out, bench, name, scenarios)
    _link_runs(out, runs)
    meta_of = {mo: next(r["meta"] for r in runs if r["model"] == mo) for mo in models}
    config = vertical_config(name, arms, repos, mirrors, {mo: host_of[mo] for mo in models}, meta_of, trials)
    header = (
        f"# The reference bench's vertical {name} imported by `mcptrials import sense-bench --vertical {name}`.\n"
        f"# Source: {vdir}\n"
        "# One recorded model per bench model, under the host (agent) it ran in; arms other than baseline are\n"
        "# recorded arms (transport: recorded). recordings/ links to the bench's files. See import-report.json.\n"
    )
    dump_yaml(out / "config.yaml", config, header)

    doc = {
        "generated_by": "mcptrials import sense-bench --vertical",
        "bench": str(bench),
        "vertical": name,
        "out": str(out),
        "counts": {
            "scenarios": len(scenarios),
            "models": len(models),
            "hosts": len(config["hosts"]),
            "arms": len(arms),
            "repos": len(used),
            "runs": len(runs),
            "trials": trials,
            "left_out": len(left_out),
            GOLD_ROWS: sum(len(sc.get("gold") or []) for _, sc in scenarios.values()),
        },
        "models": {
            mo: {
                "host": host_of[mo],
                "model_id": meta_of[mo].get("model"),
                "runs": sum(1 for r in runs if r["model"] == mo),
            }
            for mo in models
        },
        "runs": [
            {
                "model": r["model"],
                "host": r["host"],
                "arm": r["arm"],
                "scenario": r["scenario"],
                "trial": r["trial"],
                "path": r["path"],
                "repo_commit": r["meta"].get("repo_commit"),
            }
            for r in runs
        ],
        "left_out": left_out,
        "pins": pin_notes,
        "unresolved": {n["repo"]: n["unresolved"] for n in pin_notes if n.get("unresolved")},
        "scenarios": {
            sid: {
                "file": str(path.relative_to(bench)),
                "sha256": file_sha256(path),
                "repo": sc["repo"],
                "gold_groups": sorted({g.get("group", "_") for g in sc.get("gold") or []}),
                "steps": [s["name"] for s in sc["steps"]],
            }
            for sid, (path, sc) in scenarios.items()
        },
        "not_expressed": [m for m in mapping if m["scenario"] in scenarios and m["to"] != "check"],
        "notes": report,
        "validation": None,
    }
    error = None
    if validate:
        doc["validation"], error = validate_written(out)
    (out / "import-report.json").write_text(json.dumps(doc, indent=2) + "\n")
    if error is not None:
        raise ConfigError(f"wrote {out}, but the written config does not load: {error}")
    return doc


def vertical_scenarios(vdir: Path, report: list, mapping: list) -> dict[str, tuple[Path, dict]]:
    """id -> (file, our scenario) of the vertical's scenarios/ (rubric files are read with them)."""
    scenarios = {}
    for p in sorted((vdir / "scenarios").glob("*.yaml")):
        if p.name.endswith(".rubric.yaml"):
            continue
        sid = p.name[: -len(".yaml")]
        scenarios[sid] = (p, convert_scenario(p, "train", sid, report, mapping, True))
    if not scenarios:
        raise BenchImportError(f"{vdir}/scenarios: no scenario files (*.yaml besides *.rubric.yaml)")
    return scenarios


def model_runs(results: Path, scenarios: dict) -> tuple[list[dict], list[dict], dict[str, str]]:
    """(runs, left out, model -> host) of a vertical's results/: the runs of find_runs that are a
    model's (not a side sweep), each given its repo and host, one host per model."""
    runs, left_out = find_runs(results, set(scenarios))
    if not runs:
        raise BenchImportError(
            f"{results}: no run to import ({len(left_out)} folder(s) left out; see their reasons with a fresh --out)"
        )
    # a results/<name>/ folder is a model's when its runs name that model (the id sanitised, `/`
    # and `:` as `_`); another folder (e.g. a tool-version regression sweep) is not a model
    kept = []
    for r in runs:
        mid = r["meta"].get("model")
        if mid and re.sub(r"[/:]", "_", str(mid)) != r["model"]:
            left_out.append(
                {
                    "path": r["path"],
                    "reason": f"its run_meta.json names model {mid!r}, not the folder "
                    f"{r['model']!r}: not a model's results folder (a side sweep)",
                }
            )
        else:
            kept.append(r)
    runs = kept
    if not runs:
        raise BenchImportError(f"{results}: no run left to import ({len(left_out)} left out)")
    for r in runs:
        r["repo"] = scenarios[r["scenario"]][1]["repo"]
        r["host"] = str(r["meta"].get("harness") or DEFAULT_HARNESS)
    # one host per model: the harness its runs name (a run under another one is left out, said)
    host_of = {}
    for model in dict.fromkeys(r["model"] for r in runs):
        c = Counter(r["host"] for r in runs if r["model"] == model)
        host_of[model] = c.most_common(1)[0][0]
    kept = []
    for r in runs:
        if r["host"] != host_of[r["model"]]:
            left_out.append(
                {
                    "path": r["path"],
                    "reason": f"harness {r['host']!r}, where the model's other runs are "
                    f"{host_of[r['model']]!r}: one host per model",
                }
            )
        else:
            kept.append(r)
    return kept, left_out, host_of


def note_missing_trials(runs: list, models: list, arms: list, scenarios: dict, trials: int, report: list) -> None:
    """Report the cells with fewer runs than `trials` (the most of any cell) and those with none."""
    cells: dict = {}
    for r in runs:
        cells.setdefault(r["model"], {}).setdefault(r["arm"], {}).setdefault(r["scenario"], []).append(r["trial"])
    short = [
        f"{mo}/{a}/{s} ({len(t)} of {trials})"
        for mo, av in cells.items()
        for a, sv in av.items()
        for s, t in sv.items()
        if len(t) < trials
    ]
    absent = [
        f"{mo}/{a}/{s}" for mo in models for a in arms for s in scenarios if s not in cells.get(mo, {}).get(a, {})
    ]
    if short or absent:
        report.append(
            {
                "what": "trials without a recording",
                "reason": f"trials: {trials} (the most runs of a cell); a trial with no recording is not_run "
                "(no recording), counted missing, never a zero",
                "cells_with_fewer_runs": short,
                "cells_without_runs": absent,
            }
        )


def write_vertical_scenarios(out: Path, bench: Path, name: str, scenarios: dict) -> None:
    """DIR/scenarios/<id>.yaml (the folder rewritten whole), each headed by its source file and sha256."""
    out.mkdir(parents=True, exist_ok=True)
    sc_dir = out / "scenarios"
    if sc_dir.exists():
        shutil.rmtree(sc_dir)
    sc_dir.mkdir()
    for sid, (path, sc) in scenarios.items():
        header = (
            f"# Imported from the reference bench's vertical {name} by `mcptrials import sense-bench --vertical`: "
            f"{path.relative_to(bench)} (sha256 {file_sha256(path)[:16]}). Regenerate rather than edit.\n"
        )
        dump_yaml(sc_dir / f"{sid}.yaml", sc, header)


def vertical_config(
    name: str, arms: list, repos: dict, mirrors: dict, host_of: dict, meta_of: dict, trials: int
) -> dict:
    """The vertical's config: its arms (recorded, baseline built in), one recorded model per bench model
    (`host_of`, in order) under its loop host, reading DIR/recordings/, and the bench's recorded judge."""
    return {
        "tools": {
            a: ({"transport": "none"} if a == BASELINE else recorded_tool(a, f"verticals/{name}/results/<model>/{a}"))
            for a in arms
        },
        "repos": repos,
        **({"mirrors": mirrors} if mirrors else {}),
        "scenarios": "scenarios/*.yaml",
        "splits": ["train"],
        "hosts": {h: {"kind": "loop"} for h in dict.fromkeys(host_of.values())},
        "models": {
            mo: {
                "provider": "recorded",
                "format": RECORDED_FORMAT,
                "path": f"recordings/{mo}/{{tool}}/{{scenario}}/{{trial}}/transcript.json",
                **({"model": str(meta_of[mo]["model"])} if meta_of[mo].get("model") else {}),
                "host": host,
            }
            for mo, host in host_of.items()
        },
        "trials": trials,
        # the bench's own LLM judge, read from each run's judged.json (mcptrials.judge.recorded)
        "judge": {"provider": "recorded"},
    }


def import_verticals(bench_dir, name: str, out_dir, **kw) -> list[dict]:
    """One vertical into DIR, or `all` of them into DIR/<name>/."""
    if name != "all":
        return [import_vertical(bench_dir, name, out_dir, **kw)]
    names = verticals(find_bench(Path(bench_dir)))
    if not names:
        raise BenchImportError(f"{bench_dir}: no verticals/<name>/scenarios/ folders")
    return [import_vertical(bench_dir, n, Path(out_dir) / n, **kw) for n in names]


def summary(doc: dict) -> str:
    c = doc["counts"]
    lines = [
        f"wrote {doc['out']}: vertical {doc['vertical']}, {c['runs']} run(s) as trials of {c['models']} model(s) "
        f"under {c['hosts']} host(s), {c['arms']} arm(s), {c['scenarios']} scenario(s) ({c[GOLD_ROWS]} gold rows), "
        f"trials 1..{c['trials']}; {c['left_out']} folder(s) left out (import-report.json, left_out)",
        "  models: " + ", ".join(f"{mo} ({v['host']}, {v['runs']} runs)" for mo, v in doc["models"].items()),
    ]
    reasons = Counter(re.sub(r"'[^']*'", "'...'", x["reason"].split(" (")[0]) for x in doc["left_out"])
    for why, n in reasons.most_common():
        lines.append(f"  left out x{n}: {why}")
    v = doc.get("validation")
    if v:
        lines.append(
            f"  validated with {v['by']}: " + (f"ok, {v['cells']} trial cells" if v["ok"] else f"FAILED: {v['error']}")
        )
    return "\n".join(lines)
