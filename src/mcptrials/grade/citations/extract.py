"""The citation forms an answer writes, found by regular expressions (the grader's first step).

    path:N   path:N-M (hyphen, en or em dash; `path:L10` too)   path#LN   path#LN-LM
    path:Symbol   path:Class.method   (also Class::method and Class#method)   path::test_id
The path's last component must end with one of the citation extensions (or be one of the
extension-less names such as Makefile). Backticks around the path, the citation or the
path alone (`a.py`:10), brackets, markdown links [x](src/a.py#L3), GitHub blob URLs and
trailing punctuation do not break it; a leading ./ is stripped. A path alone, without a
line or symbol, is not a citation (but a mention: mention_pattern). The rest of the grader
is in grading.py (its module docstring has the whole rule).
"""

from __future__ import annotations

import re

from mcptrials.grade.citations.lexicon import DASH, SYMBOL

DEFAULT_EXTENSIONS = [
    # source
    "py",
    "pyi",
    "pyx",
    "js",
    "jsx",
    "mjs",
    "cjs",
    "ts",
    "tsx",
    "mts",
    "cts",
    "go",
    "rs",
    "java",
    "kt",
    "kts",
    "scala",
    "groovy",
    "rb",
    "erb",
    "rake",
    "php",
    "c",
    "h",
    "cc",
    "cpp",
    "cxx",
    "hpp",
    "hh",
    "hxx",
    "cs",
    "fs",
    "swift",
    "m",
    "mm",
    "sh",
    "bash",
    "zsh",
    "fish",
    "ps1",
    "lua",
    "pl",
    "pm",
    "r",
    "jl",
    "ex",
    "exs",
    "erl",
    "hrl",
    "clj",
    "cljs",
    "dart",
    "vue",
    "svelte",
    "elm",
    "hs",
    "ml",
    "mli",
    "zig",
    "nim",
    "sql",
    "proto",
    "graphql",
    "gql",
    "html",
    "htm",
    "css",
    "scss",
    "sass",
    "less",
    "hbs",
    "jinja",
    "j2",
    "tmpl",
    "tpl",
    # config
    "json",
    "jsonc",
    "json5",
    "yaml",
    "yml",
    "toml",
    "ini",
    "cfg",
    "conf",
    "properties",
    "xml",
    "gradle",
    "lock",
    "mod",
    "sum",
    "env",
    "tf",
    "hcl",
    "nix",
    "cmake",
    "mk",
    "gemspec",
    "editorconfig",
    "dockerfile",
    # docs
    "md",
    "mdx",
    "rst",
    "txt",
    "adoc",
    "ipynb",
    # names without an extension
    "Makefile",
    "Dockerfile",
    "Gemfile",
    "Rakefile",
    "Procfile",
    "Jenkinsfile",
]


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
_URL_PREFIX = r"(?:https?://[^\s()<>\[\]`]*?/(?:blob|tree|raw)/[^/\s]+/)?"  # a GitHub-style URL prefix


def _path_regex(extensions) -> str:
    exts, names = _split_extensions(extensions)
    ext_alt = "|".join(re.escape(e) for e in sorted(set(exts), key=len, reverse=True))
    name_alt = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
    last = rf"[\w.@+-]*\.(?i:{ext_alt})"
    if name_alt:
        last = rf"(?:{last}|(?:{name_alt}))"
    return rf"(?P<path>(?:\./|/)?(?:[\w.@+-]+/)*{last})"


def _lead(extensions) -> str:
    """Where a path may start (not inside a word or a path), then a lookahead that every match
    passes, so that re gives up on a plain word at once instead of trying the whole pattern
    (the same matches, a third faster): its word characters reach a / or a . followed by
    more path or an extension; or a URL starts there; or one of the names."""
    exts, names = _split_extensions(extensions)
    after = ""  # an empty extension (or none given) lets a bare dot end a path
    if exts and "" not in exts:
        after = "[" + re.escape("".join(sorted({e[0] for e in exts} | set(".@+/-")))) + r"\w]"
    alts = [rf"[\w@+-]*+(?:/|\.{after})", "https?://"] + [re.escape(n) for n in sorted(set(names))]
    return r"(?<![\w./@+-])(?=" + "|".join(alts) + ")"


def citation_pattern(extensions=None) -> re.Pattern:
    key = tuple(extensions or DEFAULT_EXTENSIONS)
    if key not in _PATTERNS:
        _PATTERNS[key] = re.compile(
            _lead(key) + _URL_PREFIX + _path_regex(key) + r"`?"  # `a.py`:10
            r"(?:"
            rf":L?(?P<l1>\d+)(?:\s?{DASH}\s?L?(?P<l2>\d+))?"
            rf"|#L(?P<a1>\d+)(?:{DASH}L?(?P<a2>\d+))?"
            rf"|::(?P<test>{SYMBOL}(?:\[[^\]\s]*\])?)"  # a pytest node id
            rf"|:(?P<sym>{SYMBOL})"
            r")"
            r"(?![\w])"
        )
    return _PATTERNS[key]


_MENTIONS: dict[tuple, re.Pattern] = {}


def mention_pattern(extensions=None) -> re.Pattern:
    """A file path named anywhere in the answer, with or without a line or symbol after it."""
    key = tuple(extensions or DEFAULT_EXTENSIONS)
    if key not in _MENTIONS:
        _MENTIONS[key] = re.compile(_lead(key) + _URL_PREFIX + _path_regex(key) + r"(?![\w/@+-]|\.\w)")
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
        out.append(
            {
                "path_as_cited": path_as_cited,
                "path": path,
                "lines": lines,
                "form": form,
                "symbol": symbol,
                "start": m.start(),
                "end": m.end(),
                "text": m.group(0),
            }
        )
    return out


def symbol_parts(symbol: str) -> list[str]:
    return [p for p in re.split(r"\.|::|#", symbol) if p]


def is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"  # what \w matches in a str pattern


def occurs_bounded(text: str, word: str, before=is_word_char, after=is_word_char) -> bool:
    r"""Whether `word` occurs in text with no character `before` accepts right before it and
    none `after` accepts right after (after None: anything may follow): the regex
    (?<!\w)word(?!\w) by str.find, so no pattern is compiled per word (a file's text is
    searched for hundreds of names, and the regex scanned it character by character)."""
    n, k = len(word), text.find(word)
    while k >= 0:
        if not (k and before(text[k - 1])) and not (after and k + n < len(text) and after(text[k + n])):
            return True
        k = text.find(word, k + 1)
    return False


def has_word(text: str, word: str) -> bool:
    return occurs_bounded(text, word)
