"""Citation grounding: find the code locations an answer cites and check them against the
repository at the pinned commit (git objects, see gittree), not a working copy.

Forms recognised (issue 4 item 3):
    path:N   path:N-M (hyphen, en or em dash; `path:L10` too)   path#LN   path#LN-LM
    path:Symbol   path:Class.method   (also Class::method and Class#method)
The path's last component must end with one of the citation extensions (or be one of the
extension-less names such as Makefile). Backticks around the path, the citation or the
path alone (`a.py`:10), brackets, markdown links [x](src/a.py#L3), GitHub blob URLs and
trailing punctuation do not break it; a leading ./ is stripped. A path alone, without a
line or symbol, is not a citation. `path:N,M,K-L` (commas, at most one space after each;
`, 2 more` is a count) cites each of them; a name or description before or after three or
more listed lines is about the group: it gives none of them a subject, nor do the wider scopes (JSON
text, list item, sentence) to a run of three or more citations joined by commas.

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

The steps live in extract (the forms), lines (line lists and line-only references), context
(the answer's context), grounding (resolution and the buckets) and verify (lenient and
strict); this module runs them per answer
(analyse), counts them and pools a trial's steps.
"""

from __future__ import annotations

import bisect
import collections
import functools
import re
from typing import Any

from mcptrials.core.record_types import Citations, CitationRates
from mcptrials.grade.citations import composition, structure
from mcptrials.grade.citations.names import names_its_file
from mcptrials.grade.citations.context import Answer, resolve
from mcptrials.grade.citations.json_scopes import json_key_kind
from mcptrials.grade.citations.weak import weak_names
from mcptrials.grade.citations.evidence import attached_elsewhere, clause_names, settle_lists
from mcptrials.grade.citations.extract import citation_pattern, extract_citations, has_word, symbol_parts
from mcptrials.grade.citations.grounding import ground
from mcptrials.grade.citations.lines import line_only_citations, listed_lines
from mcptrials.grade.citations.verify import (
    citation_subject,
    context_identifiers,
    listed_pairs,
    respectively,
    settle_citation,
    settle_strict,
    verify,
)
from mcptrials.grade.gittree import CommitTree
from mcptrials.core.keys import (
    BY_FORM,
    CITED_RECALL,
    GROUNDED_RATE,
    HALLUCINATED_RATE,
    STRICT_GROUNDED_RATE,
    STRICT_UNDETERMINED_RATE,
    STRICT_VERIFIED_RATE,
    UNRESOLVED_RATE,
    VERIFIED_RATE,
)

RECALL_WINDOW = 5  # lines a citation may be from a gold line and still count for recall


def _is_path(extensions):
    rx = citation_pattern(extensions)
    return functools.lru_cache(maxsize=None)(lambda s: "/" in s or rx.search(s + ":1") is not None)  # per answer


_RUN_GAP = re.compile(r"[\s`*,;]*")


def _locating(key: str) -> bool:
    """Grader 14: a JSON key that says where its value is (`file`, `ref`, `implementation`, `called_at`)."""
    return json_key_kind(key) in ("locator", "kind") or key.lower().endswith(("_at", "_in"))


def _runs(text: str, spans: list[tuple[int, int]]) -> dict[tuple[int, int], int]:
    """{span: how many citations its run holds}: a run is citations joined by nothing but
    commas, semicolons, spaces and backticks (`a.go:1, b.go:2, c.go:3`)."""
    out: dict[tuple[int, int], int] = {}
    run: list[tuple[int, int]] = []
    for sp in spans:
        if run and not (sp[0] >= run[-1][1] and _RUN_GAP.fullmatch(text, run[-1][1], sp[0])):
            out.update(dict.fromkeys(run, len(run)))
            run = []
        run.append(sp)
    out.update(dict.fromkeys(run, len(run)))
    return out


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
    listed = collections.Counter(tuple(c["subject_span"]) for c in found if c.get("subject_span"))
    in_run = _runs(text, spans)
    shared = collections.Counter((c["start"], c["end"]) for c in found)  # `"lines": "63, 70, 77"`: one span

    def member_of(c: dict) -> list:
        """The JSON object of a JSON "line" member (its record, whose other members describe it), else none;
        grader 14: also of a citation in a string member of its own (`{"behavior": "acts_as_watchable",
        "called_at": "path:50"}`) whose key locates it (a locator, a kind of place, `x_at`: not `"defaults":
        "path:143"`, a fact of its own beside the others), not of an item of an array (`"refs": ["a:1", "b:2"]`)."""
        objs = structure.enclosing_objects(ans.objects, c["start"])[:1]
        if c.get("json_member") or any(
            isinstance(m.value, str) and m.start <= c["start"] < m.end and _locating(m.key)
            for m in (objs[0].members if objs else ())
        ):
            return objs
        return []

    members: dict[tuple[int, int], list[int]] = {}  # a list of lines' span: its lines' starts, in order
    for c in sorted(found, key=lambda c: c["start"]):
        if c.get("subject_span") and c["form"] == "path:list":
            members.setdefault(tuple(c["subject_span"]), []).append(c["start"])
    clauses: dict[tuple[int, int], list[str]] = {}  # each occurrence's clause names (rule 4)
    list_of = {(c["start"], c["end"]): tuple(c["subject_span"]) for c in found if c.get("subject_span")}
    for c in found:
        lo, hi = c.get("subject_span") or (c["start"], c["end"])
        k = bisect.bisect_right(ends, lo) - 1
        j = bisect.bisect_right(starts, hi - 1)
        # the name a line-only reference is joined to (`name (N)`, `name:N`) is its label; else the name
        # in its place wins over the rest
        subj = {"name": c["named"], "from": "label"} if c.get("named") else respectively(ans, found, c)
        if subj is None and c.get("subject_span") and (lo, hi) in members:
            # `a`, `b`, `c` — path:1,2,3: names and lines listed in the same order pair up
            subj = listed_pairs(text, lo, len(members[(lo, hi)]), members[(lo, hi)].index(c["start"]), ans.is_path)
        bounds = (ends[k] if k >= 0 else 0, starts[j] if j < len(starts) else len(text))
        if subj is None:
            subj = citation_subject(ans, c, *bounds)
            if subj and (
                subj["from"] in ("label", "after", "before", "sentence")
                and c["form"] == "path:list"
                and listed[(lo, hi)] >= 3
                or subj["from"] in ("before", "json text", "list item", "sentence")
                and in_run[(lo, hi)] >= 3
            ):
                subj = None  # `types.py:106,111,253 - GraphQL types`, `a.go:1, b.go:2, c.go:3`: about the group
        g = ground(c, tree, ans, subj["name"] if subj and c["lines"] else None)
        if subj and names_its_file(subj["name"], g["resolved_path"]):
            # `moderation: moderation.rb:15`: the word names the file, not a place in it; the next scope decides
            subj = citation_subject(ans, c, bounds[0], bounds[1], skip=frozenset((subj["name"],)))
            if subj and (
                subj["from"] not in ("label", "after", "before") or names_its_file(subj["name"], g["resolved_path"])
            ):
                subj = None  # (only the clause's own name: `warehouse: path:705 get_order_lines...`)
        key = (g["resolved_path"] or g["path"], tuple(g["lines"]) if g["lines"] else None, g["symbol"])
        idents = context_identifiers(ans, c)
        clauses[(c["start"], c["end"])] = clause_names(
            text, lo, hi, ends[k] if k >= 0 else 0, starts[j] if j < len(starts) else len(text), ans.is_path
        )
        # a run or list of three or more lines is about the group: no weak name (weak.py) for one of them
        grouped = in_run[(lo, hi)] >= 3 or listed[(lo, hi)] >= 3 or shared[(lo, hi)] >= 3
        weak = [] if grouped or not g["lines"] else weak_names(text, lo, hi, *bounds, ans.is_path, member_of(c))
        if key in distinct:
            d = distinct[key]
            d["occurrences"] += 1
            d["spans"].append([c["start"], c["end"]])
            d["identifiers"] += [i for i in idents if i not in d["identifiers"]]
            d["by_occurrence"].append({"span": [c["start"], c["end"]], "subject": subj, "weak": weak})
        else:
            g["occurrences"] = 1
            g["spans"] = [[c["start"], c["end"]]]
            g["identifiers"] = list(dict.fromkeys(idents))
            g["by_occurrence"] = [{"span": [c["start"], c["end"]], "subject": subj, "weak": weak}]
            distinct[key] = g
    attached = attached_elsewhere(
        [(tuple(o["span"]), o["subject"]) for g in distinct.values() for o in g["by_occurrence"]]
    )
    out = []
    for g in distinct.values():
        g["verification"] = verify(g, g["identifiers"], tree)
        settle_strict(g, tree, text, (clauses, attached))
        out.append(g)
    listed_occs = [(list_of[span], o) for g in out for o in g["by_occurrence"] if (span := tuple(o["span"])) in list_of]
    settle_lists(listed_occs)
    for g in out:
        settle_citation(g)  # again, after settle_lists
    return out


def public_view(c: dict) -> dict:
    """The fields `mcptrials citations` prints and scored.json keeps for one citation."""
    return {
        "path_as_cited": c["path_as_cited"],
        "resolved_path": c["resolved_path"],
        "lines": c["lines"],
        "symbol": c["symbol"],
        "form": c["form"],
        "bucket": c["bucket"],
        "ungrounded": c["ungrounded"],
        "verification": c["verification"],
        "strict": c["strict"],
        "subject": c["subject"],
        "candidates": c["candidates"],
        "text": c["text"],
        "reason": c["reason"],
        "identifiers": c["identifiers"],
        "occurrences": c["occurrences"],
        "resolved_by": c["resolved_by"],
        "context": c["context"],
        "spans": c["spans"],
        "symbol_by": c["symbol_by"],
        "symbol_lines": c["symbol_lines"],
        "by_occurrence": c["by_occurrence"],
        "symlink": c.get("symlink"),
    }


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def citation_rates(counts: dict) -> CitationRates:
    """grounded_rate = grounded/total, hallucinated_rate = hallucinated/total,
    unresolved_rate = unresolved/total, verified_rate = verified/(verified + mismatch) (the
    lenient ±VERIFY_WINDOW rule), cited_recall = gold_cited/gold_total (issue 4 item 3);
    strict_verified_rate = strict_verified/(strict_verified + strict_mismatch) and
    strict_grounded_rate = (grounded - strict_mismatch)/total: a grounded citation whose line
    does not hold its subject is not grounded strictly (issue 25 item 5); a strict
    `undetermined` (a code file whose definitions are not known here, strict.py) counts in
    neither strict_verified nor strict_mismatch, so it leaves the strict verified rate alone and
    stays grounded (issue 34 item 3: only a confirmed mismatch lowers fairness's citation part);
    strict_undetermined_rate = strict_undetermined/(strict_verified + strict_mismatch +
    strict_undetermined). Each null when its denominator is 0."""
    t = counts["total"]
    return {
        GROUNDED_RATE: _ratio(counts["grounded"], t),
        HALLUCINATED_RATE: _ratio(counts["hallucinated"], t),
        UNRESOLVED_RATE: _ratio(counts["unresolved"], t),
        VERIFIED_RATE: _ratio(counts["verified"], counts["verified"] + counts["mismatch"]),
        STRICT_GROUNDED_RATE: _ratio(counts["grounded"] - counts["strict_mismatch"], t),
        STRICT_VERIFIED_RATE: _ratio(counts["strict_verified"], counts["strict_verified"] + counts["strict_mismatch"]),
        STRICT_UNDETERMINED_RATE: _ratio(
            counts["strict_undetermined"],
            counts["strict_verified"] + counts["strict_mismatch"] + counts["strict_undetermined"],
        ),
        CITED_RECALL: _ratio(counts["gold_cited"], counts["gold_total"]),
    }


COUNT_KEYS = (
    "total",
    "grounded",
    "hallucinated",
    "unresolved",
    "verified",
    "mismatch",
    "n/a",
    "strict_verified",
    "strict_mismatch",
    "strict_undetermined",
    "strict_na",
)


def empty_counts() -> dict:
    """The counts of a step with no citation counted (e.g. no checkout to check them in)."""
    return _count([], [])


def _count(items: list[dict], gold: list[dict]) -> dict:
    counts: dict[str, Any] = {k: 0 for k in COUNT_KEYS}
    for c in items:
        counts["total"] += 1
        counts[c["bucket"]] += 1
        counts[c["verification"]] += 1
        counts["strict_na" if c["strict"] == "n/a" else f"strict_{c['strict']}"] += 1
    counts["gold_total"] = len(gold)
    counts["gold_cited"] = sum(1 for g in gold if g["cited"])
    counts[BY_FORM] = composition.by_form(items)
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
            out.append(
                {"location": loc, "cited": False, "by": None, "note": "not a path:N, path:N-M or path:Symbol form"}
            )
            continue
        g = parsed[0]
        path, _ = resolve(g["path"], tree)
        path = tree.real(path) if path else g["path"]  # a link: the citations resolve to its target
        same_file = [c for c in items if c["resolved_path"] == path]
        by = None
        if g["lines"] is not None:
            by = next(
                (
                    c
                    for c in same_file
                    if c["lines"] is not None and _interval_gap(c["lines"], g["lines"]) <= RECALL_WINDOW
                ),
                None,
            )
        elif same_file and all(has_word(text, p) for p in symbol_parts(g["symbol"])):
            by = same_file[0]
        out.append({"location": loc, "cited": by is not None, "by": by["text"] if by else None})
    return out


def grade_citations(text: str, tree: CommitTree, gold: list[str] | None = None, extensions=None) -> dict:
    """One step's citations: items, gold recall, counts and rates."""
    items = analyse(text, tree, extensions)
    gold_res = gold_recall(text, items, gold or [], tree, extensions)
    counts = _count(items, gold_res)
    return {
        "items": [public_view(c) for c in items],
        "gold": gold_res,
        "counts": counts,
        "rates": citation_rates(counts),
    }


def pool(step_results: list[dict]) -> Citations:
    """A trial's counts and rates: the steps' counts summed (the composition by form and the
    ungrounded kinds too), then the same rates."""
    counts = {k: sum(r["counts"].get(k, 0) for r in step_results) for k in (*COUNT_KEYS, "gold_total", "gold_cited")}
    counts[BY_FORM] = composition.add_forms(r["counts"][BY_FORM] for r in step_results)
    counts["ungrounded"] = composition.add_ungrounded(r["counts"]["ungrounded"] for r in step_results)
    return {"counts": counts, "rates": citation_rates(counts)}
