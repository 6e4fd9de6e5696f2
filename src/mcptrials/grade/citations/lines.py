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

from mcptrials.grade.citations import structure
from mcptrials.grade.citations.context import Answer
from mcptrials.grade.citations.lexicon import DASH, END_LINE_KEYS, LINE_KEYS
from mcptrials.grade.citations.names import clean_name, code_like, code_subject


def _line_citation(
    ans: Answer, start: int, end: int, lines: list[int], obj=None, form="line-in-context", near_only=False, wide=False
) -> dict | None:
    got = ans.line_file(start, obj, near_only, wide)
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
# `relation.rb:1250/1473/1485`, `named.rb:175/:181`: more lines after a slash (not `a.rb:3/b.rb`)
_SLASH_LIST = re.compile(rf"(?:/:?L?\d+(?:{DASH}L?\d+)?)+(?![\w/]|\.\d)")
_SLASH_LIST_ITEM = re.compile(rf"/:?L?(?P<l1>\d+)(?:{DASH}L?(?P<l2>\d+))?")
# `` `query_methods.rb:1206`, `1238`, `1654` ``: more lines, each a bare number in its own code
# span (a `` `:14` `` is a line-only reference of its own: _COLON_LINE)
_TICK_LIST = re.compile(rf"`(?:, ?`L?\d+(?:{DASH}L?\d+)?`)+")
_TICK_LIST_ITEM = re.compile(rf", ?`L?(?P<l1>\d+)(?:{DASH}L?(?P<l2>\d+))?`")
_NUM = rf"L?\d+(?:\s*(?:{DASH}|to)\s*L?\d+)?"
_ONE_NUM = re.compile(rf"L?(?P<l1>\d+)(?:\s*(?:{DASH}|to)\s*L?(?P<l2>\d+))?")
# "line 5", "lines 5-9", "line ~327", "(lines 72, 74, 76)", "lines 5, 9 and 12". The letter comes
# before the lookbehind (which then looks past it) so that re skips to each L: the same matches, faster.
_PROSE_LINE = re.compile(rf"[Ll](?<![\w:/.#][Ll])ines?\s+~?\s*(?P<nums>{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*)(?![\w])")
# (grader 13: also a list in the span, `` `:78,129-131` ``, `` `:132/2099` ``, `` `:163-164, 215-217` ``)
_COLON_LINE = re.compile(rf"`:L?(?P<nums>\d+(?:\s?{DASH}\s?L?\d+)?(?:(?:, ?|/):?L?\d+(?:{DASH}L?\d+)?)*)`")
_L_LINE = re.compile(rf"(?P<nums>L(?<![\w:/.#`-]L)\d+(?:{DASH}L?\d+)?)(?![\w.])")  # "at L129"
_PAREN_RANGE = re.compile(rf"\((?P<nums>\d+\s*{DASH}\s*\d+)\)")  # "(32-37)"
# Line-only forms a reader follows to the file named nearest in its list item or line (issue 34
# item 5): `create() at :64`, `-> :43 merge!`, `(:22) → (:44)`, `:353/:1212` (a `:N` after no word
# or digit); `... at 1597`, `ctx.push() @1596`, `` `notify` at `19` `` (grader 12: a number in its own code
# span after `at`); `test_request_dispatching (129)` (a number in parentheses right after a code-like name).
_BARE_COLON = re.compile(rf"(?<![\w:.#\[\]\-\"])(?<![A-Za-z_][/)]):L?(?P<nums>\d+(?:{DASH}L?\d+)?)(?![\w:]|\.\d)")
_AT_NUMBER = re.compile(rf"(?:(?<=\sat )|(?<=\sat `)|(?<=\s@)|(?<=\s@ ))(?P<nums>\d+(?:{DASH}\d+)?)(?![\w:%]|\.\d)")
_NAME_PAREN = re.compile(r"(?P<name>`[^`\n]+`|[A-Za-z_][\w.:#]*(?:\(\))?) ?\((?P<nums>\d+)\)")
# Grader 12: `name:N` and `name@N` after a file named in the same list item or line
# (`pkg/adapter.rb — drop_parallel_calls:85`, `Root:307`, `send@45`): a name
# joined to a line; after a colon only a code-like or capitalised name (not `ratio:3`, `step:2`).
_NAME_JOINED = re.compile(
    rf"(?<![\w/.:#@-])(?P<name>[A-Za-z_][\w?!]*)(?P<join>[:@])(?P<nums>\d+(?:{DASH}\d+)?)(?![\w:@/]|\.\d)"
)
# What a number after `at` or in parentheses is when it is not a line: a count or a measure (a
# word or unit follows), a date, a step, a port, a version.
_NOT_A_LINE_AFTER = re.compile(
    r"\s*(?:%|-\d|/\d|(?:ms|s|secs?|seconds?|minutes?|hours?|days?|bytes?|[kmg]b|px|times|items?|lines|levels?|"
    r"files?|tests?|calls?|rows?|records?|x|percent)\b)"
)
_NOT_A_LINE_BEFORE = re.compile(
    r"\b(?:port|ports|listen|listens|listening|localhost|addr|address|host|on|serve|serves|step|steps|phase|"
    r"stage|version|since|in|year|jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec|january|february|march|"
    r"april|june|july|august|september|october|november|december)\W{0,3}$",
    re.IGNORECASE,
)
_LINES_VALUE = re.compile(rf"\s*{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*\s*")


def _numbers(ans_text: str, lo: int, hi: int):
    """(start, end, lines) of each number or range of a list of line numbers text[lo:hi]."""
    for m in _ONE_NUM.finditer(ans_text, lo, hi):
        yield m.start(), m.end(), _lines_of(m.group("l1"), m.group("l2"))


def listed_lines(text: str, citations: list[dict]) -> list[dict]:
    """More lines of the same file after a line citation, comma-separated (with at most one
    space): `summary.go:346,457`, `types.py:73, 82` and `response.rb:19, :23` cite the second
    line too (its text runs from the path to the item); so do `relation.rb:1250/1473` and
    `` `query_methods.rb:1206`, `1238` ``."""
    out = []
    for c in citations:
        m, items = None, _LINE_LIST_ITEM
        for rx, items in (
            (_LINE_LIST, _LINE_LIST_ITEM),
            (_SLASH_LIST, _SLASH_LIST_ITEM),
            (_TICK_LIST, _TICK_LIST_ITEM),
        ):
            m = rx.match(text, c["end"]) if c["lines"] else None
            if m:
                break
        if m:
            c["form"] = "path:list" if c["form"] in ("path:line", "path:range") else c["form"]
            c["subject_span"] = [c["start"], m.end()]
        for item in items.finditer(m.group(0)) if m else ():
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
            out += _prose_citations(ans, m, near, wide=rx is _PROSE_LINE)
    out += _line_cells(ans, free)
    found = sorted((c["start"], c["end"]) for c in out)
    for rx in (_BARE_COLON, _AT_NUMBER, _NAME_PAREN, _NAME_JOINED):
        for m in rx.finditer(ans.text):
            a, b = m.start("nums"), m.end("nums")
            if not free(a, b) or any(s < b and a < e for s, e in found) or not_a_line(ans.text, m):
                continue
            got = _prose_citations(ans, m, True)
            found += [(c["start"], c["end"]) for c in got]
            out += got
    return out


# a table cell holding a bare line or range, `` `17` ``, `42-199`
_CELL_NUMBER = re.compile(rf"(?<=\|)[ \t]*`?(?P<nums>L?\d+(?:\s*{DASH}\s*L?\d+)?)`?[ \t]*(?=\|)")


def _line_cells(ans: Answer, free) -> list[dict]:
    """Grader 14: a bare number in a table's line column, its file in the row's file column (`| Call |
    hc/call/transport.py | 17 |` under `| Name | File | Line |`); not when the file cell gives a line itself."""
    out = []
    for m in _CELL_NUMBER.finditer(ans.text):
        a, b = m.start("nums"), m.end("nums")
        if not free(a, b):
            continue
        row = structure.table_row(ans.text, a)
        if not row or not row.file_cell or re.search(r":\d", row.file_cell[0]):
            continue
        if any(s <= a < e for _, s, e in row.line_cells):
            for lines in (ls for _, _, ls in _numbers(ans.text, a, b)):
                c = _line_citation(ans, a, b, lines)
                if c:
                    out.append(c)
    return out


def _prose_citations(ans: Answer, m: re.Match, near: bool, wide: bool = False) -> list[dict]:
    """The line-only citations of one prose match (its numbers), each with its file from the context."""
    out = []
    nums = list(_numbers(ans.text, m.start("nums"), m.end("nums")))
    for k, (a, b, lines) in enumerate(nums):
        # one number: the whole match is its text; a list: each number, the first from "lines"
        a, b = (m.start(), m.end()) if len(nums) == 1 else (m.start() if k == 0 else a, b)
        c = _line_citation(ans, a, b, lines, near_only=near, wide=wide)
        if c:
            c["subject_span"] = [m.start(), m.end()]
            if "name" in m.re.groupindex:
                c["named"] = joined_subject(m.group("name"), ans.is_path)
            out.append(c)
    return out


def joined_subject(name: str, is_path) -> str | None:
    """Grader 12: the name a line is joined to (`` `models`(66) ``, `Root:307`, `send@45`) is its
    subject, as a label is: the name a code span holds, else the word itself."""
    if name.startswith("`"):
        return code_subject(name.strip("`"), is_path)
    return clean_name(name.removesuffix("()"))


def not_a_line(text: str, m: re.Match) -> bool:
    """Whether the number of a `:N`, `at N`, `@N` or `name (N)` match is something else than a
    line: a count or a measure (`at 3 levels`, `at 100%`), a date (`at 2024-05-01`, `since 2019`),
    a step, a version or a port (`listens on :8080`); or, after a name, a
    name that is not code-like (`Step (3)`, `tests (20)`)."""
    b = m.end("nums")
    head = m.start("name") if "name" in m.re.groupindex else m.start()
    before = text[max(0, head - 24) : head]
    if _NOT_A_LINE_BEFORE.search(before.removesuffix(" at ").removesuffix(" @").rstrip()):
        return True
    if m.re is _BARE_COLON:
        return False  # (a JSON key's `":1`, a time's `12:30`, a slice's `[:5]`: never matched)
    if m.re is _NAME_PAREN:
        name = m.group("name")
        return not (name.startswith("`") or code_like(name.removesuffix("()"), name.endswith("()")))
    if m.re is _NAME_JOINED:
        return not joined_name(m.group("name"), m.group("join"))
    return _NOT_A_LINE_AFTER.match(text, b) is not None


def joined_name(name: str, join: str) -> bool:
    """Whether `name` joined to a number by `join` reads as a name and its line (_NAME_JOINED):
    after `@` any identifier (`send@45`), after `:` a code-like one (`pick_tool:13`,
    `PageSubscriber:284`) or a capitalised word (`Root:307`, `Call:36`)."""
    if len(name) < 2 or name.lower() in _NOT_A_LINE_NAMES:
        return False
    return join == "@" or code_like(name, False) or name[0].isupper()


# words before `:N` or `@N` that are no code name: ports, hosts, protocols, steps, times
_NOT_A_LINE_NAMES = frozenset(
    "localhost host port http https tcp udp ws wss step phase stage version ratio line lines page pages "
    "utc gmt am pm python ruby go node v".split()
)
