"""The reference judge (config `judge.provider: reference`): offline and deterministic; a
criterion's score is the share of its checkable items the answer has (key points present,
plus gold citations cited when the criterion has `citations: true`). See
`reference_criterion` for the exact rule.
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """
a an the and or but nor not no yes of to in on at by for with from into onto over under as is are was
were be been being am do does did doing has have had having it its this that these those there here
then than so such very can could will would shall should may might must which who whom whose what when
where why how all any both each few more most other some own same too only just also about above
below after before between through during again further once out off up down we you they he she them
his her our your their my me us i if while because until via per
""".split()
)

_WORD_RE = re.compile(r"[a-z0-9_]+")


def content_words(text: str) -> set[str]:
    """Lower-cased words (runs of letters, digits, `_`) that carry content: at least 3
    characters and not a stopword, or any word with a digit in it (numbers matter)."""
    words = _WORD_RE.findall(text.lower())
    return {w for w in words if (len(w) >= 3 and w not in STOPWORDS) or any(ch.isdigit() for ch in w)}


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def key_point_present(key_point: str, answer: str) -> bool:
    """A key point is present when every one of its content words occurs as a word in the
    answer (case-insensitive, order and inflection-free: `commit` does not match `commits`).
    A key point with no content words is present when its whitespace-normalised text occurs
    in the answer's."""
    need = content_words(key_point)
    if not need:
        return _normalise(key_point) in _normalise(answer)
    return need <= set(_WORD_RE.findall(answer.lower()))


def _same_path(a: str, b: str) -> bool:
    """Equal, or one ends with the other on a `/` boundary (src/app.py ~ app.py)."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def gold_cited(gold: str, answer: str) -> bool:
    """Whether the answer cites a gold location, without the repository (the graders'
    citation parser, mcptrials.grade.citations.extract.extract_citations, finds the citations).
    path:N or path:N-M: the answer cites the same path (or one ending with it, or it with
    that ending) at a line or range at most RECALL_WINDOW (5) lines from [N, M].
    path:Symbol: the answer cites that path and names every part of the symbol as a word."""
    from mcptrials.grade.citations.extract import extract_citations
    from mcptrials.grade.citations.grading import RECALL_WINDOW

    parsed = extract_citations(gold)
    if not parsed:
        return False
    g = parsed[0]
    same = [c for c in extract_citations(answer) if _same_path(c["path"], g["path"])]
    if g["lines"] is not None:
        lo, hi = min(g["lines"]), max(g["lines"])
        return any(
            c["lines"] is not None and max(0, min(c["lines"]) - hi, lo - max(c["lines"])) <= RECALL_WINDOW for c in same
        )
    parts = re.split(r"\.|::|#", g["symbol"])
    return bool(same) and all(
        re.search(r"(?<![A-Za-z0-9_])" + re.escape(p) + r"(?![A-Za-z0-9_])", answer) for p in parts
    )


def criterion_key_points(criterion: dict, step: dict) -> list[str]:
    """The key points a criterion covers: its own list, else all the step's key points."""
    own = criterion.get("key_points")
    return list(own) if own is not None else list(step.get("key_points") or [])


def step_gold(step: dict) -> list[str]:
    return list((step.get("citations") or {}).get("gold") or [])


def reference_criterion(answer: str, criterion: dict, step: dict) -> tuple[float, str]:
    """Reference score of one criterion: the pooled share of its items the answer has,
        s = (key points present + gold citations cited) / (key points + gold citations),
    where gold citations count only when the criterion has `citations: true`. With no items
    to check, a non-empty answer scores 1.0 (nothing required is missing); an empty one 0."""
    kps = criterion_key_points(criterion, step)
    gold = step_gold(step) if criterion.get("citations") else []
    kp_hit = [k for k in kps if key_point_present(k, answer)]
    gold_hit = [g for g in gold if gold_cited(g, answer)]
    n = len(kps) + len(gold)
    if n == 0:
        score = 1.0 if answer.strip() else 0.0
        return score, "no key points or gold citations to check: full marks for a non-empty answer"
    score = (len(kp_hit) + len(gold_hit)) / n
    parts = []
    if kps:
        missing = [k for k in kps if k not in kp_hit]
        parts.append(f"key points {len(kp_hit)}/{len(kps)}" + (f" (missing: {'; '.join(missing)})" if missing else ""))
    if gold:
        missing = [g for g in gold if g not in gold_hit]
        parts.append(
            f"gold citations {len(gold_hit)}/{len(gold)}" + (f" (missing: {', '.join(missing)})" if missing else "")
        )
    return score, "; ".join(parts)
