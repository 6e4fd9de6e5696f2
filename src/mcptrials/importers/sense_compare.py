"""Our grading of the reference bench's published runs beside its own.

    mcptrials compare-sense-bench --config DIR/config.yaml --runs results/runs \\
        --bench BENCH_DIR --out results/sense-compare

After `mcptrials import sense-bench` and a run of its config (the recorded model over the
bench's `results/`), this reads, per cell, our `scored.json` and the bench's own
`results/<tool>/<repo>/scored.json` (`citation_grounding`: total, grounded, unresolved,
hallucinated, and `details` with `file`, `locator`, `status`) and writes:

- `cells.csv`: per (tool, repo) both sides' counts and rates, and our verified share;
- `tools.csv` and `comparison.md`: per tool the mean grounding rate of each side over the
  repos with a 95% interval (`stats.bounded_mean_ci`, clustered by repo), and our verified
  share: the bench has no verification (an in-range but wrong line counts as grounded there);
- `disagreements.csv`: every citation on which the two disagree, matched by (file, first
  line): a different status, or found by one side only;
- `composition.csv` and a section of `comparison.md`: per model and tool our citations pooled
  over its cells, strict beside lenient grounding and verification, the ungrounded kinds and
  the composition by form (grade.citations.composition.view, the formulas there). The vertical board
  (sense_board) writes the same table and section from the run's summary.json.

It reads the bench's records, never changes them; nothing of them is copied into the project.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.core.keys import (
    BY_FORM,
    GROUNDED_RATE,
    N_CITATIONS,
    N_NOT_CHECKED,
    N_TRIALS,
    STRICT_GROUNDED_RATE,
    STRICT_UNDETERMINED_RATE,
    STRICT_VERIFIED_RATE,
    VERIFIED_RATE,
)

STATUSES = ("grounded", "unresolved", "hallucinated")


def bench_cell(bench: Path, tool: str, repo: str) -> dict | None:
    """The bench's own grading of one cell (results/<tool>/<repo>/scored.json), or None."""
    path = bench / "results" / tool / repo / "scored.json"
    if not path.is_file():
        return None
    cg = json.loads(path.read_text()).get("citation_grounding") or {}
    return {
        "total": cg.get("total", 0),
        **{s: cg.get(s, 0) for s in STATUSES},
        "rate": cg.get("rate"),
        "details": cg.get("details") or [],
    }


def our_cell(scored: dict) -> dict:
    """Our counts and citations of one trial (each citation once, as the answer holds it)."""
    c = scored["citations"]
    items, seen = [], set()
    for step in scored["steps"]:
        for it in (step.get("citations") or {}).get("items", []):
            key = (it.get("resolved_path") or it.get("path_as_cited"), tuple(it.get("lines") or []), it.get("symbol"))
            if key not in seen:  # a one-answer transcript can map one citation into several steps
                seen.add(key)
                items.append(it)
    counts = {s: sum(1 for it in items if it["bucket"] == s) for s in STATUSES}
    return {
        "total": len(items),
        **counts,
        "rate": c["rates"][GROUNDED_RATE],
        VERIFIED_RATE: c["rates"][VERIFIED_RATE],
        "items": items,
    }


def _locator_key(locator) -> int | str | None:
    """The bench's locator as a match key: its first line (`1618`, `1618-1630`), or a
    symbol (`:test_request_processing`, `Flask.wsgi_app`) as `sym:<name>`."""
    text = str(locator or "").strip()
    m = re.match(r"(\d+)", text)
    if m:
        return int(m.group(1))
    name = text.lstrip(":").strip()
    return f"sym:{name}" if name else None


def _our_keys(it: dict) -> list:
    """Keys of one of our citations: by the path we resolved and the path as cited (the
    bench names the cited form), each with the first line or the symbol."""
    paths = list(dict.fromkeys(p for p in (it.get("resolved_path"), it.get("path_as_cited")) if p))
    ats = ([f"sym:{it['symbol']}"] if it.get("symbol") else []) + ([it["lines"][0]] if it.get("lines") else [])
    return [(p, a) for p in paths for a in ats] or [(paths[0] if paths else None, None)]


def disagreements(tool: str, repo: str, ours: list[dict], theirs: list[dict]) -> list[dict]:
    """Citations the two sides grade differently, matched by (file, first line) or
    (file, symbol); a citation only one side found is listed with the other side empty."""
    mine: dict = {}
    for it in ours:
        for key in _our_keys(it):
            mine.setdefault(key, it)
    out, matched = [], set()
    for d in theirs:
        key = (d.get("file"), _locator_key(d.get("locator")))
        found = mine.get(key)
        if found is not None:
            matched.add(id(found))
            if found["bucket"] != d.get("status"):
                out.append(_row(tool, repo, key, d, found))
        else:
            out.append(_row(tool, repo, key, d, None))
    for it in ours:
        if id(it) not in matched:
            out.append(_row(tool, repo, _our_keys(it)[0], None, it))
    return out


def _row(tool, repo, key, theirs, ours) -> dict:
    return {
        "tool": tool,
        "repo": repo,
        "file": key[0],
        "at": key[1],
        "bench_locator": (theirs or {}).get("locator"),
        "bench_status": (theirs or {}).get("status"),
        "bench_reason": (theirs or {}).get("reason"),
        "ours_text": (ours or {}).get("text"),
        "ours_status": (ours or {}).get("bucket"),
        "ours_resolved_by": (ours or {}).get("resolved_by"),
        "ours_verification": (ours or {}).get("verification"),
        "ours_reason": (ours or {}).get("reason"),
    }


def compare(m, runs: Path, bench: Path) -> dict:
    """Per cell and per tool, both sides; and the disagreements."""
    from mcptrials.stats.intervals import bounded_mean_ci

    from mcptrials.analyze.records_summary import trial_citations
    from mcptrials.grade.citations.grading import pool
    from mcptrials.grade.citations.composition import view

    cells: list[dict] = []
    dis: list[dict] = []
    cits: dict[tuple[str, str], list] = {}
    unchecked: dict[tuple[str, str], int] = {}
    for key in m.cells():
        d = key.dir(runs)
        tool, repo, scenario = key.tool, key.repo, key.scenario
        if not (d / "scored.json").is_file():
            continue
        scored = json.loads((d / "scored.json").read_text())
        ours = our_cell(scored)
        theirs = bench_cell(bench, tool, scenario)  # the bench's results are per scenario file (= repo)
        if theirs is None:
            continue
        if scored.get("citations_not_checked"):
            unchecked[(key.model, tool)] = unchecked.get((key.model, tool), 0) + 1
        elif BY_FORM in trial_citations(scored)["counts"]:
            cits.setdefault((key.model, tool), []).append(trial_citations(scored))
        cells.append(
            {
                "tool": tool,
                "repo": repo,
                "scenario": scenario,
                **{f"bench_{k}": theirs[k] for k in ("total", *STATUSES, "rate")},
                **{f"ours_{k}": ours[k] for k in ("total", *STATUSES, "rate", VERIFIED_RATE)},
            }
        )
        dis += disagreements(tool, repo, ours["items"], theirs["details"])
    tools = []
    for tool in dict.fromkeys(c["tool"] for c in cells):
        rows = [c for c in cells if c["tool"] == tool]
        row = {"tool": tool, "repos": len(rows)}
        for side, col in (("bench", "bench_rate"), ("ours", "ours_rate"), ("ours_verified", "ours_verified_rate")):
            vals = [r[col] for r in rows if r[col] is not None]
            ci = bounded_mean_ci(vals) if vals else {"mean": None, "lo": None, "hi": None}
            row.update({f"{side}_mean": ci["mean"], f"{side}_lo": ci["lo"], f"{side}_hi": ci["hi"]})
        row["disagreements"] = sum(1 for x in dis if x["tool"] == tool)
        tools.append(row)
    composition = [
        {
            "model": model,
            "tool": tool,
            N_TRIALS: len(c),
            N_NOT_CHECKED: unchecked.get((model, tool), 0),
            **view(pool(c)),
        }
        for (model, tool), c in cits.items()
    ]
    return {"cells": cells, "tools": tools, "disagreements": dis, "composition": composition}


def composition_rows(composition: list[dict]) -> list[dict]:
    """composition.csv: one row per model, tool and form (form "all" first, with the
    ungrounded kinds; a form's row has its own rates, its ungrounded columns empty)."""
    from mcptrials.grade.citations.composition import UNGROUNDED_KINDS

    out = []
    for c in composition:
        head = {"model": c.get("model"), "tool": c["tool"]}
        out.append(
            {
                **head,
                "form": "all",
                "trials": c.get(N_TRIALS),
                "not_checked": c.get(N_NOT_CHECKED, 0),
                "n": c[N_CITATIONS],
                "share": 1.0 if c[N_CITATIONS] else None,
                "grounded": c[GROUNDED_RATE],
                "grounded_strict": c[STRICT_GROUNDED_RATE],
                "verified": c[VERIFIED_RATE],
                "verified_strict": c[STRICT_VERIFIED_RATE],
                "undetermined_strict": c.get(STRICT_UNDETERMINED_RATE),
                **{f"ungrounded_{k}": c["ungrounded"][k]["n"] for k in UNGROUNDED_KINDS},
                **{f"ungrounded_{k}_share": c["ungrounded"][k]["share"] for k in UNGROUNDED_KINDS},
            }
        )
        for form, f in c[BY_FORM].items():
            out.append(
                {
                    **head,
                    "form": form,
                    "trials": None,
                    "not_checked": None,
                    "n": f["n"],
                    "share": f["share"],
                    "grounded": f[GROUNDED_RATE],
                    "grounded_strict": f.get(STRICT_GROUNDED_RATE),
                    "verified": f[VERIFIED_RATE],
                    "verified_strict": f[STRICT_VERIFIED_RATE],
                    "undetermined_strict": f.get(STRICT_UNDETERMINED_RATE),
                    **{f"ungrounded_{k}": None for k in UNGROUNDED_KINDS},
                    **{f"ungrounded_{k}_share": None for k in UNGROUNDED_KINDS},
                }
            )
    return out


def form_rank(form: str) -> tuple:
    """A form's place in the tables: grade.citations.composition.FORM_ORDER, then any other by name."""
    from mcptrials.grade.citations.composition import FORM_ORDER

    return (FORM_ORDER.index(form), "") if form in FORM_ORDER else (len(FORM_ORDER), form)


def composition_markdown(comp: list[dict]) -> list[str]:
    """The markdown section of the composition (comparison.md, board.md): per model, a table
    per tool of strict beside lenient and the ungrounded kinds, then the forms."""
    from mcptrials.grade.citations.composition import UNGROUNDED_KINDS

    if not comp:
        return []
    lines = [
        "",
        "## Our citations per model and tool: strict beside lenient, ungrounded decomposed, by form",
        "",
        "Trials whose citations were not checked (no checkout of their commit) are left out and counted. "
        "grounded (lenient) = grounded / all; grounded (strict) = (grounded - strict mismatch) / all; verified "
        "(lenient) = verified / (verified + mismatch), +/-5 lines; verified (strict) = the line is inside the "
        "subject's definition or names it; undetermined (strict) = the share of strict verdicts with no "
        "positive evidence either way (counted as grounded); each ungrounded kind as n (its share of all citations); a form's "
        "share of the citations and its own rates.",
    ]
    for model in dict.fromkeys(c.get("model") for c in comp):
        rows = [c for c in comp if c.get("model") == model]
        lines += [
            "",
            f"### {model}",
            "",
            "| tool | trials | not checked | citations | grounded (lenient) | grounded (strict) | verified (lenient) "
            "| verified (strict) | undetermined (strict) | "
            + " | ".join(f"ungrounded: {k.replace('_', ' ')}" for k in UNGROUNDED_KINDS)
            + " |",
            "|---|---|---|---|---|---|---|---|---|" + "---|" * len(UNGROUNDED_KINDS),
        ]
        for c in rows:
            u = c["ungrounded"]
            lines.append(
                f"| {c['tool']} | {c.get(N_TRIALS, '–')} | {c.get(N_NOT_CHECKED, 0)} | {c[N_CITATIONS]} | "
                f"{_f(c[GROUNDED_RATE])} | {_f(c[STRICT_GROUNDED_RATE])} | {_f(c[VERIFIED_RATE])} | "
                f"{_f(c[STRICT_VERIFIED_RATE])} | {_f(c.get(STRICT_UNDETERMINED_RATE))} | "
                + " | ".join(f"{u[k]['n']} ({_f(u[k]['share'])})" for k in UNGROUNDED_KINDS)
                + " |"
            )
        lines += [
            "",
            "| tool | form | share (n) | grounded (lenient) | grounded (strict) | verified (lenient) | "
            "verified (strict) | undetermined (strict) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for c in rows:
            for form, f in sorted(c[BY_FORM].items(), key=lambda kv: form_rank(kv[0])):
                lines.append(
                    f"| {c['tool']} | {form} | {_f(f['share'])} ({f['n']}) | {_f(f[GROUNDED_RATE])} | "
                    f"{_f(f.get(STRICT_GROUNDED_RATE))} | {_f(f[VERIFIED_RATE])} | "
                    f"{_f(f[STRICT_VERIFIED_RATE])} | {_f(f.get(STRICT_UNDETERMINED_RATE))} |"
                )
    return lines


def _f(x) -> str:
    return "–" if x is None else f"{x:.3f}"


def markdown(result: dict) -> str:
    lines = [
        "# The reference bench's published runs, graded by mcptrials beside its own grading",
        "",
        "Grounding rate = grounded / all citations, per cell, then the mean over repos per tool with a 95% "
        "logit t interval (clustered by repo). The bench has no verification: an in-range but wrong line "
        "counts as grounded there; ours checks the cited lines name what the citation is about.",
        "",
        "| tool | repos | bench grounding | our grounding | our verified share | disagreements |",
        "|---|---|---|---|---|---|",
    ]
    for t in result["tools"]:
        lines.append(
            f"| {t['tool']} | {t['repos']} | {_f(t['bench_mean'])} [{_f(t['bench_lo'])}, {_f(t['bench_hi'])}] | "
            f"{_f(t['ours_mean'])} [{_f(t['ours_lo'])}, {_f(t['ours_hi'])}] | "
            f"{_f(t['ours_verified_mean'])} [{_f(t['ours_verified_lo'])}, {_f(t['ours_verified_hi'])}] | "
            f"{t['disagreements']} |"
        )
    lines += [
        "",
        "| tool | repo | bench: citations, grounded, unresolved, hallucinated | "
        "ours: citations, grounded, unresolved, hallucinated | our verified share |",
        "|---|---|---|---|---|",
    ]
    for c in result["cells"]:
        lines.append(
            f"| {c['tool']} | {c['repo']} | {c['bench_total']}, {c['bench_grounded']}, {c['bench_unresolved']}, "
            f"{c['bench_hallucinated']} | {c['ours_total']}, {c['ours_grounded']}, {c['ours_unresolved']}, "
            f"{c['ours_hallucinated']} | {_f(c['ours_verified_rate'])} |"
        )
    lines += composition_markdown(result.get("composition") or [])
    return "\n".join(lines) + "\n"


def _csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        if not rows:
            f.write("")
            return
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def bench_folder(given: Path, part: str) -> Path:
    """The bench/ folder holding `part` (results, verticals): the one given, or bench/ under
    the repository root given."""
    return given / "bench" if (given / "bench" / part).is_dir() else given


def write_comparison(m, bench: Path, runs: Path, out: Path) -> dict:
    """`compare` of our runs with the bench's results/, written to `out`: cells.csv, tools.csv,
    disagreements.csv, composition.csv and comparison.md."""
    bench = bench_folder(bench, "results")
    if not (bench / "results").is_dir():
        raise ConfigError(f"{bench}: no results/ folder; give the bench/ folder the import read")
    result = compare(m, runs, bench)
    out.mkdir(parents=True, exist_ok=True)
    _csv(out / "cells.csv", result["cells"])
    _csv(out / "tools.csv", result["tools"])
    _csv(out / "disagreements.csv", result["disagreements"])
    _csv(out / "composition.csv", composition_rows(result["composition"]))
    (out / "comparison.md").write_text(markdown(result))
    return result
