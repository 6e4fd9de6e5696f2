"""The answer's own context, as a reader resolves a citation from it: the file paths it names
(with or without a locator), its JSON objects, tables, lists, paragraphs and sections, their
scopes around a citation (closest first), and the backticked identifiers of its sentences.

resolve() is a path's resolution at the commit alone (exact, else a unique suffix); Answer
settles what the commit leaves ambiguous (rules in grading.py's module docstring).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from mcptrials.grade.citations import structure
from mcptrials.grade.citations.extract import citation_pattern, extract_citations, mention_pattern, symbol_parts
from mcptrials.grade.citations.lexicon import CONSTRUCTORS, KEYWORDS, FILE_KEYS, SYMBOL
from mcptrials.grade.gittree import CommitTree


_SENTENCE_END = re.compile(r"\s(?:(?<=[.!?]\s)\s*|(?<=\n))")  # (?<=[.!?])\s+|\n, led by \s: faster
_BACKTICK = re.compile(r"`([^`\n]+)`")
_IDENT_SPAN = re.compile(rf"^(?P<id>{SYMBOL})(?:<.*>)?(?:\(.*\))?$")


def identifier(span: str, extensions=None) -> str | None:
    """The identifier a span names (`app.route()` -> route, `Extension<T>` -> Extension), or None."""
    inner = span.strip().strip("`").strip()
    idm = _IDENT_SPAN.match(inner)
    if not idm or citation_pattern(extensions).search(inner + ":1"):  # a file name such as `app.py` is not one
        return None
    name = symbol_parts(idm.group("id"))[-1]
    return name if len(name) > 1 and name not in KEYWORDS | CONSTRUCTORS else None


def resolve(path: str, tree: CommitTree) -> tuple[str | None, list[str]]:
    """(resolved path or None, candidates): exact path, else a unique component-boundary suffix match.
    An absolute path (the agent's workspace, /Users/x/repo/pkg/a.py) resolves by its longest
    tail that is a file of the commit; else, when a tail's folder (two levels at least) is a
    folder of the commit, it meant that folder's file, which is not there: no such file
    (`/Users/x/dolt/go/libraries/table/table.go`, the folder without the file); else by the
    longest tail with suffix matches; but a tail that starts at a top-level folder of the commit
    is the path from the repository's root, and when it is no file the path is no such file
    (grader 11: `/Users/x/dolt/go/store/tree/node_store.go` is not go/store/prolly/tree/...)."""
    if path.startswith("/"):
        tails = path.strip("/").split("/")
        for k in range(len(tails)):
            if tree.has("/".join(tails[k:])):
                return "/".join(tails[k:]), []
        for k in range(len(tails) - 2):
            if tree.has_dir("/".join(tails[k:-1])):
                return None, []
        if any(tree.has_dir(tails[k]) for k in range(1, len(tails) - 1)):
            return None, []
        for k in range(len(tails)):
            got = resolve("/".join(tails[k:]), tree)
            if got[0] or got[1]:
                return got
        return None, []
    if tree.has(path) or tree.through_link(path):  # a file, or a path through a linked folder
        return path, []
    cands = tree.suffix_matches(path)
    if len(cands) == 1:
        return cands[0], []
    return None, cands


class Answer:
    """One answer's text with what a reader resolves a citation from: the file paths it
    names (with or without a locator), its JSON objects, tables, lists and paragraphs."""

    # set by their users, once per answer: the path test (grade.citations.grading.analyse) and the
    # groups of adjacent citations (grade.citations.verify.respectively)
    is_path: Callable[[str], bool]
    _own_spans: list[tuple[int, int]]
    _own_index: dict[tuple[int, int], int]
    _own_joined: list[bool]

    def __init__(self, text: str, tree: CommitTree, extensions=None):
        self.text, self.tree, self.extensions = text, tree, extensions
        self.objects = structure.json_objects(text)
        self.mentions = []
        for m in mention_pattern(extensions).finditer(text):
            path = m.group("path")
            self.mentions.append(
                {"path": path[2:] if path.startswith("./") else path, "start": m.start("path"), "end": m.end("path")}
            )
        self._mention_starts = [m["start"] for m in self.mentions]
        self._mention_ends = [m["end"] for m in self.mentions]
        self.citations = extract_citations(text, extensions)
        self._resolved: dict[str, str | None] = {}

    def resolves(self, path: str) -> str | None:
        """The file a path names on its own (exact or unique suffix), else None."""
        if path not in self._resolved:
            self._resolved[path] = resolve(path, self.tree)[0]
        return self._resolved[path]

    def index_identifiers(self, citations: list[dict]) -> None:
        """Note the answer's backticked identifiers (those not overlapping a citation) and its
        sentence breaks, for backticked() and sentence_bounds()."""
        spans = sorted((c["start"], c["end"]) for c in citations)
        starts = [a for a, _ in spans]
        longest = max((b - a for a, b in spans), default=0)
        self._ticks = []
        names: dict[str, str | None] = {}  # an answer backticks the same names again and again
        for m in _BACKTICK.finditer(self.text):
            k = bisect.bisect_left(starts, m.start() - longest)
            near = spans[k : bisect.bisect_left(starts, m.end())]
            if any(s < m.end() and m.start() < e for s, e in near):
                continue
            if m.group(1) not in names:
                names[m.group(1)] = identifier(m.group(1), self.extensions)
            name = names[m.group(1)]
            if name:
                self._ticks.append((m.start(), m.end(), name))
        self._tick_starts = [t[0] for t in self._ticks]
        self._breaks = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(self.text)]
        self._break_ends = [e for _, e in self._breaks]
        self._break_starts = [s for s, _ in self._breaks]

    def backticked(self, lo: int, hi: int) -> list[str]:
        """The backticked identifiers inside text[lo:hi] (citations and file paths excluded)."""
        names = []
        for s, e, name in self._ticks[bisect.bisect_left(self._tick_starts, lo) :]:
            if e > hi:
                break
            names.append(name)
        return names

    def sentence_bounds(self, start: int, end: int) -> tuple[int, int]:
        """The sentence (or line) around text[start:end]; a break inside the citation does not count."""
        k = bisect.bisect_right(self._break_ends, start)
        lo = self._break_ends[k - 1] if k else 0
        j = bisect.bisect_left(self._break_starts, end)
        return lo, (self._break_starts[j] if j < len(self._breaks) else len(self.text))

    def names_a_file(self, path: str) -> bool:
        """Whether a path means a file at the commit: it resolves, or several files end with it."""
        return self.resolves(path) is not None or bool(self.tree.suffix_matches(path))

    def mentions_in(self, lo: int, hi: int) -> list[dict]:
        """The mentions inside text[lo:hi]: found by bisection, the mentions being in order
        and apart (a regex's matches), so their starts and their ends both ascend."""
        return self.mentions[bisect.bisect_left(self._mention_starts, lo) : bisect.bisect_right(self._mention_ends, hi)]

    def file_fields(self, obj) -> list[dict]:
        return [m for f in obj.get(*FILE_KEYS) if isinstance(f.value, str) for m in self.mentions_in(f.start, f.end)]

    def scopes(self, pos: int):
        """(scope, mentions) around offset pos, the closest first: each enclosing JSON object
        (its file field, then what it names before pos), the table row's file column, the
        list item, the paragraph and the section (what they name before pos), the answer."""
        text = self.text
        for obj in structure.enclosing_objects(self.objects, pos):
            yield "json file field", self.file_fields(obj)
            yield "json object", self.mentions_in(obj.start, pos)
        row = structure.table_row(text, pos)
        if row and row.file_cell:
            yield "table file column", self.mentions_in(row.file_cell[1], row.file_cell[2])
        item = structure.list_item_bounds(text, pos)
        if item:
            yield "list item", self.mentions_in(item[0], pos)
        yield "paragraph", self.mentions_in(structure.paragraph_bounds(text, pos)[0], pos)
        yield "section", self.mentions_in(structure.section_start(text, pos), pos)
        yield "answer", self.mentions_in(0, pos)

    def settle(self, pos: int, cands: list[str], skip: int | None = None, lines: list[int] | None = None) -> dict:
        """Which of an ambiguous path's candidate files the context around pos means. A
        citation elsewhere in the answer of the same lines in exactly one candidate, by a path
        that resolves on its own, decides; else the closest scope that names (by a path
        resolving on its own) one or more of them: one file resolves, several leave it
        unresolved."""
        if lines:
            if not hasattr(self, "_by_lines"):  # the citations of each list of lines, once
                self._by_lines: dict[tuple, list[dict]] = {}
                for c in self.citations:
                    if c["lines"]:
                        self._by_lines.setdefault(tuple(c["lines"]), []).append(c)
            same: dict[str, dict] = {}
            for c in self._by_lines.get(tuple(lines), ()):
                r = self.resolves(c["path"]) if c["start"] != skip else None
                if r in cands:
                    same.setdefault(r, c)
            if len(same) == 1:
                ((path, c),) = same.items()
                return {
                    "resolved": path,
                    "scope": "same lines cited",
                    "from": c["text"],
                    "span": [c["start"], c["end"]],
                }
        for scope, mentions in self.scopes(pos):
            named: dict[str, dict] = {}
            for m in mentions:
                r = self.resolves(m["path"]) if m["start"] != skip else None
                if r in cands:
                    named.setdefault(r, m)
            if len(named) == 1:
                ((path, m),) = named.items()
                return {
                    "resolved": path,
                    "scope": scope,
                    "from": self.text[m["start"] : m["end"]],
                    "span": [m["start"], m["end"]],
                }
            if named:
                return {"resolved": None, "scope": scope, "ambiguous": sorted(named)}
        return {"resolved": None, "scope": None}

    def line_alternatives(self, pos: int) -> list[dict]:
        """Every file a line-only reference at pos could mean, the closest first: the paths
        named in its innermost JSON object, list item, paragraph, section and the answer
        (in each, those before pos nearest first, then those after); resolution by the
        subject picks among them (ground)."""
        text, out, seen = self.text, [], set()
        bounds = []
        objs = structure.enclosing_objects(self.objects, pos)
        if objs:
            bounds.append((objs[0].start, objs[0].end))
        item = structure.list_item_bounds(text, pos)
        if item:
            bounds.append(item)
        bounds += [
            structure.paragraph_bounds(text, pos),
            (structure.section_start(text, pos), len(text)),
            (0, len(text)),
        ]
        for lo, hi in bounds:
            for m in reversed(self.mentions_in(lo, pos)):
                if m["path"] not in seen and self.names_a_file(m["path"]):
                    seen.add(m["path"])
                    out.append(m)
            if lo < pos:
                for m in self.mentions_in(pos, min(hi, pos + 2000)):
                    if m["path"] not in seen and self.names_a_file(m["path"]):
                        seen.add(m["path"])
                        out.append(m)
        return out[:64]

    def _object_file(self, pos: int) -> tuple[dict, str] | None:
        """Grader 12: a bare line inside a JSON string whose line names no file (`"overrides":
        ["send@45"]` beside `"ref": "pkg/chat/sender.py:17"`) takes its
        innermost object's file field, else the nearest file that object names before it."""
        objs = structure.enclosing_objects(self.objects, pos)
        if not objs:
            return None
        fields = self.file_fields(objs[0])
        if fields:
            return fields[0], "json file field"
        before = [m for m in self.mentions_in(objs[0].start, pos) if self.names_a_file(m["path"])]
        return (before[-1], "json object") if before else self._owner_file(pos)

    def _owner_file(self, pos: int) -> tuple[dict, str] | None:
        """Grader 13: a JSON "line" member whose object names no file (`{"name": "models", "line":
        152}` in a list under `"base_contract": "lib/llm/provider.rb"`) takes the file its enclosing
        objects name by their own members (not a sibling object's), innermost first: a file field,
        else the nearest file a member names before the line."""
        for obj in structure.enclosing_objects(self.objects, pos):
            fields = self.file_fields(obj)
            if fields:
                return fields[0], "enclosing json object"
            own = [m for mem in obj.members if mem.end <= pos for m in self.mentions_in(mem.start, mem.end)]
            named = [m for m in own if self.names_a_file(m["path"])]
            if named:
                return named[-1], "enclosing json object"
        return None

    def line_file(self, pos: int, obj=None, near_only: bool = False, wide: bool = False) -> tuple[dict, str] | None:
        """The file a line-only reference at pos refers to, and the scope it came from: the
        `file` field of its JSON object (obj: only that one); else, in the first of its
        innermost JSON object, table row (file column), list item and paragraph that names a
        file of the commit, the nearest such path before pos (else the first one after).
        near_only: only its list item, else its line (a bare "(32-37)"). wide (an explicit
        "line N"): then its markdown section before it too, under a heading (the file a list of
        "`exec_queries` (line 1436)" is about was named above the list)."""
        if near_only:
            item = structure.list_item_bounds(self.text, pos) or structure.line_bounds(self.text, pos)
            named = [m for m in self.mentions_in(item[0], pos) if self.names_a_file(m["path"])]
            if named:
                return named[-1], "list item"
            return self._object_file(pos)
        if obj is not None:
            fields = self.file_fields(obj)
            return (fields[0], "json file field") if fields else self._owner_file(pos)
        objs = structure.enclosing_objects(self.objects, pos)
        if objs:
            fields = self.file_fields(objs[0])
            if fields:
                return fields[0], "json file field"
            scopes = [("json object", objs[0].start, objs[0].end)]
        else:
            row = structure.table_row(self.text, pos)
            if row and row.file_cell and self.mentions_in(row.file_cell[1], row.file_cell[2]):
                return self.mentions_in(row.file_cell[1], row.file_cell[2])[0], "table file column"
            in_item = structure.list_item_bounds(self.text, pos)
            scopes = [("list item", *in_item)] if in_item else []
            scopes.append(("paragraph", *structure.paragraph_bounds(self.text, pos)))
        head = structure.section_start(self.text, pos) if wide and not objs else 0
        if head:  # (under a heading: a headless answer's paragraphs are no section about one file)
            scopes.append(("section", head, pos))
        for scope, lo, hi in scopes:
            before = [m for m in self.mentions_in(lo, pos) if self.names_a_file(m["path"])]
            after = [m for m in self.mentions_in(pos, hi) if self.names_a_file(m["path"])]
            if before:
                return before[-1], scope
            if after:
                return after[0], scope
        return None
