"""Two readers of the same citations: how often a second careful reader agrees with the first on
the blind sets of the citation corpus that a second reader labelled (redmine, saleor, nomad,
langchainrb), the ceiling against which the grader's agreement with the labels is to be read.

First reader: tests/fixtures/citation_corpus/<set>.json.
Second reader: tests/fixtures/citation_corpus/second_reader.json, labelled by the same rules
(tests/grade/test_citation_corpus.py's docstring) blind to the first reader's labels and to
the grader, committed before this script first ran. Occurrences are matched by sha256 + span.

Figures, per set and pooled:
- verdict agreement: share of occurrences both readers give the same verdict;
- class agreement: the grader's classes as `agrees()` maps them (correct / wrong line /
  no such file / ambiguous / no subject), also requiring the same intended file where
  `agrees()` checks the file (correct, wrong line): when the readers agree here, a grader
  verdict that agrees with one agrees with the other;
- Cohen's kappa on verdicts: kappa = (p_o - p_e) / (1 - p_e), p_o the verdict agreement, p_e
  from each reader's own marginal verdict shares (Cohen 1960; mcptrials.stats.agreement.
  cohen_kappa);
- subject agreement (both none, or the same name), for information;
- the grader against each reader (corpus_scores-style: grade_citations on each answer,
  the labelled occurrence's own strict verdict via `occurrence`, compared with `agrees`), and
  on the occurrences both readers put in the same class (their shared label).

Needs the mirrors of tests/grade/test_citation_corpus.py (MCPTRIALS_SENSE_MIRROR,
MCPTRIALS_MIRRORS); answer texts and code are read from them at run time, never stored.

    python bench/reader_agreement.py [--list]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grade"))
sys.path.insert(0, str(ROOT / "src"))

from test_citation_corpus import grader_agrees, graded_answers  # noqa: E402

from mcptrials.stats.agreement import cohen_kappa  # noqa: E402

SETS = ROOT / "tests" / "fixtures" / "citation_corpus"
FILE_CHECKED = ("correct", "wrong line")


def same_class(a: dict, b: dict) -> bool:
    if a["verdict"] != b["verdict"]:
        return False
    return a["verdict"] not in FILE_CHECKED or a["file"] == b["file"]


def compare(pairs: list[tuple[dict, dict]], graded: dict) -> dict:
    n = len(pairs)
    verdict = sum(a["verdict"] == b["verdict"] for a, b in pairs)
    cls = sum(same_class(a, b) for a, b in pairs)
    subject = sum(a.get("subject") == b.get("subject") for a, b in pairs)
    k = cohen_kappa([a["verdict"] for a, _ in pairs], [b["verdict"] for _, b in pairs])
    g1 = [grader_agrees(a, graded) for a, _ in pairs]
    g2 = [grader_agrees(b, graded) for _, b in pairs]
    agreed = [i for i, (a, b) in enumerate(pairs) if same_class(a, b)]
    return {
        "n": n,
        "verdict": verdict / n,
        "verdict_n": verdict,
        "class": cls / n,
        "class_n": cls,
        "subject": subject / n,
        "kappa": k["kappa"],
        "p_e": k["p_e"],
        "grader_first": sum(g1) / n,
        "grader_first_n": sum(g1),
        "grader_second": sum(g2) / n,
        "grader_second_n": sum(g2),
        "agreed_n": len(agreed),
        "grader_agreed": sum(g1[i] for i in agreed) / len(agreed) if agreed else None,
        "grader_agreed_k": sum(g1[i] for i in agreed),
        "g1": g1,
        "g2": g2,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", action="store_true", help="list the occurrences where the readers differ")
    args = ap.parse_args()
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    mirrors = Path(os.environ.get("MCPTRIALS_MIRRORS", "/work/.mirror"))
    second = json.loads((SETS / "second_reader.json").read_text())
    rows, pooled, pooled_graded, diffs = [], [], {}, []
    for name in second["sets"]:
        first = json.loads((SETS / f"{name}.json").read_text())
        by_key = {(lab["sha256"], tuple(lab["span"])): lab for lab in first["labels"]}
        mine = second["sets"][name]
        assert len(mine) == len(by_key), f"{name}: {len(mine)} second labels, {len(by_key)} first"
        pairs = [(by_key[(lab["sha256"], tuple(lab["span"]))], lab) for lab in mine]
        graded = graded_answers(first, sense, mirrors)
        pooled_graded.update(graded)
        s = compare(pairs, graded)
        rows.append((name, s))
        pooled += pairs
        for i, (a, b) in enumerate(pairs):
            if not same_class(a, b) or a.get("subject") != b.get("subject"):
                diffs.append((name, i, a, b, s["g1"][i], s["g2"][i]))
    rows.append(("pooled", compare(pooled, pooled_graded)))
    print(
        f"{'set':8} {'n':>4} {'verdict':>9} {'class':>9} {'kappa':>6} {'p_e':>5} {'subject':>8} "
        f"{'grader~1st':>11} {'grader~2nd':>11} {'agreed':>7} {'grader~agreed':>14}"
    )
    for name, s in rows:
        print(
            f"{name:8} {s['n']:>4} {s['verdict']:>9.3f} {s['class']:>9.3f} {s['kappa']:>6.3f} {s['p_e']:>5.3f} "
            f"{s['subject']:>8.3f} {s['grader_first']:>11.3f} {s['grader_second']:>11.3f} {s['agreed_n']:>7} "
            f"{s['grader_agreed']:>14.3f}"
        )
    print(
        "counts (pooled): verdicts agree {verdict_n}/{n}, classes {class_n}/{n}, grader agrees with the first "
        "{grader_first_n}/{n}, with the second {grader_second_n}/{n}, on the agreed {grader_agreed_k}/{agreed_n}".format(
            **rows[-1][1]
        )
    )
    if args.list:
        print(
            "\noccurrences where the readers differ (class, file or subject): set #index: first | second  "
            "[grader agrees with first/second]"
        )
        for name, i, a, b, g1, g2 in diffs:

            def show(lab):
                return f"{lab['verdict']} file={lab['file']} subject={lab.get('subject')}"

            print(f"{name} #{i}: {show(a)} | {show(b)}  [{'y' if g1 else 'n'}/{'y' if g2 else 'n'}]")


if __name__ == "__main__":
    main()
