"""Reading the question: its search terms, the file names and scopes it gives, and what it
asks for (a count, a value, the history, the uses, feedback), from its wording alone."""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_TERMS = 3  # search terms taken from one prompt

# What the question asks for, read from its wording (never from knowledge of any scenario).
COUNT_INTENT = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b", re.IGNORECASE)
VALUE_INTENT = re.compile(r"\b(what is|what's) (its|the) value\b|\bvalue of\b|\bset to\b", re.IGNORECASE)
LAST_LINE = re.compile(
    r"\balone on the last line\b|\blast line of (your|the) answer\b|\bon its own line\b", re.IGNORECASE
)
HISTORY_INTENT = re.compile(r"\b(commits?|committed|history|authored|author|git log)\b", re.IGNORECASE)
NEGATED_TESTS = re.compile(r"\b(not|nothing|no|excluding|except|without)\b[^.?!]{0,40}\btests?\b", re.IGNORECASE)
# `x` named as where to look ("inside the `pkg` package"): a scope for the hits, not a search term.
SCOPE = re.compile(
    r"\b(?:in|inside|within|under)\s+(?:the\s+)?`([\w./-]+)`\s+(?:package|folder|directory|module|tree)\b",
    re.IGNORECASE,
)

# A format example ("answer with the version on its own line (e.g. `1.2.3`)", "answer as
# `Type::method`"): it shows the shape of the answer, so it is neither a search term nor a file to read. A snippet counts as one when an
# example marker stands right before it and the clause up to the marker speaks of the answer's form;
# "questions such as `can_see?`" in a clause about the code stays a term.
EXAMPLE_MARKER = re.compile(
    r"(?:\be\.g\.|\beg\.|\bfor example|\bfor instance|\bsuch as|\blike|\bas|\bi\.e\.)\s*,?\s*"
    r"(`[^`\n]+`|\"[^\"\n]+\"|\u201c[^\u201d\n]+\u201d)"
    # and the example ends there ("as `next-server.ts` names it" is not one)
    r"(?=\s*(?:$|[.,;:)!?(]|\bon\b|\band\b|\bor\b))",
    re.IGNORECASE,
)
ANSWER_FORM = re.compile(
    r"\b(?:answer|reply|respond)(?:\s+\w+){0,6}?\s+(?:with|as|in|like)\b|\bformat(?:ted)?\b"
    r"|\bon (?:its|a line of its|a) own line\b|\bin the form\b|\blast line\b",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"[?!]\s|(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z`\"])")

FEEDBACK_MARKERS = re.compile(r"\b(last|final) step\b|feedback on the tools|tool feedback", re.IGNORECASE)
USAGE_INTENT = re.compile(
    r"\b(call(s|ed|ers?|ing)?|uses?|used|usages?|referenc\w*|invok\w*|import(s|ed)?)\b", re.IGNORECASE
)

STOPWORDS = set(
    """
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
""".split()
)

FILE_EXTENSIONS = (
    "py",
    "pyi",
    "js",
    "jsx",
    "ts",
    "tsx",
    "md",
    "rst",
    "txt",
    "yaml",
    "yml",
    "json",
    "toml",
    "cfg",
    "ini",
    "rs",
    "go",
    "java",
    "kt",
    "c",
    "h",
    "cc",
    "cpp",
    "hpp",
    "rb",
    "sh",
    "smk",
    "html",
    "css",
    "sql",
    "lock",
)
EXTENSIONLESS_FILES = {"Makefile", "Dockerfile", "Snakefile", "LICENSE", "README", "Justfile"}


_BACKTICK = re.compile(r"`([^`\n]+)`")
_QUOTED = re.compile(r'"([^"\n]{2,80})"|\u201c([^\u201d\n]{2,80})\u201d')
_IDENT = re.compile(
    r"(?<![\w.])(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+"  # dotted.name
    r"|_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+"  # snake_case
    r"|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z]+[A-Z][A-Za-z0-9]*"  # CamelCase, camelCase
    r"|[A-Z]{2,}[a-z][A-Za-z0-9]*)(?![\w])"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]{3,}")


@dataclass(frozen=True)
class Term:
    search: str  # what is searched for
    label: str  # how the answer names it
    kind: str  # ident | phrase | word
    qualifier: str | None = None  # `Usage` of `Usage.add`: hits inside it rank first

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
            re.search(
                rf"\b(?:def|class|function|func|fn|struct|enum|interface|trait|type|const|let|var|val)\s+\*?{s}\b", text
            )
            or re.match(rf"^\s*(?:export\s+)?(?:self\.)?{s}\s*(?::[^=]*)?=(?!=)", text)
            or re.match(rf"^\s*{s}\s*:\s*\S", text)
            and not text.rstrip().endswith(",")
        )


def looks_like_file(token: str) -> bool:
    base = token.rsplit("/", 1)[-1]
    if base in EXTENSIONLESS_FILES:
        return True
    return "." in base and base.rsplit(".", 1)[-1] in FILE_EXTENSIONS and not base.startswith(".")


def _term_from(raw: str, quoted: bool) -> tuple[Term | None, str | None]:
    """(term, file name) from a backticked or quoted snippet."""
    c = raw.strip().strip(".,;:")
    c = re.sub(r"\(.*\)$", "", c) if re.match(r"^[\w.]+\(.*\)$", c) else c  # foo(), foo(x)
    if not c:
        return None, None
    if re.fullmatch(r"[\w./-]+", c) and (looks_like_file(c) or "/" in c):
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
            return w[: -len(suffix)]
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


def format_examples(prompt: str) -> list[tuple[int, int]]:
    """The spans of the prompt's format examples (EXAMPLE_MARKER in a clause about the answer's
    form, ANSWER_FORM): `1.2.3` in "answer with the bare version (e.g. `1.2.3`)"."""
    out = []
    for m in EXAMPLE_MARKER.finditer(prompt):
        starts = [e.end() for e in SENTENCE_END.finditer(prompt, 0, m.start())]
        clause = prompt[starts[-1] if starts else 0 : m.start(1)]
        if ANSWER_FORM.search(clause):
            out.append(m.span(1))
    return out


def extract_terms(prompt: str) -> tuple[list[Term], list[str]]:
    """Search terms (in priority order) and file names mentioned in a prompt. A name the
    prompt gives as the place to look (see extract_scopes) is not searched for, nor is a
    format example of the answer (format_examples)."""
    terms: list[Term] = []
    files: list[str] = []
    scope_names = {m.group(1) for m in SCOPE.finditer(prompt)}
    examples = format_examples(prompt)

    def example(m) -> bool:
        return any(lo <= m.start() and m.end() <= hi for lo, hi in examples)

    def add(term, fname):
        if fname and fname not in files:
            files.append(fname)
        if term and all(t.search != term.search for t in terms):
            terms.append(term)
        if term and term.qualifier and all(t.search != term.qualifier for t in terms):
            terms.append(Term(term.qualifier, term.qualifier, "ident"))  # find the class too

    for m in _BACKTICK.finditer(prompt):
        if m.group(1) not in scope_names and not example(m):
            add(*_term_from(m.group(1), quoted=False))
    for m in _QUOTED.finditer(prompt):
        if not example(m):
            add(*_term_from(m.group(1) or m.group(2), quoted=True))
    plain = plain_text(prompt)
    for m in _IDENT.finditer(plain):
        tok = m.group(0)
        parts = tok.split(".")
        if len(parts) > 1 and (looks_like_file(tok) or min(len(p) for p in parts) < 2):
            if looks_like_file(tok):
                add(None, tok)
            continue  # e.g. "e.g", "i.e"
        if tok.lower() in STOPWORDS:
            continue
        add(*_term_from(tok, quoted=False))
    if not terms:
        # No identifier at all: fall back to the prompt's longest uncommon words.
        words: list[str] = []
        for m in _WORD.finditer(plain):
            w = m.group(0)
            if w.lower() not in STOPWORDS and len(w) >= 5 and w.lower() not in [x.lower() for x in words]:
                words.append(w)
        words.sort(key=lambda w: -len(w))  # stable: ties keep prompt order
        terms = [Term(stem(w), w.lower(), "word") for w in words[:2]]
    return terms[:MAX_TERMS], files
