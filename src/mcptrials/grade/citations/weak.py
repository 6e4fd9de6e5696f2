"""Names that can only verify (grader 13, issue 34): when no scope gives a citation a subject, the
names a reader may still have meant, in the places a subject stands: the two nearest names of its
clause after it, then the two before it (`path:151 create`, `path:1653 excluding extracts ...`, `model
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
from mcptrials.grade.citations.names import clause_end, clause_start, instruction, safe_start, tokens

_LEAD = re.compile(r"[\s`*)\]:\u2013\u2014-]*(?:(?:line|lines?)\s+[\d\s,-]+)?[\s`*)\]:\u2013\u2014-]*")
_LOCATORS = frozenset((*FILE_KEYS, *LINE_KEYS, *END_LINE_KEYS))
# Names taken on each side of a citation (and from the line it heads): `CanCan manage `Spree::Order``
# after a line of `can :manage, Spree::Order` describes the line, it does not name it.
NEAR = 2
# Shorter plain words are no names a line can be checked against (`id`, `to`, `db`).
MIN_PLAIN = 3


def weak_names(text: str, lo: int, hi: int, before: int, after: int, is_path, objects=()) -> list[tuple[str, bool]]:
    """The weak candidates of the citation text[lo:hi] (module docstring), nearest first: after it,
    before it, its table row's first cell, the line a header citation opens, its JSON object's
    members' first words; each with whether the answer writes it as code. `before`/`after`: the
    neighbouring citations' end and start (its clause stops there); objects: [the object of a JSON
    "line" member] (else empty). An instruction after it (`- add to X`) names what to change: none."""
    while lo > before and text[lo - 1] in "`*[":
        lo -= 1
    while hi < min(after, len(text)) and text[hi] in "`*]":
        hi += 1
    a = safe_start(text, clause_start(text, lo, before), lo)
    b = clause_end(text, hi, after)
    found = list(tokens(text, hi, b, is_path))
    lead = _LEAD.match(text, hi)
    if len(found) > 1 and lead and instruction(text, lead.end()):
        # `path:26-40 - add to `PROVIDER_PREFERENCE``: what to change, grader 8 (a verb alone,
        # `path:151 create`, is a name)
        found = []
    right = [(n, strong) for _, n, strong, _ in found]
    left = [(n, strong) for _, n, strong, _ in tokens(text, a, lo, is_path)][::-1]
    out = right[:NEAR] + left[:NEAR]  # a subject stands right beside it: deeper words are what the line does
    row = structure.table_row(text, lo)
    if row and row.cells and not row.cells[0][1] <= lo < row.cells[0][2]:
        _, s, e = row.cells[0]
        out += [(n, strong) for _, n, strong, _ in tokens(text, s, e, is_path)][:1]
    out += _opened_line(text, hi, after, is_path)
    out += _member_leads(text, lo, objects, is_path)
    return list(dict.fromkeys((n, strong) for n, strong in out if strong or len(n) >= MIN_PLAIN))


# the rest of a line that a citation heads: closing marks and a colon (`` `story.rb` (line 67): ``)
# grader 14: a bold mark after the colon (`` (`issue.rb:172`):** ``), or no colon before a code block
# (`` (`parser.rb:16`) `` over ```` ```ruby ```` and `def initialize(stream)`)
_HEADS = re.compile(r"[\s`*)\]]*:[ \t*]*\n|[ \t`*)\]]*\n[ \t]*```[\w+-]*[ \t]*\n")


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
    """The first word of each other string member of a JSON "line" member's object, `objects` (`"line":
    23, "usage": "Gantt helper consumes ..."`): the word its description opens with names its thing.
    (Not for a member of its own, `"defaults": "path:143"`: its siblings are other facts.) Grader 14:
    also for a citation in a string member of the object (grading.member_of), `{"behavior":
    "acts_as_watchable", "called_at": "path:50"}`."""
    out = []
    for mem in objects[0].members if objects else []:
        if isinstance(mem.value, str) and mem.key.lower() not in _LOCATORS and not mem.start <= pos < mem.end:
            out += [(n, strong) for _, n, strong, _ in tokens(text, mem.start + 1, mem.end - 1, is_path)][:1]
    return out
