"""Composing the answer: the cited lines with their code, a count or value the question asks
for, the newest commit for a history question, and the feedback on the tools."""

from __future__ import annotations

import re

from mcptrials.providers.reference.question import (
    COUNT_INTENT,
    HISTORY_INTENT,
    LAST_LINE,
    USAGE_INTENT,
    VALUE_INTENT,
    Term,
    plain_text,
)
from mcptrials.providers.reference.ranking import DEF_LINE, candidates, citations, enclosing
from mcptrials.providers.reference.step import StepState
from mcptrials.providers.reference.tools import ToolSpec

SNIPPET_LINES = 4  # lines quoted after a cited line, when a read returned them


def compose_answer(st: StepState, prompt: str) -> str:
    """The step's answer: the history tool's newest commit, or what the tools found (with a
    count or value when the question asks for one)."""
    if st.history:
        return _history_answer(st.history, prompt)
    text = _found_answer(st, prompt)
    if HISTORY_INTENT.search(plain_text(prompt)):
        text = (
            "None of my tools shows the repository's history (its commits, authors and messages), and no "
            "file of the work tree records it, so I cannot answer that part.\n\n" + text
        )
    final = _final_value(st, prompt)
    if final is not None:
        what, value = final
        text += f"\n\n{what}" + (f"\n\n{value}" if LAST_LINE.search(prompt) else f": {value}")
    return text


def _found_answer(st: StepState, prompt: str) -> str:
    """The cited lines per term, each with its code (and the lines after the first), or an
    honest "not found" naming the tools that searched."""
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
            outer = enclosing(st.known.get(path, {}), n)
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
            return "I could not find anything to search for in the question, so I have no answer and cite no location."
        return (
            f"I could not find {names} in the repository: the searches with {used} returned no "
            f"matching lines, so I cannot cite a location."
        )
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
        sites = [
            (p, n)
            for _, p, n, t in cands
            if not term.is_definition(t)
            and not _IMPORT_LINE.match(t)
            and (not calls_only or re.search(rf"(?<![A-Za-z0-9_]){s}\s*\(", t))
        ]
        if not sites:
            return None
        what = "call expression(s)" if calls_only else "use(s)"
        files = len({p for p, _ in sites})
        return (
            f"Counting the {what} of `{term.label}` listed above (definition and import lines left out): "
            f"{len(sites)} in {files} file(s).",
            str(len(sites)),
        )
    if VALUE_INTENT.search(plain):
        s = re.escape(term.search)
        for _, path, n, t in cands:
            m = re.match(
                rf"^\s*(?:export\s+)?(?:const\s+|let\s+|var\s+)?{s}\s*(?::[^=]*)?=(?!=)\s*(.+?)\s*(?:#.*)?$", t
            )
            if m:
                return f"`{term.label}` is assigned `{_inline(m.group(1))}` at `{path}:{n}`.", m.group(1).strip()
    return None


def _history_answer(texts: list[str], prompt: str) -> str:
    """An answer from what a history tool returned: its newest commit's id, author, date and
    message, quoted; alone on the last line, the one the question asks for."""
    joined = "\n".join(texts)
    entries = []
    for m in re.finditer(r"(?im)^commit:?\s+([0-9a-f]{7,64})\b", joined):
        tail = joined[m.end() :]
        nxt = re.search(r"(?im)^commit:?\s+[0-9a-f]{7,64}\b", tail)
        block = tail[: nxt.start()] if nxt else tail
        field_of = lambda name: (re.search(rf"(?im)^{name}:\s*(.+)$", block) or [None, None])[1]  # noqa: E731
        message = field_of("message")
        if message is None:  # `git show` style: the message indented by four spaces
            body = re.findall(r"(?m)^ {4}(\S.*)$", block)
            message = body[0] if body else None
        entries.append(
            {
                "id": m.group(1),
                "author": field_of("author"),
                "date": field_of("date"),
                "message": (message or "").strip().strip("'\""),
            }
        )
    if not entries:
        return "The history tool returned no commit I could read:\n\n```\n" + joined[:1500] + "\n```"
    e = entries[0]
    lines = [
        f"The history tool lists {len(entries)} commit(s); the newest (the one checked out) is:",
        f"- commit `{e['id']}`",
        f"- author: {e['author']}",
        f"- date: {e['date']}",
        f"- message: {e['message']}",
    ]
    out = "\n".join(lines)
    if LAST_LINE.search(prompt):
        plain = plain_text(prompt).lower()
        key = (
            "id"
            if re.search(r"\b(id|hash|sha|sha-1)\b", plain)
            else "author"
            if "author" in plain or "who" in plain
            else "date"
            if re.search(r"\b(date|when)\b", plain)
            else "message"
        )
        out += f"\n\n{e[key]}"
    return out


def _overviews(st: StepState, term: Term) -> list[str]:
    """For files a search found by name (e.g. pricing.py for "pricing") and a read returned
    from the top: the definitions they hold, each cited."""
    out = []
    for h in st.hits:
        lines = st.known.get(h.path, {})
        if (
            h.term != term
            or h.line is not None
            or 1 not in lines
            or term.search.lower() not in h.path.rsplit("/", 1)[-1].lower()
        ):
            continue
        defs = []
        for n in sorted(lines):
            m = DEF_LINE.match(lines[n]) or re.match(r"^()([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?=(?!=)", lines[n])
            if m and len(m.group(1)) <= 4:
                defs.append(f"`{m.group(2)}` (`{h.path}:{n}`)")
        if defs:
            more = f" and {len(defs) - 8} more" if len(defs) > 8 else ""
            out.append(
                f"- The file `{h.path}` (found by name for `{term.label}`) defines " + ", ".join(defs[:8]) + more + "."
            )
    return out


def _inline(text: str) -> str:
    t = text.strip().replace("`", "'")
    return t if len(t) <= 160 else t[:157] + "..."


def _snippet(lines: dict[int, str], n: int) -> list[str]:
    out = []
    for k in range(n + 1, n + 1 + SNIPPET_LINES):
        if k not in lines:
            break
        out.append(lines[k].rstrip().replace("```", "'''"))
    while out and not out[-1].strip():
        out.pop()
    return out


def tool_feedback(states: list[StepState], specs: dict[str, ToolSpec]) -> str:
    """The "Feedback on the tools:" paragraph: which tools helped, which failed, which were not needed."""
    stats: dict[str, list[int]] = {}  # name -> [calls, failed, useful]
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
            sentences.append(f'`{name}` failed in {failed} of {n} call(s) ("{first_error[name]}").')
        elif useful:
            sentences.append(f"`{name}` helped ({useful} of {n} call(s) gave usable results).")
        else:
            sentences.append(f"`{name}` gave nothing useful ({n} call(s)).")
    unused = [s.name for s in specs.values() if s.mcp and s.role and s.name not in stats]
    if unused:
        sentences.append("Not needed: " + ", ".join(f"`{n}`" for n in unused) + ".")
    return "Feedback on the tools: " + " ".join(sentences)
