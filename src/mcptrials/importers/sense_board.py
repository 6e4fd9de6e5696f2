"""The reference bench's published vertical board, reproduced from our grading of its runs.

    mcptrials compare-sense-bench --vertical NAME --config DIR/config.yaml --bench BENCH_DIR \\
        [--aggregate results/aggregate] [--runs results/runs] [--out results/sense-board]

After `mcptrials import sense-bench --vertical NAME` and a run of its config. The bench's
board (`verticals/<name>/results/report.json`: models -> repo -> baseline_overall,
sense_overall, overall_delta, deps_delta) is, per (model, repo), the mean over runs of each
arm's cited recall (`scored.json` gold_recall.cited_recall), sense minus baseline, overall
and for the `dependents` group; its headline is the mean of those deltas over repos per
model. Ours is the same figure from our trials.csv (`cited_recall`,
`cited_recall_dependents`; missing trials left out, never zeros).

Writes `board.csv` (per model and repo: both sides' arm means and deltas, the difference,
and for a difference over 0.05 the reason: a run we left out, or the gold rows the two
gradings credit differently per run, read from the bench's own scored.json beside each
recording), `means.csv` and `board.md` (per model: both headlines side by side, and what
the bench lacks: a 95% interval over repos, paired t and Wilcoxon tests with Holm across
models, pass^k over runs, cost where known). Beside the board, our grading of the same runs'
citations, per model and tool, from the run's summary.json (`citation_composition`):
`composition.csv` and a section of `board.md`, strict beside lenient grounding and
verification, the ungrounded decomposed and the composition by form
(sense_compare.composition_rows / composition_markdown). The bench's records are read,
never changed.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

from mcptrials.core.identity import TrialKey
from mcptrials.matrix.errors import ConfigError
from mcptrials.core.keys import CITED_RECALL, MISSING_REASON, T_P, WILCOXON_P

DEPS = "dependents"
CLOSE = 0.05  # a cell whose delta differs more than this gets a reason
TARGET = 0.03  # the target for each per-model mean


def bench_board(vdir: Path) -> dict:
    path = vdir / "results" / "report.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"{path}: cannot read the bench's board ({e}); give the bench/ folder the import read"
        ) from None
    if not isinstance(data.get("models"), dict):
        raise ConfigError(f"{path}: field models: not the bench's board (models -> repo -> overall_delta, deps_delta)")
    return data["models"]


def _num(x):
    return None if x in (None, "") else float(x)


def _mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def model_of(row: dict) -> str:
    """The config's model of a trials.csv row (its `model` is model@host when there are several hosts)."""
    suffix = "@" + row.get("host", "")
    return row["model"][: -len(suffix)] if row["model"].endswith(suffix) else row["model"]


def our_cells(rows: list[dict]) -> dict:
    """(model, repo) -> {arm: [trial rows used]}: the trials that count (missing ones left out)."""
    out: dict = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("missing") == "True":
            continue
        out[(model_of(r), r["scenario"])][r["tool"]].append(r)
    return out


def _arm(rs: list[dict], col: str):
    return _mean(_num(r.get(col)) for r in rs)


def _gold_ids(scored: dict | None) -> set | None:
    g = (scored or {}).get("gold_recall") or None
    return None if g is None else {d["id"] for d in g.get("details") or [] if d.get("cited")}


def all_assistant_text(recording: Path) -> str:
    """Every assistant text block of a recorded session, in order: what the bench matches its
    gold against (ours: the final answer only)."""
    from mcptrials.run.recorded import read_stream

    return "\n".join(
        b.get("text") or ""
        for e in read_stream(recording)
        if e.get("type") == "assistant"
        for b in ((e.get("message") or {}).get("content") or [])
        if isinstance(b, dict) and b.get("type") == "text"
    )


def _split_by_scope(ids: list[str], gold: list, recording: Path) -> tuple[list[str], list[str]]:
    """(rows cited somewhere in the session's assistant texts but not in the final answer,
    the other rows): the first differ by answer scope, the second by matching."""
    from mcptrials.grade.gold_recall import gold_recall

    try:
        whole = gold_recall(all_assistant_text(recording), gold) or {}
    except OSError:
        return [], ids
    cited = {d["id"] for d in whole.get("details") or [] if d["cited"]}
    return [i for i in ids if i in cited], [i for i in ids if i not in cited]


def _reason(model: str, repo: str, every: list[dict], used: dict, base: Path, runs: Path, gold: list) -> str:
    """Why our delta of a cell differs from the bench's: runs left out, and per run the gold
    rows one grading credits and the other does not."""
    parts = []
    # a missing trial with a recording is a run we left out; one without is a run nobody made
    gone = [
        r
        for r in every
        if (model_of(r), r["scenario"]) == (model, repo)
        and r.get("missing") == "True"
        and (base / "recordings" / model / r["tool"] / repo / str(r["trial"]) / "transcript.json").is_file()
    ]
    if gone:
        parts.append(
            "runs we left out: " + "; ".join(f"{r['tool']} trial {r['trial']} ({r[MISSING_REASON]})" for r in gone)
        )
    for arm, rs in sorted(used.items()):
        for r in rs:
            theirs = base / "recordings" / model / arm / repo / str(r["trial"]) / "scored.json"
            ours = TrialKey(model, r["host"], arm, r["repo"], repo, int(r["trial"])).dir(runs) / "scored.json"
            try:
                t_ids = _gold_ids(json.loads(theirs.read_text()))
                o_ids = _gold_ids(json.loads(ours.read_text()))
            except (OSError, ValueError):
                continue
            if t_ids is None or o_ids is None or t_ids == o_ids:
                continue
            only_b, only_o = sorted(t_ids - o_ids), sorted(o_ids - t_ids)
            scope, match = _split_by_scope(only_b, gold, theirs.parent / "transcript.json")
            said = []
            if scope:
                said.append(
                    f"answer scope (pinned in an earlier assistant message, not the final answer): {', '.join(scope)}"
                )
            if match:
                said.append(
                    f"gold matching (not pinned in any assistant text by our rule: the bench's "
                    f"path-compaction oracle or a form): {', '.join(match)}"
                )
            if only_o:
                said.append(f"we credit, the bench does not: {', '.join(only_o)}")
            parts.append(f"{arm} trial {r['trial']}: " + "; ".join(said))
    return " | ".join(parts) or "the same runs and rows per run: a difference of averaging"


def board(m, vdir: Path, aggregate: Path, runs: Path) -> dict:
    from mcptrials.stats.paired import holm_adjust, paired_difference
    from mcptrials.stats.pass_k import mean_pass_hat_k

    theirs = bench_board(vdir)
    tpath = aggregate / "trials.csv"
    if not tpath.is_file():
        raise ConfigError(f"{tpath}: not found; run the import's config first (snakemake), or give --aggregate")
    rows = list(csv.DictReader(tpath.open()))
    cells = our_cells(rows)
    base = m.base_dir
    out_cells, means = [], []
    for model in sorted(set(theirs) | {k[0] for k in cells}):
        repos = sorted(set(theirs.get(model, {})) | {k[1] for k in cells if k[0] == model})
        for repo in repos:
            gold = (m.scenarios[repo].data.get("gold") or []) if repo in m.scenarios else []
            b = theirs.get(model, {}).get(repo) or {}
            used = cells.get((model, repo), {})
            ob, os_ = _arm(used.get("baseline", []), CITED_RECALL), _arm(used.get("sense", []), CITED_RECALL)
            db, ds = (
                _arm(used.get("baseline", []), f"cited_recall_{DEPS}"),
                _arm(used.get("sense", []), f"cited_recall_{DEPS}"),
            )
            ours = None if ob is None or os_ is None else os_ - ob
            ours_deps = None if db is None or ds is None else ds - db
            row = {
                "model": model,
                "repo": repo,
                "bench_baseline": b.get("baseline_overall"),
                "bench_sense": b.get("sense_overall"),
                "bench_delta": b.get("overall_delta"),
                "bench_deps_delta": b.get("deps_delta"),
                "ours_baseline": ob,
                "ours_sense": os_,
                "ours_delta": ours,
                "ours_deps_delta": ours_deps,
                "ours_runs_baseline": len(used.get("baseline", [])),
                "ours_runs_sense": len(used.get("sense", [])),
            }
            diffs = [
                abs(x - y)
                for x, y in ((row["bench_delta"], ours), (row["bench_deps_delta"], ours_deps))
                if x is not None and y is not None
            ]
            row["difference"] = max(diffs) if diffs else None
            if b and ours is None:
                row["reason"] = (
                    "no delta of ours: an arm has no trial that counts ("
                    + _reason(model, repo, rows, used, base, runs, gold)
                    + ")"
                )
            elif not b:
                row["reason"] = "not on the bench's board"
            elif row["difference"] is not None and row["difference"] > CLOSE:
                row["reason"] = _reason(model, repo, rows, used, base, runs, gold)
            else:
                row["reason"] = ""
            out_cells.append(row)
        mine = [c for c in out_cells if c["model"] == model]
        bench_d = [c["bench_delta"] for c in mine if c["bench_delta"] is not None]
        # the bench's own headline: every repo of its board; ours: the repos we have a delta for
        mean = {
            "model": model,
            "repos_bench": len(bench_d),
            "bench_mean_delta": _mean(bench_d),
            "bench_mean_deps_delta": _mean(c["bench_deps_delta"] for c in mine),
            "repos_ours": sum(1 for c in mine if c["ours_delta"] is not None),
            "ours_mean_delta": _mean(c["ours_delta"] for c in mine),
            "ours_mean_deps_delta": _mean(c["ours_deps_delta"] for c in mine),
        }
        for k in ("delta", "deps_delta"):
            a, o = mean[f"bench_mean_{k}"], mean[f"ours_mean_{k}"]
            mean[f"difference_{k}"] = None if a is None or o is None else o - a
        # what the bench's board lacks
        sense = {
            c["repo"]: c["ours_sense"] for c in mine if c["ours_sense"] is not None and c["ours_baseline"] is not None
        }
        basel = {
            c["repo"]: c["ours_baseline"]
            for c in mine
            if c["ours_sense"] is not None and c["ours_baseline"] is not None
        }
        pd = paired_difference(sense, basel, bounds=(-1, 1)) if sense else None
        mean.update(
            {
                "ours_lo": (pd or {}).get("lo"),
                "ours_hi": (pd or {}).get("hi"),
                T_P: (pd or {}).get(T_P),
                WILCOXON_P: (pd or {}).get(WILCOXON_P),
            }
        )
        for arm in ("baseline", "sense"):
            tasks = {
                repo: (len(a.get(arm, [])), sum(1 for r in a.get(arm, []) if r.get("passed") == "True"))
                for (mo, repo), a in cells.items()
                if mo == model and a.get(arm)
            }
            mean[f"pass^2_{arm}"] = mean_pass_hat_k(tasks, 2)["mean"] if tasks else None
            costs = [_num(r.get("cost_usd")) for (mo, _), a in cells.items() if mo == model for r in a.get(arm, [])]
            known = [c for c in costs if c is not None]
            mean[f"cost_usd_{arm}"] = _mean(known)
            mean[f"cost_known_{arm}"] = f"{len(known)} of {len(costs)}"
        means.append(mean)
    holm = holm_adjust({x["model"]: x[T_P] for x in means})
    for x in means:
        x["t_p_holm"] = holm[x["model"]]
        x["within_target"] = None if x["difference_delta"] is None else abs(x["difference_delta"]) <= TARGET
    return {"cells": out_cells, "means": means}


def _f(x, signed=False) -> str:
    if x is None:
        return "–"
    return f"{x:+.2f}" if signed else f"{x:.3f}"


def markdown(vertical: str, result: dict) -> str:
    lines = [
        f"# The reference bench's {vertical} board, reproduced",
        "",
        "Cited recall (share of a scenario's gold rows the answer pins to a line), sense minus baseline, "
        "per model: the mean over repos of each repo's delta (each arm: the mean over its runs). "
        "Bench: its results/report.json. Ours: our grading of the same runs (grade/gold_recall.py; missing "
        "trials left out, never zeros). Interval: 95% paired, logit t on [-1, 1] over repos; p: paired t, "
        "Holm-adjusted across models.",
        "",
        "| model | repos (bench / ours) | bench mean Δ | our mean Δ | diff | bench deps Δ | our deps Δ | "
        "our 95% interval | paired t p (Holm) | Wilcoxon p | pass^2 baseline / sense | cost/trial baseline / sense |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for x in result["means"]:
        cost = " / ".join(
            f"${x[f'cost_usd_{a}']:.2f} ({x[f'cost_known_{a}']})"
            if x[f"cost_usd_{a}"] is not None
            else f"unknown ({x[f'cost_known_{a}']})"
            for a in ("baseline", "sense")
        )
        lines.append(
            f"| {x['model']} | {x['repos_bench']} / {x['repos_ours']} | {_f(x['bench_mean_delta'], True)} | "
            f"{_f(x['ours_mean_delta'], True)} | {_f(x['difference_delta'], True)} | "
            f"{_f(x['bench_mean_deps_delta'], True)} | {_f(x['ours_mean_deps_delta'], True)} | "
            f"[{_f(x['ours_lo'], True)}, {_f(x['ours_hi'], True)}] | {_f(x[T_P])} ({_f(x['t_p_holm'])}) | "
            f"{_f(x[WILCOXON_P])} | {_f(x['pass^2_baseline'])} / {_f(x['pass^2_sense'])} | {cost} |"
        )
    off = [c for c in result["cells"] if c["reason"]]
    lines += [
        "",
        f"## Cells that differ by more than {CLOSE} (or are on one side only): {len(off)}",
        "",
        "| model | repo | bench Δ (deps) | our Δ (deps) | reason |",
        "|---|---|---|---|---|",
    ]
    for c in off:
        lines.append(
            f"| {c['model']} | {c['repo']} | {_f(c['bench_delta'], True)} ({_f(c['bench_deps_delta'], True)}) | "
            f"{_f(c['ours_delta'], True)} ({_f(c['ours_deps_delta'], True)}) | {c['reason']} |"
        )
    return "\n".join(lines) + "\n"


def write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        fields = list(dict.fromkeys(k for r in rows for k in r))
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)


def composition(aggregate: Path) -> list[dict]:
    """The run's citation composition per model and tool (summary.json `citation_composition`;
    none in a summary written before it existed)."""
    path = aggregate / "summary.json"
    return (json.loads(path.read_text()).get("citation_composition") or []) if path.is_file() else []


def run(m, bench: Path, vertical: str, aggregate: Path, runs: Path, out: Path) -> dict:
    from mcptrials.importers.sense_compare import composition_markdown, composition_rows

    vdir = bench / "verticals" / vertical
    if not vdir.is_dir():
        raise ConfigError(f"{bench}/verticals: no vertical {vertical!r}; give the bench/ folder the import read")
    result = board(m, vdir, aggregate, runs)
    result["composition"] = composition(aggregate)
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "board.csv", result["cells"])
    write_csv(out / "means.csv", result["means"])
    write_csv(out / "composition.csv", composition_rows(result["composition"]))
    md = markdown(vertical, result) + "\n".join(composition_markdown(result["composition"]))
    (out / "board.md").write_text(md.rstrip("\n") + "\n")
    return result
