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

What a hostile server can still do under this host: send requests through the proxy (at
the user's cost, recorded in the transcript's usage only if the CLI made them); what it can
no longer do: read or send away the key.
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
DROP = {"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer",
        "content-length", "x-api-key", "authorization"}


class KeyProxy:
    """`with KeyProxy(upstream, key) as proxy:` serves on `proxy.url`; clients send
    `proxy.token` as their key (any value works: it is replaced, never checked)."""

    def __init__(self, upstream: str | None, key: str, auth: str = "x-api-key", set_fields: dict | None = None):
        if auth not in DEFAULT_UPSTREAM:
            raise ValueError(f"auth must be one of {sorted(DEFAULT_UPSTREAM)}, not {auth!r}")
        u = urlsplit(upstream or DEFAULT_UPSTREAM[auth])
        self.scheme, self.netloc = u.scheme, u.netloc
        self.base_path = u.path.rstrip("/")
        self.key, self.auth, self.set_fields = key, auth, dict(set_fields or {})
        self.token = "mcptrials-proxy-" + secrets.token_hex(8)
        self.requests = 0
        self.statuses: list[int] = []     # upstream status per forwarded request (502: unreachable)
        self.limit: int | None = None     # successful calls allowed before refusing (see begin_step)
        self.limit_hit = threading.Event()
        self.max_failures: int | None = None
        self.gave_up = threading.Event()
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
            return len(self.statuses)

    def stopped(self) -> bool:
        """Whether the host should stop the CLI now (a limit of the step was reached)."""
        return self.limit_hit.is_set() or self.gave_up.is_set()

    def _admit(self) -> bool:
        with self._lock:
            if self.limit is not None and self._ok_in_step >= self.limit:
                self.limit_hit.set()
                return False
            return True

    def _record(self, status: int) -> None:
        with self._lock:
            self.statuses.append(status)
            if 200 <= status < 300:
                self._ok_in_step, self._failed_in_row = self._ok_in_step + 1, 0
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

            def _forward(self) -> None:
                proxy.requests += 1
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "POST" and not proxy._admit():
                    msg = b'{"error": {"type": "mcptrials_max_turns", "message": "mcptrials: the step used max_turns model calls"}}'
                    self.send_response(429)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(msg)))
                    self.send_header("connection", "close")
                    self.end_headers()
                    self.wfile.write(msg)
                    self.close_connection = True
                    return
                if body and proxy.set_fields:
                    try:
                        data = json.loads(body)
                    except ValueError:
                        data = None
                    if isinstance(data, dict):
                        body = json.dumps(data | proxy.set_fields).encode()
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
                    self.send_header("connection", "close")   # the end of the body is the end of the stream
                    self.end_headers()
                    while chunk := resp.read1(65536):
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except OSError as e:
                    if self.command == "POST" and status is None:  # never answered: the API is unreachable
                        proxy._record(502)
                    if not self.wfile.closed:
                        try:
                            self.send_error(502, f"mcptrials key proxy: upstream failed: {e}")
                        except OSError:
                            pass
                finally:
                    conn.close()
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        return Handler
