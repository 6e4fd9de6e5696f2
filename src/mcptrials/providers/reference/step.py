"""The state of one step: the conversation split into steps (a user prompt and the calls
answering it), and what those calls found (hits, lines read, history) and which helped."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from mcptrials.providers.reference.arguments import kind_of_key, zero_based
from mcptrials.providers.reference.question import Term, extract_scopes, extract_terms
from mcptrials.providers.reference.results import (
    WorkspacePaths,
    looks_failed,
    next_page,
    parse_hits,
    parse_read,
    result_text,
)
from mcptrials.providers.reference.tools import ToolSpec, classify_tool


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
    next_page: int | str | None = None  # where the next page starts, when the result says there is one


@dataclass
class StepState:
    terms: list[Term]
    files: list[str]
    calls: list[Call]
    rounds: int
    hits: list[Hit] = field(default_factory=list)
    known: dict[str, dict[int, str]] = field(default_factory=dict)
    reads: list[tuple[str, str, int | None, int | None, bool]] = field(default_factory=list)  # tool, path, lo, hi, ok
    scopes: list[str] = field(default_factory=list)  # path prefixes the prompt confines hits to
    history: list[str] = field(default_factory=list)  # what history tools (git log) returned


def split_steps(messages: list[dict], specs: dict[str, ToolSpec]) -> list[tuple[str, list[Call], int]]:
    """(prompt, calls with their results, tool rounds) per step: a step starts at each user
    turn that holds text and no tool results."""
    steps: list[tuple[str, list[Call], int]] = []
    pending: dict[Any, Call] = {}  # by the tool_use id, as the JSON has it
    for m in messages:
        content = m.get("content")
        given = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
        blocks: list[dict[str, Any]] = [b for b in given if isinstance(b, dict)]
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
                    call.text = result_text(b.get("content"))
                    call.is_error = bool(b.get("is_error"))
        elif m.get("role") == "assistant" and steps:
            prompt, calls, rounds = steps[-1]
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            for b in uses:
                call = Call(
                    b.get("id", ""), b.get("name", ""), b.get("input") or {}, "", False, specs.get(b.get("name", ""))
                )
                if call.spec is None:  # a tool no longer offered: judge it by its name
                    call.spec = classify_tool({"name": call.name})
                calls.append(call)
                pending[call.id] = call
            steps[-1] = (prompt, calls, rounds + (1 if uses else 0))
    return steps


def _call_term(terms: list[Term], call_input: dict) -> Term | None:
    values = [v for v in call_input.values() if isinstance(v, str)]
    found = [t for t in terms if any(t.search in v or re.escape(t.search) in v for v in values)]
    return max(found, key=lambda t: len(t.search)) if found else None


def _window(spec: ToolSpec, call_input: dict, paths: WorkspacePaths) -> tuple[str | None, int | None, int | None]:
    """(relative path, lo, hi) a read call asked for, 1-based; lo/hi None for a whole file."""
    path, lo, hi = None, None, None
    for key, v in call_input.items():
        kind = kind_of_key(key)
        if kind == "path" and isinstance(v, str) and path is None:
            path = paths.rel(v)
        elif kind == "start" and isinstance(v, int):
            lo = v + zero_based(spec, key)
        elif kind == "end" and isinstance(v, int):
            hi = v + zero_based(spec, key)
        elif kind == "count" and isinstance(v, int):
            lo, hi = (lo or 1), v
    return path, lo, hi


def analyze_step(
    prompt: str, calls: list[Call], rounds: int, paths: WorkspacePaths, prior_terms: list[Term]
) -> StepState:
    terms, files = extract_terms(prompt)
    if not terms:
        terms = prior_terms
    st = StepState(terms, files, calls, rounds, scopes=extract_scopes(prompt))
    for c in calls:
        c.failed = c.is_error or looks_failed(c.text)
        spec = c.spec
        role = spec.role if spec else None
        if role == "history":
            if not c.failed and c.text.strip():
                st.history.append(c.text)
                c.useful = True
            continue
        if spec is not None and role == "read":
            path, lo, hi = _window(spec, c.input, paths)
            lines = {} if c.failed or not path else parse_read(c.text, lo or 1, numbered_only=not spec.mcp)
            ok = bool(lines) and any(t.strip() for t in lines.values())
            if ok and path:
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
            c.useful = (
                any(
                    h.tool == c.name and h.term == c.term and (_relevance(st, h, c.term) or h.line is None)
                    for h in st.hits
                )
                if c.term
                else False
            )
    return st


def line_text(st: StepState, path: str, line: int | None, fallback: str | None) -> str | None:
    if line is not None and line in st.known.get(path, {}):
        return st.known[path][line]
    return fallback


def _relevance(st: StepState, h: Hit, term: Term | None) -> int:
    if term is None or h.line is None:
        return 0
    return term.matches(line_text(st, h.path, h.line, h.text) or "")
