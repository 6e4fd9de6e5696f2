"""What the two CI gates (`mcptrials compare`, `mcptrials replay`) write: the console, a
pull-request comment (--markdown) and a JUnit file (--junit), the same way for both."""

from __future__ import annotations

import sys
from pathlib import Path


def write_outputs(args, markdown_text: str, junit_text: str) -> None:
    """The --markdown and --junit files, where asked for."""
    if args.markdown:
        Path(args.markdown).write_text(markdown_text)
    if args.junit:
        Path(args.junit).write_text(junit_text)


def refuse(command: str, heading: str, reasons: list[str], args, markdown_text: str, junit_text: str) -> int:
    """A gate that could not decide: every reason on stderr and in both files; exit 2."""
    print(f"mcptrials {command}: {heading}:", file=sys.stderr)
    for r in reasons:
        print(f"  - {r}", file=sys.stderr)
    write_outputs(args, markdown_text, junit_text)
    return 2
