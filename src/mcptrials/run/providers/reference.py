"""Provider `reference`: a deterministic offline agent with NO language model.

It stands in for a model in `make demo` and the end-to-end tests. It measures the
harness's plumbing and the MCP servers' behaviour, never model quality: every record
that names it should say so.

How it works. Each reply is a pure function of (system, messages, tools, max_tokens) and
the workspace path given at construction: no randomness, no clock, no file access. The
current step is the conversation after the last user turn that holds text rather than
tool results. From that prompt it takes search terms (`backticked` names, "quoted
phrases", CamelCase, snake_case and dotted identifiers; common English words are
skipped). It ranks the offered tools by name and description: the server's search tools
first (symbol, then code search, then file-name search), the built-in `grep` last; the
server's read tools first, the built-in `read_file` last. Then, round by round (a history
question asks the history tool instead, see below):

1. search each term with the best search tool whose required arguments it can fill;
2. parse `path:line` hits from the results (grep lines, JSON results such as
   code-index's, bare paths such as filesystem's search_files); a term whose search
   errored or found nothing moves on to the next search tool;
3. read a window around the best hits (or a whole file found by name) with the best
   read tool that has not failed on that file, and keep the lines the read returned;
4. answer, citing `path:LINE` (relative to the workspace) with the code at that line,
   once every best hit has been read, nothing is left to try, or `MAX_ROUNDS` tool
   rounds are spent. Only what the tools returned is cited: a server that returns
   better hits gives a better answer, and nothing found gives an honest "not found".

Reading the question (general rules from its wording; the agent knows no scenario):

- a name given as the place to look ("inside the `pkg` package", "in the `src` folder") is a
  scope: hits outside it are dropped and it is not searched for itself; "not/nothing ...
  tests" drops test files;
- "how many" asks for a count: of call expressions (`name(`) when it says "call", else of
  uses; the definition and import lines are never counted. "what is its value" asks for the
  literal assigned where the first term is defined. When the prompt wants the value "alone
  on the last line", the answer ends with that bare value, else states it in a sentence;
- a question about commits, authors or history goes to a history tool (a server tool named
  log/history/blame, e.g. git's git_log) when one is offered, and the answer quotes the
  newest commit's id, author, date and message from its result (the one the question asks
  for alone on the last line). Without such a tool the agent says plainly that none of its
  tools shows the history: the work tree's files do not record it (the built-ins skip .git).

Reading results: a search result that says more is left (`"has_more": true` with an
`end_index`, a `next_cursor`) is asked again for its next page, when the tool takes a page
argument (`start_index`, `offset`, `cursor`); so a server that pages its results costs an
extra call where one that returns everything does not. A prompt that asks where something
is used gets every use found cited (up to USAGE_CITES), with the enclosing function.

A step whose prompt mentions the "last step", "final step" or "feedback on the tools"
also gets a "Feedback on the tools:" paragraph (which tools helped, which failed).

Usage: the token counts are ESTIMATES (characters / 4) of the request and of the reply,
made so records are not all zero; no model ran and no tokens were billed.
"""

from __future__ import annotations

import json
import math
import os
import posixpath
import re
from dataclasses import dataclass, field

from mcptrials.run.providers.base import Provider, Reply, Usage

MAX_ROUNDS = 4            # tool rounds per step; the next reply is the answer
MAX_TERMS = 3             # search terms taken from one prompt
MAX_CALLS_PER_REPLY = 6
READS_PER_TERM = 2        # hits read (and cited) per term
USAGE_CITES = 16          # uses cited per term when the prompt asks where something is used: every one found
READ_BEFORE, READ_AFTER = 3, 8   # the window read around a hit line
USAGE_READ_BEFORE = 20           # more above a use, to see the function it is in
SNIPPET_LINES = 4         # lines quoted after a cited line, when a read returned them
CHARS_PER_TOKEN = 4       # the usage estimate

# What the question asks for, read from its wording (never from knowledge of any scenario).
COUNT_INTENT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b", re.IGNORECASE)
VALUE_INTENT = re.compile(r"\b(what is|what's) (its|the) value\b|\bvalue of\b|\bset to\b", re.IGNORECASE)
LAST_LINE = re.compile(r"\balone on the last line\b|\blast line of (your|the) answer\b|\bon its own line\b",
                       re.IGNORECASE)
HISTORY_INTENT = re.compile(r"\b(commits?|committed|history|authored|author|git log)\b", re.IGNORECASE)
NEGATED_TESTS = re.compile(r"\b(not|nothing|no|excluding|except|without)\b[^.?!]{0,40}\btests?\b", re.IGNORECASE)
# `x` named as where to look ("inside the `pkg` package"): a scope for the hits, not a search term.
SCOPE = re.compile(r"\b(?:in|inside|within|under)\s+(?:the\s+)?`([\w./-]+)`\s+(?:package|folder|directory|module|tree)\b",
                   re.IGNORECASE)

FEEDBACK_MARKERS = re.compile(r"\b(last|final) step\b|feedback on the tools|tool feedback", re.IGNORECASE)
USAGE_INTENT = re.compile(r"\b(call(s|ed|ers?|ing)?|uses?|used|usages?|referenc\w*|invok\w*|import(s|ed)?)\b",
                          re.IGNORECASE)

STOPWORDS = set("""
a about above after again against all also an and any are as at be because been before being below
between both but by can could did do does doing done down during each else every few find for from
further get gets give given has have having here how however if in into is it its itself just know
let like look make many may more most much must my need no nor not now of off on once one only or
other our out over own please same should show so some such tell than that the their them then
there these they this those through to too under until up very was way we were what when where
whether which while who whom why will with within would you your yes
code codebase repository repo project file files function functions method methods class classes
module modules defined define definition implement implemented implementation line lines value
values return returns returned variable variables work works happen happens called call calls
used use uses using answer question explain describe cite path paths where's what's
""".split())

FILE_EXTENSIONS = ("py", "pyi", "js", "jsx", "ts", "tsx", "md", "rst", "txt", "yaml", "yml", "json", "toml",
                   "cfg", "ini", "rs", "go", "java", "kt", "c", "h", "cc", "cpp", "hpp", "rb", "sh", "smk",
                   "html", "css", "sql", "lock")
EXTENSIONLESS_FILES = {"Makefile", "Dockerfile", "Snakefile", "LICENSE", "README", "Justfile"}

# Tool-name words that mark a tool the agent must not call (it changes state or the server's setup).
MUTATING = {"write", "edit", "create", "delete", "remove", "move", "rename", "commit", "add", "reset",
            "checkout", "set", "clear", "configure", "refresh", "build", "insert", "replace", "restart",
            "activate", "switch", "execute", "run", "shell", "init", "initial", "onboarding", "memory",
            "memories", "push", "pull", "merge", "apply", "update", "install", "delete", "branch", "temp"}

_BACKTICK = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]{2,80})"|\u201c([^\u201d\n]{2,80})\u201d')
_IDENT = re.compile(
    r"(?<![\w.])(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"    # dotted.name
    r"|_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"                           # snake_case
    r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*"             # CamelCase, camelCase
    r"|[A-Z]{2,}[a-z][A-Za-z0-9]*)(?![\w])"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")
_PATH_LINE = re.compile(r"(?:^|[\s(\[\"'`])(?P<path>[^\s:\"'`()\[\]]+):(?P<line>\d+)(?:(?::\d+)?[:\-]\s?(?P<text>.*))?")
_NUMBERED = re.compile(r"^\s*(\d+)(?:\t|[:|\u2192]\s?)(.*)$")


# --- terms --------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    search: str     # what is searched for
    label: str      # how the answer names it
    kind: str       # ident | phrase | word
    qualifier: str | None = None    # `Usage` of `Usage.add`: hits inside it rank first

    def matches(self, text: str) -> int:
        """0: absent; 1: present ignoring case; 2: present with case; 3: as a whole identifier."""
        if not text:
            return 0
        if self.kind == "ident" and re.search(rf"(?<![A-Za-z0-9_]){re.escape(self.search)}(?![A-Za-z0-9_])", text):
            return 3
        if self.search in text:
            return 2
        return 1 if self.search.lower() in text.lower() else 0

    def is_definition(self, text: str) -> bool:
        if self.kind != "ident":
            return False
        s = re.escape(self.search)
        return bool(
            re.search(rf"\b(?:def|class|function|func|fn|struct|enum|interface|trait|type|const|let|var|val)\s+\*?{s}\b", text)
            or re.match(rf"^\s*(?:export\s+)?(?:self\.)?{s}\s*(?::[^=]*)?=(?!=)", text)
            or re.match(rf"^\s*{s}\s*:\s*\S", text) and not text.rstrip().endswith(",")
        )


def _looks_like_file(token: str) -> bool:
    base = token.rsplit("/", 1)[-1]
    if base in EXTENSIONLESS_FILES:
        return True
    return "." in base and base.rsplit(".", 1)[-1] in FILE_EXTENSIONS and not base.startswith(".")


def _term_from(raw: str, quoted: bool) -> tuple[Term | None, str | None]:
    """(term, file name) from a backticked or quoted snippet."""
    c = raw.strip().strip(".,;:")
    c = re.sub(r"\(.*\)$", "", c) if re.match(r"^[\w.]+\(.*\)$", c) else c    # foo(), foo(x)
    if not c:
        return None, None
    if re.fullmatch(r"[\w./-]+", c) and (_looks_like_file(c) or "/" in c):
        return None, c
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+", c):
        parts = c.split(".")
        return Term(parts[-1], c, "ident", qualifier=parts[-2]), None
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c):
        if not quoted or not c.islower() or "_" in c:
            return Term(c, c, "ident"), None
        return Term(stem(c), c, "word"), None
    return Term(c, c, "phrase"), None


def stem(word: str) -> str:
    """A crude suffix strip so a word finds its relatives (validated -> validat: validate, validation)."""
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ions", "ion", "ers", "er", "ed", "es", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            return w[:-len(suffix)]
    return w


def plain_text(prompt: str) -> str:
    """The prompt without its `code` and "quoted" parts (for reading its intent)."""
    return _QUOTED.sub(" ", _BACKTICK.sub(" ", prompt))


def extract_scopes(prompt: str) -> list[str]:
    """Folders the prompt confines the question to ("inside the `pkg` package" -> pkg/), as
    workspace-relative path prefixes; a dotted package name becomes its folder."""
    out = []
    for m in SCOPE.finditer(prompt):
        prefix = m.group(1).strip("/").replace(".", "/") if "/" not in m.group(1) else m.group(1).strip("/")
        if prefix and prefix + "/" not in out:
            out.append(prefix + "/")
    return out


def in_scope(path: str, scopes: list[str]) -> bool:
    return not scopes or any(path.startswith(s) for s in scopes)


def extract_terms(prompt: str) -> tuple[list[Term], list[str]]:
    """Search terms (in priority order) and file names mentioned in a prompt. A name the
    prompt gives as the place to look (see extract_scopes) is not searched for."""
    terms: list[Term] = []
    files: list[str] = []
    scope_names = {m.group(1) for m in SCOPE.finditer(prompt)}

    def add(term, fname):
        if fname and fname not in files:
            files.append(fname)
        if term and all(t.search != term.search for t in terms):
            terms.append(term)
        if term and term.qualifier and all(t.search != term.qualifier for t in terms):
            terms.append(Term(term.qualifier, term.qualifier, "ident"))     # find the class too

    for m in _BACKTICK.finditer(prompt):
        if m.group(1) not in scope_names:
            add(*_term_from(m.group(1), quoted=False))
    for m in _QUOTED.finditer(prompt):
        add(*_term_from(m.group(1) or m.group(2), quoted=True))
    plain = plain_text(prompt)
    for m in _IDENT.finditer(plain):
        tok = m.group(0)
        parts = tok.split(".")
        if len(parts) > 1 and (_looks_like_file(tok) or min(len(p) for p in parts) < 2):
            if _looks_like_file(tok):
                add(None, tok)
            continue        # e.g. "e.g", "i.e"
        if tok.lower() in STOPWORDS:
            continue
        add(*_term_from(tok, quoted=False))
    if not terms:
        # No identifier at all: fall back to the prompt's longest uncommon words.
        words = []
        for m in _WORD.finditer(plain):
            w = m.group(0)
            if w.lower() not in STOPWORDS and len(w) >= 5 and w.lower() not in [x.lower() for x in words]:
                words.append(w)
        words.sort(key=lambda w: -len(w))      # stable: ties keep prompt order
        terms = [Term(stem(w), w.lower(), "word") for w in words[:2]]
    return terms[:MAX_TERMS], files


# --- tools --------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict
    mcp: bool
    role: str | None      # symbol | search | filesearch | read | history | None
    rank: int             # lower is tried first within a role


def _tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def classify_tool(tool: dict) -> ToolSpec:
    name = str(tool.get("name", ""))
    desc = str(tool.get("description") or "")
    schema = tool.get("input_schema")
    schema = schema if isinstance(schema, dict) else {}      # a server may send a broken schema
    mcp = name.startswith("mcp__")
    base = name[len("mcp__"):].split("__", 1)[-1] if mcp else name
    toks = _tokens(base)
    role, rank = None, 0
    if not mcp:
        role = {"grep": "search", "read_file": "read"}.get(name)
        rank = 100                    # built-ins come after every server tool
    elif any(t in MUTATING for t in toks) or any(t in ("multiple", "media", "image", "tail") for t in toks):
        role = None
    elif any(t in ("log", "history", "blame") for t in toks):
        role = "history"              # e.g. git_log: the commits, which no file of the work tree records
    elif "symbol" in toks and any(t in ("find", "search", "lookup", "query") for t in toks) and "referencing" not in toks:
        role = "symbol"
    elif any(t in ("find", "search", "grep", "query", "lookup", "locate") for t in toks):
        role = "filesearch" if any(t in ("file", "files", "dir", "path", "paths", "filename") for t in toks) else "search"
        rank = 0 if any(t in ("grep", "code", "pattern", "text", "content") for t in toks) else 1
    elif "read" in toks or ("get" in toks and any(t in ("body", "content", "contents", "source") for t in toks)):
        role = "read"
        rank = (0 if "read" in toks else 1) + (5 if "deprecated" in desc.lower() else 0)
    return ToolSpec(name, desc, schema, mcp, role, rank)


def _props(schema: dict) -> dict:
    p = schema.get("properties")
    return p if isinstance(p, dict) else {}


def _types(prop: dict) -> list[str]:
    t = prop.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    out = []
    for alt in prop.get("anyOf", []) + prop.get("oneOf", []):
        if isinstance(alt, dict):
            out += _types(alt)
    return out


def _kind_of_key(key: str) -> str:
    k = re.sub(r"[^a-z0-9]", "", key.lower())
    if "glob" in k or k in ("filepattern", "filemask", "include", "exclude", "includeglob", "excludepatterns"):
        return "glob"
    if ("namepath" in k or "symbol" in k or k.endswith("pattern") or k.endswith("query") or k in (
            "pattern", "query", "search", "regex", "name", "keyword", "keywords", "term", "text", "q",
            "searchterm", "needle", "identifier")):
        return "term"
    if "path" in k or k in ("root", "directory", "dir", "folder", "repo", "repository", "file", "filename",
                            "cwd", "project", "uri", "target"):
        return "path"
    if k in ("startline", "start", "fromline", "linestart", "offset", "firstline", "line"):
        return "start"
    if k in ("endline", "end", "toline", "lineend", "lastline"):
        return "end"
    if k in ("head", "limit", "maxlines", "numlines", "count", "lines"):
        return "count"
    return "other"


@dataclass
class Need:
    """What a call is for: a term to search, or a file window to read."""
    term: Term | None = None
    path: str | None = None      # relative
    lo: int | None = None        # 1-based, inclusive
    hi: int | None = None


def build_arguments(spec: ToolSpec, need: Need, workspace: str) -> dict | None:
    """Fill a tool's arguments from what the call is for; None when a required one cannot be filled."""
    props = _props(spec.schema)
    required = spec.schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    args: dict = {}
    if not spec.mcp:
        if spec.name == "grep" and need.term:
            t = need.term
            args["pattern"] = rf"\b{re.escape(t.search)}\b" if t.kind == "ident" else re.escape(t.search)
            if t.kind != "ident":
                args["case_insensitive"] = True
            return args
        if spec.name == "read_file" and need.path:
            args["path"] = need.path
            if need.lo is not None:
                args["start_line"] = need.lo
                args["end_line"] = need.hi
            return args
        return None
    for key in list(props) + [r for r in required if r not in props]:
        prop = props.get(key) if isinstance(props.get(key), dict) else {}
        is_required = key in required
        kind = _kind_of_key(key)
        types = _types(prop)
        relative = "relative" in key.lower() or "relative" in str(prop.get("description", "")).lower()
        value = None
        if kind == "glob" and spec.role == "filesearch" and need.term and is_required:
            value = f"*{need.term.search}*"      # e.g. a file_mask
        elif kind == "term" and need.term and ("string" in types or not types):
            if spec.role == "filesearch" and need.term:
                value = f"**/*{need.term.search}*" if "glob" in spec.description.lower() else need.term.search
            elif need.term:
                value = need.term.search
        elif kind == "path" and ("string" in types or not types):
            if need.path:       # reading a file
                value = need.path if relative else posixpath.join(workspace, need.path)
            elif is_required:
                value = "." if relative else workspace
        elif kind in ("start", "end", "count") and need.lo is not None and any(t in types for t in ("integer", "number")):
            if kind == "start" and key.lower() != "offset":
                value = need.lo - _zero_based(spec, key)
            elif kind == "end":
                value = need.hi - _zero_based(spec, key)
            elif kind == "count" and "start" not in [_kind_of_key(k) for k in props]:
                value = need.hi       # e.g. head: N first lines
        if value is None and is_required:
            if "default" in prop:
                value = prop["default"]
            elif isinstance(prop.get("enum"), list) and prop["enum"]:
                value = prop["enum"][0]
            elif kind == "glob":
                value = "**/*"
            elif "boolean" in types:
                value = False
            elif "integer" in types or "number" in types:
                value = 10
            else:
                return None        # e.g. a required array or an unknown string
        if value is not None:
            args[key] = value
    if need.term and not any(isinstance(v, str) and need.term.search in v for v in args.values()):
        return None                # a search tool that cannot take the term
    if need.path and not any(isinstance(v, str) and v.endswith(need.path) for v in args.values()):
        return None                # a read tool that cannot take the file
    return args


# --- reading results ----------------------------------------------------------


@dataclass
class Hit:
    path: str
    line: int | None
    text: str | None
    tool: str
    term: Term | None


@dataclass
class Call:
    id: str
    name: str
    input: dict
    text: str
    is_error: bool
    spec: ToolSpec | None
    failed: bool = False
    term: Term | None = None
    useful: bool = False
    next_page: int | str | None = None   # where the next page starts, when the result says there is one


_PAGE_KEYS = ("startindex", "offset", "start", "skip", "cursor", "page", "pagetoken", "after")


def next_page(text: str) -> int | str | None:
    """Where a paged search result's next page starts ({"pagination": {"has_more": true,
    "end_index": 10}} -> 10; a next_cursor value), or None when it says nothing more is left."""
    try:
        data = json.loads(text.strip())
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    for where in (data.get("pagination"), data.get("page_info"), data):
        if not isinstance(where, dict):
            continue
        low = {re.sub(r"[^a-z]", "", k.lower()): v for k, v in where.items() if isinstance(k, str)}
        cursor = next((low[k] for k in ("nextcursor", "nextpagetoken", "nextoffset", "nextstart")
                       if isinstance(low.get(k), (int, str)) and low.get(k) not in ("", None)), None)
        if cursor is not None and not isinstance(cursor, bool):
            return cursor
        if low.get("hasmore") is True or low.get("more") is True:
            end = low.get("endindex")
            if isinstance(end, int) and not isinstance(end, bool):
                return end
            start, got = low.get("startindex"), low.get("returned")
            if isinstance(start, int) and isinstance(got, int):
                return start + got
    return None


def page_key(spec: ToolSpec) -> str | None:
    """The argument of a search tool that asks for a later page (start_index, offset, cursor)."""
    for key in _props(spec.schema):
        if re.sub(r"[^a-z]", "", key.lower()) in _PAGE_KEYS:
            return key
    return None


def _result_text(content) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def looks_failed(text: str) -> bool:
    """A result that reports an error without setting isError (e.g. {"status": "error"})."""
    t = text.strip()
    try:
        data = json.loads(t)
    except ValueError:
        data = None
    if isinstance(data, dict):
        status = str(data.get("status", "")).lower()
        return status in ("error", "failed", "failure") or bool(data.get("error")) or status.startswith("needs_")
    first = t.split("\n", 1)[0].lower()
    return first.startswith(("error", "failed", "exception", "traceback", "access denied"))


class _Paths:
    def __init__(self, workspace: str):
        roots = [os.path.normpath(workspace)]
        real = os.path.realpath(workspace)
        if real not in roots:
            roots.append(real)
        self.roots = roots

    def rel(self, p) -> str | None:
        """A workspace-relative path, or None for anything outside it (or not a file path)."""
        if not isinstance(p, str):
            return None
        p = p.strip().strip("'\"")
        if p.startswith("file://"):
            p = p[len("file://"):]
        for root in self.roots:
            if p.startswith(root + "/"):
                p = p[len(root) + 1:]
                break
        else:
            if p.startswith("/"):
                return None
        p = posixpath.normpath(p)
        if p in (".", "") or p == ".." or p.startswith("../"):
            return None
        return p


_FILE_KEYS = ("file", "path", "file_path", "filepath", "filename", "relative_path", "relativepath", "uri", "location")
_LINE_KEYS = ("line", "line_number", "linenumber", "lineno", "line_no", "start_line", "startline", "row")
_TEXT_KEYS = ("text", "line_text", "match", "content", "snippet", "code", "preview", "body", "source")


def _json_hits(data, paths: _Paths, out: list, inherited: str | None = None) -> None:
    if isinstance(data, list):
        for item in data:
            _json_hits(item, paths, out, inherited)
        return
    if isinstance(data, str) and inherited:
        m = re.match(r"^\s*>?\s*(\d+)\s*[:|]\s?(.*)$", data)
        if m:
            out.append((inherited, int(m.group(1)), m.group(2)))
        return
    if not isinstance(data, dict):
        return
    low = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
    path, line = None, None
    for k in _FILE_KEYS:
        v = low.get(k)
        if isinstance(v, str):
            m = re.match(r"^(.*?):(\d+)(?::\d+)?$", v)        # "src/a.py:12"
            if m and paths.rel(m.group(1)):
                path, line = paths.rel(m.group(1)), int(m.group(2))
                break
            if paths.rel(v):
                path = paths.rel(v)
                break
    line = line if line is not None else next((low[k] for k in _LINE_KEYS if isinstance(low.get(k), int) and not isinstance(low.get(k), bool)), None)
    if line is None:
        for k in ("location", "body_location", "range", "start", "position"):
            sub = low.get(k)
            if isinstance(sub, dict):
                sub_low = {kk.lower(): vv for kk, vv in sub.items() if isinstance(kk, str)}
                line = next((sub_low[kk] for kk in _LINE_KEYS if isinstance(sub_low.get(kk), int)), None)
                if line is None and isinstance(sub.get("start"), dict):
                    line = sub["start"].get("line")
                if isinstance(line, int):
                    break
    text = next((low[k] for k in _TEXT_KEYS if isinstance(low.get(k), str)), None)
    here = path or inherited
    if here and (path or line is not None):
        out.append((here, line if isinstance(line, int) and line > 0 else None,
                    text.split("\n", 1)[0] if text else None))
    for k, v in data.items():
        if isinstance(v, (list, dict)):
            key_path = paths.rel(k) if isinstance(k, str) and _looks_like_file(k.strip()) else None
            _json_hits(v, paths, out, key_path or here)
        elif isinstance(v, str) and isinstance(k, str) and _looks_like_file(k.strip()) and paths.rel(k):
            _json_hits([ln for ln in v.split("\n")], paths, out, paths.rel(k))


def parse_hits(text: str, paths: _Paths) -> list[tuple[str, int | None, str | None]]:
    """(path, line or None, line text or None) found in a search result, in order, deduplicated."""
    raw: list = []
    stripped = text.strip()
    data = None
    if stripped[:1] in "[{":
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
    if data is not None:
        _json_hits(data, paths, raw)
    else:
        for line in text.splitlines():
            m = _PATH_LINE.search(line)
            if m and ("." in m.group("path") or "/" in m.group("path")):
                p = paths.rel(m.group("path"))
                if p:
                    raw.append((p, int(m.group("line")), m.group("text")))
                    continue
            cand = re.sub(r"^\s*(\[FILE\]|FILE:|-|\*)\s*", "", line).strip()
            if cand and " " not in cand and _looks_like_file(cand):
                p = paths.rel(cand)
                if p:
                    raw.append((p, None, None))
    seen, out = set(), []
    for p, n, t in raw:
        if (p, n) not in seen:
            seen.add((p, n))
            out.append((p, n, t))
    return out


def parse_read(text: str, first_line: int, numbered_only: bool = False) -> dict[int, str]:
    """Line number -> text from a read result: numbered (cat -n) output keeps its numbers,
    JSON with code and a start line is numbered from it, plain text from `first_line`.
    `numbered_only` (the built-in read_file) keeps numbered lines only, not its header."""
    if numbered_only:
        return {int(m.group(1)): m.group(2) for m in map(_NUMBERED.match, text.split("\n")) if m}
    stripped = text.strip()
    if stripped[:1] == "{":
        try:
            data = json.loads(stripped)
        except ValueError:
            data = None
        if isinstance(data, dict):
            low = {k.lower(): v for k, v in data.items() if isinstance(k, str)}
            code = next((low[k] for k in ("code", "body", "content", "source", "text") if isinstance(low.get(k), str)), None)
            start = next((low[k] for k in _LINE_KEYS if isinstance(low.get(k), int)), None)
            if code is not None:
                return {start + i if start else first_line + i: ln for i, ln in enumerate(code.split("\n"))}
            return {}
    lines = text.split("\n")
    numbered = [_NUMBERED.match(ln) for ln in lines]
    hits = [m for m in numbered if m]
    if len(hits) >= max(1, 0.6 * len([ln for ln in lines if ln.strip()])):
        nums = [int(m.group(1)) for m in hits]
        if nums == sorted(nums):
            return {int(m.group(1)): m.group(2) for m in hits}
    if lines and lines[-1] == "":
        lines = lines[:-1]
    return {first_line + i: ln for i, ln in enumerate(lines)}


# --- the state of one step ----------------------------------------------------


@dataclass
class StepState:
    terms: list[Term]
    files: list[str]
    calls: list[Call]
    rounds: int
    hits: list[Hit] = field(default_factory=list)
    known: dict[str, dict[int, str]] = field(default_factory=dict)
    reads: list[tuple[str, str, int | None, int | None, bool]] = field(default_factory=list)  # tool, path, lo, hi, ok
    scopes: list[str] = field(default_factory=list)          # path prefixes the prompt confines hits to
    history: list[str] = field(default_factory=list)         # what history tools (git log) returned


def _call_term(terms: list[Term], call_input: dict) -> Term | None:
    values = [v for v in call_input.values() if isinstance(v, str)]
    found = [t for t in terms if any(t.search in v or re.escape(t.search) in v for v in values)]
    return max(found, key=lambda t: len(t.search)) if found else None


def _zero_based(spec: ToolSpec, key: str) -> bool:
    prop = _props(spec.schema).get(key)
    desc = str(prop.get("description", "")).lower() if isinstance(prop, dict) else ""
    return "0-based" in desc or "zero-based" in desc or "0-indexed" in desc


def _window(spec: ToolSpec, call_input: dict, paths: _Paths) -> tuple[str | None, int | None, int | None]:
    """(relative path, lo, hi) a read call asked for, 1-based; lo/hi None for a whole file."""
    path, lo, hi = None, None, None
    for key, v in call_input.items():
        kind = _kind_of_key(key)
        if kind == "path" and isinstance(v, str) and path is None:
            path = paths.rel(v)
        elif kind == "start" and isinstance(v, int):
            lo = v + _zero_based(spec, key)
        elif kind == "end" and isinstance(v, int):
            hi = v + _zero_based(spec, key)
        elif kind == "count" and isinstance(v, int):
            lo, hi = (lo or 1), v
    return path, lo, hi


def analyze_step(prompt: str, calls: list[Call], rounds: int, paths: _Paths, prior_terms: list[Term]) -> StepState:
    terms, files = extract_terms(prompt)
    if not terms:
        terms = prior_terms
    st = StepState(terms, files, calls, rounds, scopes=extract_scopes(prompt))
    for c in calls:
        c.failed = c.is_error or looks_failed(c.text)
        role = c.spec.role if c.spec else None
        if role == "history":
            if not c.failed and c.text.strip():
                st.history.append(c.text)
                c.useful = True
            continue
        if role == "read":
            path, lo, hi = _window(c.spec, c.input, paths)
            lines = {} if c.failed or not path else parse_read(c.text, lo or 1, numbered_only=not c.spec.mcp)
            ok = bool(lines) and any(t.strip() for t in lines.values())
            if ok:
                st.known.setdefault(path, {}).update(lines)
                c.useful = True
            if path:
                st.reads.append((c.name, path, lo, hi, ok))
            continue
        c.term = _call_term(terms, c.input)
        if c.failed:
            continue
        c.next_page = next_page(c.text)
        for p, n, t in parse_hits(c.text, paths):
            st.hits.append(Hit(p, n, t, c.name, c.term))
    # Which searches helped: a hit whose text (or the file read later) holds the term.
    for c in calls:
        if c.spec and c.spec.role not in ("read", "history") and not c.failed:
            c.useful = any(h.tool == c.name and h.term == c.term and (_relevance(st, h, c.term) or h.line is None)
                           for h in st.hits) if c.term else False
    return st


def _line_text(st: StepState, path: str, line: int | None, fallback: str | None) -> str | None:
    if line is not None and line in st.known.get(path, {}):
        return st.known[path][line]
    return fallback


def _relevance(st: StepState, h: Hit, term: Term | None) -> int:
    if term is None or h.line is None:
        return 0
    return term.matches(_line_text(st, h.path, h.line, h.text) or "")


def _is_test_path(path: str) -> bool:
    parts = path.split("/")
    return any(p in ("test", "tests", "testing", "spec") for p in parts[:-1]) or parts[-1].startswith("test_") \
        or re.search(r"(_test|\.test|\.spec)\.\w+$", parts[-1]) is not None


def candidates(st: StepState, term: Term, prompt: str) -> list[tuple[int, str, int, str]]:
    """(score, path, line, text) of every line known to hold `term`, best first."""
    found: dict[tuple[str, int], str] = {}
    for h in st.hits:
        if h.line is not None and h.term in (term, None):
            t = _line_text(st, h.path, h.line, h.text)
            if t is not None and term.matches(t):
                found[(h.path, h.line)] = t
    # Lines the reads returned count too: a file found by name, or a window, may hold more hits.
    for path in sorted(st.known):
        for n in sorted(st.known[path]):
            if term.matches(st.known[path][n]):
                found[(path, n)] = st.known[path][n]
    wants_tests = re.search(r"\btests?\b", prompt, re.IGNORECASE) is not None
    no_tests = NEGATED_TESTS.search(plain_text(prompt)) is not None     # "nothing in the tests folder"
    scored = []
    for (path, n), t in found.items():
        if not in_scope(path, st.scopes) or (no_tests and _is_test_path(path)):
            continue
        score = {1: 5, 2: 10, 3: 30}[term.matches(t)]
        if term.is_definition(t):
            score += 100
        elif term.kind == "word" and re.search(rf"\b(?:def|class|function|func|fn)\s+\w*{re.escape(term.search)}",
                                               t, re.IGNORECASE):
            score += 50     # a definition whose name holds the word
        score += 8 * sum(1 for o in st.terms if o != term and o.search != term.qualifier and o.matches(t))
        if term.qualifier:
            file_lines = st.known.get(path, {})
            if term.qualifier in (_enclosing(file_lines, n) or "").split("."):
                score += 60
            elif any(term.qualifier in x for x in file_lines.values()):
                score += 20
        if any(path == f or path.endswith("/" + f) for f in st.files):
            score += 40
        if _is_test_path(path) and not wants_tests:
            score -= 15
        if n in st.known.get(path, {}):
            score += 3      # confirmed by a read
        scored.append((score, path, n, t))
    scored.sort(key=lambda x: (-x[0], x[1], x[2]))
    return scored


def citations(st: StepState, prompt: str) -> list[tuple[Term, list[tuple[int, str, int, str]]]]:
    """The lines to cite per term, best first: the best hit, plus the runner-up when it scores
    at least half as well (or, when the prompt asks where something is used, the definition
    and the best uses). A line is cited once, under the first term that chose it."""
    usage = bool(USAGE_INTENT.search(plain_text(prompt)))
    taken: set[tuple[str, int]] = set()
    out = []
    for term in st.terms:
        cands = [c for c in candidates(st, term, prompt) if (c[1], c[2]) not in taken]
        if usage:
            chosen = [c for c in cands if term.is_definition(c[3])][:1] + \
                     [c for c in cands if not term.is_definition(c[3])][:USAGE_CITES]
        else:
            chosen = [c for c in cands[:READS_PER_TERM] if c[0] * 2 >= cands[0][0]]
        taken.update((c[1], c[2]) for c in chosen)
        out.append((term, chosen))
    return out


# --- the provider -------------------------------------------------------------


class ReferenceProvider(Provider):
    """The deterministic offline agent: no model, same inputs give the same reply."""

    name = "reference"

    def __init__(self, workspace: str):
        self.workspace = os.path.normpath(str(workspace))
        self._paths = _Paths(self.workspace)

    async def complete(self, system: list[dict], messages: list[dict], tools: list[dict], max_tokens: int) -> Reply:
        content = self.decide(messages, tools)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        content, stop = _fit(content, stop, max_tokens)
        request_chars = len(json.dumps([system, messages, tools], sort_keys=True, default=str))
        usage = Usage(input_tokens=math.ceil(request_chars / CHARS_PER_TOKEN),
                      output_tokens=math.ceil(len(json.dumps(content, sort_keys=True)) / CHARS_PER_TOKEN))
        return Reply(content=content, stop_reason=stop, usage=usage)

    # --- the decision --------------------------------------------------------

    def decide(self, messages: list[dict], tools: list[dict]) -> list[dict]:
        specs = {t["name"]: classify_tool(t) for t in tools if isinstance(t, dict) and t.get("name")}
        steps = _split_steps(messages, specs)
        if not steps:
            return [{"type": "text", "text": "There is no question to answer: the conversation holds no user prompt."}]
        n_assistant = sum(1 for m in messages if m.get("role") == "assistant")
        prior_terms: list[Term] = []
        states = []
        for prompt, calls, rounds in steps:
            st = analyze_step(prompt, calls, rounds, self._paths, prior_terms)
            prior_terms = st.terms
            states.append(st)
        st, prompt = states[-1], steps[-1][0]
        if st.rounds < MAX_ROUNDS:
            blocks = self._next_calls(st, prompt, specs, n_assistant)
            if blocks:
                return blocks
        text = self._answer(st, prompt)
        if FEEDBACK_MARKERS.search(prompt):
            text += "\n\n" + _feedback(states, specs)
        return [{"type": "text", "text": text}]

    def _chains(self, specs: dict[str, ToolSpec], term: Term | None) -> list[ToolSpec]:
        """Search tools in the order they are tried for a term."""
        order = {"symbol": 0, "search": 1, "filesearch": 2}
        chain = [s for s in specs.values() if s.mcp and s.role in order
                 and not (s.role == "symbol" and term and term.kind != "ident")
                 and not (s.role == "filesearch" and term and term.kind == "phrase")]
        chain.sort(key=lambda s: (order[s.role], s.rank, s.name))
        if "grep" in specs:
            chain.append(specs["grep"])
        return chain

    def _read_chain(self, specs: dict[str, ToolSpec]) -> list[ToolSpec]:
        chain = sorted((s for s in specs.values() if s.mcp and s.role == "read"), key=lambda s: (s.rank, s.name))
        if "read_file" in specs:
            chain.append(specs["read_file"])
        return chain

    def _next_calls(self, st: StepState, prompt: str, specs: dict[str, ToolSpec], n_assistant: int) -> list[dict]:
        planned: list[tuple[str, ToolSpec, dict]] = []      # (reason, tool, arguments)
        read_chain = self._read_chain(specs)
        reads_wanted: dict[str, list[tuple[int | None, str]]] = {}   # path -> [(line or None, why)]

        if self._asks_history(prompt, specs):
            # The commits are in no file of the work tree: ask the history tool, once.
            if any(c.spec and c.spec.role == "history" for c in st.calls):
                return []
            spec = self._history_tool(specs)
            args = build_arguments(spec, Need(), self.workspace)
            if args is not None:
                return [{"type": "text", "text": f"The question is about the repository's history, which no file "
                                                 f"of the work tree records, so I will ask `{spec.name}`."},
                        {"type": "tool_use", "id": f"toolu_ref_{n_assistant:03d}_0", "name": spec.name,
                         "input": args}]

        for term, chosen in citations(st, prompt):
            page = self._page_call(st, term, specs)
            if page:
                planned.append(page)
            if chosen:
                for _, path, n, _ in chosen:
                    if n not in st.known.get(path, {}) and not self._read_tried(st, path, n, read_chain):
                        reads_wanted.setdefault(path, []).append((n, f"to check the hit for `{term.label}` at line {n}"))
                continue
            # Hits whose text is unknown (a bare path:line) or files found by name: read them.
            unread = []
            for h in st.hits:
                if h.term != term or (h.path, h.line) in [(p, n) for p, n in unread]:
                    continue
                if h.line is None and h.path not in st.known and not self._read_tried(st, h.path, None, read_chain):
                    unread.append((h.path, None))
                elif h.line is not None and h.text is None and h.line not in st.known.get(h.path, {}) \
                        and not self._read_tried(st, h.path, h.line, read_chain):
                    unread.append((h.path, h.line))
            if unread:
                unread.sort(key=lambda x: (-(term.search.lower() in x[0].lower()), x[0], x[1] or 0))
                for path, n in unread[:READS_PER_TERM]:
                    why = (f"to see line {n}, a hit for `{term.label}`" if n
                           else f"to look for `{term.label}` in it: the search found this file")
                    reads_wanted.setdefault(path, []).append((n, why))
                read_paths = [p for _, p, _, _, _ in st.reads]
                if not any(h.term == term and h.path in read_paths for h in st.hits):
                    continue
                # Hits already read held nothing: also try the next search tool, this round.
            # Nothing yet: the next search tool not yet tried for this term.
            tried = [c for c in st.calls if c.term == term and c.spec and c.spec.role != "read"]
            tried_names = [c.name for c in tried]
            for spec in self._chains(specs, term):
                if spec.name in tried_names:
                    continue
                args = build_arguments(spec, Need(term=term), self.workspace)
                if args is None:
                    continue
                planned.append((self._search_reason(term, spec, tried), spec, args))
                break

        for path, wants in reads_wanted.items():
            lines = [n for n, _ in wants if n is not None]
            before = USAGE_READ_BEFORE if USAGE_INTENT.search(plain_text(prompt)) else READ_BEFORE
            if lines and max(lines) - min(lines) <= 40:
                lo, hi = max(1, min(lines) - before), max(lines) + READ_AFTER
            elif lines:
                lo, hi = max(1, lines[0] - before), lines[0] + READ_AFTER
            else:
                lo, hi = None, None
            failed = [name for name, p, _, _, ok in st.reads if p == path and not ok]
            for spec in read_chain:
                if spec.name in failed:
                    continue
                args = build_arguments(spec, Need(path=path, lo=lo, hi=hi), self.workspace)
                if args is None:
                    continue
                span = f"lines {lo}-{hi} of `{path}`" if lo else f"`{path}`"
                reason = f"I will read {span} with `{spec.name}` {wants[0][1]}"
                if failed:
                    reason += f" (`{failed[-1]}` failed on this file)"
                planned.append((reason + ".", spec, args))
                break

        blocks: list[dict] = []
        for i, (reason, spec, args) in enumerate(planned[:MAX_CALLS_PER_REPLY]):
            blocks.append({"type": "text", "text": reason})
            blocks.append({"type": "tool_use", "id": f"toolu_ref_{n_assistant:03d}_{i}", "name": spec.name,
                           "input": args})
        return blocks

    @staticmethod
    def _history_tool(specs: dict[str, ToolSpec]) -> ToolSpec | None:
        return min((s for s in specs.values() if s.mcp and s.role == "history"), key=lambda s: (s.rank, s.name),
                   default=None)

    def _asks_history(self, prompt: str, specs: dict[str, ToolSpec]) -> bool:
        return bool(HISTORY_INTENT.search(plain_text(prompt))) and self._history_tool(specs) is not None

    @staticmethod
    def _page_call(st: StepState, term: Term, specs: dict[str, ToolSpec]) -> tuple[str, ToolSpec, dict] | None:
        """The same search again for its next page, when the newest page of it said more is left
        (a paged result otherwise hides hits: code-index's search returns 10 at a time)."""
        pages = [c for c in st.calls if c.term == term and c.spec and c.spec.role not in ("read", "history")
                 and not c.failed]
        if not pages or pages[-1].next_page is None:
            return None
        last = pages[-1]
        spec = specs.get(last.name)
        key = page_key(spec) if spec else None
        if key is None or any(c.name == last.name and c.input.get(key) == last.next_page for c in pages):
            return None
        args = {**last.input, key: last.next_page}
        return (f"The search with `{last.name}` says more results are left, so I will ask it for the next page "
                f"({key}={last.next_page}).", spec, args)

    @staticmethod
    def _read_tried(st: StepState, path: str, line: int | None, read_chain: list[ToolSpec]) -> bool:
        """True when no read of this file is left to try: every read tool failed on it, or a
        successful read already covered the line (so reading again would not help)."""
        failed = {name for name, p, _, _, ok in st.reads if p == path and not ok}
        if all(spec.name in failed for spec in read_chain):
            return True
        for _, p, lo, hi, ok in st.reads:
            if p == path and ok and (line is None or lo is None or (lo <= line <= (hi or line))):
                return True
        return False

    @staticmethod
    def _search_reason(term: Term, spec: ToolSpec, tried: list[Call]) -> str:
        what = {"symbol": "it looks symbols up by name", "search": "it searches the code's contents",
                "filesearch": "it finds files by name", }.get(spec.role or "", "it searches the workspace")
        if not spec.mcp:
            what = "it searches every file's lines with a regular expression"
        text = f"I will search for `{term.label}` with `{spec.name}` because {what}."
        if tried:
            last = tried[-1]
            outcome = "returned an error" if last.failed else "found nothing useful"
            text = f"The search with `{last.name}` {outcome}, so I fall back to the next tool. " + text
        return text

    # --- the answer ----------------------------------------------------------

    def _answer(self, st: StepState, prompt: str) -> str:
        if st.history:
            return _history_answer(st.history, prompt)
        text = self._found_answer(st, prompt)
        if HISTORY_INTENT.search(plain_text(prompt)):
            text = ("None of my tools shows the repository's history (its commits, authors and messages), and no "
                    "file of the work tree records it, so I cannot answer that part.\n\n" + text)
        final = _final_value(st, prompt)
        if final is not None:
            what, value = final
            text += f"\n\n{what}" + (f"\n\n{value}" if LAST_LINE.search(prompt) else f": {value}")
        return text

    def _found_answer(self, st: StepState, prompt: str) -> str:
        usage = bool(USAGE_INTENT.search(plain_text(prompt)))
        parts, missing = [], []
        for term, chosen in citations(st, prompt):
            overview = _overviews(st, term)
            if not chosen and not overview:
                missing.append(term)
                continue
            lines = list(overview)
            for i, (_, path, n, text) in enumerate(chosen):
                code = _inline(text)
                outer = _enclosing(st.known.get(path, {}), n)
                where = f"`{path}:{n}`" + (f" in `{outer}`" if outer else "")
                if term.is_definition(text):
                    lines.append(f"- `{term.label}` is defined at {where}: `{code}`")
                elif i == 0 and not usage:
                    lines.append(f"- `{term.label}` appears at {where}: `{code}`")
                else:
                    verb = "is used at" if usage else "also appears at"
                    lines.append(f"- `{term.label}` {verb} {where}: `{code}`")
                if i == 0:
                    snippet = _snippet(st.known.get(path, {}), n)
                    if snippet:
                        lines.append("  ```\n" + "\n".join("  " + s for s in snippet) + "\n  ```")
            parts.append("\n".join(lines))
        tools_used = []
        for c in st.calls:
            if c.name not in tools_used:
                tools_used.append(c.name)
        used = ", ".join(f"`{n}`" for n in tools_used) or "no tool"
        if not parts:
            names = ", ".join(f"`{t.label}`" for t in st.terms)
            if not st.terms:
                return ("I could not find anything to search for in the question, so I have no answer and "
                        "cite no location.")
            return (f"I could not find {names} in the repository: the searches with {used} returned no "
                    f"matching lines, so I cannot cite a location.")
        out = "Here is what I found (searched with " + used + "):\n\n" + "\n".join(parts)
        if missing:
            out += "\n\nI found no occurrence of " + ", ".join(f"`{t.label}`" for t in missing) + "."
        return out


_IMPORT_LINE = re.compile(r"^\s*(from\s+\S+\s+import|import)\b")


def _final_value(st: StepState, prompt: str) -> tuple[str, str] | None:
    """(how it was found, the bare value) for a question that asks for one value about its
    first term: a count ("how many times is f called": the call expressions found, not the
    definition or imports) or a definition's value ("what is its value": the literal assigned
    where it is defined). None when the question asks for neither or nothing was found."""
    if not st.terms:
        return None
    term = st.terms[0]
    plain = plain_text(prompt)
    cands = candidates(st, term, prompt)
    if COUNT_INTENT.search(plain):
        s = re.escape(term.search)
        calls_only = re.search(r"\bcall", plain, re.IGNORECASE) is not None
        sites = [(p, n) for _, p, n, t in cands
                 if not term.is_definition(t) and not _IMPORT_LINE.match(t)
                 and (not calls_only or re.search(rf"(?<![A-Za-z0-9_]){s}\s*\(", t))]
        if not sites:
            return None
        what = "call expression(s)" if calls_only else "use(s)"
        files = len({p for p, _ in sites})
        return (f"Counting the {what} of `{term.label}` listed above (definition and import lines left out): "
                f"{len(sites)} in {files} file(s).", str(len(sites)))
    if VALUE_INTENT.search(plain):
        s = re.escape(term.search)
        for _, path, n, t in cands:
            m = re.match(rf"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?{s}\s*(?::[^=]*)?=(?!=)\s*(.+?)\s*(?:#.*)?$", t)
            if m:
                return f"`{term.label}` is assigned `{_inline(m.group(1))}` at `{path}:{n}`.", m.group(1).strip()
    return None


def _history_answer(texts: list[str], prompt: str) -> str:
    """An answer from what a history tool returned: its newest commit's id, author, date and
    message, quoted; alone on the last line, the one the question asks for."""
    joined = "\n".join(texts)
    entries = []
    for m in re.finditer(r"(?im)^commit:?\s+([0-9a-f]{7,64})\b", joined):
        tail = joined[m.end():]
        nxt = re.search(r"(?im)^commit:?\s+[0-9a-f]{7,64}\b", tail)
        block = tail[:nxt.start()] if nxt else tail
        field_of = lambda name: (re.search(rf"(?im)^{name}:\s*(.+)$", block) or [None, None])[1]  # noqa: E731
        message = field_of("message")
        if message is None:      # `git show` style: the message indented by four spaces
            body = re.findall(r"(?m)^ {4}(\S.*)$", block)
            message = body[0] if body else None
        entries.append({"id": m.group(1), "author": field_of("author"), "date": field_of("date"),
                        "message": (message or "").strip().strip("'\"")})
    if not entries:
        return "The history tool returned no commit I could read:\n\n```\n" + joined[:1500] + "\n```"
    e = entries[0]
    lines = [f"The history tool lists {len(entries)} commit(s); the newest (the one checked out) is:",
             f"- commit `{e['id']}`", f"- author: {e['author']}", f"- date: {e['date']}",
             f"- message: {e['message']}"]
    out = "\n".join(lines)
    if LAST_LINE.search(prompt):
        plain = plain_text(prompt).lower()
        key = ("id" if re.search(r"\b(id|hash|sha|sha-1)\b", plain) else "author" if "author" in plain or "who" in plain
               else "date" if re.search(r"\b(date|when)\b", plain) else "message")
        out += f"\n\n{e[key]}"
    return out


def _overviews(st: StepState, term: Term) -> list[str]:
    """For files a search found by name (e.g. pricing.py for "pricing") and a read returned
    from the top: the definitions they hold, each cited."""
    out = []
    for h in st.hits:
        lines = st.known.get(h.path, {})
        if h.term != term or h.line is not None or 1 not in lines or \
                term.search.lower() not in h.path.rsplit("/", 1)[-1].lower():
            continue
        defs = []
        for n in sorted(lines):
            m = _DEF_LINE.match(lines[n]) or re.match(r"^()([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=(?!=)", lines[n])
            if m and len(m.group(1)) <= 4:
                defs.append(f"`{m.group(2)}` (`{h.path}:{n}`)")
        if defs:
            more = f" and {len(defs) - 8} more" if len(defs) > 8 else ""
            out.append(f"- The file `{h.path}` (found by name for `{term.label}`) defines "
                       + ", ".join(defs[:8]) + more + ".")
    return out


def _inline(text: str) -> str:
    t = text.strip().replace("`", "'")
    return t if len(t) <= 160 else t[:157] + "..."


_DEF_LINE = re.compile(r"^(\s*)(?:export\s+|pub\s+)?(?:async\s+)?(?:def|class|function|func|fn|struct|impl|interface)"
                       r"\s+([A-Za-z_][A-Za-z0-9_]*)")


def _enclosing(lines: dict[int, str], n: int) -> str | None:
    """The dotted name of the definitions around line n (e.g. Loader.load), from the lines
    a read returned above it, by indentation; None when they were not read."""
    target = lines.get(n)
    if target is None:
        return None
    indent = len(target) - len(target.lstrip())
    names = []
    k = n - 1
    while k in lines and indent > 0:
        m = _DEF_LINE.match(lines[k])
        if m and len(m.group(1)) < indent:
            names.append(m.group(2))
            indent = len(m.group(1))
        k -= 1
    return ".".join(reversed(names)) or None


def _snippet(lines: dict[int, str], n: int) -> list[str]:
    out = []
    for k in range(n + 1, n + 1 + SNIPPET_LINES):
        if k not in lines:
            break
        out.append(lines[k].rstrip().replace("```", "'''"))
    while out and not out[-1].strip():
        out.pop()
    return out


def _feedback(states: list[StepState], specs: dict[str, ToolSpec]) -> str:
    stats: dict[str, list[int]] = {}           # name -> [calls, failed, useful]
    first_error: dict[str, str] = {}
    for st in states:
        for c in st.calls:
            s = stats.setdefault(c.name, [0, 0, 0])
            s[0] += 1
            s[1] += c.failed
            s[2] += c.useful and not c.failed
            if c.failed and c.name not in first_error:
                first_error[c.name] = _inline(c.text.strip().split("\n", 1)[0])[:100]
    if not stats:
        return "Feedback on the tools: I called no tool."
    sentences = []
    for name, (n, failed, useful) in stats.items():
        if failed:
            sentences.append(f"`{name}` failed in {failed} of {n} call(s) (\"{first_error[name]}\").")
        elif useful:
            sentences.append(f"`{name}` helped ({useful} of {n} call(s) gave usable results).")
        else:
            sentences.append(f"`{name}` gave nothing useful ({n} call(s)).")
    unused = [s.name for s in specs.values() if s.mcp and s.role and s.name not in stats]
    if unused:
        sentences.append("Not needed: " + ", ".join(f"`{n}`" for n in unused) + ".")
    return "Feedback on the tools: " + " ".join(sentences)


def _split_steps(messages: list[dict], specs: dict[str, ToolSpec]) -> list[tuple[str, list[Call], int]]:
    """(prompt, calls with their results, tool rounds) per step: a step starts at each user
    turn that holds text and no tool results."""
    steps: list[tuple[str, list[Call], int]] = []
    pending: dict[str, Call] = {}
    for m in messages:
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        blocks = [b for b in blocks if isinstance(b, dict)]
        if m.get("role") == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if not results:
                prompt = "\n".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                steps.append((prompt, [], 0))
                pending = {}
                continue
            for b in results:
                call = pending.get(b.get("tool_use_id"))
                if call:
                    call.text = _result_text(b.get("content"))
                    call.is_error = bool(b.get("is_error"))
        elif m.get("role") == "assistant" and steps:
            prompt, calls, rounds = steps[-1]
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            for b in uses:
                call = Call(b.get("id", ""), b.get("name", ""), b.get("input") or {}, "", False, specs.get(b.get("name", "")))
                if call.spec is None:         # a tool no longer offered: judge it by its name
                    call.spec = classify_tool({"name": call.name})
                calls.append(call)
                pending[call.id] = call
            steps[-1] = (prompt, calls, rounds + (1 if uses else 0))
    return steps


def _fit(content: list[dict], stop: str, max_tokens: int) -> tuple[list[dict], str]:
    """Cut a reply to `max_tokens` (estimated), as the API would: text is cut, a tool_use
    block that does not fit is left out, and the stop reason becomes max_tokens."""
    budget = max_tokens * CHARS_PER_TOKEN
    if len(json.dumps(content, sort_keys=True)) <= budget:
        return content, stop
    out, used = [], 0
    for b in content:
        size = len(json.dumps(b, sort_keys=True))
        if used + size <= budget:
            out.append(b)
            used += size
            continue
        if b["type"] == "text":
            room = max(0, budget - used - 30)
            if room:
                out.append({"type": "text", "text": b["text"][:room]})
        break
    return out, "max_tokens"
