"""Reading tool results: the `path:line` hits of a search, the numbered lines of a read,
whether a result failed or says more pages are left; paths made relative to the workspace."""

from __future__ import annotations

import json
import os
import posixpath
import re

from mcptrials.providers.reference.question import looks_like_file

_PATH_LINE = re.compile(r"(?:^|[\s(\[\"'`])(?P<path>[^\s:\"'`()\[\]]+):(?P<line>\d+)(?:(?::\d+)?[:\-]\s?(?P<text>.*))?")
_NUMBERED = re.compile(r"^\s*(\d+)(?:\t|[:|\u2192]\s?)(.*)$")


def next_page(text: str) -> int | str | None:
    """Where a paged search result's next page starts ({"pagination": {"has_more": true,
    "end_index": 10}} -> 10; a next_cursor value), or None when it says nothing more is left."""
    try:
        data = json.loads(text.strip())
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for where in (data.get("pagination"), data.get("page_info"), data):
        if not isinstance(where, dict):
            continue
        low = {re.sub(r"[^a-z]", "", k.lower()): v for k, v in where.items() if isinstance(k, str)}
        cursor = next(
            (
                low[k]
                for k in ("nextcursor", "nextpagetoken", "nextoffset", "nextstart")
                if isinstance(low.get(k), (int, str)) and low.get(k) not in ("", None)
            ),
            None,
        )
        if cursor is not None and not isinstance(cursor, bool):
            return cursor
        if low.get("hasmore") is True or low.get("more") is True:
            end = low.get("endindex")
            if isinstance(end, int) and not isinstance(end, bool):
                return end
            start, got = low.get("startindex"), low.get("returned")
            if isinstance(start, int) and isinstance(got, int):
                return start + got
    return None


def result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def looks_failed(text: str) -> bool:
    """A result that reports an error without setting isError (e.g. {"status": "error"})."""
    t = text.strip()
    try:
        data = json.loads(t)
    except ValueError:
        data = None
    if isinstance(data, dict):
        status = str(data.get("status", "")).lower()
        return status in ("error", "failed", "failure") or bool(data.get("error")) or status.startswith("needs_")
    first = t.split("\n", 1)[0].lower()
    return first.startswith(("error", "failed", "exception", "traceback", "access denied"))


class WorkspacePaths:
    def __init__(self, workspace: str):
        roots = [os.path.normpath(workspace)]
        real = os.path.realpath(workspace)
        if real not in roots:
            roots.append(real)
        self.roots = roots

    def rel(self, p) -> str | None:
        """A workspace-relative path, or None for anything outside it (or not a file path)."""
        if not isinstance(p, str):
            return None
        p = p.strip().strip("'\"")
        if p.startswith("file://"):
            p = p[len("file://") :]
        for root in self.roots:
            if p.startswith(root + "/"):
                p = p[len(root) + 1 :]
                break
        else:
            if p.startswith("/"):
                return None
        p = posixpath.normpath(p)
        if p in (".", "") or p == ".." or p.startswith("../"):
            return None
        return p


_FILE_KEYS = ("file", "path", "file_path", "filepath", "filename", "relative_path", "relativepath", "uri", "location")
_LINE_KEYS = ("line", "line_number", "linenumber", "lineno", "line_no", "start_line", "startline", "row")
_TEXT_KEYS = ("text", "line_text", "match", "content", "snippet", "code", "preview", "body", "source")


def _json_hits(data, paths: WorkspacePaths, out: list, inherited: str | None = None) -> None:
    if isinstance(data, list):
        for item in data:
            _json_hits(item, paths, out, inherited)
        return
    if isinstance(data, str) and inherited:
        m = re.match(r"^\s*>?\s*(\d+)\s*[:|]\s?(.*)$", data)
        if m:
            out.append((inherited, int(m.group(1)), m.group(2)))
        return
    if not isinstance(data, dict):
        return
    low = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
    path: str | None = None
    line: object = None  # a JSON value: only an int is a line
    for k in _FILE_KEYS:
        v = low.get(k)
        if isinstance(v, str):
            m = re.match(r"^(.*?):(\d+)(?::\d+)?$", v)  # "src/a.py:12"
            if m and paths.rel(m.group(1)):
                path, line = paths.rel(m.group(1)), int(m.group(2))
                break
            if paths.rel(v):
                path = paths.rel(v)
                break
    line = (
        line
        if line is not None
        else next(
            (low[k] for k in _LINE_KEYS if isinstance(low.get(k), int) and not isinstance(low.get(k), bool)), None
        )
    )
    if line is None:
        for k in ("location", "body_location", "range", "start", "position"):
            sub = low.get(k)
            if isinstance(sub, dict):
                sub_low = {kk.lower(): vv for kk, vv in sub.items() if isinstance(kk, str)}
                line = next((sub_low[kk] for kk in _LINE_KEYS if isinstance(sub_low.get(kk), int)), None)
                if line is None and isinstance(sub.get("start"), dict):
                    line = sub["start"].get("line")
                if isinstance(line, int):
                    break
    text = next((low[k] for k in _TEXT_KEYS if isinstance(low.get(k), str)), None)
    here = path or inherited
    if here and (path or line is not None):
        out.append(
            (here, line if isinstance(line, int) and line > 0 else None, text.split("\n", 1)[0] if text else None)
        )
    for k, v in data.items():
        if isinstance(v, (list, dict)):
            key_path = paths.rel(k) if isinstance(k, str) and looks_like_file(k.strip()) else None
            _json_hits(v, paths, out, key_path or here)
        elif isinstance(v, str) and isinstance(k, str) and looks_like_file(k.strip()) and paths.rel(k):
            _json_hits([ln for ln in v.split("\n")], paths, out, paths.rel(k))


def parse_hits(text: str, paths: WorkspacePaths) -> list[tuple[str, int | None, str | None]]:
    """(path, line or None, line text or None) found in a search result, in order, deduplicated."""
    raw: list = []
    stripped = text.strip()
    data = None
    if stripped[:1] in "[{":
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
    if data is not None:
        _json_hits(data, paths, raw)
    else:
        for line in text.splitlines():
            m = _PATH_LINE.search(line)
            if m and ("." in m.group("path") or "/" in m.group("path")):
                p = paths.rel(m.group("path"))
                if p:
                    raw.append((p, int(m.group("line")), m.group("text")))
                    continue
            cand = re.sub(r"^\s*(\[FILE\]|FILE:|-|\*)\s*", "", line).strip()
            if cand and " " not in cand and looks_like_file(cand):
                p = paths.rel(cand)
                if p:
                    raw.append((p, None, None))
    seen: set[tuple[str, int | None]] = set()
    out: list[tuple[str, int | None, str | None]] = []
    for hit_path, n, t in raw:
        if (hit_path, n) not in seen:
            seen.add((hit_path, n))
            out.append((hit_path, n, t))
    return out


def parse_read(text: str, first_line: int, numbered_only: bool = False) -> dict[int, str]:
    """Line number -> text from a read result: numbered (cat -n) output keeps its numbers,
    JSON with code and a start line is numbered from it, plain text from `first_line`.
    `numbered_only` (the built-in read_file) keeps numbered lines only, not its header."""
    if numbered_only:
        return {int(m.group(1)): m.group(2) for m in map(_NUMBERED.match, text.split("\n")) if m}
    stripped = text.strip()
    if stripped[:1] == "{":
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            low = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
            code = next(
                (low[k] for k in ("code", "body", "content", "source", "text") if isinstance(low.get(k), str)), None
            )
            start = next((low[k] for k in _LINE_KEYS if isinstance(low.get(k), int)), None)
            if code is not None:
                return {start + i if start else first_line + i: ln for i, ln in enumerate(code.split("\n"))}
            return {}
    lines = text.split("\n")
    numbered = [_NUMBERED.match(ln) for ln in lines]
    hits = [m for m in numbered if m]
    if len(hits) >= max(1, 0.6 * len([ln for ln in lines if ln.strip()])):
        nums = [int(m.group(1)) for m in hits]
        if nums == sorted(nums):
            return {int(m.group(1)): m.group(2) for m in hits}
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return {first_line + i: ln for i, ln in enumerate(lines)}
