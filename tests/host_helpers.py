"""Shared set-up of the host tests: a fake model API started per test, and a CLI host installed
as the workflow installs it (reused when already there)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from matrix_helpers import write_matrix


def started_apis(api_class: type, tmp_path: Path, prefix: str) -> Iterator[Callable]:
    """For a fixture to `yield from`: a factory `start(script, **kw)` that starts an api_class
    server logging to tmp_path/<prefix>N.jsonl; every server started is stopped at teardown."""
    servers: list = []

    def start(script=None, **kw):
        kw.setdefault("log_path", tmp_path / f"{prefix}{len(servers)}.jsonl")
        api = api_class(script, **kw).start()
        servers.append(api)
        return api

    yield start
    for api in servers:
        api.stop()


def install_host(out: Path, host: str, kind: str, model: dict) -> dict:
    """`mcptrials install-host` for a one-host matrix under out; returns its install record."""
    cfg = write_matrix(out / "m", extra={"models": {"m": model}, "hosts": {host: {"kind": kind}}})
    record = out / f"{host}.json"
    cmd = ["install-host", "--config", str(cfg), "--host", host, "--out", str(record)]
    subprocess.run([sys.executable, "-m", "mcptrials.cli", *cmd], check=True)
    return json.loads(record.read_text())
