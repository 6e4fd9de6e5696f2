"""Headless Debian Chromium for the tests that open a page in a browser (the report, the
explorer, the pattern marks). `make test` installs it; a missing one fails, never skips."""

import subprocess
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium); "
            "or install it by hand and rerun"
        )
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


class Browser:
    """Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
    it reads commands on fd 3 and writes replies on fd 4, each a JSON message ended by NUL), so
    a test can load a served page, click in it and read it back, with no extra package."""

    def __init__(self, profile: Path):
        import os

        if not Path(CHROMIUM).exists():
            pytest.fail(f"{CHROMIUM} is missing: `make test` installs it (apt-get install -y chromium)")
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds():  # in the child: its fd 3 reads our commands, its fd 4 writes its replies
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]
        cmd += ["--disable-background-networking", f"--user-data-dir={profile}", "--remote-debugging-pipe"]
        self.proc = subprocess.Popen(
            cmd, preexec_fn=fds, pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        os.close(to_child)
        os.close(from_child)
        self._buf, self._id, self.session = b"", 0, None

    def call(self, method: str, session: str | None = None, **params):
        import json
        import os

        self._id += 1
        msg = {"id": self._id, "method": method, "params": params} | ({"sessionId": session} if session else {})
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._r, 65536)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe during {method}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def open(self, url: str) -> None:
        """Load url in a new tab and wait until it has loaded."""
        import time

        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.navigate", self.session, url=url)
        for _ in range(600):  # until the new document is the one loaded (about:blank's context goes away)
            try:
                if self.js(f"location.href === {url!r} && document.readyState === 'complete'"):
                    return
            except RuntimeError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{url}: not loaded in 30 s")

    def js(self, expression: str):
        """The value of an expression in the page (a promise is awaited)."""
        res = self.call(
            "Runtime.evaluate",
            self.session,
            expression=expression,
            awaitPromise=True,
            returnByValue=True,
            timeout=30000,
        )
        if "exceptionDetails" in res:
            raise RuntimeError(res["exceptionDetails"])
        return res["result"].get("value")

    def close(self) -> None:
        import os

        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)
        os.close(self._r)
