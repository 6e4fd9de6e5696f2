"""The verified share of line citations per arm (baseline / sense), pooled per arm and per
(model, arm), strict and lenient, graded by this checkout's grader and, with --before SRC, by
another checkout's (its src/ folder, e.g. `git archive <commit> src | tar -x -C /tmp/before`;
the old layout's mcptrials.graders is read as well as the new mcptrials.grade).

Two sets of answers:

- default: the answers the citation corpus holds (tests/fixtures/citation_corpus/labels.json:
  the answers' sources and the repositories' commits; texts read from the mirrors at run time,
  never stored). Needs the mirrors of tests/grade/test_citation_corpus.py
  (MCPTRIALS_SENSE_MIRROR, MCPTRIALS_MIRRORS).
- `--verticals BENCH_DIR --mirrors FILE [--repos lobsters,healthchecks]`: every run of the
  reference bench's verticals (BENCH_DIR/verticals/*/) on those repositories: each vertical
  imported as `mcptrials import sense-bench --vertical` imports it (mcptrials.importers.
  sense_verticals, into a temporary folder), each trial's answer taken as the pipeline takes
  it (mcptrials.run.recorded.run_recorded: the final answer, the agent's working folder
  stripped), graded against the repository's mirror at the runs' commit. A run whose answer
  is missing (harness_failed) has no citations and counts as n_missing.

    python bench/verified_by_arm.py [--before /tmp/before/src]
    python bench/verified_by_arm.py --verticals /tmp/sense/bench --mirrors mirrors.yaml --before /tmp/before/src

verified share = verified / (verified + mismatch), pooled over the answers of an arm: the
lenient (+/-5 lines) rule, and the strict one where the grader has it (strict_verified /
(strict_verified + strict_mismatch)); n = that denominator. Gap = baseline's share minus
sense's, with a 95% percentile bootstrap over answers (each arm's resampled, 2000 times)
for the before-lenient and after-strict gaps.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("total", "verified", "mismatch", "strict_verified", "strict_mismatch")
ARMS = ("baseline", "sense")


def corpus_answers() -> list[dict]:
    """The citation corpus's answers: {model, arm, repo, mirror, commit, text}."""
    sys.path.insert(0, str(ROOT / "tests" / "grade"))
    from test_citation_corpus import LABELS, answer_text

    labels = json.loads(LABELS.read_text())
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    mirrors = Path(os.environ.get("MCPTRIALS_MIRRORS", "/work/.mirror"))
    repos = {
        n: {"mirror": str(mirrors / r["fetch"].split(":", 1)[1].replace("/", "+") / "repo"), "commit": r["commit"]}
        for n, r in labels["repos"].items()
    }
    out = []
    for a in labels["answers"].values():
        model, arm = a["source"].split("/results/")[1].split("/")[:2]
        out.append(
            {
                "model": model,
                "arm": arm,
                "repo": a["repo"],
                **repos[a["repo"]],
                "text": answer_text(sense, labels["bench"]["commit"], a["source"]) or "",
            }
        )
    return out


def vertical_answers(bench: Path, mirrors_file: Path, repos: set[str]) -> list[dict]:
    """Every trial of the bench's verticals on `repos`, its answer as the pipeline reads it."""
    from mcptrials.importers.sense_verticals import find_bench, import_vertical, verticals
    from mcptrials.matrix.config import load_matrix
    from mcptrials.run.recorded import recorded_file, run_recorded

    bench = find_bench(bench)
    out = []
    with tempfile.TemporaryDirectory(prefix="verified-by-arm-") as tmp:
        for name in verticals(bench):
            if not repos & {p.stem for p in (bench / "verticals" / name / "scenarios").glob("*.yaml")}:
                continue
            import_vertical(bench, name, Path(tmp) / name, mirrors_file=mirrors_file)
            m = load_matrix(Path(tmp) / name / "config.yaml")
            for key in m.cells():
                if key.repo not in repos or not recorded_file(m, key).is_file():
                    continue  # a trial nobody ran (fewer runs in this cell than the most of any)
                entry = m.repos[key.repo]
                if entry.get("unresolved"):
                    raise SystemExit(f"{name}: {key.repo} is unresolved ({entry['unresolved']}): give its mirror")
                checkout = {"url": entry["url"], "commit": entry["commit"]}
                if len(inspect.signature(run_recorded).parameters) == 4:  # it takes the trial's key
                    t, _ = run_recorded(m, key, checkout, None)
                else:  # an mcptrials before that (--before): the key's names, one by one
                    t, _ = run_recorded(m, key.model, key.tool, key.scenario, key.trial, checkout, None, key.host)
                text = "\n\n".join(s.get("answer_text") or "" for s in t["steps"])
                out.append(
                    {
                        "vertical": name,
                        "model": key.model,
                        "arm": key.tool,
                        "repo": key.repo,
                        "trial": key.trial,
                        "mirror": m.repo_source(key.repo),
                        "commit": entry["commit"],
                        "outcome": t["outcome"],
                        "text": text,
                    }
                )
    return out


def grade_rows(answers: list[dict]) -> list[dict]:
    """Each answer's citation counts by the importable grader (mcptrials.grade, or the old
    layout's mcptrials.graders)."""
    try:
        from mcptrials.grade.citations.grading import grade_citations
        from mcptrials.grade.gittree import CommitTree
    except ImportError:
        from mcptrials.graders.citations import grade_citations
        from mcptrials.graders.gittree import CommitTree
    trees: dict = {}
    out = []
    for a in answers:
        tree = trees.get((a["mirror"], a["commit"])) or trees.setdefault(
            (a["mirror"], a["commit"]), CommitTree(a["mirror"], a["commit"])
        )
        c = grade_citations(a["text"], tree)["counts"] if a["text"].strip() else {}
        out.append(
            {
                "model": a["model"],
                "arm": a["arm"],
                "repo": a["repo"],
                "answered": bool(a["text"].strip()),
                **{k: c.get(k, 0) for k in KEYS},
            }
        )
    return out


def share(c, strict: bool) -> float | None:
    v, m = (c["strict_verified"], c["strict_mismatch"]) if strict else (c["verified"], c["mismatch"])
    return v / (v + m) if v + m else None


def cell(c, strict: bool) -> str:
    s = share(c, strict)
    n = c["strict_verified"] + c["strict_mismatch"] if strict else c["verified"] + c["mismatch"]
    return f"{s:.3f} (n={n})" if s is not None else "–"


def pooled(rows: list[dict], pick) -> collections.Counter:
    out = collections.Counter()
    for r in rows:
        if pick(r):
            out.update({x: r[x] for x in KEYS})
            out["answers"] += 1
            out["answered"] += r["answered"]
    return out


def gap(rows: list[dict], models, strict: bool) -> float | None:
    """baseline's share minus sense's, pooled over `models` (None: every model)."""
    a, b = (
        share(pooled(rows, lambda r, arm=arm: r["arm"] == arm and (models is None or r["model"] in models)), strict)
        for arm in ARMS
    )
    return None if a is None or b is None else a - b


def gap_ci(rows: list[dict], models, strict: bool, n: int = 2000, seed: int = 25) -> tuple | None:
    """A 95% percentile bootstrap of gap(): each arm's answers resampled with replacement."""
    import random

    rng = random.Random(seed)
    arms = [[r for r in rows if r["arm"] == arm and (models is None or r["model"] in models)] for arm in ARMS]
    if not all(arms):
        return None
    out = []
    for _ in range(n):
        g = gap([*rng.choices(arms[0], k=len(arms[0])), *rng.choices(arms[1], k=len(arms[1]))], None, strict)
        if g is not None:
            out.append(g)
    out.sort()
    return (out[int(0.025 * len(out))], out[int(0.975 * len(out)) - 1]) if out else None


def _ci(g, ci) -> str:
    return "–" if g is None else f"{g:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "")


def _f(x, signed=True) -> str:
    return "–" if x is None else (f"{x:+.3f}" if signed else f"{x:.3f}")


def tables(after: list[dict], before: list[dict] | None) -> str:
    """Markdown: per arm and per (model, arm) the shares, then the gaps (baseline - sense)."""
    b = before or []
    lines = []
    for name, key in (("arm", lambda r: r["arm"]), ("model, arm", lambda r: (r["model"], r["arm"]))):
        lines += [
            f"| {name} | answers (with an answer) | before: lenient | before: strict | after: lenient | "
            "after: strict |",
            "|---|---|---|---|---|---|",
        ]
        for k in sorted({key(r) for r in after}):
            a = pooled(after, lambda r: key(r) == k)
            p = pooled(b, lambda r: key(r) == k)
            label = k if isinstance(k, str) else " ".join(k)
            lines.append(
                f"| {label} | {a['answers']} ({a['answered']}) | {cell(p, False) if before else '–'} | "
                f"{cell(p, True) if before else '–'} | {cell(a, False)} | {cell(a, True)} |"
            )
        lines.append("")
    lines += [
        "| gap, baseline - sense | before: lenient | before: strict | after: lenient | after: strict | "
        "removed (before lenient - after strict) |",
        "|---|---|---|---|---|---|",
    ]
    models = sorted({r["model"] for r in after})
    groups = [("all models", None)]
    if before:  # the models the before grader has a lenient gap for (it verifies no plain-prose citation)
        known = [m for m in models if gap(b, {m}, False) is not None]
        if len(known) < len(models):
            groups.append((f"the {len(known)} models with a before figure", set(known)))
    for label, group in [*groups, *((m, {m}) for m in models)]:
        bl, bs = (gap(b, group, s) if before else None for s in (False, True))
        al, as_ = gap(after, group, False), gap(after, group, True)
        removed = None if bl is None or as_ is None else bl - as_
        ci_b = gap_ci(b, group, False) if bl is not None else None
        ci_a = gap_ci(after, group, True) if as_ is not None else None
        lines.append(f"| {label} | {_ci(bl, ci_b)} | {_f(bs)} | {_f(al)} | {_ci(as_, ci_a)} | {_f(removed)} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="another checkout's src/ folder: its grader's figures beside")
    ap.add_argument("--verticals", metavar="BENCH_DIR", help="every vertical run on --repos instead of the corpus")
    ap.add_argument("--mirrors", help="with --verticals: the mirrors file (mirrors: {URL: path})")
    ap.add_argument("--repos", default="lobsters,healthchecks", help="with --verticals: the repositories")
    ap.add_argument("--rows", metavar="ANSWERS_JSON", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rows:  # the child: grade the parent's answers with whichever grader PYTHONPATH gives
        json.dump(grade_rows(json.loads(Path(args.rows).read_text())), sys.stdout)
        return 0
    if args.verticals:
        if not args.mirrors:
            ap.error("--verticals needs --mirrors")
        answers = vertical_answers(Path(args.verticals), Path(args.mirrors), set(args.repos.split(",")))
    else:
        answers = corpus_answers()
    after = grade_rows(answers)
    before = None
    if args.before:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(answers, f)
        try:
            env = dict(os.environ, PYTHONPATH=args.before)
            before = json.loads(
                subprocess.run(
                    [sys.executable, __file__, "--rows", f.name], env=env, check=True, capture_output=True, text=True
                ).stdout
            )
        finally:
            os.unlink(f.name)
    n = collections.Counter(a["arm"] for a in answers)
    print(
        f"{len(answers)} answers ({', '.join(f'{k} {v}' for k, v in sorted(n.items()))}) on "
        f"{', '.join(sorted({a['repo'] for a in answers}))}\n"
    )
    print(tables(after, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
