"""What a replay says is wrong with a server's surface (issue 37 item 5), per tool, each with the
BASE trials that show it; no model needed:

- result over the host's limit: HEAD's whole result of a call (about chars/4 tokens) over a host's
  limit, each host named (analyze.result_limits: Claude Code's 25,000 tokens by default, opencode's
  12,800), or cut at the replay's cap;
- invalid structured content: the mcp client refused HEAD's `structuredContent` against the
  tool's `outputSchema` (analyze.patterns.STRUCTURED_RE);
- read-only tool wrote: a call to a tool HEAD annotates readOnlyHint: true after which the replay's
  workspace had changed (prepare.tree_state, around that call only);
- never called: a tool HEAD's tools/list offers that no replayed BASE trial called;
- confused tools: a call right after a call to another tool with the same arguments, the two
  tools' descriptions near-duplicates (analyze.patterns.confusable_pairs, over HEAD's list).
"""

from __future__ import annotations

from mcptrials.analyze.patterns import STRUCTURED_RE, confusable_pairs
from mcptrials.analyze.result_limits import over_limits

OVER_CAP, INVALID_STRUCTURED, NEVER_CALLED, CONFUSED, READ_ONLY_WROTE = (
    "result over the host's limit",
    "invalid structured content",
    "never called",
    "confused tools",
    "read-only tool wrote",
)


def surface_findings(items: list) -> list[dict]:
    """[{kind, tool, trials, detail}] for one tool's replays (items: [(BASE trials, replay)]; a replay's
    `limits`: host -> (tokens, source), analyze.result_limits.host_limits of the trial's cap)."""
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
        limits = rep.get("limits") or {}
        for c in rep["calls"]:
            called.add(c["tool"])
            hosts = over_limits(int(c.get("head_chars") or 0) // 4, limits)
            if hosts or c.get("head_over_cap"):
                over = ", ".join(f"{h}'s {limits[h][0]:,}" for h in hosts) if hosts and limits else "the cap"
                size = f"about {int(c.get('head_chars') or 0) // 4:,} tokens" if c.get("head_chars") else "cut"
                out.append(_f(OVER_CAP, c["tool"], trials, f"{c['tool']} {c.get('arguments')}: {size}, over {over}"))
            if wrote := c.get("head_wrote"):
                detail = (
                    f"{c['tool']} is annotated readOnlyHint and changed {len(wrote)} path(s): {', '.join(wrote[:5])}"
                )
                out.append(_f(READ_ONLY_WROTE, c["tool"], trials, detail))
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
