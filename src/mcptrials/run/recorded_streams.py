"""Recordings of other agents (Codex, Opencode) in Claude Code's stream shape, completed so the
claude-code parser reads them (mcptrials.run.recorded).

The reference bench stores Codex and Opencode runs as the same JSON lines as Claude Code's
stream-json (`{"type": "assistant", "message": {"content": [...]}}`, `tool_use` blocks named
`mcp__<server>__<tool>`, `user` events with `tool_result` blocks, a final `result` event),
but thinner: no message or tool-use ids, no `init` event, and a `result` event with no
`subtype`, no `result` text, no duration and (on a subscription) no cost, only `usage`.

`complete(events)` returns the events with what the parser needs filled in, and what was
missing, said (`lacks`, recorded in run_meta as `recorded_stream`):

- each assistant event is one model reply (its own message id);
- tool results pair with the tool uses in order (a result answers the oldest unanswered use);
- the answer is the agent's final message (assistant text after the last tool result): the
  `result` event's text when it has none; its outcome is success when there is such a text,
  else an error (`error_no_final_answer`, harness_failed);
- usage is the result event's own; a null cost or duration stays unknown, never zero.

A Claude Code stream (an init event, or ids on its blocks) is returned unchanged.
"""

from __future__ import annotations

SHAPE_CLAUDE = "claude-code"
SHAPE_THIN = "claude-code shape without ids, init or result text (Codex, Opencode)"


def is_thin(events: list[dict]) -> bool:
    """A stream in Claude Code's shape but without its ids, init event and result subtype."""
    if any(e.get("type") == "system" and e.get("subtype") == "init" for e in events):
        return False
    blocks = [
        b
        for e in events
        if e.get("type") == "assistant"
        for b in ((e.get("message") or {}).get("content") or [])
        if isinstance(b, dict)
    ]
    if any(b.get("type") == "tool_use" and b.get("id") for b in blocks):
        return False
    results = [e for e in events if e.get("type") == "result"]
    return not results or all("subtype" not in r for r in results)


def _last_text(events: list[dict]) -> str:
    """The agent's final message: assistant text after the last tool result (a text before it
    was a step on the way, and a session that ends on a tool result has no answer)."""
    for e in reversed(events):
        if e.get("type") == "user":
            return ""
        if e.get("type") != "assistant":
            continue
        texts = [
            b.get("text") or ""
            for b in ((e.get("message") or {}).get("content") or [])
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        if any(t.strip() for t in texts):
            return "\n".join(texts)
    return ""


def complete(events: list[dict]) -> tuple[list[dict], dict]:
    """(events the claude-code parser reads, {shape, lacks}); a Claude Code stream unchanged."""
    if not is_thin(events):
        return events, {"shape": SHAPE_CLAUDE, "lacks": []}
    out, waiting, n_use, n_msg = [], [], 0, 0
    lacks = {
        "message and tool-use ids (results paired with uses in order)",
        "an init event (no tools/list, no working directory)",
    }
    for e in events:
        kind = e.get("type")
        if kind == "assistant":
            n_msg += 1
            msg = dict(e.get("message") or {})
            msg.setdefault("id", f"recorded-msg-{n_msg}")
            content = []
            for b in msg.get("content") or []:
                if isinstance(b, dict) and b.get("type") == "tool_use" and not b.get("id"):
                    n_use += 1
                    b = dict(b, id=f"recorded-use-{n_use}")
                    waiting.append(b["id"])
                elif isinstance(b, dict) and b.get("type") == "tool_use":
                    waiting.append(b["id"])
                content.append(b)
            msg["content"] = content
            out.append(dict(e, message=msg))
        elif kind == "user":
            msg = dict(e.get("message") or {})
            given = msg.get("content")
            if isinstance(given, list):
                filled = []
                for b in given:
                    if isinstance(b, dict) and b.get("type") == "tool_result" and not b.get("tool_use_id"):
                        b = dict(b, tool_use_id=waiting.pop(0) if waiting else None)
                    elif isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") in waiting:
                        waiting.remove(b["tool_use_id"])
                    filled.append(b)
                msg["content"] = filled
            out.append(dict(e, message=msg))
        elif kind == "result":
            answer = _last_text(out)
            r = dict(e)
            if answer:
                r.update(subtype="success", is_error=False, result=answer)
            else:
                r.update(
                    subtype="error_no_final_answer", is_error=True, result="the recording has no final assistant text"
                )
            lacks.add("a result text (the answer is the last assistant text)")
            if r.get("duration_ms") is None:
                lacks.add("a duration (wall time unknown)")
            if r.get("total_cost_usd") is None:
                lacks.add("the agent's own cost (a subscription run: cost only from our pricing, if any)")
            if not r.get("usage"):
                lacks.add("token usage")
            out.append(r)
        else:
            out.append(e)
    return out, {"shape": SHAPE_THIN, "lacks": sorted(lacks)}
