"""Verifying a grounded citation: is what the answer says about it at the cited lines?

Lenient (verify): the identifiers the citation is about are looked up as whole words in the
cited lines: within VERIFY_WINDOW lines of a single cited line, or inside a cited range. They
are the names in backticks in its sentence, on its line and in its list item (citations and
file paths excluded); its table row's cells under a symbol, name, function, type... header
that are identifiers; its JSON object's "signature" (the name it defines), "symbol", "name",
"function", "method", "class"... members. One-letter names and keywords do not count.
`verified` if at least one is there, `mismatch` if none is, `n/a` when there is no
identifier (and for symbol citations and citations that are not grounded).

Strict (strict_verdict, settle_strict): the citation's subject (subjects.py, or the name in
the same place of a list, `respectively`) against the cited line (strict.py).
"""

from __future__ import annotations

import re

from mcptrials.grade.citations import strict, structure, subjects
from mcptrials.grade.citations.context import Answer, identifier
from mcptrials.grade.citations.evidence import rivals
from mcptrials.grade.citations.extract import has_word
from mcptrials.grade.citations.grounding import strict_verdict_at
from mcptrials.grade.citations.lexicon import CONSTRUCTORS, DECLARATION_WORDS, KEYWORDS, IDENT_KEYS, IDENT, QUALIFIED
from mcptrials.grade.citations.names import clean_name, code_like, code_subject, parts_of
from mcptrials.grade.gittree import CommitTree

VERIFY_WINDOW = 5  # lines either side of a single cited line that verification searches


def signature_names(sig: str) -> list[str]:
    """What a signature defines: the name before its first parameter or type list
    (`fn call(self)` -> call, `func (r *R) Handle(w)` -> Handle); else its identifiers."""
    for m in re.finditer(rf"({IDENT})\s*[(<\[]", sig):
        if m.group(1) not in KEYWORDS | CONSTRUCTORS:
            return [m.group(1)]
    return [w for w in re.findall(IDENT, sig) if len(w) > 1 and w not in KEYWORDS | CONSTRUCTORS]


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
        names += [n for cell, _, _ in row.name_cells if (n := identifier(cell, exts))]
    objs = structure.enclosing_objects(ans.objects, c["start"])
    if objs:
        for mem in objs[0].get(*IDENT_KEYS):
            if not isinstance(mem.value, str):
                continue
            if mem.key.lower() == "signature":
                names += signature_names(mem.value)
            elif n := identifier(mem.value, exts):
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
    window = "\n".join(lines[max(lo, 1) - 1 : hi])
    return "verified" if any(has_word(window, i) for i in identifiers) else "mismatch"


def citation_subject(ans: Answer, c: dict, before: int, after: int, skip=frozenset()) -> dict | None:
    """The subject of one citation occurrence (grade/citations/subjects.py), read around its whole
    text (a list of lines `lines 72, 74, 76` has one subject for every number)."""
    lo, hi = c.get("subject_span") or (c["start"], c["end"])
    text = ans.text
    while lo > 0 and text[lo - 1] == "`":  # the citation's own backticks belong to it
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
                cache[(p, name)] = has_word(tree.text(p), name)
            if cache[(p, name)]:
                return True
        return False

    return subjects.subject(
        ans.text,
        lo,
        hi,
        objects=ans.objects,
        before=before,
        after=after,
        is_path=ans.is_path,
        json_member=bool(c.get("json_member")),
        key_named=key_named,
        plain_named=None if c.get("may_move") else key_named,
        skip=skip,
    )


_KIND_PLURAL = re.compile(
    r"\s(?:helpers|methods|functions|callbacks|hooks|classes|scopes|modules|"
    r"constants|fields|validations|associations|assocs)\s*$"
)
_JOIN = re.compile(r"[\s`]*(?:[/,]|\sand\s)[\s`]*")
_AT_END = re.compile(r"\s(?:at|in)\s*$")
_NAME_AT_END = re.compile(rf"`?(?P<n>{QUALIFIED})`?\s*$")
_NAME_JOIN_AT_END = re.compile(r"`?\s*(?:/|,\s*and|\sand|,)\s*`?$")
_NAME_CHARS = re.compile(r"[\w?!.:#`\s]*")  # every character a _NAME_AT_END match may hold


def _name_at_end(window: str):
    """_NAME_AT_END.search(window), started where the window's tail of name characters starts
    (a match lies in it): the same match, without re trying every offset of the window."""
    tail = _NAME_CHARS.match(window[::-1])
    assert tail is not None  # _NAME_CHARS matches the empty string too
    return _NAME_AT_END.search(window, len(window) - tail.end())


def respectively(ans: Answer, found: list[dict], c: dict) -> dict | None:
    """The subject of one of a group of citations joined by `/`, `,` or `and` right after (or
    after `at`/`in`, or a plural kind word) as many names joined by `/`, `and` or commas (names
    of a comma list must be code: `` `a`, `b`, and `c` at x:1, x:2, x:3 ``) (`` `hide_story_for_user`/`unhide_story_for_user` `:13`/`:19` ``,
    `current_flagged?/current_upvoted? story.rb:423,427`, `is_gone? and can_be_seen_by_user?
    at story.rb:761 and story.rb:582`, `send/_read_replies helpers at x:60 and x:105`): the
    name in the same place, with the group's names (settle_strict)
    ("respectively"); None when the counts differ or there is no such list of names."""
    text = ans.text
    if getattr(ans, "_own_spans", None) is None:  # once per answer
        ans._own_spans = own = sorted({(x["start"], x["end"]) for x in found})
        ans._own_index = {span: i for i, span in enumerate(own)}
        ans._own_joined = [bool(_JOIN.fullmatch(text, own[i][1], own[i + 1][0])) for i in range(len(own) - 1)]
    own, joined = ans._own_spans, ans._own_joined  # joined[i]: own[i] and own[i + 1] are one group
    k = ans._own_index[(c["start"], c["end"])]
    first = last = k
    while first > 0 and joined[first - 1]:
        first -= 1
    while last + 1 < len(own) and joined[last]:
        last += 1
    if first == last:
        return None
    lo = own[first][0]
    while lo > 0 and text[lo - 1] in "`":
        lo -= 1
    names: list[str] = []
    pos, commas, joins, cut = lo, False, [], False
    colon = _COLON_END.search(text, max(0, pos - 4), pos)  # `role/chat_completion/tool_calls: x:9, x:17, x:21`
    paren = None if colon else _PAREN_END.search(text, max(0, pos - 4), pos)  # `a/b/c (x.rb:8,15,62)`
    pos = colon.start() if colon else paren.start() if paren else pos
    at = None if colon else _AT_END.search(text[max(0, pos - 6) : pos])  # `a and b at x:1 and y:2`
    pos = max(0, pos - 6) + at.start() if at else pos
    kind = _KIND_PLURAL.search(text, max(0, pos - 20), pos)  # `send/_read_replies helpers at`, `a/b assocs x:1,x:2`
    pos = kind.start() if kind else pos
    while True:  # the names right before the group, last first
        m = _name_at_end(text[max(0, pos - 120) : pos])
        if not m:
            break
        names.insert(0, m.group(0).strip())
        pos = max(0, pos - 120) + m.start()
        j = _NAME_JOIN_AT_END.search(text[max(0, pos - 6) : pos])
        if not j or len(names) > last - first:
            cut = j is not None  # more names joined before: the group is not the one named
            break
        commas = commas or "," in j.group(0)
        joins.append(j.group(0))
        pos = max(0, pos - 6) + j.start()
    if len(names) != last - first + 1:
        return None
    # names in a comma list are code (`` `a`, `b`, and `c` at x:1, x:2, x:3 ``), not prose
    # words (`validation, covering x:93 and x:302`)
    if commas and not all(n.startswith("`") or code_like(n.strip("`"), False) for n in names):
        return None
    if (colon or paren) and not _slash_group(names, joins, cut, ans.is_path):
        return None
    names = [n.strip("`") for n in names]
    name = names[k - first]
    group = [n for n in names if clean_name(n)]
    scope = UNORDERED if colon else "respectively"
    return {"name": name, "from": scope, "group": group} if clean_name(name) else None


# Grader 12: code spans joined by `,`, `/`, `+` or `and` right before a path's list of lines,
# past a parenthetical, a dash, colon or table bar (`` `src`, `.dest`, `.destF` — `hook.go:50,52,47` ``)
_SPANS_BEFORE_LIST = re.compile(
    r"(?:`[^`\n]+`\s*(?:,\s*and|,|/|\+|and)\s*)+`[^`\n]+`(?:\s*\([^()`\n]*\))?[\s*|:\u2014\u2013-]*`?$"
)


def listed_pairs(text: str, lo: int, k: int, index: int, is_path) -> dict | None:
    """Names and lines listed in the same order pair up (the labelling rules): as many code spans
    right before a path's list of k lines (text[lo:] starts the list) name them in order; the
    index-th line takes the index-th name, with the names as its group (settle_strict)."""
    start = text.rfind("\n", 0, lo) + 1
    m = _SPANS_BEFORE_LIST.search(text, max(start, lo - 400), lo)
    if not m:
        return None
    spans = re.findall(r"`([^`\n]+)`", m.group(0))
    names = [code_subject(s.lstrip("."), is_path) for s in spans]
    if len(names) != k or not all(names):
        return None
    return {"name": names[index], "from": "respectively", "group": names}


def _slash_group(names: list[str], joins: list[str], cut: bool, is_path) -> bool:
    """Grader 11: names before a colon or an opening `(` are a group when joined by slashes only,
    all of them (no more before), most written as code, none a path: not `registry/catalog:`, nor
    `enable/disable (`, nor the folders of `app/models/story.rb (lines 296, 297)`."""
    bare = [n.strip("`") for n in names]
    return (
        not cut
        and all("/" in j for j in joins)
        and 2 * sum(code_like(n, False) for n in bare) > len(bare)
        and not any(is_path(n) for n in bare)
    )


# Grader 11: names joined by slashes before a colon and as many citations state no order (`role/
# chat_completion/tool_calls: x:9, x:17, x:21` cite the three in file order): each line is checked
# against the group, and a line holding none of them is undetermined, not a mismatch.
UNORDERED = "group before a colon"
_COLON_END = re.compile(r":[ \t`*]*$")
_PAREN_END = re.compile(r"\s\([ \t`]*$")


def strict_verdict(c: dict, tree: CommitTree) -> str:
    """The strict verdict of a grounded line citation against its subject (grade/citations/strict.py);
    n/a for a citation that is not grounded, a symbol citation, or one without a subject."""
    if c["bucket"] != "grounded" or c["lines"] is None or not c["subject"]:
        return "n/a"
    return strict_verdict_at(tree, c["resolved_path"], c["lines"], c["subject"]["name"])


# Scopes that name a citation's subject clearly (rule 1 of docs/grading.md's list of positive
# evidence): the clause around it, its own JSON member or the object's name; a list item's
# head, a sentence's nearest name or another member's text may be about something else.
CLEAR_SCOPES = frozenset(
    (
        "label",
        "after",
        "before",
        "respectively",
        "respectively, in another order",
        "json field",
        "json key",
        "json owner",
        "json code",
        "table name cell",
    )
)
_NAMED_BY_PLACE = frozenset(("json field", "json key", "json owner", "json code", "table name cell"))


def _window(text: str, span: list[int]) -> str:
    """The lines within 200 characters of a citation's span."""
    lo = text.rfind("\n", 0, max(0, span[0] - 200)) + 1
    hi = text.find("\n", span[1] + 200)
    return text[lo : len(text) if hi < 0 else hi]


def written_as_code(text: str, span: list[int], subject: dict) -> bool:
    """Whether the answer writes the subject as code near the citation (rule 2): a code-like
    name (`Story#url`, `is_noop`, `HttpTransport`), a name in backticks or bold within its
    lines, or a name its JSON member or table cell holds by place."""
    name = subject["name"]
    last = parts_of(name)[-1]
    if subject["from"] in _NAMED_BY_PLACE or code_like(last, False) or code_like(name, False):
        return True
    window = _window(text, span)
    word = re.compile(rf"(?<![\w]){re.escape(last)}(?![\w])")
    lo = text.rfind("\n", 0, max(0, span[0] - 200)) + 1  # the window's start (a line's)
    # code spans paired from each line's start (grader 11: the prose between two spans is not one)
    if any(word.search(text, a, b) for a, b in structure.code_spans(text, lo, lo + len(window))):
        return True
    if re.search(rf"\*\*[^*\n]*{word.pattern}[^*\n]*\*\*", window):
        return True
    return declared(window, last)


def declared(text: str, name: str) -> bool:
    """Whether `text` writes a Rails declaration of `name` out of backticks (`has_many :orders`):
    code by its form (grader 10), as a code span is."""
    return (
        re.search(rf"(?<![\w:])(?:{'|'.join(sorted(DECLARATION_WORDS))})\s+:{re.escape(name)}(?![\w?!])", text)
        is not None
    )


def unclear_subject(occ: dict, text: str | None) -> str | None:
    """Why an occurrence's subject is not one its answer clearly names (rules 1 and 2 of the
    positive evidence), None when it is: from a clear scope (or a Rails declaration quoted beside
    the citation, in any scope: `"usage": "belongs_to :issue; ..."`, grader 10), written as code."""
    subject = occ["subject"]
    if subject["from"] not in CLEAR_SCOPES and not (
        text is not None and declared(_window(text, occ["span"]), subject["name"])
    ):
        return f"subject from the {subject['from']} scope, not named by its clause"
    if text is not None and not written_as_code(text, occ["span"], subject):
        return f"`{subject['name']}` is a plain word of the answer"
    return None


def rival_names(g: dict, occ: dict, around=None) -> tuple[list[str], list[str]]:
    """The other names the citation's context names (rule 4): the citation's identifiers not
    attached to another citation and its respectively group; and its clause's code-like names.
    Not the subject's own qualifiers (where it lives)."""
    subject = occ["subject"]
    own = set(parts_of(subject["name"]))
    span = tuple(occ["span"])
    clause, attached = ({}, {}) if around is None else around
    wide = rivals(g["identifiers"], attached, span)
    named = [n for n in [*wide, *subject.get("group", [])] if n != subject["name"] and n not in own]
    in_code = [n for n in clause.get(span, []) if n != subject["name"] and n not in own]
    return named, in_code


def confirm_mismatch(g: dict, occ: dict, tree: CommitTree, text: str | None, around=None) -> str | None:
    """Why an occurrence's strict `mismatch` is not confirmed (it is `undetermined` then), None
    when it has positive evidence (docs/grading.md: the subject clearly named, written as code,
    defined in the cited file away from the cited line, nothing else the clause names there)."""
    why = unclear_subject(occ, text)
    if why:
        return why
    path = tree.real(g["resolved_path"])
    named, in_code = rival_names(g, occ, around)
    return strict.abstain_reason(
        path, tree.text(path), g["lines"], occ["subject"]["name"], tree.lines(path), named, in_code
    )


def written_in_file(name: str, g: dict, tree: CommitTree) -> bool:
    """Whether the cited file writes the name's last part (or a form a definition of it goes by:
    strict.forms) as a whole word."""
    last = parts_of(name)[-1]
    source = tree.text(tree.real(g["resolved_path"]))
    return any(has_word(source, w) for w in {last} | strict.forms(last))


def settle_strict(g: dict, tree: CommitTree, text: str | None = None, around=None) -> None:
    """The strict verdict of each occurrence of a distinct citation (its own subject), then
    the citation's: verified when one occurrence's subject is at the cited line (the answer
    says once what is there, and that is right), else the verdict of the first occurrence with
    a subject (mismatch, or undetermined where the file's definitions are not known), else
    n/a; its subject is that occurrence's (the first verified one, else the first found). Grader 13:
    an unconfirmed mismatch whose subject no clear scope gives is no subject (n/a), else another name
    of its context at the line is what it cites (verified); an occurrence without a subject takes
    the first of its weak names (weak.py) at the line, and only then."""
    seen: dict[str | None, str] = {}

    def judged(subject: dict | None) -> str:
        name = subject["name"] if subject else None
        if name not in seen:
            seen[name] = strict_verdict(dict(g, subject=subject), tree)
        return seen[name]

    def defined_at(name: str) -> bool:
        path = tree.real(g["resolved_path"])
        return strict.defined_at(path, tree.text(path), g["lines"], name, tree.lines(path))

    for occ in g["by_occurrence"]:
        occ["strict"] = judged(occ["subject"])
        if occ["strict"] == "mismatch" and occ["subject"].get("group"):
            # names and lines listed in two orders (`a and b at x:2 and x:1`): a reader checks
            # each line against the group, so another name of it at the line is what it cites
            other = next((n for n in occ["subject"]["group"] if judged({"name": n}) == "verified"), None)
            if other:
                occ["subject"] = {
                    "name": other,
                    "from": "respectively, in another order",
                    "group": occ["subject"]["group"],
                }
                occ["strict"] = "verified"
        occ["undetermined"] = None
        if occ["strict"] == "mismatch":
            why = confirm_mismatch(g, occ, tree, text, around)
            if why and not written_in_file(occ["subject"]["name"], g, tree):
                # grader 11: a name the cited file never writes is checked at none of its lines: no
                # subject, as a capitalised word the file never names (`"component": "request_building"`)
                occ["subject"], occ["strict"] = None, "n/a"
            elif why and occ["subject"]["from"] != UNORDERED and unclear_subject(occ, text):
                # grader 13: a name no clear scope gives, not at the line, is no subject a reader
                # checks the line against (`n/a`; the weak names below may still verify it)
                occ["subject"], occ["strict"] = None, "n/a"
            elif why:
                # grader 13: another name the context names, at the cited line, is what it cites
                named, in_code = rival_names(g, occ, around)
                other = next((n for n in [*named, *in_code] if judged({"name": n}) == "verified"), None)
                if other:
                    occ["subject"], occ["strict"] = {"name": other, "from": "named beside it, at the line"}, "verified"
                else:
                    occ["strict"], occ["undetermined"] = "undetermined", why
        elif occ["strict"] == "undetermined":
            occ["undetermined"] = "no definitions known for this file's language"
        weak = occ.pop("weak", ())
        if occ["strict"] == "n/a" and g["bucket"] == "grounded" and g["lines"]:
            # grader 13 (weak.py): a name a reader may have meant is the subject only where it is at the line
            name = next((n for n, code in weak if judged({"name": n}) == "verified" and (code or defined_at(n))), None)
            if name:
                occ["subject"], occ["strict"] = {"name": name, "from": "weak, at the line"}, "verified"
    settle_citation(g)


def settle_citation(g: dict) -> None:
    """The citation's subject and strict verdict from its occurrences' (settle_strict's docstring)."""
    occs = g["by_occurrence"]
    best = next((o for o in occs if o["strict"] == "verified"), None) or next((o for o in occs if o["subject"]), None)
    g["subject"] = best["subject"] if best else None
    g["strict"] = best["strict"] if best else "n/a"
