"""Choosing the lines to cite: every known line that holds a term, scored (definitions,
whole identifiers, the question's scope and files, tests ranked down), and the best per term."""

from __future__ import annotations

import re

from mcptrials.providers.reference.question import NEGATED_TESTS, USAGE_INTENT, Term, in_scope, plain_text
from mcptrials.providers.reference.step import StepState, line_text

READS_PER_TERM = 2  # hits read (and cited) per term
USAGE_CITES = 16  # uses cited per term when the prompt asks where something is used: every one found


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    return (
        any(p in ("test", "tests", "testing", "spec") for p in parts[:-1])
        or parts[-1].startswith("test_")
        or re.search(r"(_test|\.test|\.spec)\.\w+$", parts[-1]) is not None
    )


DEF_LINE = re.compile(
    r"^(\s*)(?:export\s+|pub\s+)?(?:async\s+)?(?:def|class|function|func|fn|struct|impl|interface)"
    r"\s+([A-Za-z_][A-Za-z0-9_]*)"
)


def enclosing(lines: dict[int, str], n: int) -> str | None:
    """The dotted name of the definitions around line n (e.g. Loader.load), from the lines
    a read returned above it, by indentation; None when they were not read."""
    target = lines.get(n)
    if target is None:
        return None
    indent = len(target) - len(target.lstrip())
    names = []
    k = n - 1
    while k in lines and indent > 0:
        m = DEF_LINE.match(lines[k])
        if m and len(m.group(1)) < indent:
            names.append(m.group(2))
            indent = len(m.group(1))
        k -= 1
    return ".".join(reversed(names)) or None


def candidates(st: StepState, term: Term, prompt: str) -> list[tuple[int, str, int, str]]:
    """(score, path, line, text) of every line known to hold `term`, best first."""
    found: dict[tuple[str, int], str] = {}
    for h in st.hits:
        if h.line is not None and h.term in (term, None):
            t = line_text(st, h.path, h.line, h.text)
            if t is not None and term.matches(t):
                found[(h.path, h.line)] = t
    # Lines the reads returned count too: a file found by name, or a window, may hold more hits.
    for path in sorted(st.known):
        for n in sorted(st.known[path]):
            if term.matches(st.known[path][n]):
                found[(path, n)] = st.known[path][n]
    wants_tests = re.search(r"\btests?\b", prompt, re.IGNORECASE) is not None
    no_tests = NEGATED_TESTS.search(plain_text(prompt)) is not None  # "nothing in the tests folder"
    scored = []
    for (path, n), t in found.items():
        if not in_scope(path, st.scopes) or (no_tests and _is_test_path(path)):
            continue
        score = {1: 5, 2: 10, 3: 30}[term.matches(t)]
        if term.is_definition(t):
            score += 100
        elif term.kind == "word" and re.search(
            rf"\b(?:def|class|function|func|fn)\s+\w*{re.escape(term.search)}", t, re.IGNORECASE
        ):
            score += 50  # a definition whose name holds the word
        score += 8 * sum(1 for o in st.terms if o != term and o.search != term.qualifier and o.matches(t))
        if term.qualifier:
            file_lines = st.known.get(path, {})
            if term.qualifier in (enclosing(file_lines, n) or "").split("."):
                score += 60
            elif any(term.qualifier in x for x in file_lines.values()):
                score += 20
        if any(path == f or path.endswith("/" + f) for f in st.files):
            score += 40
        if _is_test_path(path) and not wants_tests:
            score -= 15
        if n in st.known.get(path, {}):
            score += 3  # confirmed by a read
        scored.append((score, path, n, t))
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    return scored


def citations(st: StepState, prompt: str) -> list[tuple[Term, list[tuple[int, str, int, str]]]]:
    """The lines to cite per term, best first: the best hit, plus the runner-up when it scores
    at least half as well (or, when the prompt asks where something is used, the definition
    and the best uses). A line is cited once, under the first term that chose it."""
    usage = bool(USAGE_INTENT.search(plain_text(prompt)))
    taken: set[tuple[str, int]] = set()
    out = []
    for term in st.terms:
        cands = [c for c in candidates(st, term, prompt) if (c[1], c[2]) not in taken]
        if usage:
            chosen = [c for c in cands if term.is_definition(c[3])][:1] + [
                c for c in cands if not term.is_definition(c[3])
            ][:USAGE_CITES]
        else:
            chosen = [c for c in cands[:READS_PER_TERM] if c[0] * 2 >= cands[0][0]]
        taken.update((c[1], c[2]) for c in chosen)
        out.append((term, chosen))
    return out
