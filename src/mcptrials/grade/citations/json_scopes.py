"""The subject's JSON scopes (subjects.py has the rules and the order): json key, json field,
json code, json owner and json text, each a small function of the citation's Site; and what a
member's key says its value is (json_key_kind).
"""

from __future__ import annotations

import re

from mcptrials.grade.citations.lexicon import (
    CODE_KEYS,
    GROUP_KEYS,
    IDENT_KEYS,
    KIND_KEY_PARTS,
    LOCATOR_PARTS,
    PROSE_KEYS,
)
from mcptrials.grade.citations.names import clean_name, code_subject, instruction, parts_of, tokens
from mcptrials.grade.citations.scopes import Site

_LINE_VALUE = re.compile(r"\s*L?\d+(?:\s*[-\u2013,]\s*L?\d+)*\s*")  # `"line": "72-93"`: where, not what
# a name and a sentence about it (`"method": "to_hash returns format for API call"`, grader 11): a
# description beside the object, not its name (no call, no declaration: four words or more)
_PROSE_VALUE = re.compile(r"[^\s(:]+(?:\s+[A-Za-z][\w/.-]*){3,}\s*$")
_CLASS_NAME = re.compile(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+")  # CamelCase: `WhereClause`
_NAMED_KIND = re.compile(
    r"(?P<name>[A-Z]\w+(?:::[A-Z]\w+)*)\s+(?:model|class|module|controller|concern|job|"
    r"helper|mailer|mailbox|struct|trait|interface)\b"
)


def json_key(site: Site) -> str | None:
    """3a. The key of the JSON member the citation is the value of, when it may be a name and the
    cited file names it (`"user": "story.rb:4"`)."""
    key = site.key
    if (
        key
        and not json_key_kind(key.group("key"))
        and clean_name(key.group("key"))
        and (site.key_named is None or site.key_named(key.group("key")))
    ):
        return key.group("key")
    return None


def _first_member_name(site: Site) -> tuple[str, str] | None:
    """("json field" or "json code", name): the first member of the innermost object that names
    the citation's subject, in the object's order."""
    objs, start, is_path = site.objs, site.start, site.reader
    for mem in objs[0].members if objs else []:
        if mem.key.lower() in IDENT_KEYS and isinstance(mem.value, str) and not _PROSE_VALUE.match(mem.value):
            name = code_subject(mem.value, is_path)
            if name:
                return "json field", _whole_lead(mem.value, name, is_path)
        # a member quoting the cited line's code (`"file": "issue.rb:111", "line": "scope :like"`)
        if (
            mem.key.lower() in CODE_KEYS
            and isinstance(mem.value, str)
            and not mem.start <= start < mem.end
            and not _LINE_VALUE.fullmatch(mem.value)
        ):
            v = mem.value  # its first code-like name (`!self.is_private? || ...`), else as a code span
            name = next((n for _, n, strong, _ in tokens(v, 0, len(v), is_path) if strong), None) or code_subject(
                v, is_path
            )
            if name:
                return "json code", name
    return None


def _whole_lead(value: str, name: str, is_path) -> str:
    """Grader 12: a name member opening with a qualified name names it whole (`"method":
    "ChatResponse#content reads ..."` is ChatResponse#content, not the class)."""
    lead = code_subject(value.split()[0], is_path) if value.split() else None
    return lead if lead and len(lead) > len(name) and lead.startswith(name) else name


def json_field(site: Site) -> str | None:
    """3b. The `name`/`symbol`/`function`/`signature`... member of the citation's innermost object."""
    got = _first_member_name(site)
    return got[1] if got and got[0] == "json field" else None


def json_code(site: Site) -> str | None:
    """3c. The first code-like name of a member quoting the cited line's code (CODE_KEYS)."""
    got = _first_member_name(site)
    return got[1] if got and got[0] == "json code" else None


def json_owner(site: Site) -> str | None:
    """3d. The key owning the citation's object names it (`"Engine.ServeHTTP": {"loc": "gin.go:662"}`),
    when the citation is a locator of the object; a member of its own key is labelled by that key
    (`"ollama": {"response_adapter_completion": "path:4"}`: not Ollama, grader 11); a key naming the
    kind of place (`"sstructs.Planner": {"field": "path:57"}`: KIND_KEY_PARTS) locates the owner."""
    if not site.objs or (site.key is not None and json_key_kind(site.key.group("key")) not in ("locator", "kind")):
        return None
    owner = site.objs[0].key
    if owner and not json_key_kind(owner) and (name := code_subject(owner, site.reader)):
        if site.key_named is None or site.key_named(
            parts_of(name)[-1]
        ):  # (`"shared_behaviors": {...}`: the answer's own)
            return name
    return None


def json_text(site: Site) -> str | None:
    """3e. The first code-like name of another member's text (or its capitalised name before a
    kind word), when the cited file names it; never for the value of a descriptive member of its
    own (`"base_class": "path:60"`), nor for an item of an array (`"refs": ["a:1", "b:2"]`)."""
    objs, start, key, key_named = site.objs, site.start, site.key, site.key_named
    if not objs:
        return None
    labelled = key is not None and json_key_kind(key.group("key")) != "locator"
    listed = not site.json_member and not any(mem.start <= start < mem.end for mem in objs[0].members)
    for mem in [] if labelled or listed else objs[0].members:
        kind_of_key = json_key_kind(mem.key)
        kind_of_key = None if kind_of_key == "kind" else kind_of_key  # (a kind of place may hold a name)
        if kind_of_key in ("locator", "group"):
            continue
        values = mem.value if isinstance(mem.value, list) else [mem.value]
        for v in (v for v in values if isinstance(v, str) and not instruction(v.lstrip(), 0)):
            name = next((n for _, n, strong, _ in tokens(v, 0, len(v), site.reader) if strong), None)
            kind = _NAMED_KIND.match(v) if kind_of_key is None else None  # prose: code-like names only
            name = name or (kind.group("name") if kind else None)
            if name and (key_named is None or key_named(parts_of(name)[-1])):
                return name
    return None


def json_key_kind(key: str) -> str | None:
    """ "locator" (`file`, `file_line`, `refs`, `verification`), "prose" (`reason`, `risk`,
    `depends_how`), "group" (`subsystem`, `category`), "kind" (`field`, `impl_def`: the kind of
    place, KIND_KEY_PARTS) or None (a key that may be a name)."""
    k = key.lower()
    if _CLASS_NAME.fullmatch(key):
        return None  # a class's name (`"WhereClause": "path:6"`), whatever words it is made of (grader 11)
    words = set(re.split(r"[_\-\s]+", re.sub(r"([a-z])([A-Z])", r"\1_\2", key).lower()))
    if words & LOCATOR_PARTS:
        return "locator"
    if words <= KIND_KEY_PARTS:
        return "kind"
    return "prose" if k in PROSE_KEYS else "group" if k in GROUP_KEYS else None
