"""The subject's scopes that read the answer's prose (subjects.py has the rules and the order):
label, after, before, table name cell, list item, sentence. Each is a small function of the
citation's Site that returns a name or None; the JSON scopes are in json_scopes.py.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from mcptrials.grade.citations import structure
from mcptrials.grade.citations.lexicon import (
    DECLARATION_WORDS,
    KIND_WORDS,
    LEAD_WORDS,
    PLACE_VERBS,
    PREPOSITIONS,
    PROSE_WORDS,
)
from mcptrials.grade.citations.names import (
    parts_of,
    WINDOW,
    WORD,
    Reader,
    clause_end,
    clause_start,
    code_subject,
    instruction,
    safe_start,
    tokens,
)

# a line of its own right after a name: `` `name` (`:67`) ``, `name (line 67)`, `Name:23`
_OWN_LINE = re.compile(r"[\s(`]*:L?\d+\b|\s*\(\s*(?:line\s+)?\d+\s*\)")
_CODE_CELL = re.compile(r"\s*`([^`\n]+)`\s*")  # a cell that is one code span alone
_DECLARATION_CELL = re.compile(rf"\s*(?:{'|'.join(sorted(DECLARATION_WORDS))})\s+:(?P<s>[A-Za-z_]\w*[?!]?)")
_COLON_LINE = re.compile(r"`?:L?\d+\b")
_NEGATED = re.compile(r"(?:instead of|rather than)\s*$")
_KEY_BEFORE = re.compile(r'"(?P<key>[A-Za-z_][\w?!]*)"\s*:\s*"$')


@dataclass
class Site:
    """A citation's place in the answer, what every scope reads: text[start:end] is the citation;
    before and after: where the previous citation ends and the next one starts (a clause stops
    there); objects: the answer's JSON objects (structure.json_objects); is_path: whether a
    string is a path; json_member: the citation is a JSON "line" member (the member is the
    clause); key_named / plain_named: whether the cited file names a word (for JSON keys and
    texts / for capitalised plain words; None: not checked, as for a line-only reference whose
    file the subject is still to decide)."""

    text: str
    start: int
    end: int
    objects: list = field(default_factory=list)
    before: int = 0
    after: int = sys.maxsize  # (no next citation: the clause runs to its own end)
    is_path: Callable[[str], bool] = lambda s: False
    json_member: bool = False
    key_named: Callable[[str], bool] | None = None
    plain_named: Callable[[str], bool] | None = None

    def __post_init__(self) -> None:
        self.reader = Reader(self.is_path, self.plain_named)

    @cached_property
    def tokens_before(self) -> list:
        """The names of the citation's clause before it; a name after `instead of` or `rather than`
        is the one not meant (`uses `a` instead of `b` (:88)`) and left out."""
        text, start = self.text, self.start
        lo = safe_start(text, clause_start(text, start, self.before), start)
        return [t for t in tokens(text, lo, start, self.reader) if not _NEGATED.search(text, max(lo, t[0] - 14), t[0])]

    @cached_property
    def key(self) -> Any:
        """The key of the JSON member the citation is the value of (`"user": "story.rb:4"`), or None."""
        return None if self.json_member else _KEY_BEFORE.search(self.text, max(0, self.start - 80), self.start)

    @cached_property
    def objs(self) -> list:
        """The JSON objects enclosing the citation, innermost first."""
        return structure.enclosing_objects(self.objects, self.start)


def label(site: Site) -> str | None:
    """0. The name the citation is attached to; else the code-like name before the `(` it stands in."""
    if site.json_member:
        return None
    toks = site.tokens_before
    return _label(site.text, toks, site.start) or (
        None if any(t[2] for t in toks) else _paren_owner(site.text, site.start, site.reader)
    )


def after(site: Site) -> str | None:
    """1. The name the clause right after the citation opens with."""
    if site.json_member:
        return None
    return _after(site.text, site.end, clause_end(site.text, site.end, site.after), site.reader)


def before(site: Site) -> str | None:
    """2. The nearest code-like name before the citation in its clause."""
    if site.json_member:
        return None
    strong = [name for _, name, s, _ in site.tokens_before if s]
    return strong[-1] if strong else None


def table_name_cell(site: Site) -> str | None:
    """4. The identifier in the citation's table row's name column."""
    return _table_cell_name(site.text, site.start, site.end, site.reader)


def list_item(site: Site) -> str | None:
    """5. The first code-like name of the citation's list item, else of its parent item's bullet line."""
    text, start = site.text, site.start
    item = structure.list_item_bounds(text, start)
    if not item:
        return None
    strong = [name for _, name, s, _ in tokens(text, item[0], start, site.reader) if s]
    return strong[0] if strong else _parent_item_head(text, item[0], site.reader)


def sentence(site: Site) -> str | None:
    """6. The nearest code-like name of the citation's sentence that the cited file names (in JSON,
    the sentence is the string the citation stands in)."""
    text, start, key_named = site.text, site.start, site.key_named
    lo = max(text.rfind("\n", 0, start), text.rfind(". ", 0, start)) + 1
    if site.objs:
        lo = max(lo, text.rfind('"', 0, start) + 1)
    ticks = [
        name
        for _, name, s, _ in tokens(text, safe_start(text, lo, start), start, site.reader)
        if s and (key_named is None or key_named(parts_of(name)[-1]))
    ]
    return ticks[-1] if ticks else None


_LEAD = re.compile(r"[ \t*:#\u2014\u2013>=-]*(?:\((?P<paren>\s*))?")
_CONJUNCTION = re.compile(r"(?:^|\s)(?:and|or|but|while|then)\s")


def _after(text: str, start: int, end: int, is_path) -> str | None:
    m = _LEAD.match(text, start, end)
    assert m is not None  # every part of _LEAD is optional: it matches the empty string
    if instruction(text, m.end()):
        return None
    opened = m.group("paren") is not None
    colon = any(ch in m.group(0) for ch in ":-\u2014\u2013") and not opened  # a description follows
    first = True
    # the next conjunct is another clause (`path:1 and `main` calls it`: main is not at path:1)
    conj = _CONJUNCTION.search(text[m.end() : end])
    end = m.end() + conj.start() if conj else end
    toks = list(tokens(text, m.end(), end, is_path))
    names = [t for t in toks if t[1] not in LEAD_WORDS and t[1].split(".")[0] not in LEAD_WORDS]
    toks = [t for t in toks if not _COLON_LINE.match(text, t[3])]  # `RequestAdapter:23` is its own line's
    for pos, name, strong, _ in toks:
        word = name.split(".")[0]
        if strong and (opened or len([w for w in WORD.findall(text[m.end() : pos]) if w not in LEAD_WORDS]) < 3):
            return name
        if first and not colon and name[:1].isupper() and name not in PROSE_WORDS:
            return name
        if name not in LEAD_WORDS and word not in LEAD_WORDS:
            first = False
    # the clause is the name alone (`path - class Apprise`, `path:522 votes;`, `path:191 saved scope`)
    if len(names) == 1 or (len(names) == 2 and names[1][1] in KIND_WORDS):
        name = names[0][1]
        if name not in KIND_WORDS and len(name) > 2 and (name[:1].isupper() or (not colon and name not in PROSE_WORDS)):
            return name
    return None


_LABEL_GAP = re.compile("[\\s`*\"'(]*(?:[:\u2014\u2013-][\\s`*\"'(]*)?")


def _label(text: str, toks: list, start: int) -> str | None:
    """The name the citation at start is attached to (rule 0 of the module docstring), also
    across a closed parenthetical right before it (`` `incoming_links` (inbound, `to_story`) :48 ``)."""
    got = _label_at(text, toks, start)
    if got:
        return got
    j = start
    while j > 0 and text[j - 1] in " \t`*:\u2014\u2013-":
        j -= 1
    if j == 0 or text[j - 1] != ")":
        return None
    depth = 0
    for k in range(j - 1, max(-1, j - 1 - WINDOW), -1):
        if text[k] == ")":
            depth += 1
        elif text[k] == "(":
            depth -= 1
            if depth == 0:
                before = [t for t in toks if t[3] <= k]
                if not before or not re.fullmatch(r"[\s`*]*", text[before[-1][3] : k]):
                    return None
                _, name, strong, _ = before[-1]
                heading = re.fullmatch(r"[\s`*]*:[\s`*]*", text[j:start] or " ") is not None
                if strong or (
                    heading
                    and name not in LEAD_WORDS
                    and name not in PROSE_WORDS
                    and name not in KIND_WORDS
                    and len(name) > 2
                ):
                    return name  # `Origin belongs_to stories (counter_cache): path`: stories
                return None
    return None


def _label_at(text: str, toks: list, start: int) -> str | None:
    prep = False
    while toks and toks[-1][1] in PREPOSITIONS and not toks[-1][2]:
        if prep or not re.fullmatch(r"\s+", text[toks[-1][3] : start].replace("`", " ") or " "):
            return None
        prep, start, toks = True, toks[-1][0], toks[:-1]
    if not toks:
        return None
    _, name, strong, end = toks[-1]
    gap = text[end:start]
    if (
        not strong
        and name in KIND_WORDS
        and len(toks) > 1
        and _LABEL_GAP.fullmatch(gap)
        and re.fullmatch(r"[ \t`*]+", text[toks[-2][3] : toks[-1][0]])
        and toks[-2][1] not in LEAD_WORDS
        and toks[-2][1] not in PROSE_WORDS
        and len(toks[-2][1]) > 2
    ):
        return toks[-2][1]  # `Story model at path`, `validate block (path)`: the name the kind word follows
    if not _LABEL_GAP.fullmatch(gap) or '"' in gap or (prep and not re.fullmatch(r"\s+", gap)):
        return None  # a JSON key (`"file": "path"`) is a member's name, not the citation's subject
    if strong:
        return name
    if re.fullmatch(r"\s*:\s*", gap):  # a heading clause `SuggestedTitle belongs_to story: path`
        head = next((t[1] for t in toks if t[2] and t[1] not in LEAD_WORDS), None)
        if head:
            return head
    if name in LEAD_WORDS or name in PROSE_WORDS or len(name) < 3 or any(t[2] for t in toks):
        return None  # a plain word loses to a code-like name of its clause
    if prep and (name.endswith("ed") or name in PLACE_VERBS):
        return None  # `built at path`, `lives in path`: the verb, not a name
    if name.islower() and name.endswith("ed") and not name.endswith("eed"):
        return None  # `wired server.go:417`, `created path`: a participle, not a name
    if name[:1].isupper() and "(" not in gap or prep or len(toks) == 1 or re.fullmatch(r"[\s`]*", gap):
        return name
    return None


def _paren_owner(text: str, start: int, is_path) -> str | None:
    """The code-like name right before the `(` the citation at start stands in, when nothing
    code-like comes between (`` `domain` (belongs_to, line 5) ``: domain)."""
    line = text.rfind("\n", 0, start) + 1
    depth = 0
    for k in range(start - 1, line - 1, -1):
        ch = text[k]
        if ch == ")":
            depth += 1
        elif ch == "(":
            if depth == 0:
                inner = list(tokens(text, k + 1, start, is_path))
                if any(t[2] and t[1] not in LEAD_WORDS for t in inner):
                    return None
                toks = list(tokens(text, max(line, k - WINDOW), k, is_path))
                if toks and toks[-1][2] and re.fullmatch(r"[\s`*]*", text[toks[-1][3] : k]):
                    return toks[-1][1]
                return None
            depth -= 1
    return None


_BULLET_LINE = re.compile(r"([ \t]*)(?:[-*+]|\d+[.)])[ \t]+")


def _parent_item_head(text: str, item_start: int, is_path) -> str | None:
    """For a nested list item that names nothing (`   - File: path:31`): the first code-like
    name of its parent item's bullet line (`8. **Slackalike.payload** - ...`), at most 12
    lines up."""
    m = _BULLET_LINE.match(text, item_start)
    if not m or not m.group(1):
        return None
    indent, pos = len(m.group(1).expandtabs()), item_start
    for _ in range(12):
        if pos <= 0:
            return None
        lo = text.rfind("\n", 0, pos - 1) + 1
        b = _BULLET_LINE.match(text, lo)
        if b and len(b.group(1).expandtabs()) < indent:
            hi = text.find("\n", lo)
            return next(
                (n for _, n, strong, _ in tokens(text, lo, len(text) if hi < 0 else hi, is_path) if strong), None
            )
        pos = lo
    return None


def _table_cell_name(text: str, start: int, end: int, is_path) -> str | None:
    """The identifier of the citation's table row's symbol/name column; without such a column, for
    a cell that is the citation alone: the cell right before it when that is one code span alone
    (`` | `get_listing` | `path:220` | ``), else the Rails declaration or the code span opening the
    cell right after it (`` | `path:410` | `PromotionRule.gifts` | ... | ``)."""
    row = structure.table_row(text, start)
    if not row:
        return None
    for cell, _, _ in row.name_cells:
        name = code_subject(cell.strip("`* "), is_path)
        if name:
            return name
    k = next((k for k, (_, a, b) in enumerate(row.cells) if a <= start < b), None)
    if row.name_cells or k is None or row.cells[k][0].strip("`* ") != text[start:end].strip("`* "):
        return None
    if k > 0 and (alone := _CODE_CELL.fullmatch(row.cells[k - 1][0])):
        return code_subject(alone.group(1), is_path)  # `| `get_listing` | `path:220` | ... |`, grader 11
    if k + 1 >= len(row.cells):
        return None
    nxt = row.cells[k + 1][0]
    decl = _DECLARATION_CELL.match(nxt)
    if decl:
        return decl.group("s")  # `| path:83 | validate :validate_issue |`, grader 11
    tick = re.match(r"`([^`\n]+)`", nxt)
    if not tick or _OWN_LINE.match(nxt, tick.end()):
        return None  # (`` `to_openai_format` (`:67`) ``: the span has its own line, grader 11)
    return code_subject(tick.group(1), is_path)
