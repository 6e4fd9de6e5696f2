"""Names that can only verify (grader 13, issue 34): when no scope gives a citation a subject, the
names a reader may still have meant, in the places a subject stands: the words of its clause after
it, then before it, nearest first (`path:151 create`, `path:1653 excluding extracts ...`, `model
(Base subclass) - path:72`), also inside an instruction (`` path:26-40 - add to `PROVIDER_PREFERENCE` ``);
its table row's first cell (`| Keyring | path:23 |`); the code-like names of the line a citation
heads (`` `story.rb` (line 67): `` over `` - `Mastodon.delete_post(@story)` ``); the first word of
each other string member of its JSON object (`"line": 23, "usage": "Gantt helper ..."`). Each alone
is weak evidence, not enough to say what the line should hold, so one of them is the subject only
when it is at the cited line: strict `verified` (the line's code names it, or a definition of it holds
the line), and for a plain word (not written as code) only by a definition of it holding the line or
a Rails declaration of it there (`story` in `path:229 story search` is what the line is about, not
its name). Otherwise the citation keeps no subject (`n/a`): a weak name never gives a `mismatch` or
an `undetermined` (issue 34 item 1).
"""

from __future__ import annotations

import re

from mcptrials.grade.citations import structure
from mcptrials.grade.citations.lexicon import END_LINE_KEYS, FILE_KEYS, LINE_KEYS
from mcptrials.grade.citations.names import clause_end, clause_start, safe_start, tokens

_LOCATORS = frozenset((*FILE_KEYS, *LINE_KEYS, *END_LINE_KEYS))
# Names taken from the line a citation heads.
NEAR = 2
# Shorter plain words are no names a line can be checked against (`id`, `to`, `db`).
MIN_PLAIN = 3


def weak_names(text: str, lo: int, hi: int, before: int, after: int, is_path, objects=()) -> list[tuple[str, bool]]:
    """The weak candidates of the citation text[lo:hi] (module docstring), nearest first: after it,
    before it, its table row's first cell, the line a header citation opens, its JSON object's
    members' first words; each with whether the answer writes it as code. `before`/`after`: the
    neighbouring citations' end and start (its clause stops there); objects: the answer's JSON objects."""
    while lo > before and text[lo - 1] in "`*[":
        lo -= 1
    while hi < min(after, len(text)) and text[hi] in "`*]":
        hi += 1
    a = safe_start(text, clause_start(text, lo, before), lo)
    b = clause_end(text, hi, after)
    right = [(n, strong) for _, n, strong, _ in tokens(text, hi, b, is_path)]
    left = [(n, strong) for _, n, strong, _ in tokens(text, a, lo, is_path)][::-1]
    out = right + left
    row = structure.table_row(text, lo)
    if row and row.cells and not row.cells[0][1] <= lo < row.cells[0][2]:
        cell, s, e = row.cells[0]
        out += [(n, strong) for _, n, strong, _ in tokens(text, s, e, is_path)][:1]
    out += _opened_line(text, hi, after, is_path)
    out += _member_leads(text, lo, objects, is_path)
    return list(dict.fromkeys((n, strong) for n, strong in out if strong or len(n) >= MIN_PLAIN))


# the rest of a line that a citation heads: closing marks and a colon (`` `story.rb` (line 67): ``)
_HEADS = re.compile(r"[\s`*)\]]*:[ \t]*\n")


def _opened_line(text: str, hi: int, after: int, is_path) -> list[tuple[str, bool]]:
    """The code-like names of the line right below a citation that heads it (`path (line 67):` over
    `` - `Mastodon.delete_post(@story)` - deletes ... ``): what the header's line is about."""
    m = _HEADS.match(text, hi)
    if not m or m.end() >= after:
        return []
    end = text.find("\n", m.end())
    end = len(text) if end < 0 else end
    return [(n, True) for _, n, strong, _ in tokens(text, m.end(), min(end, after), is_path) if strong][:NEAR]


def _member_leads(text: str, pos: int, objects, is_path) -> list[tuple[str, bool]]:
    """The first word of each string member of the JSON object the citation is in (`"line": 23,
    "usage": "Gantt helper consumes ..."`): the word a description opens with names its thing."""
    objs = structure.enclosing_objects(objects, pos) if objects else []
    if not objs:
        return []
    out = []
    for mem in objs[0].members:
        if isinstance(mem.value, str) and mem.key.lower() not in _LOCATORS and not mem.start <= pos < mem.end:
            out += [(n, strong) for _, n, strong, _ in tokens(text, mem.start + 1, mem.end - 1, is_path)][:1]
    return out
