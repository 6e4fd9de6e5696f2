"""No stale module paths: what users and readers see (the code's comments and messages, the
schemas' descriptions, the manual, the packaging, the workflow) names the modules where they
are now, not where they were before a move (graders/ became grade/; run/providers/ became
providers/; run/worker.py and run/delegate.py went to cli/; grade/patterns.py to analyze/).

bench/ is left out on purpose: its scripts read old commits, whose layout they name."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHERE = ("src", "docs", "workflow", "README.md", "pyproject.toml", "Snakefile")
TEXT = {".py", ".md", ".yaml", ".yml", ".toml", ".smk", ".txt", ".cfg", ".html", ".js", ".css", ""}

# the old path (as a file path or a dotted module name) -> where it is now
STALE = {
    r"\bgraders/": "grade/",
    r"\bmcptrials\.graders\b": "mcptrials.grade",
    r"\brun/providers\b": "providers/",
    r"\bmcptrials\.run\.providers\b": "mcptrials.providers",
    r"\brun/(worker|delegate)\.py\b": "cli/worker.py, cli/delegate.py",
    r"\bmcptrials\.run\.(worker|delegate)\b": "mcptrials.cli.worker, mcptrials.cli.delegate",
    r"\bgrade/patterns\.py\b": "analyze/patterns.py",
    r"\bmcptrials\.grade\.patterns\b": "mcptrials.analyze.patterns",
}


def stale_lines(text: str) -> list[tuple[int, str, str]]:
    """(line number, the stale name, where it is now) of every stale name in a text."""
    return [
        (i, m.group(0), now)
        for i, line in enumerate(text.splitlines(), 1)
        for old, now in STALE.items()
        for m in re.finditer(old, line)
    ]


def files():
    for name in WHERE:
        p = ROOT / name
        if p.is_file():
            yield p
        elif p.is_dir():
            # what the project writes, not what a build leaves (the egg-info's SOURCES.txt of an old install)
            yield from (
                f
                for f in sorted(p.rglob("*"))
                if f.is_file()
                and f.suffix in TEXT
                and "__pycache__" not in f.parts
                and not any(x.endswith(".egg-info") for x in f.parts)
            )


def test_the_finder_sees_a_stale_path():
    text = (
        "score it (graders/gold_recall.py)\nfrom mcptrials.graders.citations import x\n"
        "see grade/gold_recall.py and mcptrials.run.providers.base\n"
    )
    assert [(i, old) for i, old, _ in stale_lines(text)] == [
        (1, "graders/"),
        (2, "mcptrials.graders"),
        (3, "mcptrials.run.providers"),
    ]
    assert stale_lines("the graders (grade/scoring.py), mcptrials.providers, cli/worker.py") == []


def test_no_stale_module_path_is_left():
    found = [
        f"{f.relative_to(ROOT)}:{i}: {old} (now {now})"
        for f in files()
        for i, old, now in stale_lines(f.read_text(errors="replace"))
    ]
    assert not found, "stale module paths:\n" + "\n".join(found)
