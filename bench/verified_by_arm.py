"""The verified share of line citations per arm (baseline / sense) and model on the reference
bench's vertical runs the citation corpus holds (tests/fixtures/citation_corpus/labels.json:
the answers' sources and the repositories' commits; texts read from the mirrors at run time,
never stored), graded by this checkout's grader and, with --before SRC, by another
checkout's (its src/ folder, e.g. `git archive main src | tar -x -C /tmp/main`).

    python bench/verified_by_arm.py [--before /tmp/main/src]

verified share = verified / (verified + mismatch), pooled over an arm's answers: the lenient
(+/-5 lines) rule, and the strict one where the grader has it. Needs the mirrors of
tests/grade/test_citation_corpus.py (MCPTRIALS_SENSE_MIRROR, MCPTRIALS_MIRRORS).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEYS = ("total", "verified", "mismatch", "strict_verified", "strict_mismatch")


def counts() -> list[dict]:
    """One row per answer: model, arm, repo and its citation counts, by the importable grader."""
    sys.path.insert(0, str(ROOT / "tests"))
    from test_citation_corpus import LABELS, answer_text

    from mcptrials.grade.citations import grade_citations
    from mcptrials.grade.gittree import CommitTree

    labels = json.loads(LABELS.read_text())
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    mirrors = Path(os.environ.get("MCPTRIALS_MIRRORS", "/work/.mirror"))
    trees = {n: CommitTree(str(mirrors / r["fetch"].split(":", 1)[1].replace("/", "+") / "repo"), r["commit"])
             for n, r in labels["repos"].items()}
    out = []
    for a in labels["answers"].values():
        text = answer_text(sense, labels["bench"]["commit"], a["source"])
        model, arm = a["source"].split("/results/")[1].split("/")[:2]
        c = grade_citations(text, trees[a["repo"]])["counts"]
        out.append({"model": model, "arm": arm, "repo": a["repo"], **{k: c.get(k, 0) for k in KEYS}})
    return out


def share(c, strict: bool) -> str:
    v, m = (c["strict_verified"], c["strict_mismatch"]) if strict else (c["verified"], c["mismatch"])
    return f"{v / (v + m):.3f} (n={v + m})" if v + m else "–"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", help="another checkout's src/ folder: its grader's figures beside")
    ap.add_argument("--rows", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rows:
        json.dump(counts(), sys.stdout)
        return 0
    after = counts()
    before = None
    if args.before:
        env = dict(os.environ, PYTHONPATH=args.before)
        before = json.loads(subprocess.run([sys.executable, __file__, "--rows"], env=env, check=True,
                                           capture_output=True, text=True).stdout)
    for name, key in (("arm", lambda r: r["arm"]), ("model, arm", lambda r: f"{r['model']} {r['arm']}")):
        print(f"| {name} | before: lenient | after: lenient | after: strict |\n|---|---|---|---|")
        for k in sorted({key(r) for r in after}):
            a = collections.Counter()
            b = collections.Counter()
            for r in after:
                if key(r) == k:
                    a.update({x: r[x] for x in KEYS})
            for r in before or []:
                if key(r) == k:
                    b.update({x: r[x] for x in KEYS})
            print(f"| {k} | {share(b, False) if before else '–'} | {share(a, False)} | {share(a, True)} |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
