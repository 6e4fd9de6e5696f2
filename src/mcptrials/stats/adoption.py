"""A trial's adoption score: how well the agent used the tool (reported, never part of fairness).
Source: the reference bench (luuuc/sense bench/), see shared/notes/field.md; issue 6 item 2.
"""

from __future__ import annotations

ADOPTION_WEIGHTS = {"fluency": 0.60, "discoverability": 0.40}


def adoption(fluency, discoverability, weights: dict | None = None) -> float | None:
    """Adoption score: how well the agent used the tool; reported, never part of fairness.

    adoption = 0.60 * tool_fluency + 0.40 * discoverability (weights overridable, keys fluency
    and discoverability). None when fluency is None (no tool to use, e.g. the baseline);
    a None discoverability counts as 0.
    Source: the reference bench (luuuc/sense bench/), see shared/notes/field.md; issue 6 item 2.
    """
    if fluency is None:
        return None
    w = dict(ADOPTION_WEIGHTS)
    if weights:
        unknown = set(weights) - set(w)
        if unknown:
            raise ValueError(f"weights: unknown key(s) {sorted(unknown)}; use {sorted(w)}")
        w.update(weights)
    return w["fluency"] * fluency + w["discoverability"] * (discoverability or 0.0)
