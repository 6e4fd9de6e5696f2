"""Reading names in an answer's text, for the subject's scopes (subjects.py has the rules):
the tokens of a stretch of text (tokens: backticked, bold or bare names, each strong or not),
the name a code span gives (code_subject), where a clause starts and ends, and whether a word
names the cited file itself (names_its_file).

A clause ends at `, ; | ·`, a line break, a sentence's full stop, an unopened `)` or another
citation; commas inside backticks, or before the citation inside a closed `(...)`, do not end
it. Code-like (code_like): backticked, or bold, or with a qualifier (`a.b`, `A::b`, `A#b`), an
underscore, an inner capital (`HttpTransport`), all capitals of five letters or more
(`TRANSPORTS`; `HTTP`, `PORO` are prose) or a call's `(`.
"""

from __future__ import annotations

import re

from mcptrials.grade.citations import structure
from mcptrials.grade.citations.lexicon import DECLARATION_WORDS, EDIT_VERBS, KEYWORDS, NAME, QUALIFIED

_QUALIFIED_SPAN = re.compile(rf"^(?:&|\*|@)?(?P<id>{QUALIFIED})(?:<.*>|\[.*\])?(?:\(.*\)?)?\s*(?:->.*)?$")
_TOKEN = re.compile(
    rf"`(?P<tick>[^`\n]+)`|\*\*(?P<bold>[^*\n]+)\*\*|(?:(?<=\s#)|(?<![\w`:.#]))"
    rf"(?P<bare>{QUALIFIED})(?:(?P<call>\()|(?P<setter>=)(?=[\s`),;]|$))?"
)
_PATH_SEGMENT = re.compile(r"(?<![\w.])[a-z][a-z0-9]*/$")  # a plain lower-case word and a slash before
_JSON_KEY_AFTER = re.compile(r'"\s*:\s*["\[{]')
# a qualified name and its type, as a field is declared (`DoltDB.db *hooksDatabase`, `ValueStore.cs ChunkStore`)
_QUALIFIED_DECL = re.compile(rf"^(?P<id>{NAME}(?:(?:\.|::|#){NAME})+)\s+[*\[\]\w.]+$")
_DECL_SYMBOL = re.compile(rf"[ \t]+:(?P<s>{NAME})")
_RUBY_SYMBOL = re.compile(rf"(?<![:\w]):(?P<s>{NAME})")
_BEFORE_CALL = re.compile(rf"(?P<id>{QUALIFIED})\s*\(")
WORD = re.compile(NAME)
_CLAUSE_END = re.compile(r"[,;|\n\u00b7]|\.(?=\s|$)")
_CLAUSE_CHARS = frozenset(",;|\n\u00b7.")  # where _CLAUSE_END may match (tested first: speed)
_SEPARATOR = re.compile(r"\.|::|#")
_INNER_CAPITAL = re.compile(r"[a-z][A-Z]")
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


def clean_name(name: str) -> str | None:
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
        return clean_name(m.group("id"))
    sym = _RUBY_SYMBOL.search(s)
    if sym:
        return clean_name(sym.group("s"))
    call = next((c for c in _BEFORE_CALL.finditer(s) if c.group("id") not in KEYWORDS), None)
    if call:
        return clean_name(call.group("id"))
    for w in WORD.finditer(s):
        if w.group(0) not in KEYWORDS and len(w.group(0)) > 1:
            return clean_name(w.group(0))
    return None


class Reader:
    """is_path, callable as before, with the cited file's words: a capitalised plain word is
    a name only when the file names it (`Revisions: path:84` is a heading, `Story` a class)."""

    def __init__(self, is_path, key_named):
        self.is_path, self.key_named = is_path, key_named

    def __call__(self, s: str) -> bool:
        return self.is_path(s)


def file_names(is_path, name: str) -> bool:
    named = getattr(is_path, "key_named", None)
    return named is None or named(parts_of(name)[-1])


def code_like(name: str, call: bool) -> bool:
    # (a qualified name is code-like whatever its last part: plain `in` tests first, for speed)
    if call or "." in name or ":" in name or "#" in name or "_" in name.strip("_"):
        return True
    return _INNER_CAPITAL.search(name) is not None or (len(name) >= 5 and name.isupper())


def tokens(text: str, lo: int, hi: int, is_path):
    """(start, name, strong, end) for the names in text[lo:hi]; strong: backticked, bold or code-like."""
    path_of = getattr(is_path, "is_path", is_path)  # a Reader's own test, one call less per word
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
            if name and not code_like(name, "(" in inner) and not file_names(is_path, name):
                continue  # a bold heading word (`**Permissions**`) the file never names
            if name and (code_like(name, "(" in inner) or " " not in inner):
                yield m.start(), name, code_like(name, "(" in inner) or inner[:1].isupper(), m.end()
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
            code = code_like(name, m.group("call") is not None) or m.group("setter") is not None or before[-1:] == "#"
            if not code and name[:1].isupper() and not file_names(is_path, name):
                continue  # a capitalised word of prose (`File:`, `Revisions:`) the file never names
            yield s, name, code, e


def tick_spans(text: str, lo: int, hi: int) -> list[tuple[int, int]]:
    """The code spans meeting text[lo:hi], offsets relative to lo; paired from the start of
    lo's line (a window that starts inside a code span must not flip the pairing)."""
    line = text.rfind("\n", 0, lo) + 1
    spans = structure.code_spans(text, line, hi)
    return [(a - lo, b - lo) for a, b in spans if b > lo]


def clause_end(text: str, pos: int, stop: int) -> int:
    """Where the clause starting at pos ends (the first boundary outside backticks, at most stop)."""
    hi = min(stop, pos + WINDOW, len(text))
    ticks = tick_spans(text, pos, hi)
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


def clause_start(text: str, pos: int, stop: int) -> int:
    """Where the clause ending at pos starts (the last boundary outside backticks, at least stop)."""
    lo = max(stop, pos - WINDOW, 0)
    ticks = tick_spans(text, lo, pos)
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


def safe_start(text: str, lo: int, hi: int) -> int:
    """lo, moved back to the start of a code span it falls inside."""
    for a, b in tick_spans(text, lo, hi):
        if a < 0 < b:
            return lo + a
    return lo


def instruction(text: str, pos: int) -> bool:
    """Whether the text at pos opens with an edit verb (`Add to PROVIDER_PREFERENCE`, `add elsif
    branch for ...`): an instruction, whose names are what to change, not what is at the line."""
    w = WORD.match(text, pos)
    return w is not None and w.group(0).lower() in EDIT_VERBS
