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
