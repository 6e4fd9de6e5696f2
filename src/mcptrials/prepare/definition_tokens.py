"""What a server's tool definitions cost: the input tokens they add to every request.

The loop sends the built-ins and the server's tools with every request
(tooldefs.tool_definitions, the one rendering of them), so a 60-tool server costs its
definitions on every turn before the model does anything. The snapshot records it:

- `count_tokens`: the Messages API's count-tokens endpoint (free, no model run), with the
  config's first anthropic model, its base_url and its key from the environment: the count
  of one fixed request with the built-ins and the server's tools minus the count of the
  same request with the built-ins only.
- else an estimate, named in `definition_tokens_method`: chars/4 (tooldefs.CHARS_PER_TOKEN,
  the measure of tool results) of the compact JSON of the server's definitions as sent.

A count that fails (no network, a bad key, an endpoint that answers an error) never fails
the snapshot: the error is recorded in `definition_tokens_error` and the estimate is used.
The estimate is always recorded too (`definition_tokens_estimate`), so the two can be
compared. `builtin_definition_tokens` is what the built-ins cost by the same method (by
count_tokens: with the built-ins minus no tools at all, so it includes the API's own
tool-use preamble); the same for every tool, the baseline included.

The server's `instructions` (when the tool entry passes them to the agent's prompt, its
`instructions: true`) count too: chars/4 of them, recorded apart in `instructions_tokens` and
added to `definition_tokens` by either method (a host sends them with every request as well).
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from mcptrials.prepare.tooldefs import CHARS_PER_TOKEN, tool_definitions

if TYPE_CHECKING:  # the SDK is imported only where it counts (count_tokens)
    from anthropic.types import MessageParam

COUNT_METHOD = "count_tokens"
ESTIMATE_METHOD = f"estimate: chars/{CHARS_PER_TOKEN} of the definitions' JSON"
# The fixed request both counts share: only the tools differ between them.
COUNT_MESSAGES: list[MessageParam] = [{"role": "user", "content": "Hello"}]
COUNT_TIMEOUT_S = 30.0
COUNT_MAX_RETRIES = 2


def definitions_json(defs: list[dict]) -> str:
    return json.dumps(defs, separators=(",", ":"), ensure_ascii=False)


def estimate_tokens(defs: list[dict]) -> int:
    """chars/4 of the compact JSON of the definitions (0 for none)."""
    return len(definitions_json(defs)) // CHARS_PER_TOKEN if defs else 0


def counting_model(m):
    """The config's first model with provider anthropic (a ModelSpec), or None."""
    return next((s for s in m.specs.models.values() if s.provider == "anthropic" and s.model), None)


def count_tokens(spec, key: str, tool_sets: list[list[dict]]) -> list[int]:
    """input_tokens of the fixed request with each tool list (an empty list: no tools)."""
    import anthropic

    client = anthropic.Anthropic(
        api_key=key,
        base_url=spec.base_url,
        timeout=COUNT_TIMEOUT_S,
        max_retries=min(spec.max_retries, COUNT_MAX_RETRIES),
    )
    try:
        out = []
        for tools in tool_sets:
            kwargs: dict[str, Any] = {"tools": tools} if tools else {}
            out.append(client.messages.count_tokens(model=spec.model, messages=COUNT_MESSAGES, **kwargs).input_tokens)
        return out
    finally:
        client.close()


def not_started() -> dict:
    """The fields for a server that did not start: nothing is known of its definitions."""
    return {
        "instructions_tokens": None,
        "definition_tokens": None,
        "definition_tokens_method": "none: the server did not start",
        "definition_tokens_model": None,
        "definition_tokens_error": None,
        "definition_tokens_estimate": None,
        "builtin_definition_tokens": None,
        "definition_tools": None,
    }


def instructions_tokens(instructions: str | None) -> int:
    """chars/4 of the server's `instructions` the agent's system prompt gets (0 without)."""
    return len(instructions) // CHARS_PER_TOKEN if instructions else 0


def definition_tokens(
    m, tool: str, server_tools: list[dict], count: bool = True, instructions: str | None = None
) -> dict:
    """The snapshot's definition_tokens fields for `tool` with its tools/list `server_tools` and
    the `instructions` the agent's prompt gets (None: none, or the entry's `instructions: false`):
    tools + instructions, the instructions always by the estimate (`instructions_tokens`).
    `count=False` (a dry run): the estimate, no request."""
    builtin, server, _ = tool_definitions(tool, server_tools)
    extra = instructions_tokens(instructions)
    est = estimate_tokens(server) + extra
    rec = {
        "instructions_tokens": extra,
        "definition_tokens": est,
        "definition_tokens_method": ESTIMATE_METHOD,
        "definition_tokens_model": None,
        "definition_tokens_error": None,
        "definition_tokens_estimate": est,
        "builtin_definition_tokens": estimate_tokens(builtin),
        "definition_tools": len(server),
    }
    spec = counting_model(m) if count else None
    if spec is None:
        return rec
    key = os.environ.get(spec.api_key_env)
    if not key:
        rec["definition_tokens_error"] = f"models.{spec.name}: ${spec.api_key_env} is not set; estimated instead"
        return rec
    try:
        none, with_builtin, with_all = count_tokens(spec, key, [[], builtin, builtin + server])
    except Exception as e:  # any failure of the count is recorded; the snapshot goes on
        msg = " ".join(f"{type(e).__name__}: {e}".split())[:300].replace(key, "[key]")
        rec["definition_tokens_error"] = f"count_tokens with models.{spec.name} ({spec.model}) failed: {msg}"
        return rec
    rec.update(
        definition_tokens=(with_all - with_builtin if server else 0) + extra,
        definition_tokens_method=COUNT_METHOD,
        definition_tokens_model=spec.model,
        builtin_definition_tokens=with_builtin - none,
    )
    return rec
