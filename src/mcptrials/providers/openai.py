"""Provider `openai`: chat completions with tools, through the official `openai` SDK, for any
OpenAI-compatible endpoint by `base_url` (OpenAI; local servers such as llama.cpp's
`llama-server`, Ollama or vLLM).

The runner keeps the conversation in Messages-API form; this module translates both ways:

- system text blocks -> one `system` message;
- a user turn's text blocks -> a `user` message; its `tool_result` blocks -> one `tool`
  message each (`tool_call_id`), before any text of the same turn;
- an assistant turn -> `content` (its text) plus `tool_calls` (`function` name and JSON
  `arguments`) from its `tool_use` blocks;
- tools -> `{"type": "function", "function": {name, description, parameters}}`;
- the reply -> a text block and one `tool_use` block per tool call (several at once allowed);
  finish_reason tool_calls -> stop_reason tool_use, length -> max_tokens, stop -> end_turn.

Usage: prompt_tokens counts cached tokens too (OpenAI's usage object), so
input_tokens (uncached) = prompt_tokens - cached_tokens - cache_write_tokens,
cache_read_input_tokens = cached_tokens, cache_creation_input_tokens = cache_write_tokens
(both 0 when the server does not report them); cost then comes from `pricing` as for every
provider (graders.cost.cost_usd). The output cap is sent as `max_completion_tokens`. No
sampling parameters, as for the other providers. A `reply_schema` (the judge's) is sent as
`response_format` {"type": "json_schema", "json_schema": {name, schema, "strict": true}}. Retries on 408/409/429/5xx and connection
errors are the SDK's own (honouring `retry-after`), capped by `max_retries`.
"""

from __future__ import annotations

import json
from typing import Any

from mcptrials.providers.base import Provider, ProviderError, Reply, Usage

STOP_REASONS = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "stop": "end_turn",
    "content_filter": "refusal",
}


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        b.get("text", "") if b.get("type") == "text" else f"[{b.get('type')} content]" for b in content or []
    )


def to_openai_messages(system: list[dict], messages: list[dict]) -> list[dict]:
    """Messages-API conversation -> chat-completions messages."""
    out: list[dict[str, Any]] = []
    sys_text = "\n\n".join(b.get("text", "") for b in system or [] if b.get("type") == "text")
    if sys_text:
        out.append({"role": "system", "content": sys_text})
    for msg in messages:
        content = msg["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if msg["role"] == "assistant":
            text = "\n\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            turn: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                turn["tool_calls"] = calls
            out.append(turn)
            continue
        for b in blocks:  # tool results first: they must follow the assistant's tool_calls
            if b.get("type") == "tool_result":
                text = _text_of(b.get("content"))
                if b.get("is_error") and not text.lower().startswith("error"):
                    text = "Error: " + text  # chat completions has no error flag on a tool message
                out.append({"role": "tool", "tool_call_id": b["tool_use_id"], "content": text})
        text = "\n\n".join(b["text"] for b in blocks if b.get("type") == "text" and b.get("text"))
        if text:
            out.append({"role": "user", "content": text})
    return out


def to_openai_tools(tools: list[dict]) -> list[dict]:
    return [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t.get("input_schema") or {"type": "object"},
            },
        }
        for t in tools
    ]


def parse_arguments(raw: str | None) -> dict:
    """A tool call's JSON arguments; text that is not a JSON object is passed on as
    {"_unparsed_arguments": raw}, so the tool answers with an error the model can see."""
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {"_unparsed_arguments": raw}
    return value if isinstance(value, dict) else {"_unparsed_arguments": raw}


def to_response_format(reply_schema: dict) -> dict:
    """{"name", "schema"} -> structured outputs: `response_format` json_schema, strict (the
    server constrains the reply to the schema; llama-server, Ollama and vLLM take it too)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": reply_schema["name"], "schema": reply_schema["schema"], "strict": True},
    }


def usage_of(u) -> Usage:
    """OpenAI usage -> ours (the formula is in the module docstring)."""
    if u is None:
        return Usage()
    details = getattr(u, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details else 0
    written = (getattr(details, "cache_write_tokens", None) or 0) if details else 0
    prompt = u.prompt_tokens or 0
    return Usage(
        input_tokens=max(prompt - cached - written, 0),
        output_tokens=u.completion_tokens or 0,
        cache_creation_input_tokens=written,
        cache_read_input_tokens=cached,
    )


def to_reply_content(message) -> list[dict]:
    content = []
    if message.content:
        content.append({"type": "text", "text": message.content})
    for call in message.tool_calls or []:
        fn = getattr(call, "function", None)
        if fn is None:  # a custom (non-function) tool call: not offered by us
            continue
        content.append({"type": "tool_use", "id": call.id, "name": fn.name, "input": parse_arguments(fn.arguments)})
    return content


class OpenAIProvider(Provider):
    name = "openai"

    def __init__(
        self, model: str, api_key: str, base_url: str | None = None, max_retries: int = 4, timeout: float = 600
    ):
        import openai

        self._openai = openai
        self.model = model
        self.client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout)

    async def complete(
        self, system, messages, tools, max_tokens, *, reply_schema=None, cache_conversation=True
    ) -> Reply:
        # cache_conversation: the API caches every long-enough prefix by itself.
        o = self._openai
        kwargs = dict(model=self.model, messages=to_openai_messages(system, messages), max_completion_tokens=max_tokens)
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
        if reply_schema is not None:
            kwargs["response_format"] = to_response_format(reply_schema)
        try:
            raw = await self.client.chat.completions.with_raw_response.create(**kwargs)
            completion = raw.parse()
        except o.APIStatusError as e:
            retried = e.status_code in (408, 409, 429) or e.status_code >= 500
            raise ProviderError(
                f"{e.status_code}: {_short(e)}", status=e.status_code, retries=self.client.max_retries if retried else 0
            ) from None
        except o.APIConnectionError as e:
            raise ProviderError(f"connection: {_short(e)}", retries=self.client.max_retries) from None
        except (o.APIResponseValidationError, ValueError) as e:  # ValueError: a body that is not JSON
            raise ProviderError(f"malformed response: {type(e).__name__}: {_short(e)}", retries=0) from None
        if not getattr(completion, "choices", None):
            raise ProviderError(f"malformed response: no choices in {str(completion)[:200]}", retries=0)
        choice = completion.choices[0]
        content = to_reply_content(choice.message)
        stop = STOP_REASONS.get(choice.finish_reason or "stop", choice.finish_reason)
        if any(b["type"] == "tool_use" for b in content):
            stop = "tool_use"  # some servers say `stop` with tool calls
        return Reply(
            content=content,
            stop_reason=stop,
            usage=usage_of(completion.usage),
            retries=getattr(raw, "retries_taken", 0),
        )

    async def aclose(self) -> None:
        await self.client.close()


def _short(e) -> str:
    return str(e).replace("\n", " ")[:300]
