"""How an exact answer is read: where the value stands, and which values of its kind it states.

Three rules, each data plus a small function (grade.exact applies them):

  - BARE_WORDING: the wording by which a step asks for a bare value ("a bare integer", "alone
    on the last line", "on its own line", "only the number", ...), looked for in the exact
    answer's `format` and in the step's prompt (asks_bare);
  - the line a bare value is read from (read_line): a labelled `Answer:` line (the last one)
    wins, else the answer's last non-empty line;
  - VALUE_KINDS: the kinds of values an answer can state several of (a number, a date, a
    commit id, a version, a file path), each with the pattern that finds them in a text
    (kind_of, values_of). An expected value of no kind (a name, a method, a login) has none.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from mcptrials.core.values import clean, to_datetime, to_number

# The wording of a request for a bare value, case-insensitive; the first that matches is recorded.
BARE_WORDING: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(rx, re.IGNORECASE))
    for name, rx in (
        ("bare", r"\bbare\b"),  # a bare integer, the bare value
        ("alone on a line", r"\balone on (?:the|its|a|one) (?:last |final |own |single )?line\b"),
        ("value alone", r"\b(?:number|value|integer|total|count|id|hash|sha|name|string|version|path)\s+alone\b"),
        ("own line", r"\bon (?:its|their|a) own line\b|\bon a line of its own\b"),
        ("last line", r"\b(?:last|final) line\b"),
        (
            "only the value",
            r"\b(?:only|just) the (?:number|value|integer|total|count|id|hash|name|string|version|path)\b",
        ),
        ("nothing else", r"\bnothing else\b"),
    )
)

# A labelled answer line: `Answer: 9`, `**Answer:** 9`, `- Final answer: 9`, `> **Answer**: 9`.
ANSWER_LABEL = re.compile(
    r"^[\s>*_#-]*(?:final\s+)?answer[*_]*\s*:[*_]*\s*(?P<value>\S.*?)\s*$", re.IGNORECASE | re.MULTILINE
)


def asks_bare(fmt: str | None, prompt: str | None) -> str | None:
    """How the step asks for a bare value ("format: bare", "prompt: own line"), or None."""
    for source, text in (("format", fmt), ("prompt", prompt)):
        if not text:
            continue
        for name, rx in BARE_WORDING:
            if rx.search(text):
                return f"{source}: {name}"
    return None


def read_line(answer: str) -> tuple[str, str] | None:
    """(where, text) of the line a bare value is read from: the last labelled `Answer:` line
    (its text after the label), else the last non-empty line; None for an empty answer."""
    lines = answer.splitlines()
    for i in range(len(lines), 0, -1):
        m = ANSWER_LABEL.match(lines[i - 1])
        if m:
            return f"answer label at line {i}", m.group("value")
    for i in range(len(lines), 0, -1):
        if lines[i - 1].strip():
            return f"last line ({i})", lines[i - 1]
    return None


def read_labelled(answer: str, label: str, kind=None) -> tuple[str, str] | None:
    """(where, text) of the value the step's `exact_answer.label` names (a word or phrase, e.g.
    `total`; whole words, any case), for a step that asks for several values of one kind (an
    amount's arithmetic and its total), so the others are not read as a second answer. The last
    line naming it that states a value of the expected kind after it; of those values the last
    (arithmetic ends with its result: `Total: 66.30 - 7.47 + 4.12 = 62.95`). An expected value of
    no kind: the text after the label. None when no line names it with a value."""
    pattern = re.compile(r"(?<!\w)" + re.escape(label.strip()) + r"(?!\w)", re.I)
    lines = answer.splitlines()
    for i in range(len(lines), 0, -1):
        hits = list(pattern.finditer(lines[i - 1]))
        if not hits:
            continue
        after = lines[i - 1][hits[0].end() :]
        if kind is None:
            return f"line {i} labelled {label.strip()!r}", after
        values = [m.group(0) for m in kind.pattern.finditer(after)]
        if values:
            return f"line {i} labelled {label.strip()!r}, its last value", values[-1]
    return None


# --- kinds of values -------------------------------------------------------------------------

_HEX_ID = r"[0-9a-f]{7,40}"
_VERSION = r"v?\d+(?:\.\d+)+(?:[.-]?[A-Za-z][0-9A-Za-z]*(?:[.-][0-9A-Za-z]+)*)?"
_PATH = r"[\w.-]+(?:/[\w.-]+)+"
# A number standing on its own: not part of a word, an identifier (v2, p0), a path, a
# file:line (`a.py:12`), a range (`12-20`), a version (1.2.3) or a hex id; grouped thousands
# (1,234,567 or 1 234 567) read as one number, as core.values.to_number reads them.
_NUMBER = (
    r"(?<![\w.:/#@$-])(?:(?<=\s)-|^-)?[$\u20ac\u00a3]?\d{1,3}(?:[,_\u2009\u202f\u00a0 ]\d{3})+(?:\.\d+)?%?(?![\w/]|[.,:-]\d)"
    r"|(?<![\w.:/#@$-])(?:(?<=\s)-|^-)?[$\u20ac\u00a3]?\d+(?:\.\d+)?%?(?![\w/]|[.,:-]\d)"
)


def _number_norm(text: str) -> str | None:
    n = to_number(text)
    return None if n is None else format(n.normalize(), "f")  # 20.0 and 20 read as "20"


def _hex_norm(text: str) -> str | None:
    t = clean(text).lower()
    return t if re.fullmatch(_HEX_ID, t) and re.search(r"[a-f]", t) and re.search(r"\d", t) else None


def _version_norm(text: str) -> str | None:
    t = clean(text)
    return t if re.fullmatch(_VERSION, t) else None


def _path_norm(text: str) -> str | None:
    t = clean(text).strip("/")
    return t if re.fullmatch(_PATH, t) and re.search(r"\.\w+$|/", t) else None


@dataclass(frozen=True)
class Kind:
    """A kind of value: which expected values are of it (in which comparison mode), how its
    values are found in a text and read (None: not one of its values)."""

    name: str
    modes: tuple[str, ...]
    pattern: re.Pattern
    read: Callable[[str], str | None]
    words: int = 0  # a date: also every run of this many words (its format's)


VALUE_KINDS: tuple[Kind, ...] = (
    Kind("commit id", ("string",), re.compile(rf"(?<![0-9A-Za-z]){_HEX_ID}(?![0-9A-Za-z])", re.IGNORECASE), _hex_norm),
    Kind("version", ("string",), re.compile(rf"(?<![\w.-]){_VERSION}(?![\w-]|\.\w)"), _version_norm),
    Kind("file path", ("string",), re.compile(rf"(?<![\w./-]){_PATH}(?![\w/-]|\.\w)"), _path_norm),
    Kind("number", ("number",), re.compile(_NUMBER, re.MULTILINE), _number_norm),
)


def kind_of(expected, mode: str) -> Kind | None:
    """The kind of an expected value in its comparison mode (grade.exact), or None. A date's
    kind is made by date_kind (it depends on the format)."""
    for kind in VALUE_KINDS:
        if mode in kind.modes and (mode == "number" or kind.read(str(expected)) is not None):
            return kind
    return None


_ISO_DATE = re.compile(r"(?<![\d-])\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?)?(?![\d-])")


def date_kind(fmt: str) -> Kind:
    """Dates in the format (every run of as many words as it has) or in ISO 8601."""

    def read(text: str) -> str | None:
        d = to_datetime(text, fmt)
        return d.isoformat() if d is not None else None

    return Kind("date", ("date",), _ISO_DATE, read, words=len(fmt.split()))


def values_of(kind: Kind, text: str) -> list[str]:
    """The distinct values of the kind a text states, read as the kind reads them, in order."""
    found = [kind.read(m.group(0)) for m in kind.pattern.finditer(text)]
    if kind.words:
        toks = text.split()
        found += [kind.read(" ".join(toks[i : i + kind.words])) for i in range(len(toks) - kind.words + 1)]
    out: list[str] = []
    for v in found:
        if v is not None and v not in out:
            out.append(v)
    return out


def same_value(kind: Kind, a: str, b: str) -> bool:
    """Two read values of a kind are the same value (a short commit id is its full id's prefix)."""
    if kind.name == "commit id":
        return a.startswith(b) or b.startswith(a)
    return a == b
