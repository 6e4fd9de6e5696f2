"""A small JSON-path subset, for state checks over a JSON or JSONL file (no dependency).

Grammar (a path starts at `$`, the document; a JSONL file's document is the list of its lines):

    $                      the document
    .name  ['name']        a member of an object
    [N]                    an element of a list (negative N counts from the end)
    [*]  .*                every element of a list, or every member value of an object
    [?(@.a == 'x')]        the elements of a list (or member values of an object) whose
                           field `a` (a dotted path under @) compares: == or != with a
                           'string', "string", number, true, false or null

`select(doc, path)` returns the list of every value the path reaches, in document order;
a path that reaches nothing gives []. `parse(path)` raises ValueError naming what is wrong,
so a scenario's path is checked when the scenario is loaded.
"""

from __future__ import annotations

import json
import re

_NAME = re.compile(r"\.([A-Za-z_][\w-]*)")
_FILTER = re.compile(
    r"""\[\?\(\s*@((?:\.[A-Za-z_][\w-]*)+)\s*(==|!=)\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|"""
    r"""-?\d+(?:\.\d+)?|true|false|null)\s*\)\]"""
)
_INDEX = re.compile(r"\[\s*(-?\d+)\s*\]")
_QUOTED = re.compile(r"""\[\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\s*\]""")


def _literal(text: str):
    """A filter's value: a quoted string ('single' quotes too), a number, true, false or null."""
    if text.startswith("'"):
        body = text[1:-1].replace("\\'", "'")
        return json.loads('"' + body.replace('"', '\\"') + '"')
    return json.loads(text)


def parse(path: str) -> list[tuple]:
    """The path's steps: ('member', name) | ('index', n) | ('all',) | ('filter', [names], op, value)."""
    if not isinstance(path, str) or not path.startswith("$"):
        raise ValueError(f"a JSON path starts with '$', got {path!r}; start it at the document, e.g. $.name or $[0]")
    steps: list[tuple] = []
    i = 1
    while i < len(path):
        rest = path[i:]
        if rest.startswith(".*") or rest.startswith("[*]"):
            steps.append(("all",))
            i += 2 if rest.startswith(".*") else 3
        elif m := _NAME.match(rest):
            steps.append(("member", m.group(1)))
            i += m.end()
        elif m := _QUOTED.match(rest):
            steps.append(("member", _literal(m.group(1))))
            i += m.end()
        elif m := _INDEX.match(rest):
            steps.append(("index", int(m.group(1))))
            i += m.end()
        elif m := _FILTER.match(rest):
            try:
                value = _literal(m.group(3))
            except ValueError as e:  # a bad escape inside the quotes
                raise ValueError(
                    f"cannot read the value {m.group(3)} of the JSON path {path!r} at character {i} "
                    f'({e}); inside quotes use only JSON escapes (\\\\ \\" \\n \\uXXXX) '
                    "and \\' for a single quote"
                ) from None
            steps.append(("filter", m.group(1)[1:].split("."), m.group(2), value))
            i += m.end()
        else:
            raise ValueError(
                f"cannot read the JSON path {path!r} at character {i} ({rest[:20]!r}); the subset is "
                "$ .name ['name'] [N] [*] .* [?(@.field == 'value')]"
            )
    return steps


def _field(value, names: list[str]):
    for n in names:
        if not isinstance(value, dict) or n not in value:
            return _MISSING
        value = value[n]
    return value


_MISSING = object()


def _children(value) -> list:
    if isinstance(value, list):
        return list(value)
    if isinstance(value, dict):
        return list(value.values())
    return []


def select(doc, path: str) -> list:
    """Every value `path` reaches in `doc`, in document order."""
    current = [doc]
    for step in parse(path):
        nxt = []
        for v in current:
            if step[0] == "member":
                if isinstance(v, dict) and step[1] in v:
                    nxt.append(v[step[1]])
            elif step[0] == "index":
                if isinstance(v, list) and -len(v) <= step[1] < len(v):
                    nxt.append(v[step[1]])
            elif step[0] == "all":
                nxt += _children(v)
            else:
                _, names, op, want = step
                for c in _children(v):
                    got = _field(c, names)
                    if got is _MISSING:
                        continue
                    same = got == want and isinstance(got, bool) == isinstance(want, bool)
                    if same == (op == "=="):
                        nxt.append(c)
        current = nxt
    return current
