"""A labelling aid for issue 34 item 8's first-seen sets: every number of an answer that could be a
line reference, with its offsets and context, for the labeller to decide by reading.

It proposes, never decides (the labeller reads each candidate and keeps what a careful reader
would follow to a line), and it shares nothing with the grader (src/mcptrials/grade/), so
the references found do not lean on the extraction being measured. Two kinds:
- `path`: a file path or name with a line (`a/b.go:12`, `b.go:10-20`, `b.go#L12`);
- `number`: any other integer (`at 1597`, `@1596`, `(129)`, `:64`, `, 105`, `"line": 153`),
  with the nearest file named before it, the reader's first guess at the file it means.

Reads answers from a mirror of github:luuuc/sense (MCPTRIALS_SENSE_MIRROR), with the final
answer read as tests/grade/test_citation_corpus.py's `answer_text` reads it; no network.

    python bench/citation_candidates.py SOURCE [--context 60] [--json]
    (SOURCE: a bench path such as bench/verticals/go/results/<model>/<arm>/<repo>/run-1/transcript.json)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "grade"))

from test_citation_corpus import answer_text  # noqa: E402

BENCH_COMMIT = "74576321685c22a1b84571346487aa5c75e3867e"
FILE = r"[\w.@+-]*(?:/[\w.@+-]+)*\.[A-Za-z]{1,5}"
PATH_LINE = re.compile(rf"(?<![\w/])({FILE})(?::(\d+)(?:\s*[-–]\s*(\d+))?|#L(\d+)(?:-L?(\d+))?)")
# A number before a sentence's full stop (`at line 69.`) and a bare `L12` are references too.
NUMBER = re.compile(r"(?<![\w.])\d+(?!\w|\.\d)|(?<=:)\d+|(?<=\bL)\d+")
FILE_NAME = re.compile(rf"(?<![\w/])({FILE})(?![\w])")


def candidates(text: str) -> list[dict]:
    """Every path:line and every other integer of `text`, in order, with offsets."""
    out, taken = [], []
    for m in PATH_LINE.finditer(text):
        out.append({"kind": "path", "span": [m.start(), m.end()], "text": m.group(0), "file": m.group(1)})
        taken.append((m.start(), m.end()))
    for m in NUMBER.finditer(text):
        if any(s <= m.start() < e for s, e in taken):
            continue
        files = [f.group(1) for f in FILE_NAME.finditer(text, 0, m.start()) if "." in f.group(1)]
        out.append(
            {"kind": "number", "span": [m.start(), m.end()], "text": m.group(0), "file": files[-1] if files else None}
        )
    return sorted(out, key=lambda c: c["span"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("--context", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sense = os.environ.get("MCPTRIALS_SENSE_MIRROR", "/work/.mirror/luuuc+sense/repo")
    text = answer_text(sense, BENCH_COMMIT, args.source)
    if text is None:
        print(f"{args.source}: no answer text", file=sys.stderr)
        return 1
    found = candidates(text)
    if args.json:
        print(json.dumps({"sha256": hashlib.sha256(text.encode()).hexdigest(), "candidates": found}))
        return 0
    for c in found:
        s, e = c["span"]
        ctx = text[max(0, s - args.context) : e + args.context].replace("\n", "⏎")
        print(f"{s:6d}-{e:<6d} {c['kind']:6s} {c['text']!r:28s} file? {c['file']}\n        {ctx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
