"""Choosing the next tool calls: the history tool for a history question, the next page of a
paged search, a read of the best hits not yet read, the next search tool for a term not yet found."""

from __future__ import annotations

from mcptrials.providers.reference.arguments import Need, build_arguments, page_key
from mcptrials.providers.reference.question import HISTORY_INTENT, USAGE_INTENT, Term, plain_text
from mcptrials.providers.reference.ranking import READS_PER_TERM, citations
from mcptrials.providers.reference.step import Call, StepState
from mcptrials.providers.reference.tools import ToolSpec, history_tool, read_order, search_order

MAX_CALLS_PER_REPLY = 6
READ_BEFORE, READ_AFTER = 3, 8  # the window read around a hit line
USAGE_READ_BEFORE = 20  # more above a use, to see the function it is in


def next_calls(st: StepState, prompt: str, specs: dict[str, ToolSpec], n_assistant: int, workspace: str) -> list[dict]:
    """The next reply: each tool call after the sentence that gives its reason; [] when
    nothing is left to try (the reply is then the answer)."""
    history = history_tool(specs)
    if history is not None and _asks_history(prompt, specs):
        # The commits are in no file of the work tree: ask the history tool, once.
        if any(c.spec and c.spec.role == "history" for c in st.calls):
            return []
        args = build_arguments(history, Need(), workspace)
        if args is not None:
            return [
                {
                    "type": "text",
                    "text": f"The question is about the repository's history, which no file "
                    f"of the work tree records, so I will ask `{history.name}`.",
                },
                {"type": "tool_use", "id": f"toolu_ref_{n_assistant:03d}_0", "name": history.name, "input": args},
            ]

    planned: list[tuple[str, ToolSpec, dict]] = []  # (reason, tool, arguments)
    read_chain = read_order(specs)
    reads_wanted: dict[str, list[tuple[int | None, str]]] = {}  # path -> [(line or None, why)]
    for term, chosen in citations(st, prompt):
        page = _page_call(st, term, specs)
        if page:
            planned.append(page)
        if _want_reads(st, term, chosen, read_chain, reads_wanted):
            continue
        # Nothing yet: the next search tool not yet tried for this term.
        search = _next_search(st, term, specs, workspace)
        if search:
            planned.append(search)
    planned += _read_calls(st, prompt, reads_wanted, read_chain, workspace)

    blocks: list[dict] = []
    for i, (reason, spec, args) in enumerate(planned[:MAX_CALLS_PER_REPLY]):
        blocks.append({"type": "text", "text": reason})
        blocks.append({"type": "tool_use", "id": f"toolu_ref_{n_assistant:03d}_{i}", "name": spec.name, "input": args})
    return blocks


def _want_reads(
    st: StepState,
    term: Term,
    chosen: list[tuple[int, str, int, str]],
    read_chain: list[ToolSpec],
    reads_wanted: dict[str, list[tuple[int | None, str]]],
) -> bool:
    """Add to `reads_wanted` the term's hits still to read: the lines chosen to cite, else
    the hits whose text is unknown. True when that is enough for this round; False when
    the term also needs the next search tool."""
    if chosen:
        for _, path, n, _ in chosen:
            if n not in st.known.get(path, {}) and not _read_tried(st, path, n, read_chain):
                reads_wanted.setdefault(path, []).append((n, f"to check the hit for `{term.label}` at line {n}"))
        return True
    unread = _unread_hits(st, term, read_chain)
    if not unread:
        return False
    unread.sort(key=lambda x: (-(term.search.lower() in x[0].lower()), x[0], x[1] or 0))
    for path, line in unread[:READS_PER_TERM]:
        why = (
            f"to see line {line}, a hit for `{term.label}`"
            if line
            else f"to look for `{term.label}` in it: the search found this file"
        )
        reads_wanted.setdefault(path, []).append((line, why))
    read_paths = [p for _, p, _, _, _ in st.reads]
    # Hits already read held nothing: also try the next search tool, this round.
    return not any(h.term == term and h.path in read_paths for h in st.hits)


def _unread_hits(st: StepState, term: Term, read_chain: list[ToolSpec]) -> list[tuple[str, int | None]]:
    """(path, line or None) of the term's hits whose text is unknown (a bare path:line) and
    of the files found by name, that a read could still show."""
    unread: list[tuple[str, int | None]] = []
    for h in st.hits:
        if h.term != term or (h.path, h.line) in unread:
            continue
        if h.line is None and h.path not in st.known and not _read_tried(st, h.path, None, read_chain):
            unread.append((h.path, None))
        elif (
            h.line is not None
            and h.text is None
            and h.line not in st.known.get(h.path, {})
            and not _read_tried(st, h.path, h.line, read_chain)
        ):
            unread.append((h.path, h.line))
    return unread


def _next_search(
    st: StepState, term: Term, specs: dict[str, ToolSpec], workspace: str
) -> tuple[str, ToolSpec, dict] | None:
    """The next search tool not yet tried for the term that can take it, with its arguments."""
    tried = [c for c in st.calls if c.term == term and c.spec and c.spec.role != "read"]
    tried_names = [c.name for c in tried]
    for spec in search_order(specs, term):
        if spec.name in tried_names:
            continue
        args = build_arguments(spec, Need(term=term), workspace)
        if args is None:
            continue
        return _search_reason(term, spec, tried), spec, args
    return None


def _read_calls(
    st: StepState,
    prompt: str,
    reads_wanted: dict[str, list[tuple[int | None, str]]],
    read_chain: list[ToolSpec],
    workspace: str,
) -> list[tuple[str, ToolSpec, dict]]:
    """One read per wanted file: a window around its wanted lines (or the whole file), with
    the best read tool that has not failed on it."""
    planned = []
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
            args = build_arguments(spec, Need(path=path, lo=lo, hi=hi), workspace)
            if args is None:
                continue
            span = f"lines {lo}-{hi} of `{path}`" if lo else f"`{path}`"
            reason = f"I will read {span} with `{spec.name}` {wants[0][1]}"
            if failed:
                reason += f" (`{failed[-1]}` failed on this file)"
            planned.append((reason + ".", spec, args))
            break
    return planned


def _asks_history(prompt: str, specs: dict[str, ToolSpec]) -> bool:
    return bool(HISTORY_INTENT.search(plain_text(prompt))) and history_tool(specs) is not None


def _page_call(st: StepState, term: Term, specs: dict[str, ToolSpec]) -> tuple[str, ToolSpec, dict] | None:
    """The same search again for its next page, when the newest page of it said more is left
    (a paged result otherwise hides hits: code-index's search returns 10 at a time)."""
    pages = [
        c for c in st.calls if c.term == term and c.spec and c.spec.role not in ("read", "history") and not c.failed
    ]
    if not pages or pages[-1].next_page is None:
        return None
    last = pages[-1]
    spec = specs.get(last.name)
    key = page_key(spec) if spec else None
    if spec is None or key is None or any(c.name == last.name and c.input.get(key) == last.next_page for c in pages):
        return None
    args = {**last.input, key: last.next_page}
    return (
        f"The search with `{last.name}` says more results are left, so I will ask it for the next page "
        f"({key}={last.next_page}).",
        spec,
        args,
    )


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


def _search_reason(term: Term, spec: ToolSpec, tried: list[Call]) -> str:
    what = {
        "symbol": "it looks symbols up by name",
        "search": "it searches the code's contents",
        "filesearch": "it finds files by name",
    }.get(spec.role or "", "it searches the workspace")
    if not spec.mcp:
        what = "it searches every file's lines with a regular expression"
    text = f"I will search for `{term.label}` with `{spec.name}` because {what}."
    if tried:
        last = tried[-1]
        outcome = "returned an error" if last.failed else "found nothing useful"
        text = f"The search with `{last.name}` {outcome}, so I fall back to the next tool. " + text
    return text
