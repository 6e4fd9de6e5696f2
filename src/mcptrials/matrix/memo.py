"""A content-keyed memo of parsed and validated inputs (config and scenario YAML files).

Why: every per-trial stage re-reads the config and its scenario, and parsing and validating them
is most of what a stage does besides its work (~10 ms of CPU a job). The warm trial worker
(mcptrials.cli.worker) reads a project's config once in its parent, so each forked child finds
the results here. The key is the content, never a time stamp: a YAML file's entry is keyed by its
the sha256 of its bytes (the parse depends on nothing else; the bytes are read anyway to parse
them, and hashing a few KB costs microseconds, where mtime + size + inode would save only that
and could keep a stale entry after an edit within the clock's resolution), a validation's by the schema and the pickled data it was given. So an edited file is a miss,
never a stale hit. Values are stored pickled: each hit is a fresh copy the caller may change.
"""

from __future__ import annotations

import pickle

MISS = object()
SIZE = 512  # entries kept (a project has one config and its scenarios; a test process many)

_entries: dict[object, bytes] = {}


def get(key):
    """A fresh copy of the value stored under `key`, or MISS."""
    blob = _entries.get(key)
    return MISS if blob is None else pickle.loads(blob)


def put(key, value) -> None:
    """Store a copy of `value` under `key` (the oldest entry dropped past SIZE); a value that
    does not pickle is not stored."""
    try:
        blob = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    if key not in _entries and len(_entries) >= SIZE:
        del _entries[next(iter(_entries))]
    _entries[key] = blob


def pickled(value) -> bytes | None:
    """`value` pickled, as part of a key (equal bytes rebuild equal data), or None."""
    try:
        return pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return None


def clear() -> None:
    _entries.clear()
