"""What the fake API servers share: a script of entries consumed one per request, a request
log (in memory and as JSONL) with the most requests ever in flight, the server's life
cycle, and running one as a separate process. Each fake adds its wire protocol: the
entries' default, the routes and the answers (see messages_api.py and openai_api.py)."""

from __future__ import annotations

import argparse
import itertools
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

Entry = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedServer:
    """Start with ``start()`` or ``with``; ``url`` is the base_url to give the client."""

    name = "fake-api"
    url_suffix = ""  # e.g. "/v1" where the SDK's base_url includes it
    handler: type[BaseHTTPRequestHandler]

    def __init__(
        self,
        script: list[Entry] | None = None,
        *,
        log_path: str | os.PathLike | None = None,
        exhausted: str = "default",
        default_text: str = "Done.",
        host: str = "127.0.0.1",
        port: int = 0,
        validate: bool = True,
    ) -> None:
        if exhausted not in ("default", "repeat"):
            raise ValueError(f"exhausted must be 'default' or 'repeat', got {exhausted!r}")
        self.script: list[Entry] = list(script or [])
        self.exhausted = exhausted
        self.default_text = default_text
        self.log_path = Path(log_path) if log_path else None
        self.validate = validate  # answer 400 for unpaired tool calls and results, as the APIs do
        self.requests: list[dict[str, Any]] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._next = 0  # index of the next script entry
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer((host, port), self.handler)
        self._httpd.daemon_threads = True
        self._httpd.api = self  # type: ignore[attr-defined]
        self._thread: threading.Thread | None = None

    # ---- lifecycle ----
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._httpd.server_address[0]}:{self.port}{self.url_suffix}"

    def start(self):
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging and delayed handlers
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    # ---- internals used by the handler ----
    def default_entry(self) -> dict[str, Any]:
        """The answer once the script is exhausted (exhausted="default")."""
        raise NotImplementedError

    def _take_entry(self, body: dict[str, Any]) -> tuple[int | None, dict[str, Any]]:
        with self._lock:
            if self._next < len(self.script):
                index, entry = self._next, self.script[self._next]
                self._next += 1
            elif self.exhausted == "repeat" and self.script:
                index, entry = len(self.script) - 1, self.script[-1]
            else:
                index, entry = None, self.default_entry()
        if callable(entry):
            entry = entry(body)
        return index, entry

    def _hold(self, entry: dict[str, Any], record: dict[str, Any]) -> None:
        """An entry with ``"hold_until": path`` is answered only once that file exists (or the
        server stops): a test holds a run at a known point and releases it by creating the file.
        Each held request appends a line to ``<path>.held`` when it starts waiting, so the test
        can tell that the run has reached the hold (rather than guess from the time)."""
        release = entry.get("hold_until")
        if not release:
            return
        release = Path(release)
        with self._lock:
            with open(f"{release}.held", "a", encoding="utf-8") as f:
                f.write(f"{record['path']}\n")
        record["held"] = True
        # polled, not timed: the test decides when the file appears
        while not release.exists() and not self._stopping.wait(0.05):
            pass

    def _arrive(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)

    def _finish(self, record: dict[str, Any]) -> None:
        record["finished"] = time.time()
        with self._lock:
            self._in_flight -= 1
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")


class ScriptedHandler(BaseHTTPRequestHandler):
    """Reads and logs every request; a subclass answers it in `_route(path, body, record)`."""

    protocol_version = "HTTP/1.1"
    auth_headers = {"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"}

    @property
    def api(self):
        return self.server.api  # type: ignore[attr-defined]

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the JSONL log is the record
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urlsplit(self.path)
        headers = {k.lower(): v for k, v in self.headers.items()}
        raw = self.rfile.read(int(headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        record: dict[str, Any] = {
            "method": self.command,
            "path": url.path,
            "query": url.query,
            "headers": {k: v for k, v in headers.items() if k not in self.auth_headers},
            "auth_present": any(k in headers for k in ("authorization", "x-api-key", "api-key")),
            # which key came, without logging it: its sha256
            "auth_sha256": next(
                (
                    hashlib.sha256(headers[k].removeprefix("Bearer ").encode()).hexdigest()
                    for k in ("x-api-key", "authorization", "api-key")
                    if k in headers
                ),
                None,
            ),
            "body": body if body is not None else (raw.decode("utf-8", "replace") if raw else None),
            "arrived": time.time(),
        }
        self.api._arrive(record)
        try:
            self._route(url.path, body, record)
        except (BrokenPipeError, ConnectionResetError):
            record["client_gone"] = True
            self.close_connection = True
        finally:
            self.api._finish(record)

    def _route(self, path: str, body: Any, record: dict[str, Any]) -> None:
        raise NotImplementedError

    # ---- the request loop every fake shares, and its writers ----
    request_id_header = "x-request-id"
    unknown_fault_hint = ""

    def _answer(
        self,
        body: dict[str, Any],
        record: dict[str, Any],
        answer: Callable[[dict[str, Any]], None],
        faults: dict[str, Callable[[dict[str, Any]], None]] | None = None,
    ) -> None:
        """Answer a valid request from the script: its next entry, held (hold_until) and delayed
        (delay), then its fault (hang, status, malformed, or one of the fake's `faults`) or the
        fake's `answer(entry)`."""
        api = self.api
        index, entry = api._take_entry(body)
        record["script_index"] = index
        api._hold(entry, record)
        if entry.get("delay"):
            api._stopping.wait(float(entry["delay"]))
        fault = entry.get("fault")
        if fault == "hang":
            record["kind"] = "hang"
            api._stopping.wait()
            self.close_connection = True
            return None
        if fault == "status":
            extra = (
                {"retry-after": self._retry_after(entry["retry_after"])} if entry.get("retry_after") is not None else {}
            )
            return self._error(record, int(entry.get("status", 500)), entry.get("message"), extra, kind="status")
        if fault in (faults or {}):
            return (faults or {})[fault](entry)
        if fault == "malformed":
            record["kind"] = "malformed"
            return self._send(
                record,
                200,
                entry.get("content_type", "application/json"),
                b"<html>upstream proxy error: this is not JSON</html>",
            )
        if fault is not None:
            return self._error(
                record, 500, f"fake server: script entry {index} has unknown fault {fault!r}" + self.unknown_fault_hint
            )
        return answer(entry)

    def _retry_after(self, seconds: Any) -> str:
        return str(seconds)

    def _error(
        self,
        record: dict[str, Any],
        status: int,
        message: str | None,
        extra: dict[str, str] | None = None,
        kind: str = "error",
    ) -> None:
        raise NotImplementedError

    def _send(
        self, record: dict[str, Any], status: int, ctype: str, data: bytes, extra: dict[str, str] | None = None
    ) -> None:
        record["status"] = status
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.send_header(self.request_id_header, f"req_fake{uuid.uuid4().hex[:20]}")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _json(self, record: dict[str, Any], status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        self._send(record, status, "application/json", json.dumps(obj).encode(), extra)

    def _stream(
        self,
        record: dict[str, Any],
        pieces: list[str],
        headers: tuple[tuple[str, str], ...] = (("cache-control", "no-cache"), ("transfer-encoding", "chunked")),
    ) -> None:
        """Server-sent events over chunked transfer encoding, one flush per event."""
        record["status"] = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        for piece in pieces:
            data = piece.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def spawn(
    module_file: str,
    script: str | os.PathLike,
    log: str | os.PathLike,
    port_file: str | os.PathLike,
    *extra_args: str,
    timeout: float = 10.0,
    url_suffix: str = "",
) -> tuple[subprocess.Popen, str]:
    """Run a fake's file as a separate process; returns (process, base_url) once it listens.
    Stop it with ``process.terminate()`` (it exits 0 after writing its last log line)."""
    port_file = Path(port_file)
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [
            sys.executable,
            module_file,
            "--script",
            str(script),
            "--log",
            str(log),
            "--port-file",
            str(port_file),
            *extra_args,
        ]
    )
    deadline = time.monotonic() + timeout
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{Path(module_file).name} did not start (exit code {proc.poll()}); see its stderr")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}{url_suffix}"


def serve_main(server_cls: type[ScriptedServer], description: str, argv: list[str] | None = None) -> int:
    """The command line of a fake run as its own process (see `spawn`)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--script", help="JSON file: a list of script entries (see the module docstring)")
    p.add_argument("--log", help="JSONL file; one line per request")
    p.add_argument("--port-file", help="file to write the chosen port to, once listening")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--exhausted", choices=["default", "repeat"], default="default")
    p.add_argument("--default-text", default="Done.")
    p.add_argument("--no-validate", action="store_true", help="do not check the pairing of tool calls and results")
    args = p.parse_args(argv)

    script: list[Entry] = []
    if args.script:
        script = json.loads(Path(args.script).read_text(encoding="utf-8"))
        if not isinstance(script, list):
            p.error(f"{args.script}: the script must be a JSON list of entries")
    api = server_cls(
        script,
        log_path=args.log,
        exhausted=args.exhausted,
        default_text=args.default_text,
        host=args.host,
        port=args.port,
        validate=not args.no_validate,
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    api.start()
    if args.port_file:  # written atomically, so a reader never sees a partial number
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(str(api.port))
        tmp.replace(args.port_file)
    print(f"{api.name} listening on {api.url}", flush=True)
    done.wait()
    api.stop()
    return 0
