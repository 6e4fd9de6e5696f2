"""The strict verdict of a line citation against its subject (issue 25 item 4).

verified  when a cited line lies inside a definition of the subject (tree-sitter spans, see
          symbols.definitions, for the languages parsed there; a definition's header
          is inside it: the blank, comment, doc-comment, decorator, annotation and attribute
          lines directly above it up to the previous code line), or a cited line's code names
          the qualified subject whole as written (`self.transport.notify`), or, when no definition of the
          subject's name encloses the cited line, the code of a cited line (comments cut off)
          names the subject's last component as a whole word;
undetermined  otherwise, for a code file whose definitions are not known here (a language
          without definitions in symbols.DEFINITIONS, such as C or Elixir, listed in
          symbols.CODE_WITHOUT_DEFINITIONS; or a grammar that failed on the file) that names
          the subject somewhere: a definition of it might enclose the line, and whether one does
          would depend on the route, not the file; counted neither verified nor mismatch;
mismatch  otherwise (a file of a language with definitions; a code file that never names the
          subject, where no definition of it can enclose the line; prose, markup and data,
          where no definition encloses a line: README.md, a template, go.mod);
n/a       without a subject.

A definition is of the subject when its name is the subject's last component (or, for a
name the file defines nowhere, that name's plural, singular, or the name with `!` or `?`:
`notified_user` for `def notified_users`, `adjust` for `def adjust!`) and the
subject's qualifiers that name something of the file (a definition or a container such as
a class, module, impl type or trait, a Go receiver) are its containers, innermost first, in
order (`A::call` is not B's `call`; `app.route` keeps only `route`: `app` names nothing of
the file). A definition of the same name whose chain does not match decides against
(the sibling impl's method), so a shared name on the line cannot verify it.

A range verifies when it overlaps such a definition or one of its lines names the subject.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mcptrials.grade.citations.extract import is_word_char, occurs_bounded
from mcptrials.grade.citations.lexicon import DECLARATION_WORDS
from mcptrials.grade.citations.symbols import code_language, definitions, language_of

_HASH_COMMENT = {"python", "ruby"}
_SLASH_COMMENT = {"go", "rust", "java", "typescript", "tsx", "javascript", "kotlin", "php", "csharp", "swift", "scala"}
# A constructor called by one name and defined by another (Ruby's `new` runs `initialize`).
CONSTRUCTOR_DEFINITIONS = {"new": ("initialize",)}
# Type definitions made of their field list: the first line stands for the fields (grader 10).
FIELD_LIST_KINDS = frozenset(("type_spec", "struct_item", "struct_specifier", "interface_declaration"))
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")  # a one-line string literal
_EXT_HASH = {"sh", "bash", "zsh", "yaml", "yml", "toml", "rb", "py", "pl", "r", "cfg", "conf", "ini", "mk"}


_DECLARES = re.compile(rf"(?<![\w:])(?:{'|'.join(sorted(DECLARATION_WORDS))})\s+:")


def parts(subject: str) -> list[str]:
    return [p for p in re.split(r"\.|::|#", subject) if p]


@lru_cache(maxsize=4096)  # asked for every line a verdict reads
def _comment_marks(path: str) -> tuple[str, ...]:
    lang = language_of(path)
    ext = path.rsplit(".", 1)[-1].lower()
    return ("#",) if lang in _HASH_COMMENT or ext in _EXT_HASH else ("//",) if lang in _SLASH_COMMENT else ()


def _code(line: str, path: str) -> str:
    """The line without its trailing comment (a rough cut: `#` or `//` outside the first quote)."""
    for mark in _comment_marks(path):
        k = line.find(mark)
        if k >= 0 and line[:k].count('"') % 2 == 0 and line[:k].count("'") % 2 == 0:
            line = line[:k]
    return line


def _word_or_mark(ch: str) -> bool:
    return is_word_char(ch) or ch in "?!"


def _word_or_dot(ch: str) -> bool:
    return is_word_char(ch) or ch == "."


def _has_word(text: str, word: str) -> bool:
    r"""`word` whole: (?<!\w)word(?![\w?!]); a word ending in ? or ! may run on."""
    return occurs_bounded(text, word, after=None if word[-1] in "?!" else _word_or_mark)


def _has_chain(text: str, subject: str) -> bool:
    r"""The qualified subject as written (`self.transport.notify`), a whole word at both ends:
    (?<![\w.])subject(?![\w?!])."""
    return occurs_bounded(text, subject, before=_word_or_dot, after=_word_or_mark)


def _chain_ok(d: dict, qualifiers: list[str], known: set[str]) -> bool:
    """The qualifiers that name something of the file are d's containers, innermost first, in order."""
    wanted = [q for q in reversed(qualifiers) if q in known]
    k = 0
    for names in d["containers"]:
        if k < len(wanted) and wanted[k] in names:
            k += 1
    return k == len(wanted)


def _defs(path: str, source: str) -> list[dict] | None:
    lang = language_of(path)
    if lang is None:
        return None
    try:
        return definitions(lang, source)
    except Exception:  # a grammar that fails on a file: fall back to the line's text
        return None


def verdict(path: str, source: str, lines: list[int], subject: str | None, file_lines: list[str]) -> str:
    """verified / mismatch / undetermined / n/a (rule in the module docstring)."""
    if not subject:
        return "n/a"
    *qualifiers, name = parts(subject)
    lo, hi = min(lines), max(lines)
    code = [_code(file_lines[n - 1], path) for n in range(max(lo, 1), min(hi, len(file_lines)) + 1)]
    # What the cited lines' code says is read first: it verifies without the parse (a bare
    # name's word there verifies whatever the definitions are; a qualified one's whole chain
    # verifies before any definition is looked at), so a job parses half as many files.
    if not qualifiers and any(_has_word(line, name) for line in code):
        return "verified"
    if qualifiers and any(_has_chain(line, subject) for line in code):
        return "verified"  # the line names the whole chain: `self.transport.notify(...)`
    # A definition's name is text of the file: no parse when the file lacks the name (no
    # definition can be of the subject then, and the rest reads only those that are).
    parsed = _defs(path, source) if name in source or any(f in source for f in forms(name)) else []
    defs = parsed or []
    same = [d for d in defs if d["name"] == name and d.get("outer_start", d["start"]) <= hi and lo <= d["end"]]
    if not same and not any(d["name"] == name for d in defs):
        # a name the file never defines, written in the singular or plural of one it does
        # (`notified_user` for `def notified_users`) or without its `!`/`?` (`adjust` for
        # `def adjust!`): that definition is the one meant
        same = [
            d for d in defs if d["name"] in forms(name) and d.get("outer_start", d["start"]) <= hi and lo <= d["end"]
        ]
    known = {d["name"] for d in defs} | {n for d in defs for c in d["containers"] for n in c} if same else set()
    if any(_chain_ok(d, qualifiers, known) for d in same):
        return "verified"
    if stands_for_body(defs, lo, hi, subject, path, file_lines):
        return "verified"  # before the scope test: `def currency` for its body's `order.currency`
    if same and qualifiers and any(q in known for q in qualifiers):
        return "mismatch"  # the line is inside a same-named definition of another scope
    if any(_has_word(line, name) for line in code):
        return "verified"
    return "undetermined" if parsed is None and code_language(path) else "mismatch"


def defined_at(path: str, source: str, lines: list[int], name: str, file_lines: list[str]) -> bool:
    """Grader 13: whether a definition of `name` (or a form it goes by) holds the cited lines, its
    header included, or their code declares it the Rails way (`has_many :refunds`, `scope :visible`)."""
    lo, hi = min(lines), max(lines)
    code = [_code(file_lines[n - 1], path) for n in range(max(lo, 1), min(hi, len(file_lines)) + 1)]
    declares = re.compile(rf"{_DECLARES.pattern}{re.escape(name)}(?![\w?!])")
    if any(declares.search(line) for line in code):
        return True
    names = {name} | forms(name)
    around = _enclosing(_defs(path, source) or [], lo, hi)
    if not around:
        return False
    # the innermost definition holding the lines, or one they open: not a class or module around
    # the whole file (`Chat endpoint ... at chat.rb:8` inside `class Chat`'s method is about the method)
    innermost = max(around, key=lambda d: d.get("outer_start", d["start"]))
    return innermost["name"] in names or any(
        d["name"] in names and lo <= d.get("outer_start", d["start"]) <= hi for d in around
    )


def forms(name: str) -> set[str]:
    """Other names a definition of `name` goes by, for a name the file never defines: its plural
    or singular, with `!` or `?` (`notified_user` for `def notified_users`, `adjust` for `def
    adjust!`), and a constructor's definition (`Context.new` is `def initialize`, grader 10)."""
    out = {name + "s", name + "!", name + "?", *CONSTRUCTOR_DEFINITIONS.get(name, ())}
    return out | {name[:-1]} if name.endswith("s") else out


def is_function(kind: str) -> bool:
    """A definition kind with a body of statements (a function or method, not a class or a type)."""
    return ("function" in kind or "method" in kind) and not kind.endswith(("_elem", "_spec", "_signature_item"))


def _opened(defs: list[dict], lo: int, hi: int) -> list[dict]:
    """The definitions whose first line the cited lines begin at (`def relation`; not its doc comment,
    which a reader takes for the whole definition only when the subject is the definition's own)."""
    return [d for d in defs if lo == d["start"] and hi <= d["end"]]


def stands_for_body(defs: list[dict], lo: int, hi: int, subject: str, path: str, file_lines: list[str]) -> bool:
    """Grader 10: a citation of a definition's first line stands for the definition, so the subject is
    there when the definition's code names it: a function's (`def relation` for the call
    `Relation.create(self)` on its first body line), or the subject's owner's when the owner is a
    type made of its field list (`type Encrypter struct` for the field `Encrypter.srv`). A class's
    first line does not stand for its body's statements (`class Store` is not where `has_many
    :orders` is, nor `class ProductVariantChannelListing` where its `variant = ...` field is)."""
    *qualifiers, name = parts(subject)
    for d in _opened(defs, lo, hi):
        if is_function(d["kind"]) or (qualifiers and d["name"] == qualifiers[-1] and d["kind"] in FIELD_LIST_KINDS):
            body = range(d["start"] + 1, min(d["end"], len(file_lines)) + 1)
            if any(_has_word(_code(file_lines[k - 1], path), name) for k in body):
                return True
    return False


def _indent(line: str) -> int:
    return len(line.expandtabs()) - len(line.expandtabs().lstrip())


# a line opening a block of values or statements: `... do |x|`, `... {`, `[`, `(`; not a condition or loop
_OPENER = re.compile(r"(?:\bdo(?:\s*\|[^|]*\|)?|[{\[(])$")
_CONTROL = re.compile(r"(?:if|elif|else|unless|while|until|for|switch|select|case|when|try|catch|match)\b")


def opens_block(file_lines: list[str], lo: int, name: str, path: str, def_starts=frozenset(), reach: int = 12) -> bool:
    """Grader 11: the cited line lies in a block (a `do` block, a literal, a call's arguments) whose
    opening line, the nearest line above it indented less (at most `reach` lines up), names the
    subject (`children.each do |child|` over a line of its body; `validators: []V{` over an element);
    not a condition or a loop (`if self.transport().is_noop(flip):`), nor a definition's first line (`def __init__(self, permanent)` over `self.message = ...`: the
    definitions decide there)."""
    if not 1 < lo <= len(file_lines) or not file_lines[lo - 1].strip():
        return False
    indent = _indent(file_lines[lo - 1])
    for k in range(lo - 1, max(0, lo - 1 - reach), -1):
        line = file_lines[k - 1]
        if line.strip() and _indent(line) < indent:
            code = _code(line, path).strip()
            return (
                k not in def_starts
                and bool(_OPENER.search(code))
                and not _CONTROL.match(code)
                and _has_word(code, name)
            )
    return False


def _enclosing(defs: list[dict], lo: int, hi: int) -> list[dict]:
    """The definitions whose lines (header included) meet lo..hi."""
    return [d for d in defs if d.get("outer_start", d["start"]) <= hi and lo <= d["end"]]


def abstain_reason(
    path: str, source: str, lines: list[int], subject: str, file_lines: list[str], named, in_code=()
) -> str | None:
    """Why a `mismatch` of verdict() lacks positive evidence in the file (None: it has it):
    the subject is defined in the file, by a definition whose containers its qualifiers name,
    and no such definition meets the cited lines; and no name the clause names (`named`: the
    citation's identifiers, the group of a `respectively`) is at the cited lines' code or is a
    definition they lie in, and no code-like name of its clause (`in_code`) is at their code
    (rules 3 and 4 of docs/grading.md's list)."""
    *qualifiers, name = parts(subject)
    lo, hi = min(lines), max(lines)
    defs = _defs(path, source)
    if defs is None:
        return "no definitions known for this file"
    known = {d["name"] for d in defs} | {n for d in defs for c in d["containers"] for n in c}
    own = [d for d in defs if d["name"] == name and _chain_ok(d, qualifiers, known)]
    if not own and not any(d["name"] == name for d in defs):  # `notified_user` for `def notified_users`
        own = [d for d in defs if d["name"] in forms(name) and _chain_ok(d, qualifiers, known)]
    code = [_code(file_lines[n - 1], path) for n in range(max(lo, 1), min(hi, len(file_lines)) + 1)]
    if not own and not any(
        _has_word(_code(line, path), name) for k, line in enumerate(file_lines, 1) if not lo <= k <= hi
    ):
        # a field, attribute or call the definitions do not list (`DoltDatabaseProvider.databases`,
        # `self.transport.notify`) is still the file's when its code writes the name elsewhere
        return f"`{subject}` is neither defined nor written in the cited file"
    if qualifiers and any(
        _has_chain(_STRING.sub('""', _code(file_lines[k - 1], path)), subject)
        for d in _opened(defs, lo, hi)
        for k in range(d["start"] + 1, min(d["end"], len(file_lines)) + 1)
    ):
        # grader 11: a class's first line for a call its code makes (`class PreviewOnEditView` for
        # `Page.objects.select_related(...)` in its body, not in a string) may mean the class: not a
        # confirmed mismatch
        return f"the cited line opens a definition whose code writes `{subject}`"
    if opens_block(file_lines, lo, name, path, {d["start"] for d in defs}):
        return f"the cited line lies in a block opened by `{name}`"
    around = {d["name"] for d in _enclosing(defs, lo, hi)}
    if name in {n for d in _enclosing(defs, lo, hi) for c in d["containers"] for n in c}:
        # grader 10: the line is in a method of the subject's own type (`allocRunner` at a line
        # of `func (ar *allocRunner) ...`): its code, if not its definition
        return f"the cited line lies in `{name}`'s code"
    for n in named:
        last = parts(n)[-1] if parts(n) else n
        if len(last) > 1 and (last in around or any(_has_word(line, last) for line in code)):
            return f"`{n}`, named beside it, is at the cited line"
    for n in in_code:  # grader 11: a code-like name of the clause, when the line's code writes it
        last = parts(n)[-1] if parts(n) else n
        if len(last) > 1 and any(_has_word(line, last) for line in code):
            return f"`{n}`, named in its clause, is at the cited line"
    return fields_reason(defs, lo, hi, qualifiers, list(in_code))


def holds_fields(defs: list[dict], lo: int, hi: int, name: str) -> bool:
    """Whether a type made of its field list (FIELD_LIST_KINDS) named `name` holds lines lo..hi,
    its header included."""
    return any(
        d["name"] == name
        and d["kind"] in FIELD_LIST_KINDS
        and d.get("outer_start", d["start"]) <= lo
        and hi <= d["end"]
        for d in defs
    )


def fields_reason(defs: list[dict], lo: int, hi: int, qualifiers: list[str], names) -> str | None:
    """Grader 12: the struct owning a member the clause names (`names`), holding the cited lines,
    may be what a reader takes them for (rule 4, an abstention): `` `Entry.Database` +
    `.db` — path:26 `` with `type Entry struct` at 26. (Not the header above the subject's
    own owner: a doc comment cited for a field is a wrong line, dolt #5.)"""
    for n in names:
        for part in parts(n)[:-1]:
            if part not in qualifiers and len(part) > 1 and holds_fields(defs, lo, hi, part):
                return f"`{part}`, named beside it, is a struct holding the cited line"
    return None
