"""Citation grounding: find the code locations an answer cites and check them against the
repository at the pinned commit (git objects, see gittree), not a working copy.

Forms recognised (issue 4 item 3):
    path:N   path:N-M (hyphen, en or em dash; `path:L10` too)   path#LN   path#LN-LM
    path:Symbol   path:Class.method   (also Class::method and Class#method)
The path's last component must end with one of the citation extensions (or be one of the
extension-less names such as Makefile). Backticks around the path, the citation or the
path alone (`a.py`:10), brackets, markdown links [x](src/a.py#L3), GitHub blob URLs and
trailing punctuation do not break it; a leading ./ is stripped. A path alone, without a
line or symbol, is not a citation. `path:N,M,K-L` (commas, no spaces) cites each of them.

Line-only references take their file from the answer (resolved_by "context"): a JSON
"line" (or "lines", "start_line" with "end_line") member beside a "file" member of the same
object; "line N", "lines N-M" and `:N` in prose, with the file of their JSON object's "file"
member, else their table row's file column, else the nearest path named before them (else
the first after) in their innermost JSON object, list item or paragraph that names a file of
the commit (a "file" member counts whatever it names). A reference with no file there is not
a citation.

Resolution (resolved_by): the exact relative path ("exact"); else the unique file whose path
ends with the cited path on a component boundary ("suffix"); else, for a basename-only or
partial path several files end with, the answer's context ("context"): a citation of the
same lines elsewhere in the answer by a path that resolves on its own to one of those files
(`routing/mod.rs:296` ... `mod.rs:296`); else the closest scope that names one of those
files by a path that resolves on its own decides. A candidate shorter than a cited line is
never meant when another one has the line (`stories_controller.rb:445` is not the 76-line
mod/stories_controller.rb); a line-only reference whose nearest file is too short moves to
the closest file of its context that has the line. Scopes, closest first:
each enclosing JSON object (its "file" member, then the paths it names before the citation),
the table row's file column, the list item, the paragraph, the markdown section, the whole
answer (the last four: paths named before the citation). One file in the closest such scope
resolves it; two or more leave it unresolved (context.ambiguous names them); none: unresolved
(missing, or ambiguous: candidates kept).

Buckets: grounded (resolved; every cited line within 1..EOF; a cited symbol has a definition
in the file: see symbols.py, symbol_by "tree-sitter", its lines in symbol_lines; for a
language without a grammar, symbol_by "regex": every component occurs as a whole word),
hallucinated (resolved but a cited line is below 1 or past EOF: a range ending past EOF
included), unresolved (not resolved, or the symbol is absent).

Verification of a grounded line citation: the identifiers the citation is about are looked
up as whole words (an identifier's last component, `app.route()` -> route, `Extension<T>`
-> Extension) in the cited lines: within 5 lines of a single cited line, or inside a cited
range. They are: the names in backticks in its sentence, on its line and in its list item
(citations and file paths excluded); its table row's cells under a symbol, name, function,
type... header that are identifiers (backticked or not); its JSON
object's "signature" (the name it defines), "symbol", "name", "function", "method", "class"...
members. One-letter names and keywords do not count. `verified` if at least one is there,
`mismatch` if none is, `n/a` when there is no identifier (and for symbol citations and
citations that are not grounded).

Each citation keeps `spans`: the [start, end) character offsets of its occurrences in the
answer (for a JSON line member, from its key to its value).

Each distinct (path, locator) counts once per step: the key is the resolved path when
there is one (so src/a.py:3 and a.py:3 are one citation), else the path as cited.
"""

from __future__ import annotations

import bisect
import re

from mcptrials.grade import composition
from mcptrials.grade import strict
from mcptrials.grade import structure
from mcptrials.grade import subjects
from mcptrials.grade.gittree import CommitTree
from mcptrials.grade.symbols import find_definition

DEFAULT_EXTENSIONS = [
    # source
    "py", "pyi", "pyx", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "go", "rs",
    "java", "kt", "kts", "scala", "groovy", "rb", "erb", "rake", "php", "c", "h", "cc",
    "cpp", "cxx", "hpp", "hh", "hxx", "cs", "fs", "swift", "m", "mm", "sh", "bash", "zsh",
    "fish", "ps1", "lua", "pl", "pm", "r", "jl", "ex", "exs", "erl", "hrl", "clj", "cljs",
    "dart", "vue", "svelte", "elm", "hs", "ml", "mli", "zig", "nim", "sql", "proto",
    "graphql", "gql", "html", "htm", "css", "scss", "sass", "less", "hbs", "jinja", "j2",
    "tmpl", "tpl",
    # config
    "json", "jsonc", "json5", "yaml", "yml", "toml", "ini", "cfg", "conf", "properties",
    "xml", "gradle", "lock", "mod", "sum", "env", "tf", "hcl", "nix", "cmake", "mk",
    "gemspec", "editorconfig", "dockerfile",
    # docs
    "md", "mdx", "rst", "txt", "adoc", "ipynb",
    # names without an extension
    "Makefile", "Dockerfile", "Gemfile", "Rakefile", "Procfile", "Jenkinsfile",
]

VERIFY_WINDOW = 5   # lines either side of a single cited line that verification searches
RECALL_WINDOW = 5   # lines a citation may be from a gold line and still count for recall

_IDENT = r"[A-Za-z_]\w*"
_SYMBOL = rf"{_IDENT}(?:(?:\.|::|#){_IDENT})*"
_DASH = "[-\u2013\u2014]"


def _split_extensions(extensions) -> tuple[list[str], list[str]]:
    """An entry with a leading dot or in lower case is an extension (matched in any case);
    any other entry is a whole file name matched exactly (Makefile)."""
    exts, names = [], []
    for e in extensions or DEFAULT_EXTENSIONS:
        e = e.strip()
        if not e:
            continue
        if not e.startswith(".") and e != e.lower():
            names.append(e)
        else:
            exts.append(e.lstrip(".").lower())
    return exts, names


_PATTERNS: dict[tuple, re.Pattern] = {}
_URL_PREFIX = r"(?:https?://[^\s()<>\[\]`]*?/(?:blob|tree|raw)/[^/\s]+/)?"   # a GitHub-style URL prefix


def _path_regex(extensions) -> str:
    exts, names = _split_extensions(extensions)
    ext_alt = "|".join(re.escape(e) for e in sorted(set(exts), key=len, reverse=True))
    name_alt = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    last = rf"[\w.@+-]*\.(?i:{ext_alt})"
    if name_alt:
        last = rf"(?:{last}|(?:{name_alt}))"
    return rf"(?P<path>(?:\./|/)?(?:[\w.@+-]+/)*{last})"


def citation_pattern(extensions=None) -> re.Pattern:
    key = tuple(extensions or DEFAULT_EXTENSIONS)
    if key not in _PATTERNS:
        _PATTERNS[key] = re.compile(
            r"(?<![\w./@+-])"
            + _URL_PREFIX + _path_regex(key) +
            r"`?"                                                           # `a.py`:10
            r"(?:"
            rf":L?(?P<l1>\d+)(?:\s?{_DASH}\s?L?(?P<l2>\d+))?"
            rf"|#L(?P<a1>\d+)(?:{_DASH}L?(?P<a2>\d+))?"
            rf"|::(?P<test>{_SYMBOL}(?:\[[^\]\s]*\])?)"                      # a pytest node id
            rf"|:(?P<sym>{_SYMBOL})"
            r")"
            r"(?![\w])"
        )
    return _PATTERNS[key]


_MENTIONS: dict[tuple, re.Pattern] = {}


def mention_pattern(extensions=None) -> re.Pattern:
    """A file path named anywhere in the answer, with or without a line or symbol after it."""
    key = tuple(extensions or DEFAULT_EXTENSIONS)
    if key not in _MENTIONS:
        _MENTIONS[key] = re.compile(r"(?<![\w./@+-])" + _URL_PREFIX + _path_regex(key) + r"(?![\w/@+-]|\.\w)")
    return _MENTIONS[key]


def extract_citations(text: str, extensions=None) -> list[dict]:
    """Every citation occurrence in `text`, in order: path_as_cited, path, lines, symbol, start, end."""
    out = []
    for m in citation_pattern(extensions).finditer(text):
        path_as_cited = m.group("path")
        path = path_as_cited[2:] if path_as_cited.startswith("./") else path_as_cited
        first, last = m.group("l1") or m.group("a1"), m.group("l2") or m.group("a2")
        lines = None
        if first is not None:
            lines = [int(first)] if last is None else [int(first), int(last)]
        symbol, form = m.group("sym"), "path:symbol"
        if m.group("test"):
            symbol, form = m.group("test").split("[")[0], "test-id"
        elif lines is not None:
            form = "path:line" if len(lines) == 1 else "path:range"
        if path.startswith("/"):
            form = "absolute"
        out.append({"path_as_cited": path_as_cited, "path": path, "lines": lines, "form": form,
                    "symbol": symbol, "start": m.start(), "end": m.end(), "text": m.group(0)})
    return out


def resolve(path: str, tree: CommitTree) -> tuple[str | None, list[str]]:
    """(resolved path or None, candidates): exact path, else a unique component-boundary suffix match.
    An absolute path (the agent's workspace, /Users/x/repo/pkg/a.py) resolves by its longest
    tail that is a file of the commit, else by the longest tail with suffix matches."""
    if path.startswith("/"):
        tails = path.strip("/").split("/")
        for k in range(len(tails)):
            if tree.has("/".join(tails[k:])):
                return "/".join(tails[k:]), []
        for k in range(len(tails)):
            got = resolve("/".join(tails[k:]), tree)
            if got[0] or got[1]:
                return got
        return None, []
    if tree.has(path):
        return path, []
    cands = tree.suffix_matches(path)
    if len(cands) == 1:
        return cands[0], []
    return None, cands


def _symbol_parts(symbol: str) -> list[str]:
    return [p for p in re.split(r"\.|::|#", symbol) if p]


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text) is not None


# --- the answer's own context ---------------------------------------------------

FILE_KEYS = ("file", "path", "file_path", "filepath", "filename")
LINE_KEYS = ("line", "lines", "line_number", "start_line", "line_start")
END_LINE_KEYS = ("end_line", "line_end")
IDENT_KEYS = ("signature", "symbol", "name", "function", "method", "class", "struct", "trait", "interface",
              "identifier", "definition")



class Answer:
    """One answer's text with what a reader resolves a citation from: the file paths it
    names (with or without a locator), its JSON objects, tables, lists and paragraphs."""

    def __init__(self, text: str, tree: CommitTree, extensions=None):
        self.text, self.tree, self.extensions = text, tree, extensions
        self.objects = structure.json_objects(text)
        self.mentions = []
        for m in mention_pattern(extensions).finditer(text):
            path = m.group("path")
            self.mentions.append({"path": path[2:] if path.startswith("./") else path,
                                  "start": m.start("path"), "end": m.end("path")})
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
        for m in _BACKTICK.finditer(self.text):
            k = bisect.bisect_left(starts, m.start() - longest)
            near = spans[k:bisect.bisect_left(starts, m.end())]
            if any(s < m.end() and m.start() < e for s, e in near):
                continue
            name = _identifier(m.group(1), self.extensions)
            if name:
                self._ticks.append((m.start(), m.end(), name))
        self._tick_starts = [t[0] for t in self._ticks]
        self._breaks = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(self.text)]
        self._break_ends = [e for _, e in self._breaks]
        self._break_starts = [s for s, _ in self._breaks]

    def backticked(self, lo: int, hi: int) -> list[str]:
        """The backticked identifiers inside text[lo:hi] (citations and file paths excluded)."""
        names = []
        for s, e, name in self._ticks[bisect.bisect_left(self._tick_starts, lo):]:
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
        return [m for m in self.mentions if lo <= m["start"] and m["end"] <= hi]

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
            same = {}
            for c in self.citations:
                r = self.resolves(c["path"]) if c["lines"] == lines and c["start"] != skip else None
                if r in cands:
                    same.setdefault(r, c)
            if len(same) == 1:
                (path, c), = same.items()
                return {"resolved": path, "scope": "same lines cited", "from": c["text"], "span": [c["start"], c["end"]]}
        for scope, mentions in self.scopes(pos):
            named: dict[str, dict] = {}
            for m in mentions:
                r = self.resolves(m["path"]) if m["start"] != skip else None
                if r in cands:
                    named.setdefault(r, m)
            if len(named) == 1:
                (path, m), = named.items()
                return {"resolved": path, "scope": scope, "from": self.text[m["start"]:m["end"]],
                        "span": [m["start"], m["end"]]}
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
        bounds += [structure.paragraph_bounds(text, pos), (structure.section_start(text, pos), len(text)),
                   (0, len(text))]
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

    def line_file(self, pos: int, obj=None, near_only: bool = False) -> tuple[dict, str] | None:
        """The file a line-only reference at pos refers to, and the scope it came from: the
        `file` field of its JSON object (obj: only that one); else, in the first of its
        innermost JSON object, table row (file column), list item and paragraph that names a
        file of the commit, the nearest such path before pos (else the first one after).
        near_only: only its list item, else its line (a bare "(32-37)")."""
        if near_only:
            item = structure.list_item_bounds(self.text, pos) or structure.line_bounds(self.text, pos)
            named = [m for m in self.mentions_in(item[0], pos) if self.names_a_file(m["path"])]
            return (named[-1], "list item") if named else None
        if obj is not None:
            fields = self.file_fields(obj)
            return (fields[0], "json file field") if fields else None
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
            item = structure.list_item_bounds(self.text, pos)
            scopes = [("list item", *item)] if item else []
            scopes.append(("paragraph", *structure.paragraph_bounds(self.text, pos)))
        for scope, lo, hi in scopes:
            before = [m for m in self.mentions_in(lo, pos) if self.names_a_file(m["path"])]
            after = [m for m in self.mentions_in(pos, hi) if self.names_a_file(m["path"])]
            if before:
                return before[-1], scope
            if after:
                return after[0], scope
        return None


def _line_citation(ans: Answer, start: int, end: int, lines: list[int], obj=None, form="line-in-context",
                   near_only=False) -> dict | None:
    got = ans.line_file(start, obj, near_only)
    if got is None:
        return None
    mention, scope = got
    path = mention["path"]
    return {"path_as_cited": path, "path": path, "lines": lines, "symbol": None, "start": start, "end": end,
            "text": ans.text[start:end], "line_only": True, "form": form,
            "may_move": obj is None and not near_only,       # another file of the context may be meant
            "context": {"scope": scope, "from": ans.text[mention["start"]:mention["end"]],
                        "span": [mention["start"], mention["end"]]}}


def _lines_of(l1, l2) -> list[int]:
    return [int(l1)] if l2 is None else [int(l1), int(l2)]


_LINE_LIST = re.compile(rf"(?:,L?\d+(?:{_DASH}L?\d+)?)+(?!\w|\.\d)")
_LINE_LIST_ITEM = re.compile(rf",L?(?P<l1>\d+)(?:{_DASH}L?(?P<l2>\d+))?")
_NUM = rf"L?\d+(?:\s*(?:{_DASH}|to)\s*L?\d+)?"
_ONE_NUM = re.compile(rf"L?(?P<l1>\d+)(?:\s*(?:{_DASH}|to)\s*L?(?P<l2>\d+))?")
# "line 5", "lines 5-9", "line ~327", "(lines 72, 74, 76)", "lines 5, 9 and 12"
_PROSE_LINE = re.compile(rf"(?<![\w:/.#])[Ll]ines?\s+~?\s*(?P<nums>{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*)(?![\w])")
_COLON_LINE = re.compile(rf"`:L?(?P<nums>\d+(?:\s?{_DASH}\s?L?\d+)?)`")
_L_LINE = re.compile(rf"(?<![\w:/.#`-])(?P<nums>L\d+(?:{_DASH}L?\d+)?)(?![\w.])")       # "at L129"
_PAREN_RANGE = re.compile(rf"\((?P<nums>\d+\s*{_DASH}\s*\d+)\)")                           # "(32-37)"
_LINES_VALUE = re.compile(rf"\s*{_NUM}(?:\s*(?:,|and|&)\s*{_NUM})*\s*")


def _numbers(ans_text: str, lo: int, hi: int):
    """(start, end, lines) of each number or range of a list of line numbers text[lo:hi]."""
    for m in _ONE_NUM.finditer(ans_text, lo, hi):
        yield m.start(), m.end(), _lines_of(m.group("l1"), m.group("l2"))


def listed_lines(text: str, citations: list[dict]) -> list[dict]:
    """More lines of the same file after a line citation, comma-separated without spaces:
    `summary.go:346,457` cites summary.go:457 too (its text runs from the path to the item)."""
    out = []
    for c in citations:
        m = _LINE_LIST.match(text, c["end"]) if c["lines"] else None
        if m:
            c["form"] = "path:list" if c["form"] in ("path:line", "path:range") else c["form"]
            c["subject_span"] = [c["start"], m.end()]
        for item in _LINE_LIST_ITEM.finditer(m.group(0)) if m else ():
            start, end = c["end"] + item.start() + 1, c["end"] + item.end()
            out.append(dict(c, lines=_lines_of(item.group("l1"), item.group("l2")), start=start, end=end,
                            text=text[c["start"]:end]))
    return out


def line_only_citations(ans: Answer, taken: list[dict]) -> list[dict]:
    """Line-only references that take their file from the context: a JSON "line" member
    beside a "file" member of the same object ("lines": "11, 25" cites both), and in prose
    `:N`, "line N", "line ~N", "lines N-M", every number of "lines 72, 74, 76", "L129", and a
    bare "(32-37)" whose list item or line names a file."""
    spans = [(c["start"], c["end"]) for c in taken]
    out = []

    def free(a, b):
        return not any(s < b and a < e for s, e in spans)

    for obj in ans.objects:
        ends = obj.get(*END_LINE_KEYS)
        for mem in obj.get(*LINE_KEYS):
            raw = str(mem.value) if isinstance(mem.value, (int, str)) and not isinstance(mem.value, bool) else ""
            if not _LINES_VALUE.fullmatch(raw):
                continue
            listed = [lines for _, _, lines in _numbers(raw, 0, len(raw))]
            if len(listed) == 1 and len(listed[0]) == 1 and ends and isinstance(ends[0].value, int) \
                    and ends[0].value >= listed[0][0]:
                listed[0].append(ends[0].value)
            for lines in listed:
                c = _line_citation(ans, mem.key_start, mem.end, lines, obj, form="json-fields")
                if c:
                    c["json_member"] = True
                    out.append(c)
    for rx, near in ((_PROSE_LINE, False), (_COLON_LINE, False), (_L_LINE, False), (_PAREN_RANGE, True)):
        for m in rx.finditer(ans.text):
            if not free(m.start(), m.end()):
                continue
            nums = list(_numbers(ans.text, m.start("nums"), m.end("nums")))
            for k, (a, b, lines) in enumerate(nums):
                # one number: the whole match is its text; a list: each number, the first from "lines"
                a, b = (m.start(), m.end()) if len(nums) == 1 else (m.start() if k == 0 else a, b)
                c = _line_citation(ans, a, b, lines, near_only=near)
                if c:
                    c["subject_span"] = [m.start(), m.end()]
                    out.append(c)
    return out


# --- grounding --------------------------------------------------------------


def subject_at(tree: CommitTree, path: str, lines: list[int], subject: str) -> bool:
    """Whether the subject is at the cited lines of path (lines inside the file, strict verdict)."""
    n = tree.line_count(path)
    if not lines or any(x < 1 or x > n for x in lines):
        return False
    return strict.verdict(path, tree.text(path), lines, subject, tree.lines(path)) == "verified"


def fits(tree: CommitTree, path: str, lines: list[int]) -> bool:
    """Whether every cited line is a line of the file (1..EOF)."""
    n = tree.line_count(path)
    return all(1 <= k <= n for k in lines)


def _by_subject(c: dict, tree: CommitTree, ans: Answer | None, subj: str | None) -> dict | None:
    """For a line-only reference whose default file does not hold its subject at the line:
    the closest other file of its context that does (context scope "subject at the line");
    for one whose default file is shorter than a cited line: the closest other file of its
    context where the subject is at the line, else the closest one that has the lines
    (scope "file long enough"): no reader means a line past the end of a file."""
    if not c.get("may_move") or ans is None:
        return None
    first = ans.resolves(c["path"])
    named = [first] if first else tree.suffix_matches(c["path"])      # a basename: each file it may be
    short = bool(named) and not any(fits(tree, p, c["lines"]) for p in named)
    if not short and (not subj or (first and subject_at(tree, first, c["lines"], subj))):
        return None
    long_enough = None
    for m in ans.line_alternatives(c["start"]):
        r = ans.resolves(m["path"])
        for path in [r] if r else tree.suffix_matches(m["path"]):
            if path in named:
                continue
            if subj and subject_at(tree, path, c["lines"], subj):
                return {"resolved_path": path, "candidates": [], "resolved_by": "context",
                        "context": {"scope": "subject at the line", "from": ans.text[m["start"]:m["end"]],
                                    "span": [m["start"], m["end"]]}}
            if short and long_enough is None and fits(tree, path, c["lines"]):
                long_enough = {"resolved_path": path, "candidates": [], "resolved_by": "context",
                               "context": {"scope": "file long enough", "from": ans.text[m["start"]:m["end"]],
                                           "span": [m["start"], m["end"]]}}
    return long_enough


def _resolve_in_context(c: dict, tree: CommitTree, ans: Answer | None, subj: str | None = None) -> dict:
    """resolved_path, candidates, resolved_by (exact, suffix, context) and the context used.
    With a subject, a file of the context where it is at the cited line wins (see ground)."""
    moved = _by_subject(c, tree, ans, subj) if c.get("line_only") and c["lines"] else None
    if moved:
        return moved
    resolved, cands = resolve(c["path"], tree)
    if resolved is None and len(cands) > 1 and c["lines"]:     # a file shorter than the line is not meant
        cands = [p for p in cands if fits(tree, p, c["lines"])] or cands
        if len(cands) == 1 and not c.get("line_only"):
            return {"resolved_path": cands[0], "candidates": [], "resolved_by": "context",
                    "context": {"scope": "file long enough", "from": c["path"], "span": [c["start"], c["end"]]}}
    if resolved is None and cands and subj and c["lines"] and not c.get("line_only"):
        got = ans.settle(c["start"], cands, skip=c["start"], lines=c["lines"]) if ans is not None else {}
        hits = [p for p in cands if subject_at(tree, p, c["lines"], subj)]
        if got.get("resolved") and (got["resolved"] in hits or not hits):
            hits = [got["resolved"]]
            return {"resolved_path": got["resolved"], "candidates": [], "resolved_by": "context",
                    "context": {k: got[k] for k in ("scope", "from", "span")}}
        if len(hits) == 1:
            return {"resolved_path": hits[0], "candidates": [], "resolved_by": "context",
                    "context": {"scope": "subject at the line", "from": subj, "span": [c["start"], c["end"]]}}
        cands = hits or cands
    if c.get("line_only"):
        ctx = dict(c["context"])
        if resolved is None and cands and ans is not None:     # the named file is itself a basename
            got = ans.settle(ctx["span"][0], cands, skip=ctx["span"][0])
            resolved = got["resolved"]
            if got.get("ambiguous"):
                ctx["ambiguous"] = got["ambiguous"]
        return {"resolved_path": resolved, "candidates": [] if resolved else cands,
                "resolved_by": "context" if resolved else None, "context": ctx}
    if resolved is not None:
        return {"resolved_path": resolved, "candidates": [],
                "resolved_by": "exact" if resolved == c["path"] else "suffix", "context": None}
    if cands and ans is not None:
        got = ans.settle(c["start"], cands, skip=c["start"], lines=c["lines"])
        if got["resolved"]:
            return {"resolved_path": got["resolved"], "candidates": [], "resolved_by": "context",
                    "context": {k: got[k] for k in ("scope", "from", "span")}}
        ctx = {"scope": got["scope"], "ambiguous": got["ambiguous"]} if got.get("ambiguous") else None
        return {"resolved_path": None, "candidates": cands, "resolved_by": None, "context": ctx}
    return {"resolved_path": None, "candidates": cands, "resolved_by": None, "context": None}


def ground(c: dict, tree: CommitTree, ans: Answer | None = None, subj: str | None = None) -> dict:
    """Add resolved_path, candidates, resolved_by, context, bucket, reason and ungrounded (and
    for a symbol symbol_by and symbol_lines) to one extracted citation. With `ans`, a path that
    is ambiguous at the commit is settled from the answer's context; with a subject, the file
    where the subject is at the cited line wins among the context's files."""
    r = dict(c, **_resolve_in_context(c, tree, ans, subj), symbol_by=None, symbol_lines=None)
    resolved, cands = r["resolved_path"], r["candidates"]
    r["ungrounded"] = None
    if resolved is None:
        r["bucket"] = "unresolved"
        if r["context"] and r["context"].get("ambiguous"):
            r["reason"] = (f"ambiguous: {len(cands)} files end with {c['path']}, and the {r['context']['scope']} "
                           f"names {len(r['context']['ambiguous'])} of them")
        else:
            r["reason"] = f"ambiguous: {len(cands)} files end with {c['path']}" if cands else "no such file at the commit"
        r["ungrounded"] = ("basename" if "/" not in c["path"] else "ambiguous") if cands else "no_such_file"
        return r
    if "/" not in c["path"] and resolved != c["path"] and r["form"] not in ("json-fields", "line-in-context"):
        r["form"] = "basename"
    if c["lines"] is not None:
        eof = tree.line_count(resolved)
        r["eof"] = eof
        bad = [n for n in c["lines"] if n < 1 or n > eof]
        if bad:
            r["bucket"], r["reason"], r["ungrounded"] = "hallucinated", f"line {bad[0]} outside 1..{eof}", "past_eof"
        else:
            r["bucket"], r["reason"] = "grounded", f"within 1..{eof}"
        return r
    text = tree.text(resolved)
    parts = _symbol_parts(c["symbol"])
    found = find_definition(resolved, text, parts)
    if found is not None:
        r["symbol_by"] = "tree-sitter"
        if found["found"]:
            r["symbol_lines"] = found["lines"]
            a, b = found["lines"]
            r["bucket"], r["reason"] = "grounded", f"defined at lines {a}-{b} ({found['kind']})"
        else:
            r["bucket"], r["reason"] = "unresolved", f"no definition of {c['symbol']!r} in the file"
            r["ungrounded"] = "symbol_not_defined"
        return r
    r["symbol_by"] = "regex"
    missing = [p for p in parts if not _has_word(text, p)]
    if missing:
        r["bucket"], r["reason"] = "unresolved", f"symbol {missing[0]!r} not in the file"
        r["ungrounded"] = "symbol_not_defined"
    else:
        r["bucket"], r["reason"] = "grounded", "symbol found in the file"
    return r


# --- verification -----------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_IDENT_SPAN = re.compile(rf"^(?P<id>{_SYMBOL})(?:<.*>)?(?:\(.*\))?$")
# Words a signature or a backticked span may start with that name no definition.
KEYWORDS = frozenset("""
    fn func def class struct impl pub async await const let var static public private protected
    internal void return for if while where self Self this mut type interface trait enum module
    export function final abstract override unsafe extern crate super new in of dyn ref mod use
    package import from lambda end do then else true false None null nil True False
""".split())


def _identifier(span: str, extensions=None) -> str | None:
    """The identifier a span names (`app.route()` -> route, `Extension<T>` -> Extension), or None."""
    inner = span.strip().strip("`").strip()
    idm = _IDENT_SPAN.match(inner)
    if not idm or citation_pattern(extensions).search(inner + ":1"):  # a file name such as `app.py` is not one
        return None
    name = _symbol_parts(idm.group("id"))[-1]
    return name if len(name) > 1 and name not in KEYWORDS else None


def signature_names(sig: str) -> list[str]:
    """What a signature defines: the name before its first parameter or type list
    (`fn call(self)` -> call, `func (r *R) Handle(w)` -> Handle); else its identifiers."""
    for m in re.finditer(rf"({_IDENT})\s*[(<\[]", sig):
        if m.group(1) not in KEYWORDS:
            return [m.group(1)]
    return [w for w in re.findall(_IDENT, sig) if len(w) > 1 and w not in KEYWORDS]


def context_identifiers(ans: Answer, c: dict) -> list[str]:
    """Identifiers a citation occurrence is about: backticked in its sentence, its line and
    its list item; the identifier cells of its table row's name columns; the `signature`,
    `symbol`, `name`, `function`... members of its JSON object."""
    text, exts = ans.text, ans.extensions
    names = ans.backticked(*ans.sentence_bounds(c["start"], c["end"]))
    names += ans.backticked(*structure.line_bounds(text, c["start"]))
    item = structure.list_item_bounds(text, c["start"])
    if item:
        names += ans.backticked(*item)
    row = structure.table_row(text, c["start"])
    if row:
        names += [n for cell, _, _ in row.name_cells if (n := _identifier(cell, exts))]
    objs = structure.enclosing_objects(ans.objects, c["start"])
    if objs:
        for mem in objs[0].get(*IDENT_KEYS):
            if not isinstance(mem.value, str):
                continue
            if mem.key.lower() == "signature":
                names += signature_names(mem.value)
            elif (n := _identifier(mem.value, exts)):
                names.append(n)
    return list(dict.fromkeys(names))


def verify(c: dict, identifiers: list[str], tree: CommitTree) -> str:
    """verified / mismatch / n/a for one grounded-or-not citation (rule in the module docstring)."""
    if c["bucket"] != "grounded" or c["lines"] is None or not identifiers:
        return "n/a"
    lines = tree.lines(c["resolved_path"])
    if len(c["lines"]) == 1:
        lo, hi = c["lines"][0] - VERIFY_WINDOW, c["lines"][0] + VERIFY_WINDOW
    else:
        lo, hi = min(c["lines"]), max(c["lines"])
    window = "\n".join(lines[max(lo, 1) - 1:hi])
    return "verified" if any(_has_word(window, i) for i in identifiers) else "mismatch"


def _is_path(extensions):
    rx = citation_pattern(extensions)
    return lambda s: "/" in s or rx.search(s + ":1") is not None


def citation_subject(ans: Answer, c: dict, before: int, after: int) -> dict | None:
    """The subject of one citation occurrence (graders/subjects.py), read around its whole
    text (a list of lines `lines 72, 74, 76` has one subject for every number)."""
    lo, hi = c.get("subject_span") or (c["start"], c["end"])
    text = ans.text
    while lo > 0 and text[lo - 1] == "`":          # the citation's own backticks belong to it
        lo -= 1
    while hi < len(text) and text[hi] == "`":
        hi += 1
    tree = ans.tree
    files = [p for p in [ans.resolves(c["path"])] if p] or tree.suffix_matches(c["path"])
    cache = ans.__dict__.setdefault("_named", {})

    def key_named(name: str) -> bool:
        """Whether a file the citation may mean names `name` as a whole word (subjects: json key)."""
        for p in files:
            if (p, name) not in cache:
                cache[(p, name)] = _has_word(tree.text(p), name)
            if cache[(p, name)]:
                return True
        return False

    return subjects.subject(ans.text, lo, hi, objects=ans.objects, before=before, after=after,
                            is_path=ans.is_path, json_member=bool(c.get("json_member")), key_named=key_named)


_JOIN = re.compile(r"[\s`]*(?:[/,]|\sand\s)[\s`]*")
_NAME_JOIN = re.compile(r"`?\s*/\s*`?")


def respectively(ans: Answer, found: list[dict], c: dict) -> dict | None:
    """The subject of one of a group of citations joined by `/`, `,` or `and` right after (or
    after `at`/`in`) as many names joined by `/` or `and` (`` `hide_story_for_user`/`unhide_story_for_user` `:13`/`:19` ``,
    `current_flagged?/current_upvoted? story.rb:423,427`, `is_gone? and can_be_seen_by_user?
    at story.rb:761 and story.rb:582`): the name in the same place
    ("respectively"); None when the counts differ or there is no such list of names."""
    text = ans.text
    if getattr(ans, "_own_spans", None) is None:       # once per answer
        ans._own_spans = sorted({(x["start"], x["end"]) for x in found})
        ans._own_index = {span: i for i, span in enumerate(ans._own_spans)}
    own = ans._own_spans
    k = ans._own_index[(c["start"], c["end"])]
    first = last = k
    while first > 0 and _JOIN.fullmatch(text, own[first - 1][1], own[first][0]):
        first -= 1
    while last + 1 < len(own) and _JOIN.fullmatch(text, own[last][1], own[last + 1][0]):
        last += 1
    if first == last:
        return None
    lo = own[first][0]
    while lo > 0 and text[lo - 1] in "`":
        lo -= 1
    names, pos = [], lo
    at = re.search(r"\s(?:at|in)\s*$", text[max(0, pos - 6):pos])     # `a and b at x:1 and y:2`
    if at:
        pos = max(0, pos - 6) + at.start()
    while True:                  # the names right before the group, last first
        m = re.search(rf"`?(?P<n>{subjects.QUALIFIED})`?\s*$", text[max(0, pos - 120):pos])
        if not m:
            break
        names.insert(0, m.group("n"))
        pos = max(0, pos - 120) + m.start()
        j = re.search(r"`?\s*(?:/|\sand)\s*`?$", text[max(0, pos - 6):pos])
        if not j or len(names) > last - first:
            break
        pos = max(0, pos - 6) + j.start()
    if len(names) != last - first + 1:
        return None
    name = names[k - first]
    return {"name": name, "from": "respectively"} if subjects._clean(name) else None


def strict_verdict(c: dict, tree: CommitTree) -> str:
    """The strict verdict of a grounded line citation against its subject (graders/strict.py);
    n/a for a citation that is not grounded, a symbol citation, or one without a subject."""
    if c["bucket"] != "grounded" or c["lines"] is None or not c["subject"]:
        return "n/a"
    path = c["resolved_path"]
    return strict.verdict(path, tree.text(path), c["lines"], c["subject"]["name"], tree.lines(path))


# --- per-answer grading -------------------------------------------------------


def analyse(text: str, tree: CommitTree, extensions=None) -> list[dict]:
    """Distinct citations of one answer, grounded and verified, in order of first mention."""
    ans = Answer(text, tree, extensions)
    ans.is_path = _is_path(extensions)
    found = ans.citations + listed_lines(text, ans.citations)
    found = sorted(found + line_only_citations(ans, found), key=lambda c: c["start"])
    ans.index_identifiers(found)
    spans = sorted({tuple(c.get("subject_span") or (c["start"], c["end"])) for c in found})
    starts, ends = [a for a, _ in spans], sorted(b for _, b in spans)
    distinct: dict[tuple, dict] = {}
    for c in found:
        lo, hi = c.get("subject_span") or (c["start"], c["end"])
        k = bisect.bisect_right(ends, lo) - 1
        j = bisect.bisect_right(starts, hi - 1)
        subj = citation_subject(ans, c, ends[k] if k >= 0 else 0, starts[j] if j < len(starts) else len(text))
        subj = respectively(ans, found, c) or subj
        g = ground(c, tree, ans, subj["name"] if subj and c["lines"] else None)
        key = (g["resolved_path"] or g["path"], tuple(g["lines"]) if g["lines"] else None, g["symbol"])
        idents = context_identifiers(ans, c)
        if key in distinct:
            d = distinct[key]
            d["occurrences"] += 1
            d["spans"].append([c["start"], c["end"]])
            d["identifiers"] += [i for i in idents if i not in d["identifiers"]]
            d["by_occurrence"].append({"span": [c["start"], c["end"]], "subject": subj})
        else:
            g["occurrences"] = 1
            g["spans"] = [[c["start"], c["end"]]]
            g["identifiers"] = list(dict.fromkeys(idents))
            g["by_occurrence"] = [{"span": [c["start"], c["end"]], "subject": subj}]
            distinct[key] = g
    out = []
    for g in distinct.values():
        g["verification"] = verify(g, g["identifiers"], tree)
        settle_strict(g, tree)
        out.append(g)
    return out


def settle_strict(g: dict, tree: CommitTree) -> None:
    """The strict verdict of each occurrence of a distinct citation (its own subject), then
    the citation's: verified when one occurrence's subject is at the cited line (the answer
    says once what is there, and that is right), else mismatch when one has a subject, else
    n/a; its subject is that occurrence's (the first verified one, else the first found)."""
    seen: dict[str, str] = {}
    for occ in g["by_occurrence"]:
        name = occ["subject"]["name"] if occ["subject"] else None
        if name not in seen:
            seen[name] = strict_verdict(dict(g, subject=occ["subject"]), tree)
        occ["strict"] = seen[name]
    occs = g["by_occurrence"]
    best = (next((o for o in occs if o["strict"] == "verified"), None)
            or next((o for o in occs if o["subject"]), None))
    g["subject"] = best["subject"] if best else None
    g["strict"] = best["strict"] if best else "n/a"


def public_view(c: dict) -> dict:
    """The fields `mcptrials citations` prints and scored.json keeps for one citation."""
    return {
        "path_as_cited": c["path_as_cited"], "resolved_path": c["resolved_path"], "lines": c["lines"],
        "symbol": c["symbol"], "form": c["form"], "bucket": c["bucket"], "ungrounded": c["ungrounded"],
        "verification": c["verification"], "strict": c["strict"], "subject": c["subject"],
        "candidates": c["candidates"], "text": c["text"], "reason": c["reason"],
        "identifiers": c["identifiers"], "occurrences": c["occurrences"],
        "resolved_by": c["resolved_by"], "context": c["context"], "spans": c["spans"],
        "symbol_by": c["symbol_by"], "symbol_lines": c["symbol_lines"],
        "by_occurrence": c["by_occurrence"],
    }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def citation_rates(counts: dict) -> dict:
    """grounded_rate = grounded/total, hallucinated_rate = hallucinated/total,
    unresolved_rate = unresolved/total, verified_rate = verified/(verified + mismatch) (the
    lenient ±VERIFY_WINDOW rule), cited_recall = gold_cited/gold_total (issue 4 item 3);
    strict_verified_rate = strict_verified/(strict_verified + strict_mismatch) and
    strict_grounded_rate = (grounded - strict_mismatch)/total: a grounded citation whose line
    does not hold its subject is not grounded strictly (issue 25 item 5). Each null when its
    denominator is 0."""
    t = counts["total"]
    return {
        "grounded_rate": _ratio(counts["grounded"], t),
        "hallucinated_rate": _ratio(counts["hallucinated"], t),
        "unresolved_rate": _ratio(counts["unresolved"], t),
        "verified_rate": _ratio(counts["verified"], counts["verified"] + counts["mismatch"]),
        "strict_grounded_rate": _ratio(counts["grounded"] - counts["strict_mismatch"], t),
        "strict_verified_rate": _ratio(counts["strict_verified"], counts["strict_verified"] + counts["strict_mismatch"]),
        "cited_recall": _ratio(counts["gold_cited"], counts["gold_total"]),
    }


COUNT_KEYS = ("total", "grounded", "hallucinated", "unresolved", "verified", "mismatch", "n/a",
              "strict_verified", "strict_mismatch", "strict_na")


def empty_counts() -> dict:
    """The counts of a step with no citation counted (e.g. no checkout to check them in)."""
    return _count([], [])


def _count(items: list[dict], gold: list[dict]) -> dict:
    counts = {k: 0 for k in COUNT_KEYS}
    for c in items:
        counts["total"] += 1
        counts[c["bucket"]] += 1
        counts[c["verification"]] += 1
        counts["strict_na" if c["strict"] == "n/a" else f"strict_{c['strict']}"] += 1
    counts["gold_total"] = len(gold)
    counts["gold_cited"] = sum(1 for g in gold if g["cited"])
    counts["by_form"] = composition.by_form(items)
    counts["ungrounded"] = composition.ungrounded(items)
    return counts


def _interval_gap(a: list[int], b: list[int]) -> int:
    """Lines between two intervals [min, max] (0 when they overlap)."""
    a0, a1, b0, b1 = min(a), max(a), min(b), max(b)
    return max(0, a0 - b1, b0 - a1)


def gold_recall(text: str, items: list[dict], gold: list[str], tree: CommitTree, extensions=None) -> list[dict]:
    """For each gold location, whether the answer cites it.

    A gold line or range is cited when a resolved citation of the same file has a line
    within RECALL_WINDOW lines of it. A gold symbol is cited when a resolved citation names
    the same file and every component of the symbol occurs as a whole word in the answer.
    """
    out = []
    for loc in gold:
        parsed = extract_citations(loc, extensions)
        if not parsed:
            out.append({"location": loc, "cited": False, "by": None, "note": "not a path:N, path:N-M or path:Symbol form"})
            continue
        g = parsed[0]
        path, _ = resolve(g["path"], tree)
        path = path or g["path"]
        same_file = [c for c in items if c["resolved_path"] == path]
        by = None
        if g["lines"] is not None:
            by = next((c for c in same_file if c["lines"] is not None
                       and _interval_gap(c["lines"], g["lines"]) <= RECALL_WINDOW), None)
        elif same_file and all(_has_word(text, p) for p in _symbol_parts(g["symbol"])):
            by = same_file[0]
        out.append({"location": loc, "cited": by is not None, "by": by["text"] if by else None})
    return out


def grade_citations(text: str, tree: CommitTree, gold: list[str] | None = None, extensions=None) -> dict:
    """One step's citations: items, gold recall, counts and rates."""
    items = analyse(text, tree, extensions)
    gold_res = gold_recall(text, items, gold or [], tree, extensions)
    counts = _count(items, gold_res)
    return {"items": [public_view(c) for c in items], "gold": gold_res, "counts": counts,
            "rates": citation_rates(counts)}


def pool(step_results: list[dict]) -> dict:
    """A trial's counts and rates: the steps' counts summed (the composition by form and the
    ungrounded kinds too), then the same rates."""
    counts = {k: sum(r["counts"][k] for r in step_results) for k in (*COUNT_KEYS, "gold_total", "gold_cited")}
    counts["by_form"] = composition.add_forms(r["counts"]["by_form"] for r in step_results)
    counts["ungrounded"] = composition.add_ungrounded(r["counts"]["ungrounded"] for r in step_results)
    return {"counts": counts, "rates": citation_rates(counts)}
