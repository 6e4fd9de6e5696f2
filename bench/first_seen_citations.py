"""Issue 34 item 8: the citation grader on first-seen label sets whose references a reader found.

Unlike the older sets (whose occurrences the grader proposed), each set read here lists the
references a careful reader would follow to a line, found by the labeller, so the grader's
extraction can be measured too. A label is the older sets' label (tests/grade/
test_citation_corpus.py's docstring: sha256, span, file, lines, subject, verdict, note) plus
`form` ("line-only" for a bare line after a file named earlier, as `at 1597`, `(:64)`,
`"line": 153`; else "path").

Figures, per set and pooled (labels are matched to the grader's occurrences by their spans):
- extraction recall: share of labels with a grader occurrence of a line citation (an item
  whose lines are not null) overlapping the label's span; also for line-only labels apart;
- agreement: test_citation_corpus's `agrees` on that occurrence (its own strict verdict), a
  label the grader did not extract counting as a disagreement; also within each label verdict
  (a `correct` label agrees only with `verified`, so an `undetermined` one does not agree);
- mismatch precision: of the labels whose occurrence the grader calls strict `mismatch`, the
  share labelled `wrong line`;
- wrong lines caught: of the `wrong line` labels, the share the grader calls strict `mismatch`
  (or past the end of the file, bucket `hallucinated`) in the intended file (as `agrees`);
- agreement, mismatch precision and wrong lines caught each with its 95% interval, clustered by
  answer (`with_interval`);
- correct called mismatch, per arm: of the `correct` labels of the arm's answers (the arm is
  the bench path's results/<model>/<arm>/), the share the grader calls strict `mismatch`.

Needs the mirrors of tests/grade/test_citation_corpus.py (MCPTRIALS_SENSE_MIRROR,
MCPTRIALS_MIRRORS) and no network; answer texts and code are read from them at run time.

    python bench/first_seen_citations.py [SET ...]    (default: later4_go_ruby, later4_python, the
    sets no grader was built on, first graded by grader 14; docs/grading.md)
"""

from __future__ import annotations

import argparse
from collections import Counter
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grade"))
sys.path.insert(0, str(ROOT / "src"))

from test_citation_corpus import agrees, graded_answers, mirror  # noqa: E402
from mcptrials.stats.intervals import bounded_mean_ci  # noqa: E402

SETS = ROOT / "tests" / "fixtures" / "citation_corpus"
DEFAULT = ("later4_go_ruby", "later4_python")


def arm_of(source: str) -> str:
    """The arm of a bench answer: results/<model>/[<set-aside folder>/]<arm>/<repo>/run-N/...
    (the folder two above run-N, so a folder the bench's author set aside, `_partial-...`, is skipped)."""
    parts = source.split("/")
    run = next(i for i, p in enumerate(parts) if p.startswith("run-"))
    return parts[run - 2]


def found(label: dict, items: list[dict]) -> tuple[dict | None, dict | None]:
    """The grader's line-citation item and occurrence overlapping the label's span (the first by span)."""
    s0, e0 = label["span"]
    for item in sorted((c for c in items if c["lines"] is not None), key=lambda c: c["spans"][0]):
        for occ in item["by_occurrence"]:
            s, e = occ["span"]
            if s < e0 and s0 < e:
                return item, occ
    return None, None


def judge(labels: dict, graded: dict) -> list[dict]:
    """One row per label: its arm, form, verdict, whether extracted, the strict verdict, agreement."""
    rows = []
    for lab in labels["labels"]:
        item, occ = found(lab, graded[lab["sha256"]])
        strict = occ["strict"] if occ else None
        ok = item is not None and agrees(lab, dict(item, strict=strict))
        rows.append(
            {
                "answer": lab["sha256"],
                "arm": arm_of(labels["answers"][lab["sha256"]]["source"]),
                "form": lab.get("form", "path"),
                "verdict": lab["verdict"],
                "found": item is not None,
                "strict": strict,
                "agrees": ok,
            }
        )
    return rows


def share(num: int, den: int) -> str:
    return f"{num}/{den} = {num / den:.3f}" if den else "-"


def with_interval(rows: list[dict], hit) -> str:
    """The share of `rows` for which `hit` holds and its 95% interval, clustered by answer (a set
    labels two or three references of each answer, and an answer's references are not independent):
    stats.intervals.bounded_mean_ci, the logit-transformed t interval with a clustered standard error."""
    if not rows:
        return "-"
    hits = [bool(hit(r)) for r in rows]
    ci = bounded_mean_ci([float(h) for h in hits], [r["answer"] for r in rows])
    bounds = "" if ci["lo"] is None else f" [{ci['lo']:.3f}, {ci['hi']:.3f}]"
    return share(sum(hits), len(hits)) + bounds


def figures(rows: list[dict]) -> dict[str, str]:
    """The table's figures for a set's rows (module docstring)."""
    line_only = [r for r in rows if r["form"] == "line-only"]
    called = [r for r in rows if r["strict"] == "mismatch"]
    wrong = [r for r in rows if r["verdict"] == "wrong line"]
    out = {
        "labels": str(len(rows)),
        "extraction recall": share(sum(r["found"] for r in rows), len(rows)),
        "  line-only": share(sum(r["found"] for r in line_only), len(line_only)),
        # each of these with its 95% interval, clustered by answer
        "agreement": with_interval(rows, lambda r: r["agrees"]),
        "mismatch precision": with_interval(called, lambda r: r["verdict"] == "wrong line"),
        "wrong lines caught": with_interval(wrong, lambda r: r["agrees"]),
        "strict undetermined": share(sum(r["strict"] == "undetermined" for r in rows), len(rows)),
    }
    correct = [r for r in rows if r["verdict"] == "correct"]
    said = Counter("not extracted" if not r["found"] else (r["strict"] or "none") for r in correct)
    out["strict on 'correct' labels"] = ", ".join(f"{n} {v}" for v, n in sorted(said.items(), key=lambda x: -x[1]))
    # where the disagreements are: agreement within each label verdict present
    for verdict in sorted({r["verdict"] for r in rows}):
        mine = [r for r in rows if r["verdict"] == verdict]
        out[f"  agreement on '{verdict}'"] = share(sum(r["agrees"] for r in mine), len(mine))
    for arm in sorted({r["arm"] for r in rows}):
        mine = [r for r in rows if r["arm"] == arm]
        out[f"agreement, {arm}"] = share(sum(r["agrees"] for r in mine), len(mine))
        correct = [r for r in rows if r["arm"] == arm and r["verdict"] == "correct"]
        out[f"correct called mismatch, {arm}"] = share(sum(r["strict"] == "mismatch" for r in correct), len(correct))
    return out


def missing_mirrors(labels: dict, sense: str, mirrors: Path) -> list[str]:
    paths = [Path(sense)] + [mirror(mirrors, r) for r in labels["repos"].values()]
    return [str(p) for p in paths if not p.exists()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sets", nargs="*", default=list(DEFAULT))
    args = ap.parse_args()
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    mirrors = Path(os.environ.get("MCPTRIALS_MIRRORS", "/work/.mirror"))
    table: dict[str, dict[str, str]] = {}
    pooled: list[dict] = []
    for name in args.sets:
        labels = json.loads((SETS / f"{name}.json").read_text())
        missing = missing_mirrors(labels, sense, mirrors)
        if missing:
            print(f"{name}: skipped, mirrors missing: {', '.join(missing)}", file=sys.stderr)
            continue
        rows = judge(labels, graded_answers(labels, sense, mirrors))
        table[name] = figures(rows)
        pooled += rows
    if len(table) > 1:
        table["pooled"] = figures(pooled)
    print_table(table)
    return 0 if table else 1


def print_table(table: dict[str, dict[str, str]]) -> None:
    keys = list(dict.fromkeys(k for col in table.values() for k in col))
    width = max((len(k) for k in keys), default=0)
    print(f"| {'figure'.ljust(width)} | " + " | ".join(table) + " |")
    print(f"|{'-' * (width + 2)}|" + "|".join("---" for _ in table) + "|")
    for k in keys:
        print(f"| {k.ljust(width)} | " + " | ".join(col.get(k, "-") for col in table.values()) + " |")


if __name__ == "__main__":
    sys.exit(main())
