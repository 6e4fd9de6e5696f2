"""The model API through a key-injecting proxy: the API key never enters a sandbox.

The claude-code CLI must call the model API, so it runs with the network; and it starts
the server under test inside its own sandbox, where the server could read the CLI's
/proc/<pid>/environ. So the CLI never gets the key: it gets a per-trial stand-in token and
`ANTHROPIC_BASE_URL` pointing at this proxy on 127.0.0.1, which runs in the harness (outside
every sandbox), drops the stand-in, adds the real `x-api-key`, and forwards the request to
the real API (the model's `base_url`, or https://api.anthropic.com), streaming the answer
back as it comes (server-sent events included).

What a hostile server can still do under this host: send requests through the proxy (at
the user's cost, recorded in the transcript's usage only if the CLI made them); what it can
no longer do: read or send away the key.
"""

from __future__ import annotations

import http.client
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

DEFAULT_UPSTREAM = "https://api.anthropic.com"
# Not forwarded: hop-by-hop headers, and whatever the client says about credentials.
DROP = {"host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer",
        "content-length", "x-api-key", "authorization"}


class KeyProxy:
    """`with KeyProxy(upstream, key) as proxy:` serves on `proxy.url`; clients send
    `proxy.token` as their key (any value works: it is replaced, never checked)."""

    def __init__(self, upstream: str | None, key: str):
        u = urlsplit(upstream or DEFAULT_UPSTREAM)
        self.scheme, self.netloc = u.scheme, u.netloc
        self.base_path = u.path.rstrip("/")
        self.key = key
        self.token = "mcptrials-proxy-" + secrets.token_hex(8)
        self.requests = 0
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
                headers = {k: v for k, v in self.headers.items() if k.lower() not in DROP}
                headers["x-api-key"] = proxy.key
                headers["host"] = proxy.netloc
                conn = proxy._connect()
                try:
                    conn.request(self.command, proxy.base_path + self.path, body=body, headers=headers)
                    resp = conn.getresponse()
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
