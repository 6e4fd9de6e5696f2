"""The structure of one answer that a reader uses to read a citation: the JSON objects it
contains (with their direct scalar members and where they stand), markdown table rows,
list items, paragraphs and sections.

Answers are often JSON (bare or fenced) mixed with prose, or prose holding bits of code, so
the JSON scanner is lenient: it never fails, a string ends at its closing quote or at the
end of its line (JSON strings hold no raw newline, so a stray quote in prose cannot swallow
the rest of the answer), strings are recognised only inside an object, and an object left
open ends with the answer.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")  # ASCII digits: `\d` takes `١٢` too
_LITERAL = re.compile(r"true|false|null")
_STRING = re.compile(r'"[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*"')  # unrolled: no backtracking blow-up
_OBJECT_CHAR = re.compile(r'[{}\["]')
_VALUE_CHAR = re.compile(r'[{}\["\-\dtfn]')  # and where _NUMBER or _LITERAL may start
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_BLANK_START = re.compile(r"\n(?=[ \t]*\n)")
_HEADING = re.compile(r"^#{1,6}\s", re.M)
_BULLET = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
_CODE_SPAN = re.compile(r"`[^`\n]*`")


@dataclass
class Member:
    """One direct scalar member of a JSON object: "key": value."""

    key: str
    value: object  # str, int, float, bool or None
    key_start: int  # offset of the key's opening quote
    start: int  # the value's span in the answer (quotes included)
    end: int


@dataclass
class JsonObject:
    start: int  # offset of "{"
    end: int  # offset just past "}" (the answer's end when left open)
    members: list[Member] = field(default_factory=list)
    parent: JsonObject | None = field(default=None, repr=False, compare=False)  # the object it is in
    key: str | None = None  # the key of the member it is the value of (`"Engine.ServeHTTP": {...}`)

    def get(self, *keys: str) -> list[Member]:
        wanted = {k.lower() for k in keys}
        return [m for m in self.members if m.key.lower() in wanted]


def _string_end(text: str, i: int) -> int | None:
    """Offset just past the string starting with the quote at i, or None if the line ends first
    (a backslash escapes the character after it, a newline too)."""
    m = _STRING.match(text, i)
    return m.end() if m else None


def _decode(raw: str) -> str:
    if "\\" not in raw:  # nothing to unescape: what json.loads returns, or its fallback
        return raw[1:-1]
    try:
        return json.loads(raw)
    except ValueError:
        return raw[1:-1]


def json_objects(text: str) -> list[JsonObject]:
    """Every {...} of the answer with its direct scalar members, in order of their "{"."""
    done: list[JsonObject] = []
    stack: list[tuple[JsonObject, list]] = []  # (object, [pending key, its start])
    i, n = 0, len(text)
    while i < n:
        # Skip to the next character that can matter (the rest only moves on by one): "{" outside
        # any object; inside, also } [ " and, after a key, a number's or literal's first character.
        if not stack:
            i = text.find("{", i)
        else:
            m = (_VALUE_CHAR if stack[-1][1][0] is not None else _OBJECT_CHAR).search(text, i)
            i = m.start() if m else -1
        if i < 0:
            break
        ch = text[i]
        if ch == "{":
            key = stack[-1][1][0] if stack else None
            if stack:
                stack[-1][1][0] = None  # an object value: not a scalar member
            stack.append((JsonObject(i, n, parent=stack[-1][0] if stack else None, key=key), [None, None]))
            i += 1
        elif ch == "}" and stack:
            obj, _ = stack.pop()
            obj.end = i + 1
            done.append(obj)
            i += 1
        elif ch == "[" and stack:
            stack[-1][1][0] = None  # an array value: its items are not members
            i += 1
        elif ch == '"' and stack:
            j = _string_end(text, i)
            if j is None:
                i += 1
                continue
            k = j
            while k < n and text[k] in " \t\r\n":
                k += 1
            obj, pending = stack[-1]
            if k < n and text[k] == ":":
                pending[0], pending[1] = _decode(text[i:j]), i
                i = k + 1
                continue
            if pending[0] is not None:
                obj.members.append(Member(pending[0], _decode(text[i:j]), pending[1], i, j))
                pending[0] = None
            i = j
        elif stack and stack[-1][1][0] is not None and (m := _NUMBER.match(text, i) or _LITERAL.match(text, i)):
            obj, pending = stack[-1]
            raw = m.group(0)
            # `"line": 01` is not JSON but is what the answer wrote: read the number as written
            value = json.loads(raw) if m.re is _LITERAL else float(raw) if any(c in raw for c in ".eE") else int(raw)
            obj.members.append(Member(pending[0], value, pending[1], m.start(), m.end()))
            pending[0] = None
            i = m.end()
        else:
            i += 1
    done += [obj for obj, _ in stack]  # left open: they end with the answer
    return JsonObjects(sorted(done, key=lambda o: o.start))


class JsonObjects(list):
    """json_objects' list, in order of "{", with their starts (for bisection)."""

    def __init__(self, objects: list[JsonObject]):
        super().__init__(objects)
        self.starts = [o.start for o in objects]


def enclosing_objects(objects: list[JsonObject], pos: int) -> list[JsonObject]:
    """The objects around offset pos, innermost first. Objects nest (a stack made them), so
    those around pos are the last one starting before pos and the objects it is in, those of
    them that end after pos."""
    if isinstance(objects, JsonObjects):
        k = bisect.bisect_left(objects.starts, pos) - 1
        o, out = (objects[k] if k >= 0 else None), []
        while o is not None:
            if pos < o.end:
                out.append(o)
            o = o.parent
        return out
    inside = [o for o in objects if o.start < pos < o.end]
    return sorted(inside, key=lambda o: o.start, reverse=True)


def line_bounds(text: str, pos: int) -> tuple[int, int]:
    lo = text.rfind("\n", 0, pos) + 1
    hi = text.find("\n", pos)
    return lo, (len(text) if hi < 0 else hi)


@dataclass
class _Layout:
    """Where one answer's lines, blank lines and headings are, found once (a scan per
    citation of the text before it made grading quadratic in the answer's length)."""

    starts: list[int]  # each line's first offset
    ends: list[int]  # each line's end: its newline, or the answer's end
    bullets: list[int]  # the numbers of the lines a list item starts
    blank_ends: list[int]  # ends of the blank-line matches, scanning from the start
    blank_starts: list[int]  # every offset a blank-line match starts at (overlapping ones too)
    headings: list[tuple[int, int]]
    table_first: list[int | None]  # for a line starting with "|": its table's first line (the header)
    code_starts: list[int]  # the code spans `...` (they pair within a line, from its start)
    code_ends: list[int]
    code: list[tuple[int, int]]


@lru_cache(maxsize=8)  # the answers being graded now
def _layout(text: str) -> _Layout:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    ends = [s - 1 for s in starts[1:]] + [len(text)]
    table_first: list[int | None] = []
    for k, (lo, hi) in enumerate(zip(starts, ends)):
        pipe = text[lo:hi].lstrip().startswith("|")
        table_first.append(None if not pipe else table_first[-1] if k and table_first[-1] is not None else k)
    return _Layout(
        starts,
        ends,
        [k for k, s in enumerate(starts) if _BULLET.match(text, s)],
        [m.end() for m in _BLANK_LINE.finditer(text)],
        [m.start() for m in _BLANK_START.finditer(text)],
        [(m.start(), m.end()) for m in _HEADING.finditer(text)],
        table_first,
        *_spans(_CODE_SPAN.finditer(text)),
    )


def _spans(matches) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    spans = [m.span() for m in matches]
    return [a for a, _ in spans], [b for _, b in spans], spans


def code_spans(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The code spans inside text[lo:hi] for lo at a line's start: what
    re.finditer(r"`[^`\n]*`", text[lo:hi]) finds (a span never crosses a line, so the
    answer's spans, found once, are each line's from its start)."""
    lay = _layout(text)
    i, j = bisect.bisect_left(lay.code_starts, lo), bisect.bisect_right(lay.code_ends, hi)
    return lay.code[i:j]


def paragraph_bounds(text: str, pos: int) -> tuple[int, int]:
    """The block around pos between blank lines."""
    lay = _layout(text)
    k = bisect.bisect_right(lay.blank_ends, pos) - 1  # the last blank line ending by pos
    j = bisect.bisect_left(lay.blank_starts, pos)  # the first one starting at or after pos
    return (lay.blank_ends[k] if k >= 0 else 0), (lay.blank_starts[j] if j < len(lay.blank_starts) else len(text))


def section_start(text: str, pos: int) -> int:
    """Where the markdown section around pos starts (its heading line), else 0."""
    heads = _layout(text).headings
    k = bisect.bisect_right(heads, pos, key=lambda h: h[1]) - 1  # the last heading ending by pos
    return heads[k][0] if k >= 0 else 0


def list_item_bounds(text: str, pos: int) -> tuple[int, int] | None:
    """The markdown list item around pos (its bullet line and continuation lines, within its
    paragraph), or None."""
    p_lo, p_hi = paragraph_bounds(text, pos)
    lay = _layout(text)
    k = bisect.bisect_right(lay.starts, pos) - 1  # pos's line
    b = bisect.bisect_right(lay.bullets, k) - 1  # the last bullet line up to it
    if b < 0 or (lay.bullets[b] < k and lay.starts[lay.bullets[b] + 1] <= p_lo):
        return None  # none, or the paragraph starts after it
    last = bisect.bisect_left(lay.ends, p_hi, lo=k)  # the paragraph's last line
    nxt = b + 1  # the next bullet line ends the item
    if nxt < len(lay.bullets):
        last = min(last, lay.bullets[nxt] - 1)
    return lay.starts[lay.bullets[b]], lay.ends[last]


def _cells(text: str, lo: int, hi: int) -> list[tuple[str, int, int]]:
    """The cells of the table row text[lo:hi]: (text, start, end), pipes inside backticks and \\| kept."""
    cells, start, tick, i = [], None, False, lo
    while i < hi:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`":
            tick = not tick
        elif ch == "|" and not tick:
            if start is not None:
                cells.append((text[start:i].strip(), start, i))
            start = i + 1
        i += 1
    if start is not None and text[start:hi].strip():
        cells.append((text[start:hi].strip(), start, hi))
    return cells


_FILE_HEADER = re.compile(r"\b(?:file|path|location|where|source)", re.I)
_NAME_HEADER = re.compile(
    r"\b(?:symbol|name|function|method|class|type|signature|identifier|fn|def"
    r"|definition|struct|trait|interface|item|impl)",
    re.I,
)


# grader 14: a column of lines beside the file column (`| File | Line(s) |`)
_LINE_HEADER = re.compile(r"\**(?:lines?|line\(s\)|line ?(?:#|no\.?|numbers?)|L#?)\**", re.I)


@dataclass
class TableRow:
    cells: list[tuple[str, int, int]]
    file_cell: tuple[str, int, int] | None  # the cell under a file / path / location header
    name_cells: list[tuple[str, int, int]] = field(default_factory=list)  # under a symbol / name / type... header
    line_cells: list[tuple[str, int, int]] = field(default_factory=list)  # under a `Line` / `Lines` header (grader 14)


def table_row(text: str, pos: int) -> TableRow | None:
    """The markdown table row around pos, with its file column when the header names one."""
    lay = _layout(text)
    k = bisect.bisect_right(lay.starts, pos) - 1  # pos's line
    first = lay.table_first[k]
    if first is None:
        return None
    lo, hi = lay.starts[k], lay.ends[k]
    head_lo, head_hi = lay.starts[first], lay.ends[first]
    cells = _cells(text, lo, hi)
    if head_lo == lo or re.fullmatch(r"[\s|:-]*", text[lo:hi]):
        return TableRow(cells, None)  # the header or the separator itself
    header = [c[0] for c in _cells(text, head_lo, head_hi)]
    col = next((k for k, h in enumerate(header) if _FILE_HEADER.search(h)), None)
    file_cell = cells[col] if col is not None and col < len(cells) else None
    names = [cells[k] for k, h in enumerate(header) if k < len(cells) and k != col and _NAME_HEADER.search(h)]
    line_cells = [cells[k] for k, h in enumerate(header) if k < len(cells) and k != col and _LINE_HEADER.fullmatch(h)]
    return TableRow(cells, file_cell, names, line_cells)
