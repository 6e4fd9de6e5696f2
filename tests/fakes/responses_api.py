"""A fake OpenAI Responses API for tests, speaking the real wire protocol: what the Codex
CLI calls (its custom provider with ``wire_api = "responses"``).

Stdlib only, so it also runs as a separate process next to a Snakemake run:

    python tests/fakes/responses_api.py --script script.json --log requests.jsonl \
        --port-file port.txt [--port 0] [--exhausted default|repeat] [--default-text TEXT]

or from a test: ``proc, url = spawn(script_json, log_jsonl, port_txt)`` (url ends in /v1).
In-process:

    with FakeResponsesAPI([reply(None, tool_call("mcp__git__git_log", {})), reply("done")]) as api:
        ...  # base_url = api.url

Endpoint: ``POST /v1/responses``: JSON, or server-sent events when the body has
``"stream": true`` (``response.created``, ``response.in_progress``, per output item
``response.output_item.added`` / ``response.output_text.delta`` or
``response.function_call_arguments.delta`` / ``response.output_item.done``, then
``response.completed`` with the usage, or ``response.incomplete`` for a reply cut at
``max_output_tokens``). ``GET /v1/models`` lists the models the requests named. As on the
real API, the same base URL also answers ``POST /v1/chat/completions`` (from the same script,
as tests/fakes/openai_api.py answers it), so one model can run under hosts speaking either
API (codex, opencode).

The script is a list of entries, consumed one per ``/v1/responses`` request:

- a reply: ``{"content": str | null, "tool_calls": [{"id", "name", "arguments"}],
  "usage": {"input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens"},
  "incomplete": bool}``: a message item with the text, then one ``function_call`` item per
  tool call (``arguments`` an object sent as JSON text, or a string sent as is); unset usage
  is estimated (chars/4), cached and reasoning tokens default to 0.
- a fault: ``{"fault": "status", "status": 429|500|..., "retry_after": seconds, "message"}``
  (OpenAI's JSON error body), ``{"fault": "failed", "message"}`` (a stream that ends in
  ``response.failed``), ``{"fault": "hang"}`` (never answers; released by ``stop()``).
- any entry may carry ``"delay": seconds``; in-process, an entry may be a callable
  ``fn(request_body) -> entry``.

When the script is exhausted the server answers ``exhausted="default"`` (a text reply
``default_text``) or ``exhausted="repeat"`` (the last entry again).

Like the API, it answers 400 when the input holds a ``function_call_output`` whose
``call_id`` no earlier ``function_call`` of the input made, or a ``function_call`` that no
output answers (see ``check_call_pairing``). Every request is kept in ``requests`` and
written as one JSON line to the log file (see scripted_server).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from typing import Any

try:
    from . import openai_api
    from .scripted_server import ScriptedHandler, ScriptedServer, serve_main
    from .scripted_server import spawn as _spawn
except ImportError:  # run as a script: python tests/fakes/responses_api.py
    import openai_api
    from scripted_server import ScriptedHandler, ScriptedServer, serve_main
    from scripted_server import spawn as _spawn

PATH = "/v1/responses"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


# ---- builders for script entries ----


def tool_call(
    name: str, arguments: dict[str, Any] | str | None = None, id: str | None = None, namespace: str | None = None
) -> dict[str, Any]:
    """A function call; `namespace` for a tool offered inside a namespace (Codex offers each
    MCP server's tools as namespace ``mcp__<server>``, each tool by the server's own name)."""
    call: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        call["id"] = id
    if namespace is not None:
        call["namespace"] = namespace
    return call


def reply(
    content: str | None = None,
    *tool_calls: dict[str, Any],
    usage: dict[str, int] | None = None,
    incomplete: bool = False,
    delay: float | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": content, "tool_calls": list(tool_calls)}
    if usage is not None:
        entry["usage"] = usage
    if incomplete:
        entry["incomplete"] = True
    if delay is not None:
        entry["delay"] = delay
    return entry


def error(status: int, retry_after: float | None = None, message: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"fault": "status", "status": status}
    if retry_after is not None:
        entry["retry_after"] = retry_after
    if message is not None:
        entry["message"] = message
    return entry


def failed(message: str = "The model failed to generate a response.") -> dict[str, Any]:
    return {"fault": "failed", "message": message}


def hang() -> dict[str, Any]:
    return {"fault": "hang"}


def estimate_tokens(obj: Any) -> int:
    s = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(s) // 4)


def check_call_pairing(items: Any) -> str | None:
    """The API's rule, as its 400 message: every function_call_output answers a function_call
    made earlier in the input, and every function_call is answered."""
    if not isinstance(items, list):
        return None
    made: set[str] = set()
    answered: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            made.add(item.get("call_id"))
        elif item.get("type") == "function_call_output":
            if item.get("call_id") not in made:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            answered.add(item["call_id"])
    if missing := sorted(x for x in made - answered if x):
        return f"No tool output found for function call {missing[0]}."
    return None


def function_tool_names(body: dict[str, Any]) -> list[str]:
    """The names of the function tools a request offered the model (what Codex calls the
    server's tools, and its own)."""
    out = []
    for t in body.get("tools") or []:
        if isinstance(t, dict) and t.get("type") == "function":
            out.append(t.get("name"))
        elif isinstance(t, dict) and t.get("type") == "namespace":  # tools grouped under a namespace
            out += [f"{t.get('name')}{s.get('name')}" for s in t.get("tools") or [] if isinstance(s, dict)]
    return out


class FakeResponsesAPI(ScriptedServer):
    """The fake server. Start with ``start()`` or ``with``; ``url`` is the base_url (ends in /v1)."""

    name = "fake responses api"
    url_suffix = "/v1"

    def response_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == PATH]

    def completion_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"] == openai_api.PATH]

    completion = openai_api.FakeOpenAIAPI.completion  # a ChatCompletion of a reply entry

    def default_entry(self) -> dict[str, Any]:
        return reply(self.default_text)

    def response(self, entry: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """The Response object for a reply entry, as the API returns it."""
        seq = next(self._ids)
        output: list[dict[str, Any]] = []
        if entry.get("content"):
            output.append(
                {
                    "type": "message",
                    "id": f"msg_fake{seq:04d}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": entry["content"], "annotations": []}],
                }
            )
        for k, c in enumerate(entry.get("tool_calls") or []):
            args = c.get("arguments", {})
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_fake{seq:04d}{k:02d}",
                    "status": "completed",
                    "call_id": c.get("id") or f"call_fake{seq:04d}{k:02d}{uuid.uuid4().hex[:8]}",
                    "name": c["name"],
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                }
            )
            if c.get("namespace"):
                output[-1]["namespace"] = c["namespace"]
        u = dict(entry.get("usage") or {})
        inp = u.get("input_tokens", estimate_tokens({k: body.get(k) for k in ("input", "tools", "instructions")}))
        out = u.get("output_tokens", estimate_tokens([entry.get("content") or "", entry.get("tool_calls") or []]))
        usage = {
            "input_tokens": inp,
            "input_tokens_details": {"cached_tokens": u.get("cached_tokens", 0)},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": u.get("reasoning_tokens", 0)},
            "total_tokens": inp + out,
        }
        incomplete = bool(entry.get("incomplete"))
        return {
            "id": f"resp_fake{seq:06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "incomplete" if incomplete else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
            "model": body.get("model", "gpt-fake"),
            "output": output,
            "usage": usage,
            "error": None,
        }


class _Handler(ScriptedHandler):
    server_version = "fake-responses-api"

    def _route(self, path: str, body: Any, record: dict[str, Any]) -> None:
        api = self.api
        if self.command == "GET" and path == "/v1/models":
            names = sorted(
                {r["body"].get("model") for r in api.response_requests() if isinstance(r["body"], dict)} - {None}
            )
            data = {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "fake"} for n in names]}
            return self._send(record, 200, "application/json", json.dumps(data).encode())
        if path == openai_api.PATH and isinstance(body, dict) and "messages" in body:
            return self._chat(record, body)
        if path != PATH:
            return self._error(record, 404, f"Invalid URL ({self.command} {path})")
        if not isinstance(body, dict):
            return self._error(record, 400, "We could not parse the JSON body of your request.")
        for k in ("model", "input"):
            if k not in body:
                return self._error(record, 400, f"Missing required parameter: '{k}'.")
        if api.validate and (problem := check_call_pairing(body["input"])):
            return self._error(record, 400, problem, param="input")
        return self._answer(
            body,
            record,
            lambda entry: self._reply(record, entry, body),
            {"failed": lambda entry: self._failed(record, entry, body)},
        )

    def _failed(self, record: dict[str, Any], entry: dict[str, Any], body: dict[str, Any]) -> None:
        record["kind"] = "failed"
        resp = self.api.response(reply(None), body)
        resp.update(status="failed", output=[], error={"code": "server_error", "message": entry.get("message")})
        return self._sse(
            record,
            [
                {"type": "response.created", "response": dict(resp, status="in_progress")},
                {"type": "response.failed", "response": resp},
            ],
        )

    def _reply(self, record: dict[str, Any], entry: dict[str, Any], body: dict[str, Any]) -> None:
        resp = self.api.response(entry, body)
        record["kind"] = "reply"
        record["reply"] = {
            "id": resp["id"],
            "status": resp["status"],
            "usage": resp["usage"],
            "tool_calls": [o["name"] for o in resp["output"] if o["type"] == "function_call"],
        }
        if body.get("stream"):
            return self._sse(record, _events(resp))
        return self._send(record, 200, "application/json", json.dumps(resp).encode())

    def _chat(self, record: dict[str, Any], body: dict[str, Any]) -> None:
        """A chat completion (status faults and hangs as for /responses; the chat fake has the rest)."""
        api = self.api
        index, entry = api._take_entry(body)
        record["script_index"] = index
        if entry.get("fault") == "hang":
            record["kind"] = "hang"
            api._stopping.wait()
            self.close_connection = True
            return
        if entry.get("fault"):
            return self._error(record, int(entry.get("status", 500)), entry.get("message"), kind="status")
        completion = api.completion(entry, body)
        record["kind"] = "reply"
        if not body.get("stream"):
            return self._send(record, 200, "application/json", json.dumps(completion).encode())
        chunks = openai_api._chunks(completion, bool((body.get("stream_options") or {}).get("include_usage")))
        openai_api._Handler._sse(self, record, chunks, (("transfer-encoding", "chunked"),))

    _error = openai_api._Handler._error

    def _sse(self, record: dict[str, Any], events: list[dict[str, Any]]) -> None:
        self._stream(
            record,
            [
                f"event: {ev['type']}\ndata: {json.dumps(dict(ev, sequence_number=n))}\n\n"
                for n, ev in enumerate(events)
            ],
        )


def _events(resp: dict[str, Any]) -> list[dict[str, Any]]:
    """The stream the API sends for `resp`: created, in progress, each output item added,
    its text or arguments in pieces, done, then completed (or incomplete) with the usage."""
    start = dict(resp, status="in_progress", output=[], usage=None, incomplete_details=None)
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": start},
        {"type": "response.in_progress", "response": start},
    ]
    for i, item in enumerate(resp["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": dict(item, status="in_progress", content=[]),
                }
            )
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "part": part,
                }
            )
            out += [
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "delta": text[j : j + 24],
                }
                for j in range(0, len(text), 24)
            ]
            out.append(
                {
                    "type": "response.output_text.done",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "text": text,
                }
            )
            out.append(
                {
                    "type": "response.content_part.done",
                    "item_id": item["id"],
                    "output_index": i,
                    "content_index": 0,
                    "part": dict(part, text=text),
                }
            )
        else:
            args = item["arguments"]
            out.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": dict(item, status="in_progress", arguments=""),
                }
            )
            out += [
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": i,
                    "delta": args[j : j + 16],
                }
                for j in range(0, len(args), 16)
            ]
            out.append(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": i,
                    "arguments": args,
                }
            )
        out.append({"type": "response.output_item.done", "output_index": i, "item": item})
    out.append(
        {"type": "response.incomplete" if resp["status"] == "incomplete" else "response.completed", "response": resp}
    )
    return out


FakeResponsesAPI.handler = _Handler


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
    return serve_main(FakeResponsesAPI, "Fake OpenAI Responses API for tests.", argv)


if __name__ == "__main__":
    raise SystemExit(main())
