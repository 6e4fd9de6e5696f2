"""Filling a tool's arguments from its input schema: the term to search, the file window to
read, the page to ask for."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from typing import Any

from mcptrials.providers.reference.question import Term
from mcptrials.providers.reference.tools import ToolSpec


def _props(schema: dict) -> dict:
    p = schema.get("properties")
    return p if isinstance(p, dict) else {}


def _types(prop: dict) -> list[str]:
    t = prop.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    out = []
    for alt in prop.get("anyOf", []) + prop.get("oneOf", []):
        if isinstance(alt, dict):
            out += _types(alt)
    return out


def kind_of_key(key: str) -> str:
    k = re.sub(r"[^a-z0-9]", "", key.lower())
    if "glob" in k or k in ("filepattern", "filemask", "include", "exclude", "includeglob", "excludepatterns"):
        return "glob"
    if (
        "namepath" in k
        or "symbol" in k
        or k.endswith("pattern")
        or k.endswith("query")
        or k
        in (
            "pattern",
            "query",
            "search",
            "regex",
            "name",
            "keyword",
            "keywords",
            "term",
            "text",
            "q",
            "searchterm",
            "needle",
            "identifier",
        )
    ):
        return "term"
    if "path" in k or k in (
        "root",
        "directory",
        "dir",
        "folder",
        "repo",
        "repository",
        "file",
        "filename",
        "cwd",
        "project",
        "uri",
        "target",
    ):
        return "path"
    if k in ("startline", "start", "fromline", "linestart", "offset", "firstline", "line"):
        return "start"
    if k in ("endline", "end", "toline", "lineend", "lastline"):
        return "end"
    if k in ("head", "limit", "maxlines", "numlines", "count", "lines"):
        return "count"
    return "other"


FILE_WORDS = {"file", "filename", "filepath"}
DIRECTORY_WORDS = {
    "dir",
    "directory",
    "directories",
    "folder",
    "root",
    "project",
    "repository",
    "repo",
    "workspace",
    "cwd",
}


def _words(key: str, prop: dict) -> set[str]:
    return set(re.findall(r"[a-z]+", f"{key.replace('_', ' ')} {prop.get('description', '')}".lower()))


def asks_for_directory(key: str, prop: dict, is_required: bool) -> bool:
    """Whether a path parameter asks for a directory, so the workspace root is what to send
    when no file is wanted: a required one that does not name a file, or an optional one
    without a default whose name or description names a directory. One that names a file
    ("the file containing the symbol") gets no guessed "." (serena rejects it): a tool that
    needs a file the call has none for is not called."""
    words = _words(key, prop)
    if words & FILE_WORDS and not words & DIRECTORY_WORDS:
        return False
    return is_required or ("default" not in prop and bool(words & DIRECTORY_WORDS))


def zero_based(spec: ToolSpec, key: str) -> bool:
    prop = _props(spec.schema).get(key)
    desc = str(prop.get("description", "")).lower() if isinstance(prop, dict) else ""
    return "0-based" in desc or "zero-based" in desc or "0-indexed" in desc


@dataclass
class Need:
    """What a call is for: a term to search, or a file window to read."""

    term: Term | None = None
    path: str | None = None  # relative
    lo: int | None = None  # 1-based, inclusive
    hi: int | None = None


def build_arguments(spec: ToolSpec, need: Need, workspace: str) -> dict | None:
    """Fill a tool's arguments from what the call is for; None when a required one cannot be filled."""
    props = _props(spec.schema)
    required = spec.schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    args: dict = {}
    if not spec.mcp:
        if spec.name == "grep" and need.term:
            t = need.term
            args["pattern"] = rf"\b{re.escape(t.search)}\b" if t.kind == "ident" else re.escape(t.search)
            if t.kind != "ident":
                args["case_insensitive"] = True
            return args
        if spec.name == "read_file" and need.path:
            args["path"] = need.path
            if need.lo is not None:
                args["start_line"] = need.lo
                args["end_line"] = need.hi
            return args
        return None
    for key in list(props) + [r for r in required if r not in props]:
        given = props.get(key)
        prop = given if isinstance(given, dict) else {}
        is_required = key in required
        kind = kind_of_key(key)
        types = _types(prop)
        relative = "relative" in key.lower() or "relative" in str(prop.get("description", "")).lower()
        value: Any = None  # the argument: any JSON value
        if kind == "glob" and spec.role == "filesearch" and need.term and is_required:
            value = f"*{need.term.search}*"  # e.g. a file_mask
        elif kind == "term" and need.term and ("string" in types or not types):
            if spec.role == "filesearch" and need.term:
                value = f"**/*{need.term.search}*" if "glob" in spec.description.lower() else need.term.search
            elif need.term:
                value = need.term.search
        elif kind == "path" and ("string" in types or not types):
            if need.path:  # reading a file
                value = need.path if relative else posixpath.join(workspace, need.path)
            elif asks_for_directory(key, prop, is_required):
                value = "." if relative else workspace  # the root, where the schema asks for a directory
        elif (
            kind in ("start", "end", "count") and need.lo is not None and any(t in types for t in ("integer", "number"))
        ):
            if kind == "start" and key.lower() != "offset":
                value = need.lo - zero_based(spec, key)
            elif kind == "end" and need.hi is not None:  # set with lo (planning._read_calls)
                value = need.hi - zero_based(spec, key)
            elif kind == "count" and "start" not in [kind_of_key(k) for k in props]:
                value = need.hi  # e.g. head: N first lines
        if value is None and is_required:
            if "default" in prop:
                value = prop["default"]
            elif isinstance(prop.get("enum"), list) and prop["enum"]:
                value = prop["enum"][0]
            elif kind == "glob":
                value = "**/*"
            elif "boolean" in types:
                value = False
            elif "integer" in types or "number" in types:
                value = 10
            else:
                return None  # e.g. a required array or an unknown string
        if value is not None:
            args[key] = value
    if need.term and not any(isinstance(v, str) and need.term.search in v for v in args.values()):
        return None  # a search tool that cannot take the term
    if need.path and not any(isinstance(v, str) and v.endswith(need.path) for v in args.values()):
        return None  # a read tool that cannot take the file
    return args


_PAGE_KEYS = ("startindex", "offset", "start", "skip", "cursor", "page", "pagetoken", "after")


def page_key(spec: ToolSpec) -> str | None:
    """The argument of a search tool that asks for a later page (start_index, offset, cursor)."""
    for key in _props(spec.schema):
        if re.sub(r"[^a-z]", "", key.lower()) in _PAGE_KEYS:
            return key
    return None
