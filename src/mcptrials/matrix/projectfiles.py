"""A tool's own files in the project: the paths its config names there, `{project}`, and
their content as a rerun key.

The project is the folder every stage runs in (Snakemake's working directory, which holds
`.tools/` and `results/`). In a tool's `command`, `args`, `env`, `read_only` and `index`,
`{project}` is that folder. A relative `read_only` path is from the project. A relative
path in `args` is not rewritten: the server starts in the trial's workspace (the copy of
the repository), so `server.py` there means the repository's file; a server script of the
project is `{project}/server.py` (or an absolute path).

What a tool names inside the project (its command when it is a path, each argument that is
a path there, each `read_only` path, its index's command and arguments alike; folders file
by file) is hashed into the rerun key of its index and snapshot (mcptrials.dag.rerun,
`files:tools.*`): editing your own server reruns its index, its snapshot and then its trials,
as bumping `version:` does. The same hashes are recorded in tools.json, index.json,
run_meta.json and summary.json (`project_files`), so `mcptrials compare` and `replay` refuse
results made from other contents (mcptrials.gate). What `.tools/` holds is left out (an
install is keyed by its `install:` entry), and so is anything outside the project (the
system, another checkout), which the harness cannot know the version of.

This module imports nothing of mcptrials: config (the typed specs), rerun and the
validation read it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import overload

PLACEHOLDER = "{project}"
# Folders never part of a server's identity: caches written when it runs.
SKIPPED_DIRS = {"__pycache__", ".git", ".pytest_cache", "node_modules"}
# Folders of the project the harness writes (a folder named in read_only may hold them, e.g.
# `{project}` itself): hashing them would rerun the server after every run.
HARNESS_DIRS = ("results", ".snakemake")


def project_dir() -> Path:
    """The project folder: where every stage runs (absolute)."""
    return Path.cwd()


@overload
def expand(text: str, project) -> str: ...
@overload
def expand(text: None, project) -> None: ...
def expand(text: str | None, project) -> str | None:
    """`{project}` in one value replaced by the project folder."""
    return None if text is None else text.replace(PLACEHOLDER, str(project))


def expand_tool(entry: dict, project) -> dict:
    """A validated tool entry with `{project}` expanded in every path-bearing field
    (command, args, env values, url, read_only, index command and args); relative
    `read_only` paths made absolute from the project. The other fields are kept as they are."""
    d = dict(entry)
    if d.get("command") is not None:
        d["command"] = expand(d["command"], project)
    d["args"] = [expand(a, project) for a in d.get("args", [])]
    d["env"] = {k: expand(v, project) for k, v in d.get("env", {}).items()}
    if d.get("url") is not None:
        d["url"] = expand(d["url"], project)
    d["read_only"] = [os.path.normpath(Path(project, expand(p, project))) for p in d.get("read_only", [])]
    if d.get("index"):
        d["index"] = dict(
            d["index"],
            command=expand(d["index"]["command"], project),
            args=[expand(a, project) for a in d["index"].get("args", [])],
        )
    return d


def _inside(path: str, project: Path, tools: Path) -> bool:
    """Whether an absolute path lies in the project (lexically: a symlinked folder of the
    project counts as the project's), and not in its tool installs."""
    p = Path(os.path.normpath(path))
    return p.is_relative_to(project) and not p.is_relative_to(tools)


def _arg_path(arg: str) -> str:
    """The path part of an argument: `--root=/x` names /x."""
    return arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg


def named_paths(entry: dict, project, tools_dir) -> list[tuple[str, str]]:
    """(field, absolute path) of every path inside the project an expanded tool entry
    names: its command (when it is a path), its arguments that are absolute paths there,
    its read_only paths, and its index's command and arguments alike. The order is the
    entry's; a path is named once."""
    project, tools = Path(os.path.normpath(Path(project).absolute())), Path(os.path.normpath(tools_dir))
    out: list[tuple[str, str]] = []
    for where, part in (("", entry), ("index.", entry.get("index") or {})):
        cmd = part.get("command")
        if cmd and os.sep in cmd:
            out.append((f"{where}command", os.path.normpath(Path(project, cmd))))
        for i, a in enumerate(part.get("args", [])):
            path = _arg_path(a)
            if os.path.isabs(path):
                out.append((f"{where}args[{i}]", os.path.normpath(path)))
        if not where:
            out += [(f"read_only[{i}]", p) for i, p in enumerate(entry.get("read_only", []))]
    kept: list[tuple[str, str]] = []
    seen: set[str] = set()
    for f, p in out:
        if _inside(p, project, tools) and p not in seen:
            seen.add(p)
            kept.append((f, p))
    return kept


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def content_hashes(entry: dict, project, tools_dir) -> dict[str, str]:
    """Project-relative path -> sha256 of each file the entry names inside the project (a
    folder: each file under it); a named path that does not exist is "missing" (validate
    says which field names it). Relative paths: a project copied elsewhere reruns nothing."""
    project = Path(os.path.normpath(Path(project).absolute()))
    skipped = {project / d for d in HARNESS_DIRS} | {Path(os.path.normpath(tools_dir))}
    out: dict[str, str] = {}
    for _, p in named_paths(entry, project, tools_dir):
        path = Path(p)
        rel = str(path.relative_to(project))
        if path.is_file():
            out[rel] = _file_sha256(path)
        elif path.is_dir():
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and Path(root, d) not in skipped)
                for name in sorted(files):
                    f = Path(root, name)
                    if f.is_file():
                        out[str(f.relative_to(project))] = _file_sha256(f)
        else:
            out[rel] = "missing"
    return dict(sorted(out.items()))
