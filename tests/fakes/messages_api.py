"""A fake Anthropic Messages API for tests, speaking the real wire protocol.

Stdlib only, so it also runs as a separate process next to a Snakemake run:

    python tests/fakes/messages_api.py --script script.json --log requests.jsonl \
        --port-file port.txt [--port 0] [--exhausted default|repeat] [--default-text TEXT] [--prompt-cache]

or from a test: ``proc, url = spawn(script_json, log_jsonl, port_txt)``. In-process:

    with FakeMessagesAPI([reply(tool_use("grep", {"pattern": "x"})), reply(text("done"))]) as api:
        client = anthropic.Anthropic(api_key="test", base_url=api.url)

Endpoints: ``POST /v1/messages`` (``?beta=true`` too; JSON, or SSE when the body has
``"stream": true``) and ``POST /v1/messages/count_tokens`` (chars/4 estimate).

The script is a list of entries, consumed one per ``/v1/messages`` request:

- a reply: ``{"content": [blocks], "stop_reason": ..., "usage": {...}}``; blocks are
  ``{"type": "text", "text"}`` or ``{"type": "tool_use", "id", "name", "input"}`` (several
  allowed, zero text blocks allowed). ``stop_reason`` defaults to ``tool_use`` when a
  tool_use block is present, else ``end_turn``. With ``prompt_cache`` on and no scripted
  input side (``usage`` naming none of ``input_tokens`` and the cache fields) the input side
  comes from the emulated prompt cache (below: reads, writes and uncached input by the
  documented rules); otherwise unset input fields are estimated (chars/4) and cache fields
  default to 0.
  Unset ``output_tokens`` is estimated (chars/4 of the content).
- a fault: ``{"fault": "status", "status": 429|529|500|..., "retry_after": seconds,
  "message": ...}`` (the API's JSON error body), ``{"fault": "malformed", "content_type": ...}``
  (a 200 whose body is not JSON, sent as application/json unless told; for a stream, an
  SSE event whose data is not JSON),
  ``{"fault": "hang"}`` (never answers; released by ``stop()``).
- any entry may carry ``"delay": seconds`` (a slow reply or slow fault) and
  ``"hold_until": path`` (answered only once that file exists, so a test can hold a run at
  a known point and release it; each held request adds a line to ``<path>.held``).
- a callable ``fn(request_body) -> entry`` (in-process only), e.g. to echo tool results.

Prompt caching is emulated per server with ``prompt_cache=True`` (``--prompt-cache``; off
by default, so existing scripts keep cache fields 0; rules and token counts at
``PromptCache``): a request whose prefix up to a ``cache_control`` breakpoint was seen within
the entry's lifetime (5 minutes from its last use, or ``"ttl": "1h"``) is billed as a cache
read, the rest up to the last breakpoint as a cache write, the rest as input. Time comes from
``clock`` (default ``time.monotonic``), so a test can expire entries.

When the script is exhausted the server answers ``exhausted="default"`` (an ``end_turn``
text ``default_text``) or ``exhausted="repeat"`` (the last entry again, whatever it is).

Every request is appended to ``requests`` (in arrival order) and, when finished, written as
one JSON line to the log file: method, path, headers without the auth values
(``auth_present`` says whether a key was sent), the JSON body, ``arrived`` and ``finished``
(epoch seconds), the answer's status and kind. ``max_in_flight`` is the highest number of
requests being served at once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import threading
import time
import uuid
from typing import Any, Callable

try:
    from .scripted_server import Entry, ScriptedHandler, ScriptedServer, serve_main
    from .scripted_server import spawn as _spawn
except ImportError:  # run as a script: python tests/fakes/messages_api.py
    from scripted_server import Entry, ScriptedHandler, ScriptedServer, serve_main
    from scripted_server import spawn as _spawn


# The API's error "type" for each status it uses (docs: "Errors", HTTP errors table).
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


# ---- builders for script entries (plain dicts, so a script can also be a JSON file) ----


def text(s: str) -> dict[str, Any]:
    return {"type": "text", "text": s}


def tool_use(name: str, input: dict[str, Any] | None = None, id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": input or {}}
    if id is not None:
        block["id"] = id
    return block


def reply(
    *blocks: dict[str, Any],
    stop_reason: str | None = None,
    usage: dict[str, int] | None = None,
    delay: float | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": list(blocks)}
    if stop_reason is not None:
        entry["stop_reason"] = stop_reason
    if usage is not None:
        entry["usage"] = usage
    if delay is not None:
        entry["delay"] = delay
    return entry


def error(
    status: int, retry_after: float | None = None, message: str | None = None, delay: float | None = None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"fault": "status", "status": status}
    if retry_after is not None:
        entry["retry_after"] = retry_after
    if message is not None:
        entry["message"] = message
    if delay is not None:
        entry["delay"] = delay
    return entry


def malformed(content_type: str = "application/json") -> dict[str, Any]:
    return {"fault": "malformed", "content_type": content_type}


def hang() -> dict[str, Any]:
    return {"fault": "hang"}


def estimate_tokens(obj: Any) -> int:
    """Crude token estimate: characters of the compact JSON (or of the string) / 4, at least 1."""
    s = obj if isinstance(obj, str) else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(s) // 4)


def _prompt_tokens(body: dict[str, Any]) -> int:
    return estimate_tokens({k: body.get(k) for k in ("system", "tools", "messages") if k in body})


# ---- prompt caching, emulated (docs: "Prompt caching") ----
#
# The prompt is a sequence of blocks in the order tools -> system -> messages: each tool
# definition, each system block (a string system is one text block), each content block of
# each message (a string content is one text block; a block's identity includes its message's
# role and whether it opens the message). A block costs max(1, len(compact JSON without
# cache_control) // 4) tokens. A breakpoint is a block with `cache_control` (a top-level
# `cache_control` puts one on the last block); more than 4 is the API's 400. The cache key of
# a position is a hash chain of the model and every block up to it.
#
# Per request: the lookback checks, for each breakpoint from the last, its own position and
# the 19 before it (20 positions) for a live entry; the longest hit is read
# (`cache_read_input_tokens` = the tokens up to it) and refreshed. Every breakpoint after it
# whose prefix has at least the model's minimum cacheable length gets an entry; the tokens
# from the hit to the last such breakpoint are the write (`cache_creation_input_tokens`,
# split into 5m and 1h by the ttl of the breakpoint closing each segment), the rest is
# `input_tokens`. An entry lives `ttl` (5 minutes, or 1 hour with `"ttl": "1h"`) from its
# last write or read. A request with no breakpoint keeps the whole-prompt estimate
# (`_prompt_tokens`) as `input_tokens`.

LOOKBACK = 20
INPUT_SIDE = {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "cache_creation"}
MAX_BREAKPOINTS = 4
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
# Minimum cacheable prompt length (tokens) by model-name prefix, longest match wins; else 1024.
MIN_CACHEABLE = {
    "claude-opus-5": 512,
    "claude-fable-5": 512,
    "claude-mythos-5": 512,
    "claude-opus-4-8": 1024,
    "claude-sonnet-5": 1024,
    "claude-sonnet-4": 1024,
    "claude-opus-4-7": 2048,
    "claude-opus-4-6": 4096,
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "claude-haiku-3": 2048,
    "claude-3-haiku": 2048,
}
DEFAULT_MIN_CACHEABLE = 1024


def min_cacheable_tokens(model: str) -> int:
    hits = [p for p in MIN_CACHEABLE if model.startswith(p)]
    return MIN_CACHEABLE[max(hits, key=len)] if hits else DEFAULT_MIN_CACHEABLE


def prompt_blocks(body: dict[str, Any]) -> list[tuple[Any, dict[str, Any] | None]]:
    """The request's prompt as (block identity, cache_control or None), tools -> system -> messages."""

    def strip(b: Any) -> tuple[Any, Any]:
        if isinstance(b, dict):
            return {k: v for k, v in b.items() if k != "cache_control"}, b.get("cache_control")
        return b, None

    out: list[tuple[Any, dict[str, Any] | None]] = []
    for tool in body.get("tools") or []:
        out.append(strip(tool))
    system = body.get("system")
    for b in [{"type": "text", "text": system}] if isinstance(system, str) and system else system or []:
        out.append(strip(b))
    for msg in body.get("messages") or []:
        if not isinstance(msg, dict):
            continue
        content = msg.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for k, b in enumerate(blocks):
            ident, cc = strip(b)
            out.append(({"role": msg.get("role"), "opens": k == 0, "block": ident}, cc))
    top = body.get("cache_control")
    if isinstance(top, dict) and out:
        out[-1] = (out[-1][0], top)
    return out


def block_tokens(ident: Any) -> int:
    return estimate_tokens(
        ident["block"] if isinstance(ident, dict) and "block" in ident and "opens" in ident else ident
    )


def count_breakpoints(body: dict[str, Any]) -> int:
    return sum(cc is not None for _, cc in prompt_blocks(body))


class PromptCache:
    """The fake's prompt cache: live entries by prefix hash, with expiry on ``clock``."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.entries: dict[str, tuple[float, float]] = {}  # hash -> (expires_at, ttl seconds)
        self._lock = threading.Lock()

    def bill(self, body: dict[str, Any]) -> dict[str, int]:
        """The input side of the usage for ``body``, updating the cache."""
        blocks = prompt_blocks(body)
        bps = [i for i, (_, cc) in enumerate(blocks) if cc is not None]
        if not bps:
            return {
                "input_tokens": _prompt_tokens(body),
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
                "ephemeral_5m_input_tokens": 0,
                "ephemeral_1h_input_tokens": 0,
            }
        tokens = [block_tokens(ident) for ident, _ in blocks]
        cum = list(itertools.accumulate(tokens))
        h = hashlib.sha256(json.dumps(body.get("model", "")).encode())
        keys = []
        for ident, _ in blocks:
            h.update(json.dumps(ident, sort_keys=True, separators=(",", ":")).encode())
            keys.append(h.copy().hexdigest())
        minimum = min_cacheable_tokens(str(body.get("model", "")))
        ttl = {
            i: TTL_SECONDS.get(str(blocks[i][1].get("ttl", "5m")), 300.0) if isinstance(blocks[i][1], dict) else 300.0
            for i in bps
        }
        with self._lock:
            now = self.clock()
            live = {k for k, (exp, _) in self.entries.items() if exp > now}
            hit = -1
            for bp in reversed(bps):
                found = next((p for p in range(bp, max(-1, bp - LOOKBACK), -1) if keys[p] in live), None)
                if found is not None:
                    hit = max(hit, found)
                    break
            if hit >= 0:  # a read refreshes the entry it hit
                self.entries[keys[hit]] = (now + self.entries[keys[hit]][1], self.entries[keys[hit]][1])
            writes = [bp for bp in bps if bp > hit and cum[bp] >= minimum]
            split = {300.0: 0, 3600.0: 0}
            prev = hit
            for bp in writes:
                split[ttl[bp]] = split.get(ttl[bp], 0) + cum[bp] - (cum[prev] if prev >= 0 else 0)
                self.entries[keys[bp]] = (now + ttl[bp], ttl[bp])
                prev = bp
        read = cum[hit] if hit >= 0 else 0
        write = sum(split.values())
        return {
            "input_tokens": cum[-1] - read - write,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "ephemeral_5m_input_tokens": split[300.0],
            "ephemeral_1h_input_tokens": split[3600.0],
        }


def check_tool_pairing(messages: list[Any]) -> str | None:
    """The API's rule: every tool_use of an assistant turn is answered by a tool_result in the
    very next (user) turn, and every tool_result answers a tool_use of the turn before it.
    Returns the API's 400 message, or None."""
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant" or not isinstance(msg.get("content"), list):
            continue
        ids = [b.get("id") for b in msg["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if not ids:
            continue
        nxt = messages[i + 1] if i + 1 < len(messages) else None
        content = nxt.get("content") if isinstance(nxt, dict) else None
        answered = (
            {b.get("tool_use_id") for b in content if isinstance(b, dict) and b.get("type") == "tool_result"}
            if isinstance(content, list)
            else set()
        )
        missing = [x for x in ids if x not in answered]
        if missing and nxt is not None:
            return (
                f"messages.{i + 1}: `tool_use` ids were found without `tool_result` blocks "
                f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                f"corresponding `tool_result` block in the next message."
            )
    for i, msg in enumerate(messages):
        content = msg.get("content") if isinstance(msg, dict) else None
        if not isinstance(content, list):
            continue
        prev = messages[i - 1] if i > 0 and isinstance(messages[i - 1], dict) else {}
        prev_ids = (
            {b.get("id") for b in prev.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_use"}
            if isinstance(prev.get("content"), list)
            else set()
        )
        for j, b in enumerate(content):
            if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") not in prev_ids:
                return (
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                    f"corresponding `tool_use` block in the previous message."
                )
    return None


class FakeMessagesAPI(ScriptedServer):
    """The fake Messages API. Start with ``start()`` or ``with``; ``url`` is the base_url."""

    name = "fake messages api"

    def __init__(
        self,
        script: list[Entry] | None = None,
        *,
        require_auth: bool = False,
        prompt_cache: bool = False,
        clock: Callable[[], float] = time.monotonic,
        **kwargs: Any,
    ) -> None:
        super().__init__(script, **kwargs)
        self.require_auth = require_auth
        # prompt caching, emulated (see PromptCache.bill); off: cache fields 0, as scripts expect
        self.cache = PromptCache(clock) if prompt_cache else None

    def message_requests(self) -> list[dict[str, Any]]:
        """Logged requests to /v1/messages (not count_tokens)."""
        return [r for r in self.requests if r["path"] == "/v1/messages"]

    def default_entry(self) -> dict[str, Any]:
        return reply(text(self.default_text), stop_reason="end_turn")

    def _message(self, entry: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        """The full Message object for a reply entry, as the API returns it."""
        seq = next(self._ids)
        content = []
        for k, block in enumerate(entry.get("content", [])):
            block = dict(block)
            if block.get("type") == "tool_use":
                block.setdefault("id", f"toolu_fake{seq:04d}{k:02d}{uuid.uuid4().hex[:8]}")
                block.setdefault("input", {})
            content.append(block)
        has_tool = any(b.get("type") == "tool_use" for b in content)
        billed = self.cache.bill(body) if self.cache else None  # updated whoever sets the usage
        usage = dict(entry.get("usage") or {})
        if billed is None or set(usage) & INPUT_SIDE:  # a scripted input side: unset fields estimated, cache fields 0
            usage.setdefault("input_tokens", _prompt_tokens(body))
            usage.setdefault("cache_creation_input_tokens", 0)
            usage.setdefault("cache_read_input_tokens", 0)
            usage.setdefault(
                "cache_creation",
                {"ephemeral_5m_input_tokens": usage["cache_creation_input_tokens"], "ephemeral_1h_input_tokens": 0},
            )
        else:
            usage.update(
                {k: billed[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")}
            )
            usage["cache_creation"] = {k: billed[k] for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")}
        usage.setdefault("output_tokens", estimate_tokens(content) if content else 1)
        usage.setdefault("service_tier", "standard")
        return {
            "id": f"msg_fake{seq:06d}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "content": content,
            "stop_reason": entry.get("stop_reason") or ("tool_use" if has_tool else "end_turn"),
            "stop_sequence": None,
            "usage": usage,
        }


class _Handler(ScriptedHandler):
    server_version = "fake-messages-api"
    request_id_header = "request-id"
    unknown_fault_hint = "; use status, malformed or hang"

    def _route(self, path: str, body: Any, record: dict[str, Any]) -> None:
        api = self.api
        if self.command != "POST" or path not in ("/v1/messages", "/v1/messages/count_tokens"):
            return self._error(record, 404, f"{self.command} {path}: not found")
        if api.require_auth and not record["auth_present"]:
            return self._error(record, 401, "x-api-key header is required")
        if not isinstance(body, dict):
            return self._error(record, 400, "There was an issue with the request body: not a JSON object")
        missing = [
            k for k in ("model", "messages") + (("max_tokens",) if path == "/v1/messages" else ()) if k not in body
        ]
        if missing:
            return self._error(record, 400, f"{missing[0]}: Field required")
        if api.validate and (problem := check_tool_pairing(body["messages"])):
            return self._error(record, 400, problem)
        if path == "/v1/messages/count_tokens":
            record["kind"] = "count_tokens"
            return self._json(record, 200, {"input_tokens": _prompt_tokens(body)})

        if (n := count_breakpoints(body)) > MAX_BREAKPOINTS:
            return self._error(
                record, 400, f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {n}."
            )
        return self._answer(
            body,
            record,
            lambda entry: self._reply(record, entry, body),
            {"malformed": lambda entry: self._malformed(record, entry, body)},
        )

    def _retry_after(self, seconds: Any) -> str:
        return _num(seconds)

    def _malformed(self, record: dict[str, Any], entry: dict[str, Any], body: dict[str, Any]) -> None:
        record["kind"] = "malformed"
        if body.get("stream"):
            return self._sse(record, [("message_start", None)], malformed=True)
        return self._send(
            record,
            200,
            entry.get("content_type", "application/json"),
            b"<html>upstream proxy error: this is not JSON</html>",
        )

    def _reply(self, record: dict[str, Any], entry: dict[str, Any], body: dict[str, Any]) -> None:
        message = self.api._message(entry, body)
        record["kind"] = "reply"
        record["reply"] = {"id": message["id"], "stop_reason": message["stop_reason"], "usage": message["usage"]}
        if body.get("stream"):
            return self._sse(record, _stream_events(message))
        return self._json(record, 200, message)

    def _error(
        self,
        record: dict[str, Any],
        status: int,
        message: str | None,
        extra: dict[str, str] | None = None,
        kind: str = "error",
    ) -> None:
        etype = ERROR_TYPES.get(status, "api_error")
        record["kind"] = kind
        self._json(
            record,
            status,
            {
                "type": "error",
                "error": {
                    "type": etype,
                    "message": message
                    or {
                        "rate_limit_error": "Number of request tokens has exceeded your per-minute rate limit",
                        "overloaded_error": "Overloaded",
                        "api_error": "Internal server error",
                    }.get(etype, etype),
                },
                "request_id": f"req_fake{uuid.uuid4().hex[:20]}",
            },
            extra,
        )

    def _sse(self, record: dict[str, Any], events: list[tuple[str, Any]], malformed: bool = False) -> None:
        self._stream(
            record,
            [f"event: {name}\ndata: {'{not json' if malformed else json.dumps(data)}\n\n" for name, data in events],
            (
                ("cache-control", "no-cache"),
                ("transfer-encoding", "chunked"),
                ("request-id", f"req_fake{uuid.uuid4().hex[:20]}"),
            ),
        )


def _num(x: Any) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _stream_events(message: dict[str, Any]) -> list[tuple[str, Any]]:
    """The SSE events the API sends for ``message``, in order (docs: "Streaming Messages")."""
    usage = message["usage"]
    start_usage = dict(usage, output_tokens=1)  # message_start carries the input side only
    start = dict(message, content=[], stop_reason=None, stop_sequence=None, usage=start_usage)
    events: list[tuple[str, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("ping", {"type": "ping"}),
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            arg = json.dumps(block.get("input", {}))
            pieces = [arg[j : j + 16] for j in range(0, len(arg), 16)]
            deltas = [{"type": "input_json_delta", "partial_json": ""}] + [
                {"type": "input_json_delta", "partial_json": p} for p in pieces
            ]
        elif block["type"] == "text":
            head = {"type": "text", "text": ""}
            s = block.get("text", "")
            deltas = [{"type": "text_delta", "text": s[j : j + 24]} for j in range(0, len(s), 24)]
        else:  # any other block type is sent whole
            head, deltas = block, []
        events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": head}))
        for d in deltas:
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {
                    k: usage[k]
                    for k in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                },
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


FakeMessagesAPI.handler = _Handler


def spawn(
    script: str | os.PathLike,
    log: str | os.PathLike,
    port_file: str | os.PathLike,
    *extra_args: str,
    timeout: float = 10.0,
) -> tuple[subprocess.Popen, str]:
    """Run this file as a separate process; returns (process, base_url) once it listens."""
    return _spawn(__file__, script, log, port_file, *extra_args, timeout=timeout)


def main(argv: list[str] | None = None) -> int:
    import functools
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    cache = "--prompt-cache" in argv  # emulate prompt caching (FakeMessagesAPI(prompt_cache=True))
    argv = [a for a in argv if a != "--prompt-cache"]
    server = functools.partial(FakeMessagesAPI, prompt_cache=True) if cache else FakeMessagesAPI
    return serve_main(server, "Fake Anthropic Messages API for tests (--prompt-cache: emulate prompt caching).", argv)


if __name__ == "__main__":
    raise SystemExit(main())
