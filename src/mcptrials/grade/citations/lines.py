"""Line references beyond `path:N`: more lines listed after one (`path:N,M,K-L`), and line-only
references that take their file from the answer's context (resolved_by "context"): a JSON
"line" (or "lines", "start_line" with "end_line") member beside a "file" member of the same
object; "line N", "lines N-M", "L129" and `:N` in prose, with the file of their JSON object's
"file" member, else their table row's file column, else the nearest path named before them
(else the first after) in their innermost JSON object, list item or paragraph that names a
file of the commit (a "file" member counts whatever it names); a bare "(32-37)" whose list
item or line names a file. A reference with no file there is not a citation.
"""

from __future__ import annotations

import bisect
import itertools
import re

from mcptrials.grade.citations.context import Answer
from mcptrials.grade.citations.lexicon import DASH, END_LINE_KEYS, LINE_KEYS


def _line_citation(
    ans: Answer, start: int, end: int, lines: list[int], obj=None, form="line-in-context", near_only=False
) -> dict | None:
    got = ans.line_file(start, obj, near_only)
    if got is None:
        return None
    mention, scope = got
    path = mention["path"]
    return {
        "path_as_cited": path,
        "path": path,
        "lines": lines,
        "symbol": None,
        "start": start,
        "end": end,
        "text": ans.text[start:end],
        "line_only": True,
        "form": form,
        "may_move": obj is None and not near_only,  # another file of the context may be meant
        "context": {
            "scope": scope,
            "from": ans.text[mention["start"] : mention["end"]],
            "span": [mention["start"], mention["end"]],
        },
    }


def _lines_of(l1, l2) -> list[int]:
    return [int(l1)] if l2 is None else [int(l1), int(l2)]


# `,457`, `, 82`, `, :23` (one space; not `, 20 tests`: a number a word follows is a count, not a line)
_LINE_LIST = re.compile(rf"(?:,:?L?\d+(?:{DASH}L?\d+)?|, :?L?\d+(?:{DASH}L?\d+)?(?! +[a-z]))+(?!\w|\.\d)")
_LINE_LIST_ITEM = re.compile(rf", ?:?L?(?P<l1>\d+)(?:{DASH}L?(?P<l2>\d+))?")
_NUM = rf"L?\d+(?:\s*(?:{DASH}|to)\s*L?\d+)?"
_ONE_NUM = re.compile(rf"L?(?P<l1>\d+)(?:\s*(?:{DASH}|to)\s*L?(?P<l2>\d+))?")
# "line 5", "lines 5-9", "line ~327", "(lines 72, 74, 76)", "lines 5, 9 and 12". The letter comes
# before the lookbehind (which then looks past it) so that re skips to each L: the same matches, faster.
_PROSE_LINE = re.compile(rf"[Ll](?<![\w:/.#][Ll])ines?\s+~?\s*(?P<nums>{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*)(?![\w])")
_COLON_LINE = re.compile(rf"`:L?(?P<nums>\d+(?:\s?{DASH}\s?L?\d+)?)`")
_L_LINE = re.compile(rf"(?P<nums>L(?<![\w:/.#`-]L)\d+(?:{DASH}L?\d+)?)(?![\w.])")  # "at L129"
_PAREN_RANGE = re.compile(rf"\((?P<nums>\d+\s*{DASH}\s*\d+)\)")  # "(32-37)"
_LINES_VALUE = re.compile(rf"\s*{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*\s*")


def _numbers(ans_text: str, lo: int, hi: int):
    """(start, end, lines) of each number or range of a list of line numbers text[lo:hi]."""
    for m in _ONE_NUM.finditer(ans_text, lo, hi):
        yield m.start(), m.end(), _lines_of(m.group("l1"), m.group("l2"))


def listed_lines(text: str, citations: list[dict]) -> list[dict]:
    """More lines of the same file after a line citation, comma-separated (with at most one
    space): `summary.go:346,457`, `types.py:73, 82` and `response.rb:19, :23` cite the second
    line too (its text runs from the path to the item)."""
    out = []
    for c in citations:
        m = _LINE_LIST.match(text, c["end"]) if c["lines"] else None
        if m:
            c["form"] = "path:list" if c["form"] in ("path:line", "path:range") else c["form"]
            c["subject_span"] = [c["start"], m.end()]
        for item in _LINE_LIST_ITEM.finditer(m.group(0)) if m else ():
            start, end = c["end"] + item.start("l1"), c["end"] + item.end()
            while text[start - 1] in "L:":  # the item's own `L` or `:` (`, L82`, `, :23`)
                start -= 1
            out.append(
                dict(
                    c,
                    lines=_lines_of(item.group("l1"), item.group("l2")),
                    start=start,
                    end=end,
                    text=text[c["start"] : end],
                )
            )
    return out


def line_only_citations(ans: Answer, taken: list[dict]) -> list[dict]:
    """Line-only references that take their file from the context: a JSON "line" member
    beside a "file" member of the same object ("lines": "11, 25" cites both), and in prose
    `:N`, "line N", "line ~N", "lines N-M", every number of "lines 72, 74, 76", "L129", and a
    bare "(32-37)" whose list item or line names a file."""
    spans = sorted((c["start"], c["end"]) for c in taken)
    starts = [s for s, _ in spans]
    reach = list(itertools.accumulate((e for _, e in spans), max, initial=-1))  # reach[i]: max end of spans[:i]
    out = []

    def free(a, b):
        """No citation overlaps text[a:b]: none of those starting before b ends after a."""
        return reach[bisect.bisect_left(starts, b)] <= a

    for obj in ans.objects:
        ends = obj.get(*END_LINE_KEYS)
        for mem in obj.get(*LINE_KEYS):
            raw = str(mem.value) if isinstance(mem.value, (int, str)) and not isinstance(mem.value, bool) else ""
            if not _LINES_VALUE.fullmatch(raw):
                continue
            listed = [lines for _, _, lines in _numbers(raw, 0, len(raw))]
            if (
                len(listed) == 1
                and len(listed[0]) == 1
                and ends
                and isinstance(ends[0].value, int)
                and ends[0].value >= listed[0][0]
            ):
                listed[0].append(ends[0].value)
            for lines in listed:
                c = _line_citation(ans, mem.key_start, mem.end, lines, obj, form="json-fields")
                if c:
                    c["json_member"] = True
                    out.append(c)
    for rx, near in ((_PROSE_LINE, False), (_COLON_LINE, False), (_L_LINE, False), (_PAREN_RANGE, True)):
        for m in rx.finditer(ans.text):
            if not free(m.start(), m.end()):
                continue
            nums = list(_numbers(ans.text, m.start("nums"), m.end("nums")))
            for k, (a, b, lines) in enumerate(nums):
                # one number: the whole match is its text; a list: each number, the first from "lines"
                a, b = (m.start(), m.end()) if len(nums) == 1 else (m.start() if k == 0 else a, b)
                c = _line_citation(ans, a, b, lines, near_only=near)
                if c:
                    c["subject_span"] = [m.start(), m.end()]
                    out.append(c)
    return out
