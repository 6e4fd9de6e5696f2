"""Writing result records: JSON, atomically, so a killed job never leaves a half file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import overload


def write_json(path, obj) -> None:
    """Write obj as indented JSON to a temp file in the same folder, then rename it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            # one write of the whole text: json.dump writes each token on its own (~1,000 calls a record)
            f.write(json.dumps(obj, indent=1, ensure_ascii=False, default=str) + "\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


@overload
def project_path(path: None) -> None: ...
@overload
def project_path(path: str | os.PathLike[str]) -> str: ...
def project_path(path: str | os.PathLike[str] | None) -> str | None:
    """A path as records keep it: relative to the project (the working directory every
    stage runs in) when it lies inside it, so a project copied elsewhere, results and
    all, still reads right; a path outside the project (a mirror elsewhere) stays as is."""
    if path is None:
        return None
    p = os.path.abspath(path)
    rel = os.path.relpath(p, os.getcwd())
    return p if rel == ".." or rel.startswith(".." + os.sep) else rel


def read_json(path):
    with open(path) as f:
        return json.load(f)
