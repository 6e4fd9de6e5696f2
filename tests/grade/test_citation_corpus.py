"""Issue 25: the grader against hand labels of real answers (the reference bench's vertical
runs, never its bench/results/, our validation set).

The corpus (tests/fixtures/citation_corpus/labels.json) holds only what we wrote: for each
labelled citation the answer's sha256 and source path in the bench, the character offsets
of the citation, the intended file and lines, the subject, and a verdict. The answers and
the repositories' code are read from mirrors at run time:

    MCPTRIALS_SENSE_MIRROR   a clone or bare mirror of github:luuuc/sense (at the commit in labels.json)
    MCPTRIALS_MIRRORS        a folder holding <owner>+<name>/repo mirrors of healthchecks/healthchecks
                             and lobsters/lobsters, and of the other sets' repositories below
                             (netbox-community/netbox, wagtail/wagtail, crmne/ruby_llm,
                             redmine/redmine, saleor/saleor, solidusio/solidus, dolthub/dolt,
                             hashicorp/nomad, patterns-ai-core/langchainrb, llmrb/llm.rb)
                             (default /work/.mirror)

Labelling rules (so another person labels the same way):
- The sample: 10 line citations per answer drawn at random (seed 25) from the 38 Claude Code,
  Codex and Opencode answers on healthchecks (fb4bf16) and lobsters (6e98af0) (the first 376
  labels); a citation is the grader's occurrence at those offsets, the label is about what
  the answer meant there. The random sample holds only 2 wrong lines, too few to measure
  anything, so 35 more labels (those with `found_by`) come from a search of the same answers
  for likely wrong lines, each read by hand: lines past the end of the file, citations of a
  blank, `end` or comment line, citations both rules call mismatch, and names defined
  elsewhere in the cited file. The search leans on the grader, so the mismatch share of
  wrong lines is measured on citations the grader already suspected: read it as an upper
  bound; the random part's figures are printed apart.
- Intended file: the file the sentence means, read as a maintainer would (a line-only `:64`
  after "`Transport.notify` signature" means hc/api/transports.py even when another file is
  named closer).
- Subject: the identifier the sentence says is at the line (the parenthetical or name right
  after, else the name right before, else the JSON object's own name field, else the list
  item's head). A citation whose text names nothing checkable (a list of lines under a file,
  "story link contract") is labelled `no subject`. Conventions the labellers of the blind sets
  settled on, written down before the third set was drawn (so later labels follow them):
  "right after" is straight after the citation (past a colon, a dash or a word such as
  `defines`, `class`, `the`), or inside the parenthetical right after it; a name further
  into a description after it (`path:29 - Sitemap uses site.root_page ...`) is what the
  description talks about, not the subject. "Right before" is the name the citation is
  attached to, or a code-like name earlier in its clause. A capitalised plain word (a
  heading such as `Permissions:`, `File:`) is a subject only when it is an identifier of the
  code. In JSON: the object's own name/symbol/function/class field; the member's key when it
  is an identifier of the cited file; a sibling description member only when its text starts
  with the name; never a locator key (`file`, `refs`), a group key (`subsystem`) or, for an
  item of an array of refs, anything of its object. Three or more lines listed under one
  description have no subject; names and lines listed in the same order pair up. (One of
  these, "a sibling description member only when its text starts with the name", is neither
  what the first sets' labels do nor what the grader does: both take a code-like name
  anywhere in such a member. It decides one blind label, saleor's #36, a disagreement.)
- Verdict: `correct` when the intended file's cited line lies inside the subject's definition
  (its header included: the blank, comment, doc-comment, decorator, annotation or attribute
  lines directly above it up to the previous code line, issue 34 item 2; six older labels of
  such lines, labels.json #383 and #384, wagtail #22, ruby_llm #51, langchainrb #56 and llm_rb
  #7, were `wrong line` and are `correct` now, each marked `relabelled`)
  or the line itself is what the sentence describes (a call site named "calls X at N" is
  correct when line N makes that call); `wrong line` when the file is right but the line is
  not (including a line past the end of the file); `no such file` when no file of the commit
  is meant by the path; `ambiguous` when the answer writes a basename several files share
  and nothing in the answer says which (a subject found at the line in only one of them,
  or a line past the end of all but one, says which).
- Agreement, per labelled occurrence (its own subject's strict verdict, `by_occurrence`):
  correct <-> strict `verified`; wrong line <-> strict `mismatch` or bucket
  hallucinated; no such file <-> unresolved no_such_file; ambiguous <-> unresolved
  (basename or ambiguous); no subject <-> strict `n/a`. A correct label also needs the
  grader's resolved file to be the intended one.

Ten more sets, one per repository the corpus does not cover, each of up to 3 line citations
per answer drawn with one random.Random (answers in sorted source order, each answer's
occurrences sorted by span) from that repository's answers in the same bench, labelled by the
rules above by someone who had not read a grader verdict on them (given the spans and their
context only), and committed before the grader graded them (each file's `about` says how; a
`note` says how a case the rules do not settle was decided). Each was blind once, when it was
first graded; all but the last then served to develop the grader:

    set          seed  labels  language  blind figure (grader then)       role now
    netbox        26     60    Python    0.833 (6, round 1)               development
    wagtail       27     64    Python    0.797 (6, round 2)               development
    ruby_llm      28     57    Ruby      0.737 (6, round 2)               development
    redmine       29     51    Ruby      0.902 (6, round 3)               development
    saleor        30     54    Python    0.889 (6, round 3)               development
    solidus       31     54    Ruby      0.815 (6, round 3)               development
    dolt          32     39    Go        0.744 (6, round 3)               development
    nomad         33     42    Go        0.833 (6, round 4)               development
    langchainrb   34     60    Ruby      0.683 (6, round 4)               development
    llm_rb        35     60    Ruby      0.867 (6, final: round 5)        blind

(grader 5, before this work, on the first five: 0.850, 0.750, 0.649, 0.804, 0.907.) The
blind figures are the honest measure of how the grader generalises to answers it was not
tuned on. Pooled over the five sets first graded by rounds 3 to 5 (solidus to llm_rb, 255
labels), the grader of the time agreed with the reader on 201 (0.788); the grader as it was
before rounds 4 and 5 (commit d1e30a2) agrees on the same 201: the later rules raised the
development sets' figures (ruby_llm 0.807 -> 0.895, redmine 0.902 -> 0.980, dolt 0.744 ->
0.872) but not the first-seen ones. Read a strict figure on a repository the grader has not
seen as about 0.8 agreement with a careful reader, against the corpus's 0.97. Never change the
grader or the labels of a blind set to make them agree; a set used to develop the grader is
no longer blind and is listed as development here. Floors guard against regressions and are
not targets. A second reader labelled four sets again (redmine, saleor, nomad, langchainrb:
207 occurrences), blind to the first reader and the grader (second_reader.json;
bench/reader_agreement.py): the readers agree on 202 (0.976, kappa 0.952), the ceiling the
grader's figures are read against; on langchainrb, where the grader agrees with the first
reader on 0.683 when first graded, the readers agree on 0.983.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import CommitTree

LABELS = Path(__file__).parents[1] / "fixtures" / "citation_corpus" / "labels.json"
SETS = Path(__file__).parents[1] / "fixtures" / "citation_corpus"
HOW = (
    "set MCPTRIALS_SENSE_MIRROR to a mirror of github:luuuc/sense and MCPTRIALS_MIRRORS to a folder "
    "with <owner>+<name>/repo mirrors of the repositories the labels file's `repos` fetch "
    "(the `fetch` tool or `git clone --mirror`)"
)


def answer_text(sense: str, commit: str, source: str) -> str | None:
    """The final answer of a recorded stream: the last result event's text, else the last assistant text."""
    raw = subprocess.run(["git", "-C", sense, "show", f"{commit}:{source}"], capture_output=True, text=True).stdout
    events = []
    for line in raw.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    result = [e["result"] for e in events if isinstance(e, dict) and e.get("type") == "result" and e.get("result")]
    if result:
        return result[-1]
    texts = [
        "".join(p.get("text", "") for p in e["message"].get("content", []) if p.get("type") == "text")
        for e in events
        if isinstance(e, dict) and e.get("type") == "assistant"
    ]
    texts = [t for t in texts if t.strip()]
    return texts[-1] if texts else None


def occurrence(item: dict | None, start: int) -> dict | None:
    """The labelled occurrence of a graded citation: its own subject and strict verdict."""
    if item is None:
        return None
    return next((o for o in item["by_occurrence"] if o["span"][0] <= start < o["span"][1]), None)


def agrees(label: dict, item: dict | None) -> bool:
    """Whether the grader's verdict on the labelled occurrence is the label's (mapping in the
    module docstring); `item` carries the occurrence's own strict verdict as `strict`."""
    if item is None:
        return False
    v = label["verdict"]
    if v == "correct":
        return item["strict"] == "verified" and item["resolved_path"] == label["file"]
    if v == "wrong line":
        return (item["strict"] == "mismatch" or item["bucket"] == "hallucinated") and item["resolved_path"] == label[
            "file"
        ]
    if v == "no such file":
        return item["ungrounded"] == "no_such_file"
    if v == "ambiguous":
        return item["ungrounded"] in ("basename", "ambiguous")
    return item["strict"] == "n/a"


def mirror(mirrors: Path, repo: dict) -> Path:
    """Where a labels file's repository (its `fetch`, github:owner/name) is mirrored."""
    return mirrors / repo["fetch"].split(":", 1)[1].replace("/", "+") / "repo"


def mirrors_or_skip(labels: dict) -> tuple[str, Path]:
    """The bench mirror and the mirrors folder, skipping the test when a mirror the labels file needs
    (the bench's, or one of its own `repos`) is missing."""
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    mirrors = Path(os.environ.get("MCPTRIALS_MIRRORS", "/work/.mirror"))
    missing = [p for p in [Path(sense)] + [mirror(mirrors, r) for r in labels["repos"].values()] if not p.exists()]
    if missing:
        pytest.skip(f"the corpus needs its mirrors ({', '.join(map(str, missing))} missing): {HOW}")
    return sense, mirrors


def graded_answers(labels: dict, sense: str, mirrors: Path) -> dict:
    """{answer sha256: the grader's items} for a labels file's answers (each checked against its sha256)."""
    trees = {name: CommitTree(str(mirror(mirrors, r)), r["commit"]) for name, r in labels["repos"].items()}
    graded = {}
    for sha, a in labels["answers"].items():
        text = answer_text(sense, labels["bench"]["commit"], a["source"])
        assert text is not None and hashlib.sha256(text.encode()).hexdigest() == sha, a["source"]
        graded[sha] = grade_citations(text, trees[a["repo"]])["items"]
    return graded


def grader_agrees(label: dict, graded: dict) -> bool:
    """Whether the grader's verdict on a label's occurrence is the label's (agrees)."""
    start = label["span"][0]
    item = next((c for c in graded[label["sha256"]] if any(s <= start < e for s, e in c["spans"])), None)
    occ = occurrence(item, start)
    return agrees(label, dict(item, strict=occ["strict"]) if occ else item)


def corpus_scores(labels: dict, sense: str, mirrors: Path) -> dict:
    """agreement = labels the grader agrees with / labels; verified share = correct labels graded
    verified / correct labels; mismatch share = wrong-line labels graded mismatch (or past EOF) /
    wrong-line labels."""
    graded = graded_answers(labels, sense, mirrors)
    n = agree = correct = correct_ok = wrong = wrong_ok = 0
    random_n = random_ok = 0
    for lab in labels["labels"]:
        ok = grader_agrees(lab, graded)
        n += 1
        agree += ok
        if "found_by" not in lab:
            random_n += 1
            random_ok += ok
        if lab["verdict"] == "correct":
            correct += 1
            correct_ok += ok
        if lab["verdict"] == "wrong line":
            wrong += 1
            wrong_ok += ok
    return {
        "n": n,
        "agreement": agree / n,
        "verified_of_correct": correct_ok / correct,
        "mismatch_of_wrong": wrong_ok / wrong if wrong else None,
        "correct": correct,
        "wrong": wrong,
        "random_agreement": random_ok / random_n,
        "random_n": random_n,
    }


# Issue 25's targets, and the figures this grader reached on the corpus (a floor: a change
# that grades the corpus worse fails). The floors sit below the targets where the grader
# does not reach them yet; raise them when it does, never lower them to pass.
TARGETS = {"agreement": 0.95, "verified_of_correct": 0.80, "mismatch_of_wrong": 0.80}
# Grader 8 (issue 34 item 1) lowered two floors on purpose, not silently: a wrong line without
# positive evidence (subject from a sentence, list item or another JSON member's text; a name
# the file never writes; another name of the clause at the line) is now `undetermined`, which
# this mapping counts as a disagreement. Was 0.97 / 0.99 (grader 7: 0.973, 31/31).
# Grader 11: mismatch_of_wrong 21/29 = 0.724 (grader 10: 20/29 = 0.690), agreement 0.956.
FLOORS = {"agreement": 0.95, "verified_of_correct": 0.97, "mismatch_of_wrong": 0.71}


def test_grader_agrees_with_the_hand_labels():
    labels = json.loads(LABELS.read_text())
    sense, mirrors = mirrors_or_skip(labels)
    s = corpus_scores(labels, sense, mirrors)
    print(f"\ncitation corpus: {s['n']} labels ({s['correct']} correct, {s['wrong']} wrong line)")
    for k in TARGETS:
        print(f"  {k}: {s[k]:.3f} (floor {FLOORS[k]}, issue 25 target {TARGETS[k]})")
    print(f"  agreement on the {s['random_n']} randomly drawn labels alone: {s['random_agreement']:.3f}")
    assert s["wrong"] >= 29, "the corpus needs wrong-line labels for the mismatch share to mean something"
    for k in TARGETS:
        assert s[k] >= FLOORS[k], f"{k} {s[k]:.3f} fell below its floor {FLOORS[k]}"


# The other sets (module docstring): name -> (role, agreement floor, just below this grader's figure).
OTHER_SETS = {
    "netbox": ("development", 0.95),  # grader 7: 0.96 (undetermined wrong lines, issue 34)
    "wagtail": ("development", 0.89),
    "ruby_llm": ("development", 0.90),  # grader 11: 0.912
    "redmine": ("development", 0.94),  # grader 7: 0.98 (undetermined wrong lines, issue 34)
    "saleor": ("development", 0.91),  # grader 7: 0.92 (undetermined wrong lines, issue 34); grader 13: 0.926
    "solidus": ("development", 0.90),  # grader 11: 0.907; grader 12 the same
    "dolt": ("development", 0.91),  # grader 7: 0.87 (undetermined wrong lines); grader 10: 0.846; 11: 0.872; 13: 0.923
    "nomad": ("development", 0.85),  # grader 7: 0.88 (undetermined wrong lines, issue 34)
    "langchainrb": ("development", 0.79),  # grader 10: 0.800 (grader 9: 0.767)
    "llm_rb": (
        "blind",
        0.86,
    ),  # grader 7: 0.86 (undetermined wrong lines, issue 34); grader 10: 0.850; 11 and 12: 0.867
}


@pytest.mark.parametrize("name", sorted(OTHER_SETS))
def test_grader_agrees_with_the_labels_of_an_unseen_repository(name):
    role, floor = OTHER_SETS[name]
    labels = json.loads((SETS / f"{name}.json").read_text())
    sense, mirrors = mirrors_or_skip(labels)
    s = corpus_scores(labels, sense, mirrors)
    mow = "–" if s["mismatch_of_wrong"] is None else f"{s['mismatch_of_wrong']:.3f}"
    print(
        f"\n{name} ({role}): {s['n']} labels ({s['correct']} correct, {s['wrong']} wrong line): "
        f"agreement {s['agreement']:.3f} (floor {floor}), verified_of_correct {s['verified_of_correct']:.3f}, "
        f"mismatch_of_wrong {mow}"
    )
    assert s["agreement"] >= floor, f"{name}: agreement {s['agreement']:.3f} fell below its floor {floor}"
