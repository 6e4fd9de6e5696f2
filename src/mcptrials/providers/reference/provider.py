"""The provider: each reply is the next tool calls, or the answer once the tools are spent;
the reply cut to max_tokens and its token counts estimated."""

from __future__ import annotations

import json
import math
import os

from mcptrials.providers.base import Provider, Reply, Usage
from mcptrials.providers.reference.answer import compose_answer, tool_feedback
from mcptrials.providers.reference.planning import next_calls
from mcptrials.providers.reference.question import FEEDBACK_MARKERS, Term
from mcptrials.providers.reference.results import WorkspacePaths
from mcptrials.providers.reference.step import analyze_step, split_steps
from mcptrials.providers.reference.tools import classify_tool

MAX_ROUNDS = 4  # tool rounds per step; the next reply is the answer
CHARS_PER_TOKEN = 4  # the usage estimate


class ReferenceProvider(Provider):
    """The deterministic offline agent: no model, same inputs give the same reply."""

    name = "reference"

    def __init__(self, workspace: str):
        self.workspace = os.path.normpath(str(workspace))
        self._paths = WorkspacePaths(self.workspace)

    async def complete(
        self,
        system: list[dict],
        messages: list[dict],
        tools: list[dict],
        max_tokens: int,
        *,
        reply_schema: dict | None = None,  # Provider's signature; no model, so both unused
        cache_conversation: bool = True,
    ) -> Reply:
        content = self.decide(messages, tools)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        content, stop = _fit(content, stop, max_tokens)
        request_chars = len(json.dumps([system, messages, tools], sort_keys=True, default=str))
        usage = Usage(
            input_tokens=math.ceil(request_chars / CHARS_PER_TOKEN),
            output_tokens=math.ceil(len(json.dumps(content, sort_keys=True)) / CHARS_PER_TOKEN),
        )
        return Reply(content=content, stop_reason=stop, usage=usage)

    def decide(self, messages: list[dict], tools: list[dict]) -> list[dict]:
        specs = {t["name"]: classify_tool(t) for t in tools if isinstance(t, dict) and t.get("name")}
        steps = split_steps(messages, specs)
        if not steps:
            return [{"type": "text", "text": "There is no question to answer: the conversation holds no user prompt."}]
        n_assistant = sum(1 for m in messages if m.get("role") == "assistant")
        prior_terms: list[Term] = []
        states = []
        for prompt, calls, rounds in steps:
            st = analyze_step(prompt, calls, rounds, self._paths, prior_terms)
            prior_terms = st.terms
            states.append(st)
        st, prompt = states[-1], steps[-1][0]
        if st.rounds < MAX_ROUNDS:
            blocks = next_calls(st, prompt, specs, n_assistant, self.workspace)
            if blocks:
                return blocks
        text = compose_answer(st, prompt)
        if FEEDBACK_MARKERS.search(prompt):
            text += "\n\n" + tool_feedback(states, specs)
        return [{"type": "text", "text": text}]


def _fit(content: list[dict], stop: str, max_tokens: int) -> tuple[list[dict], str]:
    """Cut a reply to `max_tokens` (estimated), as the API would: text is cut, a tool_use
    block that does not fit is left out, and the stop reason becomes max_tokens."""
    budget = max_tokens * CHARS_PER_TOKEN
    if len(json.dumps(content, sort_keys=True)) <= budget:
        return content, stop
    out, used = [], 0
    for b in content:
        size = len(json.dumps(b, sort_keys=True))
        if used + size <= budget:
            out.append(b)
            used += size
            continue
        if b["type"] == "text":
            room = max(0, budget - used - 30)
            if room:
                out.append({"type": "text", "text": b["text"][:room]})
        break
    return out, "max_tokens"
