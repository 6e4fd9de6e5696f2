"""The model API through a key-injecting proxy: the API key never enters a sandbox.

A CLI host (claude-code, codex, opencode) must call the model API, so it runs with the
network; and it starts the server under test inside its own sandbox, where the server could
read the CLI's /proc/<pid>/environ. So the CLI never gets the key: it gets a per-trial
stand-in token and a base URL pointing at this proxy on 127.0.0.1, which runs in the harness
(outside every sandbox), drops the stand-in, adds the real key (`x-api-key` for the
Messages API, `Authorization: Bearer` for OpenAI's APIs), and forwards the request to the
real API (the model's `base_url`, or the provider's public one), streaming the answer back
as it comes (server-sent events included).

The proxy also sees every model call, so it counts them for the hosts whose CLI reports no
count (`statuses`: the upstream status of each request, in order) and enforces a step's
`max_turns` for a CLI that has no such option: once `limit` calls have succeeded, the next
request is refused (429, never forwarded) and `limit_hit` is set, so the host stops the CLI;
likewise a step's `max_failures` failed calls in a row (the model's retries spent) set
`gave_up`, for a CLI that would otherwise retry without end (opencode).

When the upstream cannot be reached (no route, a refused connection, a name that does not
resolve), the proxy answers the CLI 502, which the CLI reports as it sees it: a bad gateway at
127.0.0.1 ("check your inference gateway"), the proxy's own address. So the proxy keeps why
(`unreachable_in_step`) and its upstream (`upstream`), for the host to record what happened
(hosts.cli.unreachable_detail): the model API could not be reached.

The proxy is also the last line of the budget. A server shares its CLI's sandbox and can
find the proxy's address there, so it could send model calls of its own, at the user's cost.
So the proxy holds the whole trial to what its limits allow, whoever calls: at most
`trial_calls` successful model calls (steps x max_turns: what the budget reserved for the
trial, cost.plan.upper_bound_usd), each asking for at most `reply_cap` output tokens (a
larger `max_tokens`, `max_output_tokens` or `max_completion_tokens` is lowered to it). A call
past `trial_calls` is refused (429, never forwarded) and sets `trial_limit_hit`; the host
records the trial as `budget_exceeded` (hosts.cli.proxy_outcome).

What a hostile server can still do under this host: spend, within the trial's limits, calls
the agent would have had; what it can no longer do: read or send away the key, or spend past
what the trial was allowed.
"""

from __future__ import annotations

import http.client
import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DEFAULT_UPSTREAM = {"x-api-key": "https://api.anthropic.com", "bearer": "https://api.openai.com/v1"}
# Not forwarded: hop-by-hop headers, and whatever the client says about credentials.
DROP = {
    "host",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "te",
    "trailer",
    "content-length",
    "x-api-key",
    "authorization",
}
# The output cap of a request in the Messages, Responses and Chat Completions APIs.
OUTPUT_CAP_FIELDS = ("max_tokens", "max_output_tokens", "max_completion_tokens")


class KeyProxy:
    """`with KeyProxy(upstream, key) as proxy:` serves on `proxy.url`; clients send
    `proxy.token` as their key (any value works: it is replaced, never checked)."""

    def __init__(
        self,
        upstream: str | None,
        key: str,
        auth: str = "x-api-key",
        set_fields: dict | None = None,
        trial_calls: int | None = None,
        reply_cap: int | None = None,
    ):
        if auth not in DEFAULT_UPSTREAM:
            raise ValueError(f"auth must be one of {sorted(DEFAULT_UPSTREAM)}, not {auth!r}")
        u = urlsplit(upstream or DEFAULT_UPSTREAM[auth])
        self.scheme, self.netloc = u.scheme, u.netloc
        self.base_path = u.path.rstrip("/")
        self.upstream = f"{u.scheme}://{u.netloc}{self.base_path}"  # where requests go, as named to the user
        self.key, self.auth, self.set_fields = key, auth, dict(set_fields or {})
        self.token = "mcptrials-proxy-" + secrets.token_hex(8)
        self.requests = 0
        self.statuses: list[int] = []  # upstream status per forwarded request (502: unreachable)
        self.unreachable: dict[int, str] = {}  # index in statuses -> why the upstream was not reached
        self.step_first = 0  # index in statuses where the step's calls begin
        self.limit: int | None = None  # successful calls allowed before refusing (see begin_step)
        self.limit_hit = threading.Event()
        self.max_failures: int | None = None
        self.gave_up = threading.Event()
        self.trial_calls, self.reply_cap = trial_calls, reply_cap
        self.trial_limit_hit = threading.Event()
        self.refused = 0  # calls refused past a limit (the step's or the trial's)
        self._ok_in_trial = 0
        self._ok_in_step = 0
        self._failed_in_row = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> KeyProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def begin_step(self, limit: int | None, max_failures: int | None = None) -> int:
        """Start counting a step's calls, at most `limit` successful ones and `max_failures`
        failed ones in a row; returns the index into `statuses` where the step's calls begin."""
        with self._lock:
            self.limit, self.max_failures, self._ok_in_step, self._failed_in_row = limit, max_failures, 0, 0
            self.limit_hit.clear()
            self.gave_up.clear()
            self.step_first = len(self.statuses)
            return self.step_first

    def unreachable_in_step(self) -> str | None:
        """Why the step's last model call got no answer from the upstream (e.g.
        "ConnectionRefusedError: [Errno 111] Connection refused"); None when the step made no
        call, or its last call was answered (whatever its status: the API was reached)."""
        with self._lock:
            last = len(self.statuses) - 1
            return self.unreachable.get(last) if last >= self.step_first else None

    def stopped(self) -> bool:
        """Whether the host should stop the CLI now: a limit of the step, or the trial's, was
        reached (a CLI would otherwise retry the refused calls until the step's time is up)."""
        return self.limit_hit.is_set() or self.gave_up.is_set() or self.trial_limit_hit.is_set()

    def _admit(self) -> bool:
        with self._lock:
            # The step's limit first: a CLI's own call past max_turns is the step's outcome.
            if self.limit is not None and self._ok_in_step >= self.limit:
                self.limit_hit.set()
            elif self.trial_calls is not None and self._ok_in_trial >= self.trial_calls:
                self.trial_limit_hit.set()
            else:
                return True
            self.refused += 1
            return False

    def _rewrite(self, body: bytes | None) -> bytes | None:
        """The request body with the fields the proxy sets, and its output cap lowered to
        `reply_cap` (a body that is not a JSON object is forwarded as it is)."""
        if not body or not (self.set_fields or self.reply_cap):
            return body
        try:
            data = json.loads(body)
        except ValueError:
            return body
        if not isinstance(data, dict):
            return body
        data |= self.set_fields
        for f in OUTPUT_CAP_FIELDS:
            if self.reply_cap is not None and isinstance(data.get(f), int) and data[f] > self.reply_cap:
                data[f] = self.reply_cap
        return json.dumps(data).encode()

    def _record(self, status: int, unreachable: str | None = None) -> None:
        with self._lock:
            if unreachable is not None:
                self.unreachable[len(self.statuses)] = unreachable
            self.statuses.append(status)
            if 200 <= status < 300:
                self._ok_in_step, self._failed_in_row = self._ok_in_step + 1, 0
                self._ok_in_trial += 1
            else:
                self._failed_in_row += 1
                if self.max_failures is not None and self._failed_in_row >= self.max_failures:
                    self.gave_up.set()

    def _connect(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.netloc, timeout=600)

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # quiet: the transcript records the traffic
                pass

            def _answer(self, status: int, msg: bytes) -> None:
                """The proxy's own answer (a JSON error), the connection closed after it."""
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(msg)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(msg)

            def _forward(self) -> None:
                proxy.requests += 1
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "POST" and not proxy._admit():
                    msg = (
                        b'{"error": {"type": "mcptrials_trial_limit", "message": "mcptrials: the trial used every model '
                        b'call its limits allow"}}'
                        if proxy.trial_limit_hit.is_set()
                        else b'{"error": {"type": "mcptrials_max_turns", "message": "mcptrials: the step used max_turns model calls"}}'
                    )
                    self._answer(429, msg)
                    self.close_connection = True
                    return
                body = proxy._rewrite(body)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in DROP}
                if proxy.auth == "bearer":
                    headers["authorization"] = f"Bearer {proxy.key}"
                else:
                    headers["x-api-key"] = proxy.key
                headers["host"] = proxy.netloc
                conn = proxy._connect()
                status = None
                try:
                    conn.request(self.command, proxy.base_path + self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    status = resp.status
                    if self.command == "POST":
                        proxy._record(status)
                    self.send_response(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in DROP:
                            self.send_header(k, v)
                    self.send_header("connection", "close")  # the end of the body is the end of the stream
                    self.end_headers()
                    while chunk := resp.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError as e:
                    if status is None:  # never answered: the API is unreachable
                        why = f"{type(e).__name__}: {e}"
                        if self.command == "POST":
                            proxy._record(502, unreachable=why)
                        msg = json.dumps(
                            {
                                "error": {
                                    "type": "mcptrials_upstream_unreachable",
                                    "message": f"mcptrials key proxy: the model API ({proxy.upstream}) could "
                                    f"not be reached: {why}",
                                }
                            }
                        ).encode()
                        try:
                            self._answer(502, msg)
                        except OSError:
                            pass
                    elif not self.wfile.closed:
                        try:
                            self.send_error(502, f"mcptrials key proxy: upstream failed: {e}")
                        except OSError:
                            pass
                finally:
                    conn.close()
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        return Handler
