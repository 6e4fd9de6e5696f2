"""The workspace's state around a tool call, cheaply: each file's size and modification time
(a stat walk, no file read), so a call to a tool annotated `readOnlyHint: true` that changed
the workspace is caught (issue 37 item 5: analyze.patterns' read_only_wrote, gate.surface).
Taken only around calls to such tools. A write that keeps a file's size and lands within the
file system's time resolution is missed; a file made, removed, grown or shrunk never is."""

from __future__ import annotations

import os
from pathlib import Path

MAX_NAMED = 20  # the changed paths a record names; the count is whole


def fingerprint(root: Path) -> dict[str, tuple[int, int]]:
    """relative path -> (size, mtime_ns) of every file under root (links not followed)."""
    out: dict[str, tuple[int, int]] = {}
    for d, dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def changed(before: dict, after: dict) -> list[str]:
    """The paths added, removed or changed between two fingerprints, sorted."""
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def read_only_tools(tools) -> set[str]:
    """The names of the tools (mcp types.Tool) annotated readOnlyHint: true."""
    return {t.name for t in tools if t.annotations is not None and t.annotations.read_only_hint is True}
