"""Patterns in one trial's transcript: the behaviours that make a transcript worth reading.

"The numbers show that something is wrong; the transcripts show why": each detector is a
small function over transcript.json (mcptrials/transcript/1; scored.json and the tools
snapshot where they help) that returns findings, never a score. A finding is

    {"pattern": name, "step": i or None, "turn": t or None, "call": index or None, "detail": text}

`call` is the index into the transcript's `tool_calls`, `turn` the 1-based model call of the
step, `step` None for a finding about the whole trial (server tools never used). `PATTERNS`
is the registry (name -> description, detector); `detect` runs them all, `counts` turns the
findings into {name: count}. Patterns are computed at aggregate time from the records the
aggregate already loads (no stage of their own, no rerun row: they read no config), and are
reported apart from every score.

Thresholds are the named constants below, each with why it has its value; changing one
changes only the aggregate and the report.
"""

from __future__ import annotations

import json
import re
from typing import Callable, NamedTuple

from mcptrials.core.outcomes import COMPLETED

# A result this large (characters, about 5,000 tokens at 4 characters a token) costs as much
# input as several ordinary turns and is re-sent on every later turn of the step: worth a look
# even when the cap (limits.max_result_tokens, 25,000 tokens by default) did not cut it.
LARGE_RESULT_CHARS = 20_000
# "Many" near-empty results: one or two empty searches are ordinary narrowing; from three on the
# agent is probing a tool that does not answer what it asks (or asking it wrongly).
MANY_EMPTY_RESULTS = 3
# Results that say "nothing" in words, as servers and the built-ins phrase it.
EMPTY_RESULT_RE = re.compile(
    r"^\W*(no (matches|results|files|entries|match|hits)( (were )?found)?|nothing found|not found|0 (matches|results)"
    r"|none|null|\[\s*\]|\{\s*\})\W*$",
    re.I,
)
# Words shorter than this are too common in code and prose to show that an answer used a result.
MIN_TOKEN_CHARS = 4
TOKEN_RE = re.compile(rf"[a-z_][a-z0-9_]{{{MIN_TOKEN_CHARS - 1},}}")  # on lower-cased text
# Words every code result and every answer share: their presence shows no use of a result.
STOPWORDS = frozenset(
    """
self this that with from import return class none true false file files line lines path
function method there their what which when where have been will would could should into
only also used uses call calls called the and for are not def elif else pass while yield async
await lambda print string value values type name names list dict test tests code
""".split()
)
# The step outcomes of a limit the step ran into (mcptrials.core.outcomes, hosts/loop.py).
LIMIT_OUTCOMES = ("max_turns", "timed_out", "budget_exceeded")
# Two tool descriptions sharing at least this share of their distinctive words (Jaccard: shared /
# either) read alike to a model: a call to one then the other with the same arguments is a confusion.
# Half: "Search the code for a text" and "Find a text in the files" share little; two search tools
# worded from one template share most of their words.
CONFUSABLE_OVERLAP = 0.5
# The outcomes of a trial whose server stayed up to the end: its tools were available throughout,
# so a tool it never called was a choice (a crash or a missing trial says nothing about that).
RAN_THROUGH = (COMPLETED,) + LIMIT_OUTCOMES


# what summary.json records beside the counts, so a reader knows what produced them
THRESHOLDS = {
    "LARGE_RESULT_CHARS": LARGE_RESULT_CHARS,
    "MANY_EMPTY_RESULTS": MANY_EMPTY_RESULTS,
    "MIN_TOKEN_CHARS": MIN_TOKEN_CHARS,
    "CONFUSABLE_OVERLAP": CONFUSABLE_OVERLAP,
    "LIMIT_OUTCOMES": list(LIMIT_OUTCOMES),
    "RAN_THROUGH": list(RAN_THROUGH),
}


def finding(pattern: str, step=None, turn=None, call=None, detail: str = "", **extra) -> dict:
    return {"pattern": pattern, "step": step, "turn": turn, "call": call, "detail": detail, **extra}


def _key(c: dict) -> tuple[str, str]:
    """A call's identity: the name the model saw and its arguments, canonically."""
    return c.get("name") or "", json.dumps(c.get("arguments"), sort_keys=True, ensure_ascii=False, default=str)


def _at(c: dict, n: int) -> str:
    return f"call {n} (step {c.get('step')}, turn {c.get('turn')})"


def _same_as_before(calls: list[dict]):
    """(index, call, index of the most recent earlier call with the same name and arguments)."""
    last: dict = {}
    for n, c in enumerate(calls):
        k = _key(c)
        if k in last:
            yield n, c, last[k]
        last[k] = n


def repeated_call(t: dict, scored=None, tools=None) -> list[dict]:
    """A call with the same name and arguments as an earlier one that succeeded: its result was
    already in the conversation."""
    calls = t.get("tool_calls") or []
    return [
        finding(
            "repeated_call",
            c.get("step"),
            c.get("turn"),
            n,
            f"{c.get('name')} with the same arguments as {_at(calls[k], k)}",
        )
        for n, c, k in _same_as_before(calls)
        if not calls[k].get("is_error")
    ]


def retry_after_error(t: dict, scored=None, tools=None) -> list[dict]:
    """A call that failed, then the same call again with the same arguments (nothing changed)."""
    calls = t.get("tool_calls") or []
    return [
        finding(
            "retry_after_error",
            c.get("step"),
            c.get("turn"),
            n,
            f"{c.get('name')} again unchanged after {_at(calls[k], k)} failed "
            f"({calls[k].get('error_kind') or 'is_error'})",
        )
        for n, c, k in _same_as_before(calls)
        if calls[k].get("is_error")
    ]


def large_result(t: dict, scored=None, tools=None) -> list[dict]:
    """A result cut by the harness's cap, or larger than LARGE_RESULT_CHARS."""
    out = []
    for n, c in enumerate(t.get("tool_calls") or []):
        size = int(c.get("result_chars") or 0)
        if c.get("truncated"):
            detail = f"cut by the cap: {size:,} characters, {len(c.get('result_text') or ''):,} shown"
        elif size >= LARGE_RESULT_CHARS:
            detail = f"{size:,} characters (about {int(c.get('result_tokens_est') or size // 4):,} tokens)"
        else:
            continue
        out.append(finding("large_result", c.get("step"), c.get("turn"), n, f"{c.get('name')}: {detail}"))
    return out


def offered_tools(tools) -> list[str]:
    """The server's tool names from a tools snapshot (tools.json), a list of tool dicts, or names."""
    if tools is None:
        return []
    if isinstance(tools, dict):
        tools = tools.get("tools") or []
    return [x if isinstance(x, str) else x["name"] for x in tools]


def unused_tool(t: dict, scored=None, tools=None) -> list[dict]:
    """Server tools the snapshot offered and the trial never called, in a trial whose server stayed
    up to the end (RAN_THROUGH): one finding about the whole trial (step None), naming them in
    `tools` (one per tool would make most trials' findings a list of a server's tool names)."""
    offered = offered_tools(tools)
    if not offered or t.get("outcome") not in RAN_THROUGH:
        return []
    called = {c.get("tool") for c in t.get("tool_calls") or [] if c.get("source") == "mcp"}
    unused = [name for name in offered if name not in called]
    if not unused:
        return []
    return [
        finding(
            "unused_tool",
            detail=f"{len(unused)} of {len(offered)} offered server tool(s) never called: " + ", ".join(unused),
            tools=unused,
        )
    ]


def answer_before_search(t: dict, scored=None, tools=None) -> list[dict]:
    """A step that gave an answer before the trial made any tool call (any tool counts as a
    look at the code: the built-ins too)."""
    called = {c.get("step") for c in t.get("tool_calls") or []}
    out = []
    for s in t.get("steps") or []:
        if s["index"] in called:
            break  # from this step on, the answers come after a look at the code
        if (s.get("answer_text") or "").strip():
            out.append(
                finding(
                    "answer_before_search",
                    s["index"],
                    s.get("turns"),
                    None,
                    f"step {s['index']} answered with no tool call before it",
                )
            )
    return out


def _json(text: str):
    """The result as JSON when it is a JSON object or array (servers often answer so), else None."""
    text = text.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _leaves(v):
    """(strings, lists) of a JSON value, recursively: its content, not its keys."""
    strings, lists = [], []
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack += x.values()
        elif isinstance(x, list):
            lists.append(x)
            stack += x
        elif isinstance(x, str):
            strings.append(x)
    return strings, lists


def _empty_json(v) -> bool:
    """A JSON answer whose lists are all empty and that holds no text, only figures:
    {"results": [], "total": 0}. (One without any list, {"count": 5}, is an answer.)"""
    strings, lists = _leaves(v)
    return (v == {} or bool(lists)) and not any(lists) and not any(s.strip() for s in strings)


def content_text(text: str) -> str:
    """What a result says: the string values of a JSON answer (its keys are the server's format,
    not content), else the text itself."""
    v = _json(text or "")
    return text or "" if v is None else " ".join(_leaves(v)[0])


def near_empty(c: dict) -> bool:
    """A successful result that holds nothing: blank, 'no matches' in words, or a JSON answer
    whose lists are empty. (A short one, "42", is an answer.)"""
    text = (c.get("result_text") or "").strip()
    if c.get("is_error"):
        return False
    v = _json(text)
    return not text or bool(EMPTY_RESULT_RE.match(text)) or (v is not None and _empty_json(v))


def empty_results(t: dict, scored=None, tools=None) -> list[dict]:
    """MANY_EMPTY_RESULTS or more near-empty results in one trial: one finding per such call."""
    calls = t.get("tool_calls") or []
    empty = [n for n, c in enumerate(calls) if near_empty(c)]
    if len(empty) < MANY_EMPTY_RESULTS:
        return []
    return [
        finding(
            "empty_results",
            calls[n].get("step"),
            calls[n].get("turn"),
            n,
            f"{calls[n].get('name')}: {(calls[n].get('result_text') or '').strip()[:60]!r} "
            f"({len(empty)} near-empty results in the trial)",
        )
        for n in empty
    ]


def words(text: str) -> set[str]:
    """The distinctive words of a text (identifiers and path parts, lower-cased)."""
    return set(TOKEN_RE.findall((text or "").lower())) - STOPWORDS


def _args_text(c: dict) -> str:
    return json.dumps(c.get("arguments"), ensure_ascii=False, default=str)


def unused_result(t: dict, scored=None, tools=None) -> list[dict]:
    """A successful, non-empty result none of whose distinctive words reach the answer of its step or
    a later one, nor the arguments of a later call (a listing used to pick the next file is used).
    Words of the step's prompt and of the call's own arguments are left out: echoing the question
    is no use of the result. The citations scored.json resolved count as the answer's words."""
    steps = {s["index"]: s for s in t.get("steps") or []}
    calls = t.get("tool_calls") or []
    cited: dict = {}
    for s in (scored or {}).get("steps") or []:
        cited[s["index"]] = " ".join(
            str(c.get("resolved_path") or "") for c in ((s.get("citations") or {}).get("items") or [])
        )
    # the words each step's answer (and its citations) and every later step's hold, computed once
    seen: set[str] = set()
    answer_words, any_answer, answered = {}, {}, False
    for i in sorted(steps, reverse=True):
        text = (steps[i].get("answer_text") or "") + " " + cited.get(i, "")
        seen, answered = seen | words(text), answered or bool(text.strip())
        answer_words[i], any_answer[i] = seen, answered
    # the words of the arguments of every call after call n
    later_args: list[set[str]] = [set()] * (len(calls) + 1)
    for n in range(len(calls) - 1, -1, -1):
        later_args[n] = later_args[n + 1] | words(_args_text(calls[n]))
    out = []
    for n, c in enumerate(calls):
        step = c.get("step")
        if c.get("is_error") or near_empty(c) or step not in steps:
            continue
        if not any_answer[step]:
            continue  # no answer to use it in: the trial stopped (limit_reached says so)
        own = words(steps[step].get("prompt") or "") | words(_args_text(c))
        mine = words(content_text(c.get("result_text") or "")) - own
        if not mine:
            continue  # the result only repeats the question: nothing to use
        if not mine & (answer_words[step] | later_args[n + 1]):
            out.append(
                finding(
                    "unused_result",
                    step,
                    c.get("turn"),
                    n,
                    f"{c.get('name')}: {len(mine)} distinctive word(s) of its result "
                    f"({', '.join(sorted(mine)[:3])}...), none in the answer or a later call",
                )
            )
    return out


def limit_reached(t: dict, scored=None, tools=None) -> list[dict]:
    """A step that ended at its turn, time or output-token limit (max_turns, timed_out,
    budget_exceeded); a trial whose outcome says so when no step does."""
    out = [
        finding(
            "limit_reached",
            s["index"],
            s.get("turns"),
            None,
            f"step {s['index']}: {s['outcome']} after {s.get('turns')} model call(s)",
        )
        for s in t.get("steps") or []
        if s.get("outcome") in LIMIT_OUTCOMES
    ]
    if not out and t.get("outcome") in LIMIT_OUTCOMES:
        steps = t.get("steps") or []
        last = steps[-1] if steps else {}
        out.append(
            finding(
                "limit_reached",
                last.get("index"),
                last.get("turns"),
                None,
                f"{t['outcome']}: {t.get('outcome_detail') or 'the trial hit a limit'}",
            )
        )
    return out


def confusable_pairs(tools) -> dict[frozenset[str], float]:
    """Pairs of server tools whose descriptions share CONFUSABLE_OVERLAP or more of their
    distinctive words (words(); Jaccard), with that share; from a tools snapshot or its list."""
    defs = (tools.get("tools") or []) if isinstance(tools, dict) else (tools or [])
    ws = {t["name"]: words(t.get("description") or "") for t in defs if isinstance(t, dict) and t.get("name")}
    out = {}
    names = list(ws)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            union = ws[a] | ws[b]
            share = len(ws[a] & ws[b]) / len(union) if union else 0.0
            if share >= CONFUSABLE_OVERLAP:
                out[frozenset((a, b))] = share
    return out


def confused_tools(t: dict, scored=None, tools=None) -> list[dict]:
    """A server-tool call right after a call to another server tool with the same arguments, when
    the two tools' descriptions are near-duplicates (confusable_pairs): the model tried one for the
    other."""
    pairs = confusable_pairs(tools)
    if not pairs:
        return []
    out: list[dict] = []
    prev: tuple[int, dict] | None = None
    for n, c in enumerate(t.get("tool_calls") or []):
        if c.get("source") != "mcp":
            continue
        if prev is not None:
            k, p = prev
            pair = frozenset((p.get("tool"), c.get("tool")))
            if p.get("tool") != c.get("tool") and pair in pairs and _key(p)[1] == _key(c)[1]:
                out.append(
                    finding(
                        "confused_tools",
                        c.get("step"),
                        c.get("turn"),
                        n,
                        f"{c.get('tool')} with the same arguments as {p.get('tool')} at {_at(p, k)}; their "
                        f"descriptions share {pairs[pair]:.0%} of their words",
                    )
                )
        prev = (n, c)
    return out


# What the mcp client says when a result's structuredContent does not validate against the tool's
# outputSchema, or is missing though the tool declares one (mcp/client/session.py: it raises, and
# the loop host records a protocol error with this text).
STRUCTURED_RE = re.compile(
    r"Invalid structured content returned by tool|has an output schema but did not return structured content"
)


def invalid_structured_content(t: dict, scored=None, tools=None) -> list[dict]:
    """A server-tool result whose structuredContent the client refused against the tool's
    outputSchema (or that is missing though the tool declares one)."""
    return [
        finding("invalid_structured_content", c.get("step"), c.get("turn"), n, (c.get("result_text") or "")[:300])
        for n, c in enumerate(t.get("tool_calls") or [])
        if c.get("source") == "mcp" and c.get("is_error") and STRUCTURED_RE.search(c.get("result_text") or "")
    ]


def read_only_wrote(t: dict, scored=None, tools=None) -> list[dict]:
    """A call to a server tool annotated readOnlyHint: true after which the workspace's files
    had changed (the host recorded `workspace_changed`, prepare.tree_state)."""
    out = []
    for n, c in enumerate(t.get("tool_calls") or []):
        if w := c.get("workspace_changed"):
            paths = ", ".join(w["paths"][:5]) + (" …" if w["count"] > 5 else "")
            detail = f"{c.get('tool')} is annotated readOnlyHint and changed {w['count']} path(s): {paths}"
            out.append(finding("read_only_wrote", c.get("step"), c.get("turn"), n, detail))
    return out


class Pattern(NamedTuple):
    description: str
    detector: Callable[..., list[dict]]


PATTERNS: dict[str, Pattern] = {
    "repeated_call": Pattern("the same call again with identical arguments, after it had succeeded", repeated_call),
    "retry_after_error": Pattern("a call failed, then the same call again with identical arguments", retry_after_error),
    "large_result": Pattern(f"a result cut by the cap, or of {LARGE_RESULT_CHARS:,} characters or more", large_result),
    "unused_tool": Pattern(
        "server tools offered (tools snapshot) and never called in a trial the server "
        "ran through (one finding per trial, naming them)",
        unused_tool,
    ),
    "answer_before_search": Pattern("a step answered before the trial made any tool call", answer_before_search),
    "empty_results": Pattern(
        f"{MANY_EMPTY_RESULTS} or more calls whose results are near-empty ('no matches', blank, [])", empty_results
    ),
    "unused_result": Pattern(
        "a non-empty result whose distinctive words never reach the answer or a later call", unused_result
    ),
    "limit_reached": Pattern("a step ended at its turn, time or output-token limit", limit_reached),
    "confused_tools": Pattern(
        f"a call to a server tool right after one to another with the same arguments, the two descriptions "
        f"sharing {CONFUSABLE_OVERLAP:.0%} or more of their words",
        confused_tools,
    ),
    "invalid_structured_content": Pattern(
        "a result whose structuredContent does not validate against the tool's outputSchema (the client refused it)",
        invalid_structured_content,
    ),
    "read_only_wrote": Pattern(
        "a call to a tool annotated readOnlyHint: true that changed the workspace's files", read_only_wrote
    ),
}


def detect(transcript: dict, scored: dict | None = None, tools=None) -> list[dict]:
    """Every finding of every pattern in one trial, in the order of the conversation (the
    trial-wide ones first). tools: the trial's tools snapshot (tools.json), its tool list or
    names; without it no tool is known to be offered."""
    out = [f for p in PATTERNS.values() for f in p.detector(transcript, scored, tools)]
    order = {name: i for i, name in enumerate(PATTERNS)}
    return sorted(
        out,
        key=lambda f: (
            -1 if f["step"] is None else f["step"],
            -1 if f["call"] is None else f["call"],
            order[f["pattern"]],
        ),
    )


def counts(findings: list[dict]) -> dict[str, int]:
    """{pattern: number of findings}, in registry order, the patterns found only."""
    return {name: n for name in PATTERNS if (n := sum(f["pattern"] == name for f in findings))}
