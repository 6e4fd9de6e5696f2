"""A fake OpenAI chat-completions API for tests, speaking the real wire protocol.

Stdlib only, so it also runs as a separate process next to a Snakemake run:

    python tests/fakes/openai_api.py --script script.json --log requests.jsonl \
        --port-file port.txt [--port 0] [--exhausted default|repeat] [--default-text TEXT]

or from a test: ``proc, url = spawn(script_json, log_jsonl, port_txt)`` (url ends in /v1).
In-process:

    with FakeOpenAIAPI([reply(None, tool_call("grep", {"pattern": "x"})), reply("done")]) as api:
        client = openai.OpenAI(api_key="test", base_url=api.url)

Endpoint: ``POST /v1/chat/completions``: JSON, or SSE (``chat.completion.chunk`` events, then
``data: [DONE]``) when the body has ``"stream": true``; a usage chunk is sent when
``stream_options.include_usage`` is true.

The script is a list of entries, consumed one per request:

- a reply: ``{"content": str | null, "tool_calls": [{"id", "name", "arguments"}],
  "finish_reason": ..., "usage": {"prompt_tokens", "completion_tokens", "cached_tokens"}}``;
  ``arguments`` is an object (sent as JSON text) or a string sent as is (to test bad JSON);
  several tool calls allowed. ``finish_reason`` defaults to ``tool_calls`` when there are
  tool calls, else ``stop``; unset usage is estimated (chars/4), cached_tokens defaults to 0.
- a fault: ``{"fault": "status", "status": 429|500|..., "retry_after": seconds, "message"}``
  (OpenAI's JSON error body), ``{"fault": "malformed"}`` (a 200 whose body is not JSON),
  ``{"fault": "hang"}`` (never answers; released by ``stop()``).
- any entry may carry ``"delay": seconds`` and ``"hold_until": path`` (answered only once
  that file exists; see ``ScriptedServer._hold``); in-process, an entry may be a callable
  ``fn(request_body) -> entry``.

When the script is exhausted the server answers ``exhausted="default"`` (a ``stop`` reply
with ``default_text``) or ``exhausted="repeat"`` (the last entry again).

Like the API, it answers 400 when an assistant message's tool_calls are not each answered by
a following ``tool`` message, or a ``tool`` message answers no such call, and when a
``response_format`` breaks the API's rules (see ``check_response_format``: the type, a
json_schema's name, and a strict schema's closed objects with every property required; a
json_object request whose messages never say "json"). The reply's content is the script's,
whatever the format asked for: a test scripts what a server would send. Every request is
kept in ``requests`` and written as one JSON line to the log file (headers without auth
values, the JSON body, arrival and finish times, the answer's status and kind).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from typing import Any

try:
    from .scripted_server import ScriptedHandler, ScriptedServer, serve_main
    from .scripted_server import spawn as _spawn
except ImportError:  # run as a script: python tests/fakes/openai_api.py
    from scripted_server import ScriptedHandler, ScriptedServer, serve_main
    from scripted_server import spawn as _spawn

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}
PATH = "/v1/chat/completions"


# ---- builders for script entries ----


def tool_call(name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        call["id"] = id
    return call


def reply(
    content: str | None = None,
    *tool_calls: dict[str, Any],
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    delay: float | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": content, "tool_calls": list(tool_calls)}
    for k, v in (("finish_reason", finish_reason), ("usage", usage), ("delay", delay)):
        if v is not None:
            entry[k] = v
    return entry


def error(status: int, retry_after: float | None = None, message: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"fault": "status", "status": status}
    if retry_after is not None:
        entry["retry_after"] = retry_after
    if message is not None:
        entry["message"] = message
    return entry


def malformed() -> dict[str, Any]:
    return {"fault": "malformed"}


def hang() -> dict[str, Any]:
    return {"fault": "hang"}


def estimate_tokens(obj: Any) -> int:
    s = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(s) // 4)


def check_tool_pairing(messages: list[Any]) -> str | None:
    """The API's rule, as its 400 message: the tool_calls of an assistant message are answered
    by the `tool` messages right after it, and a `tool` message answers one of them."""
    open_ids: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role == "tool":
            if msg.get("tool_call_id") not in open_ids:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    f"with 'tool_calls' (messages.[{i}].tool_call_id {msg.get('tool_call_id')!r})."
                )
            open_ids.discard(msg["tool_call_id"])
            continue
        if open_ids:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(sorted(open_ids))}"
            )
        if role == "assistant":
            open_ids = {c.get("id") for c in msg.get("tool_calls") or []}
    return None


NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _strict_schema_problem(schema: Any, context: tuple[str, ...] = ()) -> str | None:
    """The first rule of strict structured outputs that `schema` breaks, worded as the API
    words it: every object sets additionalProperties false and requires every property."""
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            return f"In context={context}, 'additionalProperties' is required to be supplied and to be false."
        props = schema.get("properties") or {}
        missing = [k for k in props if k not in (schema.get("required") or [])]
        if missing:
            return (
                f"In context={context}, 'required' is required to be supplied and to be an array including "
                f"every key in properties. Missing '{missing[0]}'."
            )
        for k, sub in props.items():
            if problem := _strict_schema_problem(sub, context + ("properties", k)):
                return problem
    if isinstance(schema.get("items"), dict):
        return _strict_schema_problem(schema["items"], context + ("items",))
    for key in ("anyOf", "$defs"):
        subs = schema.get(key)
        for k, sub in subs.items() if isinstance(subs, dict) else enumerate(subs or []):
            if problem := _strict_schema_problem(sub, context + (key, str(k))):
                return problem
    return None


def check_response_format(body: dict[str, Any]) -> tuple[str, str] | None:
    """The API's 400 for a bad ``response_format``, as (message, param); None when it is fine
    or absent. Types: text, json_object (the messages must mention JSON), json_schema
    ({"name", "schema", "strict"}: the name matches ^[a-zA-Z0-9_-]{1,64}$, the schema's root
    is an object, and a strict schema follows the strict rules)."""
    rf = body.get("response_format")
    if rf is None:
        return None
    kind = rf.get("type") if isinstance(rf, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        return (
            f"Invalid value: {kind!r}. Supported values are: 'json_object', 'json_schema', and 'text'.",
            "response_format.type",
        )
    if kind == "json_object":
        said = json.dumps([m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]).lower()
        if "json" not in said:
            return (
                "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
                "messages",
            )
        return None
    if kind == "json_schema":
        js = rf.get("json_schema")
        if not isinstance(js, dict):
            return "Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema"
        name = js.get("name")
        if name is None:
            return (
                "Missing required parameter: 'response_format.json_schema.name'.",
                "response_format.json_schema.name",
            )
        if not isinstance(name, str) or not NAME_RE.match(name):
            return (
                "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
                "that matches the pattern '^[a-zA-Z0-9_-]+$'.",
                "response_format.json_schema.name",
            )
        schema = js.get("schema") or {}
        if schema.get("type") != "object":
            return (
                f"Invalid schema for response_format {name!r}: schema must be a JSON Schema of 'type: \"object\"', "
                f"got 'type: \"{schema.get('type')}\"'.",
                "response_format",
            )
        if js.get("strict") and (problem := _strict_schema_problem(schema)):
            return f"Invalid schema for response_format {name!r}: {problem}", "response_format"
    return None


class FakeOpenAIAPI(ScriptedServer):
    """The fake server. Start with ``start()`` or ``with``; ``url`` is the base_url (ends in /v1)."""

    name = "fake openai api"
    url_suffix = "/v1"

    def completion_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == PATH]

    def default_entry(self) -> dict[str, Any]:
        return reply(self.default_text)

    def completion(self, entry: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """The ChatCompletion object for a reply entry, as the API returns it."""
        seq = next(self._ids)
        calls = []
        for k, c in enumerate(entry.get("tool_calls") or []):
            args = c.get("arguments", {})
            calls.append(
                {
                    "id": c.get("id") or f"call_fake{seq:04d}{k:02d}{uuid.uuid4().hex[:8]}",
                    "type": "function",
                    "function": {"name": c["name"], "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
            )
        message: dict[str, Any] = {"role": "assistant", "content": entry.get("content"), "refusal": None}
        if calls:
            message["tool_calls"] = calls
        u = dict(entry.get("usage") or {})
        prompt = u.get("prompt_tokens", estimate_tokens({k: body.get(k) for k in ("messages", "tools") if k in body}))
        completion = u.get("completion_tokens", estimate_tokens([entry.get("content") or "", calls]))
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": u.get("cached_tokens", 0), "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        return {
            "id": f"chatcmpl-fake{seq:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "gpt-fake"),
            "system_fingerprint": "fp_fake",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": entry.get("finish_reason") or ("tool_calls" if calls else "stop"),
                }
            ],
            "usage": usage,
        }


class _Handler(ScriptedHandler):
    server_version = "fake-openai-api"

    def _route(self, path: str, body: Any, record: dict[str, Any]) -> None:
        api = self.api
        if path != PATH:
            return self._error(record, 404, f"Invalid URL (POST {path})")
        if not isinstance(body, dict):
            return self._error(record, 400, "We could not parse the JSON body of your request.")
        for k in ("model", "messages"):
            if k not in body:
                return self._error(record, 400, f"Missing required parameter: '{k}'.")
        if api.validate and (problem := check_tool_pairing(body["messages"])):
            return self._error(record, 400, problem)
        if api.validate and (bad_format := check_response_format(body)):
            return self._error(record, 400, bad_format[0], param=bad_format[1])
        return self._answer(body, record, lambda entry: self._reply(record, entry, body))

    def _reply(self, record: dict[str, Any], entry: dict[str, Any], body: dict[str, Any]) -> None:
        completion = self.api.completion(entry, body)
        record["kind"] = "reply"
        record["reply"] = {
            "id": completion["id"],
            "finish_reason": completion["choices"][0]["finish_reason"],
            "usage": completion["usage"],
        }
        if body.get("stream"):
            return self._sse(record, _chunks(completion, bool((body.get("stream_options") or {}).get("include_usage"))))
        return self._send(record, 200, "application/json", json.dumps(completion).encode())

    def _error(
        self,
        record: dict[str, Any],
        status: int,
        message: str | None,
        extra: dict[str, str] | None = None,
        kind: str = "error",
        param: str | None = None,
    ) -> None:
        record["kind"] = kind
        etype = ERROR_TYPES.get(status, "server_error")
        body = {
            "error": {
                "message": message
                or {
                    429: "Rate limit reached for requests",
                    500: "The server had an error while processing your request.",
                }.get(status, etype),
                "type": etype,
                "param": param,
                "code": None,
            }
        }
        self._send(record, status, "application/json", json.dumps(body).encode(), extra)

    def _sse(self, record: dict[str, Any], chunks: list[dict[str, Any]], headers=None) -> None:
        self._stream(
            record,
            [f"data: {data}\n\n" for data in [json.dumps(c) for c in chunks] + ["[DONE]"]],
            *([headers] if headers is not None else []),
        )


def _chunks(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """The stream the API sends for `completion`: role, content pieces, tool-call pieces (by
    index: id and name first, then the arguments in parts), finish reason, usage."""
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta, finish=None, usage=None):
        c = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
        if include_usage:
            c["usage"] = usage
        return c

    msg, choice = completion["choices"][0]["message"], completion["choices"][0]
    out = [chunk({"role": "assistant", "content": ""})]
    text = msg.get("content") or ""
    out += [chunk({"content": text[j : j + 24]}) for j in range(0, len(text), 24)]
    for i, call in enumerate(msg.get("tool_calls") or []):
        out.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    ]
                }
            )
        )
        args = call["function"]["arguments"]
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": args[j : j + 16]}}]})
            for j in range(0, len(args), 16)
        ]
    out.append(chunk({}, finish=choice["finish_reason"]))
    if include_usage:
        out.append(dict(base, choices=[], usage=completion["usage"]))
    return out


FakeOpenAIAPI.handler = _Handler


def spawn(
    script: str | os.PathLike,
    log: str | os.PathLike,
    port_file: str | os.PathLike,
    *extra_args: str,
    timeout: float = 10.0,
) -> tuple[subprocess.Popen, str]:
    """Run this file as a separate process; returns (process, base_url ending in /v1)."""
    return _spawn(__file__, script, log, port_file, *extra_args, timeout=timeout, url_suffix="/v1")


def main(argv: list[str] | None = None) -> int:
    return serve_main(FakeOpenAIAPI, "Fake OpenAI chat-completions API for tests.", argv)


if __name__ == "__main__":
    raise SystemExit(main())
