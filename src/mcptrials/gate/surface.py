"""What a replay says is wrong with a server's surface (issue 37 item 5), per tool, each with the
BASE trials that show it; no model needed:

- result over the host's limit: HEAD's result of a call longer than `limits.max_result_tokens`
  (the cap the trial ran under; Claude Code's 25,000 tokens by default);
- invalid structured content: the mcp client refused HEAD's `structuredContent` against the
  tool's `outputSchema` (analyze.patterns.STRUCTURED_RE);
- never called: a tool HEAD's tools/list offers that no replayed BASE trial called;
- confused tools: a call right after a call to another tool with the same arguments, the two
  tools' descriptions near-duplicates (analyze.patterns.confusable_pairs, over HEAD's list).
"""

from __future__ import annotations

from mcptrials.analyze.patterns import STRUCTURED_RE, confusable_pairs

OVER_CAP, INVALID_STRUCTURED, NEVER_CALLED, CONFUSED = (
    "result over the host's limit",
    "invalid structured content",
    "never called",
    "confused tools",
)


def surface_findings(items: list) -> list[dict]:
    """[{kind, tool, trials, detail}] for one tool's replays (items: [(BASE trials, replay)])."""
    out: list[dict] = []
    listed: dict[str, dict] = {}
    called: set[str] = set()
    for _, rep in items:
        for t in rep.get("tools") or []:
            listed.setdefault(t["name"], t)
    pairs = confusable_pairs(list(listed.values()))
    for group, rep in items:
        trials = [g["path"] for g in group]
        prev: dict | None = None
        for c in rep["calls"]:
            called.add(c["tool"])
            if c.get("head_over_cap"):
                out.append(_f(OVER_CAP, c["tool"], trials, f"{c['tool']} {c.get('arguments')}: cut at the cap"))
            if STRUCTURED_RE.search(c.get("detail") or ""):
                out.append(_f(INVALID_STRUCTURED, c["tool"], trials, (c.get("detail") or "")[:300]))
            pair = frozenset((prev["tool"], c["tool"])) if prev is not None else frozenset()
            if prev is not None and prev["tool"] != c["tool"] and pair in pairs and prev["arguments"] == c["arguments"]:
                out.append(
                    _f(
                        CONFUSED,
                        c["tool"],
                        trials,
                        f"{c['tool']} right after {prev['tool']} with the same arguments; their descriptions "
                        f"share {pairs[pair]:.0%} of their words",
                    )
                )
            prev = c
    out += [
        _f(NEVER_CALLED, n, [], f"{n} is offered and no replayed trial called it") for n in listed if n not in called
    ]
    return out


def _f(kind: str, tool: str, trials: list[str], detail: str) -> dict:
    return {"kind": kind, "tool": tool, "trials": trials, "detail": detail}
