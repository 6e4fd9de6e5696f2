"""Citation grounding: find the code locations an answer cites and check them against the
repository at the pinned commit (git objects, see gittree), not a working copy.

Forms recognised (issue 4 item 3):
    path:N   path:N-M (hyphen, en or em dash; `path:L10` too)   path#LN   path#LN-LM
    path:Symbol   path:Class.method   (also Class::method and Class#method)
The path's last component must end with one of the citation extensions (or be one of the
extension-less names such as Makefile). Backticks around the path, the citation or the
path alone (`a.py`:10), brackets, markdown links [x](src/a.py#L3), GitHub blob URLs and
trailing punctuation do not break it; a leading ./ is stripped. A path alone, without a
line or symbol, is not a citation.

Resolution: the exact relative path; else the unique file whose path ends with the cited
path on a component boundary; else unresolved (missing, or ambiguous: candidates kept).

Buckets: grounded (resolved; every cited line within 1..EOF; a cited symbol's every
component occurs as a whole word in the file), hallucinated (resolved but a cited line is
below 1 or past EOF: a range ending past EOF included), unresolved (not resolved, or the
symbol is absent).

Verification of a grounded line citation: the identifiers the sentence names in backticks
(other than the citation and file paths) are looked up as whole words (an identifier's
last component, `app.route()` -> `route`) in the cited lines: within 5 lines of a single
cited line, or inside a cited range. `verified` if at least one is there, `mismatch` if
none is, `n/a` when the sentence names no identifier (and for symbol citations and
citations that are not grounded).

Each distinct (path, locator) counts once per step: the key is the resolved path when
there is one (so src/a.py:3 and a.py:3 are one citation), else the path as cited.
"""

from __future__ import annotations

import re

from .gittree import CommitTree

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


def citation_pattern(extensions=None) -> re.Pattern:
    key = tuple(extensions or DEFAULT_EXTENSIONS)
    if key not in _PATTERNS:
        exts, names = _split_extensions(key)
        ext_alt = "|".join(re.escape(e) for e in sorted(set(exts), key=len, reverse=True))
        name_alt = "|".join(re.escape(n) for n in sorted(set(names), key=len, reverse=True))
        last = rf"[\w.@+-]*\.(?i:{ext_alt})"
        if name_alt:
            last = rf"(?:{last}|(?:{name_alt}))"
        _PATTERNS[key] = re.compile(
            r"(?<![\w./@+-])"
            r"(?:https?://[^\s()<>\[\]`]*?/(?:blob|tree|raw)/[^/\s]+/)?"     # a GitHub-style URL prefix
            rf"(?P<path>(?:\./)?(?:[\w.@+-]+/)*{last})"
            r"`?"                                                           # `a.py`:10
            r"(?:"
            rf":L?(?P<l1>\d+)(?:\s?{_DASH}\s?L?(?P<l2>\d+))?"
            rf"|#L(?P<a1>\d+)(?:{_DASH}L?(?P<a2>\d+))?"
            rf"|:(?P<sym>{_SYMBOL})"
            r")"
            r"(?![\w])"
        )
    return _PATTERNS[key]


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
        out.append({"path_as_cited": path_as_cited, "path": path, "lines": lines,
                    "symbol": m.group("sym"), "start": m.start(), "end": m.end(), "text": m.group(0)})
    return out


def resolve(path: str, tree: CommitTree) -> tuple[str | None, list[str]]:
    """(resolved path or None, candidates): exact path, else a unique component-boundary suffix match."""
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


def ground(c: dict, tree: CommitTree) -> dict:
    """Add resolved_path, candidates, bucket and reason to one extracted citation."""
    resolved, cands = resolve(c["path"], tree)
    r = dict(c, resolved_path=resolved, candidates=cands)
    if resolved is None:
        r["bucket"] = "unresolved"
        r["reason"] = f"ambiguous: {len(cands)} files end with {c['path']}" if cands else "no such file at the commit"
        return r
    if c["lines"] is not None:
        eof = tree.line_count(resolved)
        r["eof"] = eof
        bad = [n for n in c["lines"] if n < 1 or n > eof]
        if bad:
            r["bucket"], r["reason"] = "hallucinated", f"line {bad[0]} outside 1..{eof}"
        else:
            r["bucket"], r["reason"] = "grounded", f"within 1..{eof}"
        return r
    text = tree.text(resolved)
    missing = [p for p in _symbol_parts(c["symbol"]) if not _has_word(text, p)]
    if missing:
        r["bucket"], r["reason"] = "unresolved", f"symbol {missing[0]!r} not in the file"
    else:
        r["bucket"], r["reason"] = "grounded", "symbol found in the file"
    return r


# --- verification -----------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n")
_BACKTICK = re.compile(r"`([^`\n]+)`")
_IDENT_SPAN = re.compile(rf"^(?P<id>{_SYMBOL})(?:\(.*\))?$")


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The sentence (or line) around text[start:end]; a break inside the citation does not count."""
    lo = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        lo = m.end()
    m = _SENTENCE_END.search(text, end)
    return lo, (m.start() if m else len(text))


def sentence_identifiers(text: str, c: dict, all_citations: list[dict], extensions=None) -> list[str]:
    """Identifiers the citation's sentence names in backticks, citations and file paths excluded."""
    lo, hi = _sentence_bounds(text, c["start"], c["end"])
    pat = citation_pattern(extensions)
    spans = [(o["start"], o["end"]) for o in all_citations]
    names = []
    for m in _BACKTICK.finditer(text, lo, hi):
        if any(s < m.end() and m.start() < e for s, e in spans):
            continue
        inner = m.group(1).strip()
        idm = _IDENT_SPAN.match(inner)
        if not idm or pat.search(inner + ":1"):  # a file name such as `app.py` is not an identifier
            continue
        names.append(_symbol_parts(idm.group("id"))[-1])
    return names


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


# --- per-answer grading -------------------------------------------------------


def analyse(text: str, tree: CommitTree, extensions=None) -> list[dict]:
    """Distinct citations of one answer, grounded and verified, in order of first mention."""
    found = extract_citations(text, extensions)
    distinct: dict[tuple, dict] = {}
    for c in found:
        g = ground(c, tree)
        key = (g["resolved_path"] or g["path"], tuple(g["lines"]) if g["lines"] else None, g["symbol"])
        idents = sentence_identifiers(text, c, found, extensions)
        if key in distinct:
            d = distinct[key]
            d["occurrences"] += 1
            d["identifiers"] += [i for i in idents if i not in d["identifiers"]]
        else:
            g["occurrences"] = 1
            g["identifiers"] = list(dict.fromkeys(idents))
            distinct[key] = g
    out = []
    for g in distinct.values():
        g["verification"] = verify(g, g["identifiers"], tree)
        out.append(g)
    return out


def public_view(c: dict) -> dict:
    """The fields `mcptrials citations` prints and scored.json keeps for one citation."""
    return {
        "path_as_cited": c["path_as_cited"], "resolved_path": c["resolved_path"], "lines": c["lines"],
        "symbol": c["symbol"], "bucket": c["bucket"], "verification": c["verification"],
        "candidates": c["candidates"], "text": c["text"], "reason": c["reason"],
        "identifiers": c["identifiers"], "occurrences": c["occurrences"],
    }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def citation_rates(counts: dict) -> dict:
    """grounded_rate = grounded/total, hallucinated_rate = hallucinated/total,
    unresolved_rate = unresolved/total, verified_rate = verified/(verified + mismatch),
    cited_recall = gold_cited/gold_total; each null when its denominator is 0 (issue 4 item 3)."""
    t = counts["total"]
    return {
        "grounded_rate": _ratio(counts["grounded"], t),
        "hallucinated_rate": _ratio(counts["hallucinated"], t),
        "unresolved_rate": _ratio(counts["unresolved"], t),
        "verified_rate": _ratio(counts["verified"], counts["verified"] + counts["mismatch"]),
        "cited_recall": _ratio(counts["gold_cited"], counts["gold_total"]),
    }


def _count(items: list[dict], gold: list[dict]) -> dict:
    counts = {k: 0 for k in ("total", "grounded", "hallucinated", "unresolved", "verified", "mismatch", "n/a")}
    for c in items:
        counts["total"] += 1
        counts[c["bucket"]] += 1
        counts[c["verification"]] += 1
    counts["gold_total"] = len(gold)
    counts["gold_cited"] = sum(1 for g in gold if g["cited"])
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
    """A trial's counts and rates: the steps' counts summed, then the same rates."""
    keys = ("total", "grounded", "hallucinated", "unresolved", "verified", "mismatch", "n/a", "gold_total", "gold_cited")
    counts = {k: sum(r["counts"][k] for r in step_results) for k in keys}
    return {"counts": counts, "rates": citation_rates(counts)}
