"""A CLI's stream in the loop's shapes: the step's turns (assistant messages, the user turns of
their tool results), its tool-call records, the step record, the answer, and the outcomes a
stream shows. The CLI hosts' parsers build on it, live (hosts/cli.py) or from a recording
(run/recorded.py)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime

from mcptrials.providers.base import Usage
from mcptrials.run.trial import CHARS_PER_TOKEN, split_feedback, unanswered_call

CRASHED = "server_crashed", "the MCP server's connection closed during the step"


def safe_name(name: str) -> str:
    """A server's or tool's name as the CLIs spell it in theirs (mcp__<server>__<tool>, ...)."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)


@dataclass
class Stream:
    """What one run of a CLI said, in the loop's shapes; each host's parsed stream adds its own.
    A model call (turn) is an assistant message, its tool results the user message after it."""

    messages: list = field(default_factory=list)  # Messages-API turns
    calls: list = field(default_factory=list)  # tool-call records (call_record)
    replies: list = field(default_factory=list)  # [(texts, has_tool_call)] per model call
    turns: dict = field(default_factory=dict)  # the CLI's key of a model call -> its assistant message

    def turn(self, key) -> int:
        """The model call `key` names (1-based), opened when new."""
        if key not in self.turns:
            self.turns[key] = {"role": "assistant", "content": []}
            self.messages.append(self.turns[key])
            self.replies.append(([], False))
        return list(self.turns).index(key) + 1

    def say(self, turn: int, text: str) -> None:
        self.replies[turn - 1][0].append(text)
        list(self.turns.values())[turn - 1]["content"].append({"type": "text", "text": text})

    def use(self, turn: int, block: dict) -> None:
        """A tool_use block: the reply asked for a tool."""
        self.replies[turn - 1] = (self.replies[turn - 1][0], True)
        list(self.turns.values())[turn - 1]["content"].append(block)

    def put_result(self, turn: int, block: dict) -> None:
        """A tool_result block, into the user message right after the turn's (opened when new)."""
        a = list(self.turns.values())[turn - 1]
        i = next(i for i, m in enumerate(self.messages) if m is a) + 1
        if i == len(self.messages) or self.messages[i]["role"] != "user":
            self.messages.insert(i, {"role": "user", "content": []})
        self.messages[i]["content"].append(block)

    def call(self, call: dict, answered: bool = True, asked: bool = False) -> None:
        """A tool call (call_record) in its turn, answered or not (the step ended first); `asked`:
        its tool_use block is in already (a CLI that streams it before the call runs)."""
        call = call if answered else unanswered_call(call, call["latency_ms"])
        if not asked:
            self.use(
                call["turn"], {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["arguments"]}
            )
        self.put_result(call["turn"], tool_result(call))
        self.calls.append(call)

    def add_to(self, rec, meta: dict) -> None:  # hook: what the CLI counts itself (its tokens) into the record
        raise NotImplementedError

    def final(self) -> int | None:  # the reply that is the answer (the rest is reasoning): the last with no tool call
        return max((i for i, (_, has_tool) in enumerate(self.replies) if not has_tool), default=None)

    def show(self, arguments) -> str:  # hook: a call's arguments in the audit text
        return json.dumps(arguments)

    def answer(self, outcome: str, relative) -> tuple[str, str]:
        """Hook: (answer_text, feedback): the final text of a completed step, or the partial
        answer of one stopped at its budget (its last text); feedback split off as in the loop."""
        if outcome not in ("completed", "budget_exceeded"):
            return "", ""
        texts = [x for texts, _ in self.replies for x in texts if x]
        return split_feedback(relative(final_text(self) if outcome == "completed" else texts[-1] if texts else ""))


def tool_result(c: dict) -> dict:
    return {"type": "tool_result", "tool_use_id": c["id"], "content": c["result_text"], "is_error": c["is_error"]}


def call_record(
    head: dict, tool: str, source: str, text: str, is_error: bool, ms: float, code_re, crash_re=None, truncated=False
) -> dict:
    """A tool-call record (the loop's shape) after `head` (id, step, turn, name, arguments). An
    error with an MCP code (`code_re`) or a closed connection (`crash_re`: the server died,
    -32000) is a protocol error; any other error is the tool's."""
    kind, code, m = None, None, code_re.search(text) if is_error and source == "mcp" else None
    if m:
        kind, code = "protocol_error", int(m.group(1))
    elif is_error and source == "mcp" and crash_re and crash_re.search(text):
        kind, code = "protocol_error", -32000
    elif is_error:
        kind = "tool_error"
    return head | {
        "tool": tool,
        "source": source,
        "result_text": text,
        "result_chars": len(text),
        "truncated": truncated,
        "is_error": is_error,
        "error_kind": kind,
        "error_code": code,
        "latency_ms": ms,
        "result_tokens_est": len(text) // CHARS_PER_TOKEN,
    }


def latency(t0: float | None, t1: float | None) -> float:
    return round((t1 - t0) * 1000, 2) if t0 is not None and t1 is not None else 0.0


def usage_of(input_tokens, output_tokens, cache_writes, cache_reads) -> Usage:
    """A Usage of a CLI's counts (a missing one: 0)."""
    return Usage(input_tokens or 0, output_tokens or 0, cache_writes or 0, cache_reads or 0)


def content_text(content) -> str:
    """The text of a tool result's content blocks (a string: itself)."""
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") if b.get("type") == "text" else f"[{b.get('type')} content]"
        for b in content or []
        if isinstance(b, dict)
    )


def final_text(s: Stream) -> str:
    """The step's answer: its last reply's text, when that reply asked for no tool."""
    return "\n\n".join(x for x in s.replies[-1][0] if x) if s.replies and not s.replies[-1][1] else ""


def record_step(rec, s: Stream, index: int, name: str, prompt: str, relative, wall: float, turns: int | None) -> dict:
    """Add one parsed step to the trial's Recorder `rec` (the user turn, the conversation, tool
    calls and their errors, model calls); return the step record, `answer_text` empty and
    `outcome` completed until the caller sets them. `turns`: the proxy's count of model calls
    (None: the replies)."""
    turns, final = len(s.replies) if turns is None else turns, s.final()
    rec.messages += [{"role": "user", "content": [{"type": "text", "text": prompt}]}, *s.messages]
    rec.tool_calls += s.calls
    for c in s.calls:
        if c["error_kind"]:
            rec.error(c["error_kind"], f"{c['tool']}: {c['result_text'][:300]}", step=index, code=c["error_code"])
    rec.api_calls += turns
    reasoning = "\n\n".join(x for i, (texts, _) in enumerate(s.replies) if i != final for x in texts if x)
    return {
        "index": index,
        "name": name,
        "prompt": prompt,
        "answer_text": "",
        "reasoning_text": relative(reasoning),
        "audit_text": "\n\n".join(
            f"> {c['name']} {s.show(c['arguments'])}\n{c['result_text'][:2000]}" for c in s.calls
        ),
        "outcome": "completed",
        "turns": turns,
        "state_check": None,
        "wall_seconds": wall,
    }


def harness_failed(rec, index: int, msg: str) -> tuple[str, str]:
    rec.error("harness_error", msg, step=index)
    return "harness_failed", msg


def api_failure(
    rec, index: int, text: str, statuses: list[int], unreachable: str | None, status=None
) -> tuple[str, str]:
    """A step the model API failed (after the CLI's retries): api_failed, with the HTTP status
    (the CLI's, else the proxy's last failure), said as `unreachable` when the proxy could not
    reach the API."""
    bad = [x for x in statuses if not 200 <= x < 300]
    status = status or (bad[-1] if bad else None)
    msg = unreachable or (f"{status}: {text}" if status else text)
    rec.error("api_error", msg, step=index, status=status, retries=max(0, len(bad) - 1))
    return "api_failed", msg


def event_time(event: dict) -> float | None:
    try:
        return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()
    except (KeyError, TypeError, ValueError):
        return None
