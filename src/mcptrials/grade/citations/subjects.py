"""The subject of a citation: the identifier the answer says is at the cited place, read
as a careful reader reads it, from the narrowest scope first (issue 25 item 3):

0. "label": the name the citation is attached to, right before it with nothing but
   spaces, backticks, quotes, an opening `(` and one `:`, dash or `at`/`in`/`on` between
   (`` `is_noop(self)` — path:74 ``, `Http.post (path:28)`, `Sms :36`, `notify at path:96`,
   `"Shell": "path:13"`): a code-like name, a capitalised word that does not start prose,
   or a plain word that begins its clause or is joined by `at`/`in`/`on` and is not a verb
   (`built at path` is not one, nor is a lower-case participle: `wired server.go:417`), when
   no code-like name is in its clause (`logic (path)`
   in "the 404-is-permanent logic (path)" is not one: the clause began earlier); a JSON key
   (`"file": "path"`) is never one; else, for a citation inside a parenthetical with nothing
   code-like before it there, the code-like name right before the `(`
   (`` `domain` (belongs_to, line 5) ``); across a closed parenthetical right before the
   citation (`` `incoming_links` (inbound, `to_story`) :48 ``: incoming_links); a heading
   clause ending in `:` gives its first code-like name (`SuggestedTitle belongs_to story: path`);
   a kind word (model, class, method, scope, block...) right before gives the name before it
   (`Story model at path`, `validate block (path)`);
1. "after": the clause right after the citation (a parenthetical `(Channel.notify)`, or
   `path:16 Apprise`, `path:60 defines Transport`): its first code-like name within two words
   of the citation, lead words such as `defines` not counted (in a parenthetical, anywhere:
   `path:16 fills cache from story through DiffBot` is about the line, not DiffBot), or its first
   word when that is a capitalised identifier directly after the citation; Rails
   declaration words (`has_many merged_stories`) lead to the name after them;
2. "before": the nearest code-like name before it in the same clause
   (`` `Transport.notify` signature (path:64) ``);
3. "json field": the `name`/`symbol`/`function`/`signature`... member of its own innermost
   JSON object (for a JSON `"line"` member this comes first: the member is the clause);
   "json text": else the first code-like name of another member's text, or its capitalised
   name before a kind word (`"dependent": "Tagging model"`), when the cited file names it
   (a name of another member that the file lacks is about something else) (`"what":
   "Utils.normalize used by Story#url="`, `"use": "has_many :stories"`; a prose member such
   as `reason` or `depends_how` gives a code-like name only, a locator or group member
   none: json_key_kind below), and never for the value of a descriptive member of its own (`"base_class": "path:60", "entry_point":
   "notify(...)"`: the siblings are other facts, not this citation's);
   "json key": before these, the key of the JSON member the citation is the value of
   (`"user": "story.rb:4"`), when the cited file names it somewhere (key_named): a key that
   names nothing of the file (`"model_validation": "story.rb:265"`) is a label, no subject;
   a locator, prose or group key never is one (json_key_kind: `file`, `file_line`, `refs`,
   `verification`...; `reason`, `risk`, `depends_how`...; `subsystem`, `category`...). A
   locator or group member gives no "json text"; a prose member only a code-like name; and
   an item of an array (`"refs": ["a:1", "b:2"]`) takes none: the object's text is about the group;
   "json code": a member quoting the cited line's code beside it (`"file": "issue.rb:111",
   "line": "scope :like"`; CODE_KEYS, not a line number) gives the quote's first code-like
   name, else its name as a code span's;
4. "table name cell": the identifier in its table row's symbol/name column; in a table with
   no such column, the code span opening the cell right after a cell that is the citation
   alone (`` | `path:410` | `PromotionRule.gifts` | gift rewards | ``);
5. "list item": the first code-like name of its list item (of a nested item that names
   nothing, its parent item's bullet line: `8. **Slackalike.payload**` over `   - File: path`);
6. "sentence": the nearest code-like name of its sentence that the cited file names (the
   widest scope: a name the file lacks is about something else).

Before all of these, "respectively" (verify.respectively): one of a group of
citations joined by `/` or `,` right after as many names joined by `/` takes the name in
its place (`` `hidden_by`/`not_hidden_by` `:148`/`:151` ``: :151 is about not_hidden_by),
with the group's names kept: a line where the name in its place is not but another name of
the group is takes that one ("respectively, in another order", settle_strict).

After all of these, once the file is resolved, a subject that is the cited file's own
lower-case name or its plural (`moderation: moderation.rb:15`, `has_one :story_text` ->
story_text.rb:3), or a lower-case folder of its path (`checkout: saleor/checkout/search/
indexing.py:190`), is dropped (names_its_file): the word names the file, not a place in it.
So is a subject from the wider scopes (json text, list item, sentence) of a citation in a
run of three or more joined by commas (`a.go:1, b.go:2, c.go:3`; grading._runs): the text
is about the group.

A name right after `instead of` or `rather than` is the one not meant (`uses `a` instead of
`b` (:88)`: a). A description opening with an edit verb (`Add to PROVIDER_PREFERENCE`, a JSON
`"change": "add elsif branch for ..."`; EDIT_VERBS) is an instruction: the names in it are what
to change, not what is at the line, so neither "after" nor "json text" takes one from it.

A clause ends at `, ; | ·`, a line break, a sentence's full stop, an unopened `)` or another
citation; commas inside backticks, or before the citation inside a closed `(...)`
(`calls self.transport.notify(flip, n) at path`), do not end it. Code-like: backticked, or bold, or with a
qualifier (`a.b`, `A::b`, `A#b`), an underscore, an inner capital (`HttpTransport`), all
capitals of five letters or more (`TRANSPORTS`; `HTTP`, `PORO` are prose) or a call's `(`;
a part of a hyphenated prose word (`IP-delete`), a segment of a path or URL after a plain
lower-case word and a slash (`chat/completions`), a key of the answer's own JSON and a
capitalised plain word the cited file never names (`Revisions:`, `**Permissions**`; _Reader)
are no names; a Rails declaration out of
backticks names its symbol (`delegate :order_id, to: :shipment` -> order_id), and a bold heading holding a code span (`` **`Device.save` cascade** ``) names
that span's identifier. In JSON, "sentence" is the string the citation stands in. Inside a code span the subject is the span's
qualified identifier (`Story#is_gone?`), else its first Ruby symbol (`has_many :taggings`
-> taggings), else the name before its first `(` (`def notify(self)` -> notify), else its
first identifier that is not a keyword (`include Token` -> Token); `e.g`, `i.e` and one-letter
names are never names; a qualified name followed by
its type, as a field is declared, is that name (`DoltDatabaseProvider.databases
map[string]dsess.SqlDatabase` -> DoltDatabaseProvider.databases). Paths, one-letter names
and keywords are never subjects.

Each subject is {"name": qualified name, "from": the scope above}.
"""

from __future__ import annotations

import re

from mcptrials.grade.citations import structure

IDENT = r"[A-Za-z_]\w*[?!]?"
QUALIFIED = rf"{IDENT}(?:(?:\.|::|#){IDENT})*"
_QUALIFIED_SPAN = re.compile(rf"^(?:&|\*|@)?(?P<id>{QUALIFIED})(?:<.*>|\[.*\])?(?:\(.*\)?)?\s*(?:->.*)?$")
_TOKEN = re.compile(
    rf"`(?P<tick>[^`\n]+)`|\*\*(?P<bold>[^*\n]+)\*\*|(?:(?<=\s#)|(?<![\w`:.#]))"
    rf"(?P<bare>{QUALIFIED})(?:(?P<call>\()|(?P<setter>=)(?=[\s`),;]|$))?"
)
_PATH_SEGMENT = re.compile(r"(?<![\w.])[a-z][a-z0-9]*/$")  # a plain lower-case word and a slash before
_JSON_KEY_AFTER = re.compile(r'"\s*:\s*["\[{]')
# a qualified name and its type, as a field is declared (`DoltDB.db *hooksDatabase`, `ValueStore.cs ChunkStore`)
_QUALIFIED_DECL = re.compile(rf"^(?P<id>{IDENT}(?:(?:\.|::|#){IDENT})+)\s+[*\[\]\w.]+$")
# Rails declarations written out of backticks (`has_many :orders`, `delegate :order_id`)
DECLARATION_WORDS = frozenset(
    "has_many has_one belongs_to has_and_belongs_to_many delegate scope validates "
    "validate attr_reader attr_writer attr_accessor before_action after_action "
    "before_save after_save before_create after_create before_destroy after_destroy "
    "after_commit before_validation after_initialize".split()
)
_DECL_SYMBOL = re.compile(rf"[ \t]+:(?P<s>{IDENT})")
_RUBY_SYMBOL = re.compile(rf"(?<![:\w]):(?P<s>{IDENT})")
_BEFORE_CALL = re.compile(rf"(?P<id>{QUALIFIED})\s*\(")
_WORD = re.compile(IDENT)
_CLAUSE_END = re.compile(r"[,;|\n\u00b7]|\.(?=\s|$)")
_CLAUSE_CHARS = frozenset(",;|\n\u00b7.")  # where _CLAUSE_END may match (tested first: speed)
_SEPARATOR = re.compile(r"\.|::|#")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
KEYWORDS = frozenset(
    """
    fn func def class struct impl pub async await const let var static public private protected
    internal void return for if while where self Self this mut type interface trait enum module
    export function final abstract override unsafe extern crate super in of dyn ref mod use
    package import from lambda end do then else true false None null nil True False
    include extend prepend require require_relative attr_reader attr_writer attr_accessor
    and or not is the a an
""".split()
)
# Capitalised words that start prose rather than name a definition (`path:74: Check if ...`).
PROSE_WORDS = frozenset(
    """
    The This That These Those It Its See Also And Or But Then Here There Called Used Uses Returns
    Base Entry Note Each All Every Only No Not Default For In On At With From Via If When Where
    Which What Why How Both Line Lines File Files Defined Calls Call Shared Same Similar One Two
    Other Another New Old Main Core Key Top Bottom Most Many Some Any Overrides Override Inherits
""".split()
)
# Words that may stand between a citation and the name it is about: `path:60 defines Transport`.
LEAD_WORDS = frozenset(
    "defines define declares declared is are has holds contains class def module method "
    "function fn func type struct trait interface the a an with named called "
    "has_many has_one belongs_to has_and_belongs_to_many scope".split()
)
WINDOW = 160  # characters a clause reaches at most, either side


def names_its_file(name: str, path: str | None) -> bool:
    """Whether a subject is the cited file's own name in lower case, or its plural
    (`moderation` for moderation.rb, `suggested_taggings` for suggested_tagging.rb, `stories`
    for story.rb), or its dotted module path (`dcim.forms.bulk_edit`): such a
    word names the file, not a place in it (`Moderation`, the class, is a name of the code)."""
    if not path:
        return False
    stem = path.rsplit("/", 1)[-1].split(".", 1)[0]
    dirs = path.split("/")[:-1]
    if "." in name:  # a dotted module path (`dcim.forms.bulk_edit` for .../dcim/forms/bulk_edit.py)
        *outer, name = name.split(".")
        if not outer or dirs[len(dirs) - len(outer) :] != outer:
            return False
    plurals = {stem + "s", stem + "es"} | ({stem[:-1] + "ies"} if stem.endswith("y") else set())
    return (stem.islower() and (name == stem or name in plurals)) or (name.islower() and name in dirs)


def parts_of(name: str) -> list[str]:
    return [p for p in _SEPARATOR.split(name) if p] or [name]


def _clean(name: str) -> str | None:
    parts = [p for p in _SEPARATOR.split(name) if p]
    if not parts or len(parts[-1].rstrip("?!")) < 2 or parts[-1] in KEYWORDS:
        return None
    return name


def code_subject(span: str, is_path) -> str | None:
    """The subject a code span names (rules in the module docstring), or None."""
    s = span.strip()
    if not s or is_path(s):
        return None
    m = _QUALIFIED_SPAN.match(s) or _QUALIFIED_DECL.match(s)
    if m and m.group("id").split(".")[0] not in KEYWORDS:
        return _clean(m.group("id"))
    sym = _RUBY_SYMBOL.search(s)
    if sym:
        return _clean(sym.group("s"))
    call = next((c for c in _BEFORE_CALL.finditer(s) if c.group("id") not in KEYWORDS), None)
    if call:
        return _clean(call.group("id"))
    for w in _WORD.finditer(s):
        if w.group(0) not in KEYWORDS and len(w.group(0)) > 1:
            return _clean(w.group(0))
    return None


class _Reader:
    """is_path, callable as before, with the cited file's words: a capitalised plain word is
    a name only when the file names it (`Revisions: path:84` is a heading, `Story` a class)."""

    def __init__(self, is_path, key_named):
        self.is_path, self.key_named = is_path, key_named

    def __call__(self, s: str) -> bool:
        return self.is_path(s)


def _names(is_path, name: str) -> bool:
    named = getattr(is_path, "key_named", None)
    return named is None or named(parts_of(name)[-1])


def _code_like(name: str, call: bool) -> bool:
    # (a qualified name is code-like whatever its last part: plain `in` tests first, for speed)
    if call or "." in name or ":" in name or "#" in name or "_" in name.strip("_"):
        return True
    return _INNER_CAPITAL.search(name) is not None or (len(name) >= 5 and name.isupper())


def _tokens(text: str, lo: int, hi: int, is_path):
    """(start, name, strong, end) for the names in text[lo:hi]; strong: backticked, bold or code-like."""
    path_of = getattr(is_path, "is_path", is_path)  # a _Reader's own test, one call less per word
    for m in _TOKEN.finditer(text, lo, hi):
        if m.group("tick") is not None:
            name = code_subject(m.group("tick"), is_path)
            if name:
                yield m.start(), name, True, m.end()
        elif m.group("bold") is not None:
            inner = m.group("bold").strip()
            tick = re.search(r"`([^`\n]+)`", inner)
            if tick:  # `**`Device.save` cascade**`: the bold heading's code span
                name = code_subject(tick.group(1), is_path)
                if name:
                    yield m.start(), name, True, m.end()
                continue
            name = code_subject(inner, is_path) if _QUALIFIED_SPAN.match(inner) else None
            if name and not _code_like(name, "(" in inner) and not _names(is_path, name):
                continue  # a bold heading word (`**Permissions**`) the file never names
            if name and (_code_like(name, "(" in inner) or " " not in inner):
                yield m.start(), name, _code_like(name, "(" in inner) or inner[:1].isupper(), m.end()
        else:
            name = m.group("bare")
            if path_of(name) or name in KEYWORDS or len(name.rsplit(".", 1)[-1]) < 2:
                continue  # (`e.g`, `i.e`, a one-letter name: never a subject)
            s, e = m.start(), m.end("bare")
            if name in DECLARATION_WORDS:
                decl = _DECL_SYMBOL.match(text, e)
                if decl:  # `delegate :order_id, to: :shipment`: the declared name
                    yield s, decl.group("s"), True, decl.end()
                    continue
            after, before = text[e : e + 2], text[max(0, s - 2) : s]
            if (after[:1] == "-" and after[1:].isalpha()) or (before[-1:] == "-" and before[:1].isalpha()):
                continue  # a part of a prose compound (`IP-delete`, `VC-rename`), not a name
            if before[-1:] == "/" and _PATH_SEGMENT.search(text, max(0, s - 40), s):
                continue  # a segment of a path or URL (`lib/ruby_llm/...`, `chat/completions`)
            if before[-1:] == '"' and _JSON_KEY_AFTER.match(text, e):
                continue  # a JSON key: the member's name, not a name of the code (see "json key")
            code = _code_like(name, m.group("call") is not None) or m.group("setter") is not None or before[-1:] == "#"
            if not code and name[:1].isupper() and not _names(is_path, name):
                continue  # a capitalised word of prose (`File:`, `Revisions:`) the file never names
            yield s, name, code, e


def _tick_spans(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The code spans meeting text[lo:hi], offsets relative to lo; paired from the start of
    lo's line (a window that starts inside a code span must not flip the pairing)."""
    line = text.rfind("\n", 0, lo) + 1
    spans = structure.code_spans(text, line, hi)
    return [(a - lo, b - lo) for a, b in spans if b > lo]


def _clause_end(text: str, pos: int, stop: int) -> int:
    """Where the clause starting at pos ends (the first boundary outside backticks, at most stop)."""
    hi = min(stop, pos + WINDOW, len(text))
    ticks = _tick_spans(text, pos, hi)
    depth = 0
    for k in range(pos, hi):
        ch = text[k]
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return k
            depth -= 1
        elif ch in _CLAUSE_CHARS and _CLAUSE_END.match(text, k) and not any(a <= k - pos < b for a, b in ticks):
            return k
    return hi


def _clause_start(text: str, pos: int, stop: int) -> int:
    """Where the clause ending at pos starts (the last boundary outside backticks, at least stop)."""
    lo = max(stop, pos - WINDOW, 0)
    ticks = _tick_spans(text, lo, pos)
    depth = 0  # a comma inside a closed (...) before pos does not end the clause
    for k in range(pos - 1, lo - 1, -1):
        ch = text[k]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth = max(depth - 1, 0)
        elif (
            depth == 0
            and ch in _CLAUSE_CHARS
            and _CLAUSE_END.match(text, k)
            and not any(a <= k - lo < b for a, b in ticks)
        ):
            return k + 1
    return lo


_LEAD = re.compile(r"[ \t*:#\u2014\u2013>=-]*(?:\((?P<paren>\s*))?")
_CONJUNCTION = re.compile(r"(?:^|\s)(?:and|or|but|while|then)\s")


def _instruction(text: str, pos: int) -> bool:
    """Whether the text at pos opens with an edit verb (`Add to PROVIDER_PREFERENCE`, `add elsif
    branch for ...`): an instruction, whose names are what to change, not what is at the line."""
    w = _WORD.match(text, pos)
    return w is not None and w.group(0).lower() in EDIT_VERBS


EDIT_VERBS = frozenset(
    "add create update change remove replace register implement extend modify insert append delete rename move".split()
)


def _after(text: str, start: int, end: int, is_path) -> str | None:
    m = _LEAD.match(text, start, end)
    assert m is not None  # every part of _LEAD is optional: it matches the empty string
    if _instruction(text, m.end()):
        return None
    opened = m.group("paren") is not None
    colon = any(ch in m.group(0) for ch in ":-\u2014\u2013") and not opened  # a description follows
    first = True
    # the next conjunct is another clause (`path:1 and `main` calls it`: main is not at path:1)
    conj = _CONJUNCTION.search(text[m.end() : end])
    end = m.end() + conj.start() if conj else end
    toks = list(_tokens(text, m.end(), end, is_path))
    names = [t for t in toks if t[1] not in LEAD_WORDS and t[1].split(".")[0] not in LEAD_WORDS]
    for pos, name, strong, _ in toks:
        word = name.split(".")[0]
        if strong and (opened or len([w for w in _WORD.findall(text[m.end() : pos]) if w not in LEAD_WORDS]) < 3):
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


KIND_WORDS = frozenset(
    "scope method class module constant table association callback helper function "
    "model concern job controller block".split()
)
_PREPS = frozenset(("at", "in", "on"))
_LABEL_GAP = re.compile("[\\s`*\"'(]*(?:[:\u2014\u2013-][\\s`*\"'(]*)?")


def _safe_start(text: str, lo: int, hi: int) -> int:
    """lo, moved back to the start of a code span it falls inside."""
    for a, b in _tick_spans(text, lo, hi):
        if a < 0 < b:
            return lo + a
    return lo


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
    while toks and toks[-1][1] in _PREPS and not toks[-1][2]:
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
    if prep and (name.endswith("ed") or name in _PLACE_VERBS):
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
                inner = list(_tokens(text, k + 1, start, is_path))
                if any(t[2] and t[1] not in LEAD_WORDS for t in inner):
                    return None
                toks = list(_tokens(text, max(line, k - WINDOW), k, is_path))
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
                (n for _, n, strong, _ in _tokens(text, lo, len(text) if hi < 0 else hi, is_path) if strong), None
            )
        pos = lo
    return None


_PLACE_VERBS = frozenset(
    "is are was were lives live sits sit happens happen starts start begins begin found "
    "runs run occurs occur exists exist appears appear built made set done kept held sent "
    "thrown caught written read".split()
)


_NAMED_KIND = re.compile(
    r"(?P<name>[A-Z]\w+(?:::[A-Z]\w+)*)\s+(?:model|class|module|controller|concern|job|"
    r"helper|mailer|mailbox|struct|trait|interface)\b"
)
_NEGATED = re.compile(r"(?:instead of|rather than)\s*$")
_KEY_BEFORE = re.compile(r'"(?P<key>[A-Za-z_][\w?!]*)"\s*:\s*"$')


def subject(
    text: str,
    start: int,
    end: int,
    *,
    objects,
    before: int,
    after: int,
    is_path,
    json_member: bool = False,
    key_named=None,
    plain_named=None,
) -> dict | None:
    """The subject of the citation text[start:end] (rules in the module docstring); before and
    after: where the previous citation ends and the next one starts (a clause stops there);
    key_named / plain_named: whether the cited file names a word (for JSON keys and texts / for
    capitalised plain words; None: not checked, as for a line-only reference whose file the
    subject is still to decide)."""
    is_path = _Reader(is_path, plain_named)
    if not json_member:
        lo = _safe_start(text, _clause_start(text, start, before), start)
        # a name after `instead of` is the one not meant (`uses `a` instead of `b` (:88)`)
        toks = [t for t in _tokens(text, lo, start, is_path) if not _NEGATED.search(text, max(lo, t[0] - 14), t[0])]
        got = _label(text, toks, start) or (None if any(t[2] for t in toks) else _paren_owner(text, start, is_path))
        if got:
            return {"name": got, "from": "label"}
        got = _after(text, end, _clause_end(text, end, after), is_path)
        if got:
            return {"name": got, "from": "after"}
        strong = [name for _, name, s, _ in toks if s]
        if strong:
            return {"name": strong[-1], "from": "before"}
    key = None if json_member else _KEY_BEFORE.search(text, max(0, start - 80), start)
    if (
        key
        and not json_key_kind(key.group("key"))
        and _clean(key.group("key"))
        and (key_named is None or key_named(key.group("key")))
    ):
        return {"name": key.group("key"), "from": "json key"}
    # the value of its own descriptive member (`"base_class": "path:60"`): the object's other
    # members are about other things than this citation
    labelled = key is not None and json_key_kind(key.group("key")) != "locator"
    objs = structure.enclosing_objects(objects, start)
    if objs:
        for mem in objs[0].members:
            if mem.key.lower() in IDENT_KEYS and isinstance(mem.value, str):
                name = code_subject(mem.value, is_path)
                if name:
                    return {"name": name, "from": "json field"}
            # a member quoting the cited line's code (`"file": "issue.rb:111", "line": "scope :like"`)
            if (
                mem.key.lower() in CODE_KEYS
                and isinstance(mem.value, str)
                and not mem.start <= start < mem.end
                and not _LINE_VALUE.fullmatch(mem.value)
            ):
                v = mem.value  # its first code-like name (`!self.is_private? || ...`), else as a code span
                name = next((n for _, n, strong, _ in _tokens(v, 0, len(v), is_path) if strong), None) or code_subject(
                    v, is_path
                )
                if name:
                    return {"name": name, "from": "json code"}
        # the key owning the object names it (`"Engine.ServeHTTP": {"loc": "gin.go:662", ...}`)
        owner = objs[0].key
        if owner and not json_key_kind(owner) and (name := code_subject(owner, is_path)):
            if key_named is None or key_named(parts_of(name)[-1]):  # (`"shared_behaviors": {...}`: the answer's own)
                return {"name": name, "from": "json owner"}
        # an item of an array (`"refs": ["a:1", "b:2"]`): the object's text is about the group
        listed = not json_member and not any(mem.start <= start < mem.end for mem in objs[0].members)
        for mem in (
            [] if labelled or listed else objs[0].members
        ):  # else the first code-like name of another member's text
            kind_of_key = json_key_kind(mem.key)
            if kind_of_key in ("locator", "group"):
                continue
            values = mem.value if isinstance(mem.value, list) else [mem.value]
            for v in (v for v in values if isinstance(v, str) and not _instruction(v.lstrip(), 0)):
                name = next((n for _, n, strong, _ in _tokens(v, 0, len(v), is_path) if strong), None)
                kind = _NAMED_KIND.match(v) if kind_of_key is None else None  # prose: code-like names only
                name = name or (kind.group("name") if kind else None)
                if name and (key_named is None or key_named(parts_of(name)[-1])):
                    return {"name": name, "from": "json text"}
    name = _table_cell_name(text, start, end, is_path)
    if name:
        return {"name": name, "from": "table name cell"}
    item = structure.list_item_bounds(text, start)
    if item:
        strong = [name for _, name, s, _ in _tokens(text, item[0], start, is_path) if s]
        if strong:
            return {"name": strong[0], "from": "list item"}
        head = _parent_item_head(text, item[0], is_path)
        if head:
            return {"name": head, "from": "list item"}
    lo = max(text.rfind("\n", 0, start), text.rfind(". ", 0, start)) + 1
    if objs:  # in JSON, the sentence is the string the citation stands in
        lo = max(lo, text.rfind('"', 0, start) + 1)
    ticks = [
        name
        for _, name, s, _ in _tokens(text, _safe_start(text, lo, start), start, is_path)
        if s and (key_named is None or key_named(parts_of(name)[-1]))
    ]
    if ticks:
        return {"name": ticks[-1], "from": "sentence"}
    return None


def _table_cell_name(text: str, start: int, end: int, is_path) -> str | None:
    """The identifier of the citation's table row's symbol/name column; without such a column,
    the code span opening the cell right after a cell that is the citation alone
    (`` | `path:410` | `PromotionRule.gifts` | ... | ``)."""
    row = structure.table_row(text, start)
    if not row:
        return None
    for cell, _, _ in row.name_cells:
        name = code_subject(cell.strip("`* "), is_path)
        if name:
            return name
    k = next((k for k, (_, a, b) in enumerate(row.cells) if a <= start < b), None)
    if (
        row.name_cells
        or k is None
        or k + 1 >= len(row.cells)
        or row.cells[k][0].strip("`* ") != text[start:end].strip("`* ")
    ):
        return None
    tick = re.match(r"`([^`\n]+)`", row.cells[k + 1][0])
    return code_subject(tick.group(1), is_path) if tick else None


# What a JSON member's key says its value is (json_key_kind): where something is, prose about
# it, or the group it belongs to; none of them is a name of the code.
_LOCATOR_PARTS = frozenset(
    "file files path paths filepath filename location locations loc line lines ref refs "
    "reference references source where citation citations cite evidence verification "
    "site sites span anchor".split()
)
_PROSE_KEYS = frozenset(
    "reason risk why note notes description usage purpose impact dependency depends_how "
    "details summary explanation comment rationale effect consequence".split()
)
_GROUP_KEYS = frozenset("subsystem category group area section tier severity priority level status".split())


def json_key_kind(key: str) -> str | None:
    """ "locator" (`file`, `file_line`, `refs`, `verification`), "prose" (`reason`, `risk`,
    `depends_how`), "group" (`subsystem`, `category`) or None (a key that may be a name)."""
    k = key.lower()
    if set(re.split(r"[_\-\s]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower())) & _LOCATOR_PARTS:
        return "locator"
    return "prose" if k in _PROSE_KEYS else "group" if k in _GROUP_KEYS else None


CODE_KEYS = frozenset(("line", "code", "snippet", "excerpt", "quote", "source_line"))
_LINE_VALUE = re.compile(r"\s*L?\d+(?:\s*[-\u2013,]\s*L?\d+)*\s*")  # `"line": "72-93"`: where, not what
IDENT_KEYS = frozenset(
    (
        "name",
        "symbol",
        "function",
        "method",
        "class",
        "struct",
        "trait",
        "interface",
        "identifier",
        "definition",
        "module",
        "signature",
    )
)
