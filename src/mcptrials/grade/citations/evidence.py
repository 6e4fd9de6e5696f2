"""What else the answer names around a citation, for rule 4 of the positive evidence a strict
`mismatch` needs (docs/grading.md; verify.confirm_mismatch): a name the citation's own clause
writes as code may be what the line is (grader 11: `reads line.variant.stocks and
variant.product: path:140` with line.variant.stocks at 140), while a name the answer attaches to
another citation is that citation's, not a rival of this one (`` `RateLimitError` path:24,
`NotFoundError` path:30 ``: RateLimitError is not what :30 may mean).
"""

from __future__ import annotations

from mcptrials.grade.citations.names import clause_end, clause_start, safe_start, tokens

# Scopes that attach a name to one citation (the name it stands beside), not to a group.
ATTACHING_SCOPES = frozenset(("label", "after", "respectively"))


def clause_names(text: str, lo: int, hi: int, before: int, after: int, is_path) -> list[str]:
    """The code-like names of the clause around text[lo:hi] (the citation), stopping at the
    previous citation's end (before) and the next one's start (after)."""
    while lo > before and text[lo - 1] == "`":  # the citation's own backticks belong to it
        lo -= 1
    while hi < min(after, len(text)) and text[hi] == "`":
        hi += 1
    a = safe_start(text, clause_start(text, lo, before), lo)
    b = clause_end(text, hi, after)
    return [name for _, name, strong, _ in [*tokens(text, a, lo, is_path), *tokens(text, hi, b, is_path)] if strong]


def attached_elsewhere(subjects: list[tuple[tuple[int, int], dict | None]]) -> dict[str, set[tuple[int, int]]]:
    """{name: the spans of the citations it is attached to} (ATTACHING_SCOPES), from each
    occurrence's (span, subject)."""
    out: dict[str, set[tuple[int, int]]] = {}
    for span, subj in subjects:
        if subj and subj["from"] in ATTACHING_SCOPES:
            out.setdefault(subj["name"], set()).add(span)
    return out


NEAR = 300  # characters: a name attached to a citation this close is that citation's


def rivals(identifiers: list[str], attached: dict, span: tuple[int, int]) -> list[str]:
    """The citation's context identifiers that rule 4 checks at the cited line (at its code or a
    definition it lies in): all but those the answer attaches to other citations near it only."""

    def elsewhere(name: str) -> bool:
        spans = attached.get(name, set())
        return bool(spans) and span not in spans and any(abs(s[0] - span[0]) <= NEAR for s in spans)

    return [n for n in identifiers if not elsewhere(n)]


def settle_lists(occurrences: list[tuple[tuple[int, int], dict]]) -> None:
    """Grader 11: one name for a list of lines (`` `Site.get_site_root_paths` `sites.py:90/:218` ``,
    `revisions.py:30,89 (Revision page filtering)`) is about the list: when it is at one of them,
    another line of the list that lacks it is what the description covers there, not a wrong line
    (`undetermined`). `occurrences`: (the list's span, an occurrence with its strict verdict)."""
    found: dict[tuple[int, int], set[str]] = {}
    for span, occ in occurrences:
        if occ["strict"] == "verified" and occ["subject"]:
            found.setdefault(span, set()).add(occ["subject"]["name"])
    for span, occ in occurrences:
        if occ["strict"] == "mismatch" and occ["subject"]["name"] in found.get(span, ()):
            occ["strict"] = "undetermined"
            occ["undetermined"] = f"`{occ['subject']['name']}` is at another line of its list"
