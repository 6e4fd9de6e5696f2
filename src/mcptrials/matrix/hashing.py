"""The two hashes the rerun keys are made of: of an object (its canonical JSON) and of a file."""

from __future__ import annotations

import hashlib
import json


def canonical_hash(obj) -> str:
    """sha256 of an object's canonical JSON (sorted keys, no spaces)."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
