"""Grounding one extracted citation: which file of the commit it means, and whether what it
cites is there.

Resolution (resolved_by): the exact relative path ("exact"); else the unique file whose path
ends with the cited path on a component boundary ("suffix"); else, for a basename-only or
partial path several files end with, the answer's context ("context"): a citation of the
same lines elsewhere in the answer by a path that resolves on its own to one of those files;
else the closest scope that names one of those files by a path that resolves on its own
decides. A candidate shorter than a cited line is never meant when another one has the line;
a line-only reference whose nearest file is too short (or does not hold its subject at the
line) moves to the closest file of its context that has the line (or the subject there, or,
when the nearest file does not define the subject at all, defines it: the line may be wrong,
the file is the subject's).

A path that is a symbolic link at the commit, or goes through a linked folder, resolves to the
link's final target (gittree.CommitTree.follow; `symlink`: the path, the target, the links
followed), read as that file for the buckets and the strict verdict; a link that loops, leaves
the repository or leads to no file is unresolved (ungrounded no_such_file) with the reason.

Buckets: grounded (resolved; every cited line within 1..EOF; a cited symbol has a definition
in the file: see symbols.py, symbol_by "tree-sitter", its lines in symbol_lines; for a
language without a grammar, symbol_by "regex": every component occurs as a whole word),
hallucinated (resolved but a cited line is below 1 or past EOF: a range ending past EOF
included), unresolved (not resolved, or the symbol is absent). The whole rule: grading.py.
"""

from __future__ import annotations

from mcptrials.grade.citations import strict
from mcptrials.grade.citations.context import Answer, resolve
from mcptrials.grade.citations.extract import has_word, symbol_parts
from mcptrials.grade.gittree import CommitTree
from mcptrials.grade.citations.symbols import find_definition


def strict_verdict_at(tree: CommitTree, path: str, lines: list[int], subject: str | None) -> str:
    """strict.verdict of a subject at lines of a file of the commit, kept on the tree: grounding
    and the strict pass ask the same (file, lines, subject) again and again (43% repeats on the
    citation corpus), and the answer depends on the commit's file alone."""
    cache = tree.__dict__.setdefault("_strict_verdicts", {})
    path = tree.real(path)  # a symbolic link: its target's language and text
    key = (path, tuple(lines), subject)
    if key not in cache:
        cache[key] = strict.verdict(path, tree.text(path), lines, subject, tree.lines(path))
    return cache[key]


def subject_at(tree: CommitTree, path: str, lines: list[int], subject: str) -> bool:
    """Whether the subject is at the cited lines of path (lines inside the file, strict verdict)."""
    n = tree.line_count(path)
    if not lines or any(x < 1 or x > n for x in lines):
        return False
    return strict_verdict_at(tree, path, lines, subject) == "verified"


def fits(tree: CommitTree, path: str, lines: list[int]) -> bool:
    """Whether every cited line is a line of the file (1..EOF)."""
    n = tree.line_count(path)
    return all(1 <= k <= n for k in lines)


def defines(tree: CommitTree, path: str, subject: str) -> bool:
    """Whether the file defines the subject, or the container its name starts with
    (`TransportError.permanent`: the class TransportError); False without a parser. Kept on
    the tree, as strict_verdict_at: the answer depends on the commit's file alone."""
    cache = tree.__dict__.setdefault("_defines", {})
    path = tree.real(path)
    if (path, subject) not in cache:
        parts = symbol_parts(subject)
        text = tree.text(path)
        cache[(path, subject)] = any(
            has_word(text, wanted[-1]) and (found := find_definition(path, text, wanted)) is not None and found["found"]
            for wanted in ((parts, parts[:1]) if len(parts) > 1 else (parts,))
        )
    return cache[(path, subject)]


def _by_subject(c: dict, tree: CommitTree, ans: Answer | None, subj: str | None) -> dict | None:
    """For a line-only reference whose default file does not hold its subject at the line:
    the closest other file of its context that does (context scope "subject at the line"),
    else, when the default file does not define the subject at all, the closest one that
    does (scope "subject defined in the file": the line is wrong, the file is the subject's);
    for one whose default file is shorter than a cited line: the closest other file of its
    context where the subject is at the line, else the closest one that has the lines
    (scope "file long enough"): no reader means a line past the end of a file."""
    if not c.get("may_move") or ans is None:
        return None
    first = ans.resolves(c["path"])
    named = [first] if first else tree.suffix_matches(c["path"])  # a basename: each file it may be
    short = bool(named) and not any(fits(tree, p, c["lines"]) for p in named)
    if not short and (not subj or (first and subject_at(tree, first, c["lines"], subj))):
        return None
    long_enough = defining = None
    # the subject whose defining file to look for (when the default file does not define it)
    definer = subj if subj and first and not short and not defines(tree, first, subj) else None
    for m in ans.line_alternatives(c["start"]):
        r = ans.resolves(m["path"])
        for path in [r] if r else tree.suffix_matches(m["path"]):
            if path in named:
                continue
            if subj and subject_at(tree, path, c["lines"], subj):
                return {
                    "resolved_path": path,
                    "candidates": [],
                    "resolved_by": "context",
                    "context": {
                        "scope": "subject at the line",
                        "from": ans.text[m["start"] : m["end"]],
                        "span": [m["start"], m["end"]],
                    },
                }
            if short and long_enough is None and fits(tree, path, c["lines"]):
                long_enough = {
                    "resolved_path": path,
                    "candidates": [],
                    "resolved_by": "context",
                    "context": {
                        "scope": "file long enough",
                        "from": ans.text[m["start"] : m["end"]],
                        "span": [m["start"], m["end"]],
                    },
                }
            if definer and defining is None and fits(tree, path, c["lines"]) and defines(tree, path, definer):
                defining = {
                    "resolved_path": path,
                    "candidates": [],
                    "resolved_by": "context",
                    "context": {
                        "scope": "subject defined in the file",
                        "from": ans.text[m["start"] : m["end"]],
                        "span": [m["start"], m["end"]],
                    },
                }
    return long_enough or defining


def _resolve_in_context(c: dict, tree: CommitTree, ans: Answer | None, subj: str | None = None) -> dict:
    """resolved_path, candidates, resolved_by (exact, suffix, context) and the context used.
    With a subject, a file of the context where it is at the cited line wins (see ground)."""
    moved = _by_subject(c, tree, ans, subj) if c.get("line_only") and c["lines"] else None
    if moved:
        return moved
    resolved, cands = resolve(c["path"], tree)
    if resolved is None and len(cands) > 1 and c["lines"]:  # a file shorter than the line is not meant
        cands = [p for p in cands if fits(tree, p, c["lines"])] or cands
        if len(cands) == 1 and not c.get("line_only"):
            return {
                "resolved_path": cands[0],
                "candidates": [],
                "resolved_by": "context",
                "context": {"scope": "file long enough", "from": c["path"], "span": [c["start"], c["end"]]},
            }
    if resolved is None and cands and subj and c["lines"] and not c.get("line_only"):
        got = ans.settle(c["start"], cands, skip=c["start"], lines=c["lines"]) if ans is not None else {}
        hits = [p for p in cands if subject_at(tree, p, c["lines"], subj)]
        if got.get("resolved") and (got["resolved"] in hits or not hits):
            hits = [got["resolved"]]
            return {
                "resolved_path": got["resolved"],
                "candidates": [],
                "resolved_by": "context",
                "context": {k: got[k] for k in ("scope", "from", "span")},
            }
        if len(hits) == 1:
            return {
                "resolved_path": hits[0],
                "candidates": [],
                "resolved_by": "context",
                "context": {"scope": "subject at the line", "from": subj, "span": [c["start"], c["end"]]},
            }
        cands = hits or cands
    if c.get("line_only"):
        ctx = dict(c["context"])
        if resolved is None and cands and ans is not None:  # the named file is itself a basename
            got = ans.settle(ctx["span"][0], cands, skip=ctx["span"][0])
            resolved = got["resolved"]
            if got.get("ambiguous"):
                ctx["ambiguous"] = got["ambiguous"]
        return {
            "resolved_path": resolved,
            "candidates": [] if resolved else cands,
            "resolved_by": "context" if resolved else None,
            "context": ctx,
        }
    if resolved is not None:
        return {
            "resolved_path": resolved,
            "candidates": [],
            "resolved_by": "exact" if resolved == c["path"] else "suffix",
            "context": None,
        }
    if cands and ans is not None:
        got = ans.settle(c["start"], cands, skip=c["start"], lines=c["lines"])
        if got["resolved"]:
            return {
                "resolved_path": got["resolved"],
                "candidates": [],
                "resolved_by": "context",
                "context": {k: got[k] for k in ("scope", "from", "span")},
            }
        unsettled = {"scope": got["scope"], "ambiguous": got["ambiguous"]} if got.get("ambiguous") else None
        return {"resolved_path": None, "candidates": cands, "resolved_by": None, "context": unsettled}
    return {"resolved_path": None, "candidates": cands, "resolved_by": None, "context": None}


def ground(c: dict, tree: CommitTree, ans: Answer | None = None, subj: str | None = None) -> dict:
    """Add resolved_path, candidates, resolved_by, context, bucket, reason and ungrounded (and
    for a symbol symbol_by and symbol_lines) to one extracted citation. With `ans`, a path that
    is ambiguous at the commit is settled from the answer's context; with a subject, the file
    where the subject is at the cited line wins among the context's files."""
    r = dict(c, **_resolve_in_context(c, tree, ans, subj), symbol_by=None, symbol_lines=None)
    resolved, cands = r["resolved_path"], r["candidates"]
    r["ungrounded"] = None
    if "/" not in c["path"] and resolved != c["path"] and r["form"] not in ("json-fields", "line-in-context"):
        r["form"] = "basename"  # resolved from the context or not: the form the answer wrote
    if resolved is not None and tree.through_link(resolved):
        real, hops, why = tree.follow(resolved)
        r["symlink"] = {"path": resolved, "target": real, "hops": hops}
        if real is None:
            r["resolved_path"], r["bucket"], r["reason"], r["ungrounded"] = None, "unresolved", why, "no_such_file"
            return r
        r["resolved_path"] = resolved = real
    if resolved is None:
        r["bucket"] = "unresolved"
        if r["context"] and r["context"].get("ambiguous"):
            r["reason"] = (
                f"ambiguous: {len(cands)} files end with {c['path']}, and the {r['context']['scope']} "
                f"names {len(r['context']['ambiguous'])} of them"
            )
        else:
            r["reason"] = (
                f"ambiguous: {len(cands)} files end with {c['path']}" if cands else "no such file at the commit"
            )
        r["ungrounded"] = ("basename" if "/" not in c["path"] else "ambiguous") if cands else "no_such_file"
        return r
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
    parts = symbol_parts(c["symbol"])
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
    missing = [p for p in parts if not has_word(text, p)]
    if missing:
        r["bucket"], r["reason"] = "unresolved", f"symbol {missing[0]!r} not in the file"
        r["ungrounded"] = "symbol_not_defined"
    else:
        r["bucket"], r["reason"] = "grounded", "symbol found in the file"
    return r
