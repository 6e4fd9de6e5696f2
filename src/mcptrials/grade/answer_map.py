"""One answer for many steps: which part of it answers which step.

A scenario with `one_answer: true` may be run as the reference bench runs its scenarios:
every step sent in one session, one final answer with a section per step. A transcript
that holds such an answer is marked `one_answer: true` (mcptrials.run.recorded writes it so);
the graders (grade/scoring.py) and the judge (judge/judging.py) then score, per step, the text
`split_answer` gives that step. The mapping, tried in this order:

1. `json_keys`: the answer holds a JSON object (the whole answer, a ```json block, or the
   span from its first `{` to its last `}`) whose top-level keys (or, for an object with
   one key, the keys of its value) name every step: the step's `answer_key`, its name
   (`find-helper` ~ `find_helper`, case and punctuation aside), or its number (`step1...`,
   `step_1`, `1`). A step's text is its `"key": value` as written in the answer.
2. `sections`: markdown headings (`#`..`######`, a line that is all bold, or a line that
   starts with `Step N`) name every step the same way (its `answer_key` or name inside the
   heading, `Step N`, or `N.` / `N)` / `N:` first). A step's text runs from its heading to
   the next heading of another step or of a higher level.
3. `whole`: nothing above names every step, so every step is graded on the whole answer
   (and scored.json says so).

Each step must get its own key or heading; a mapping that names only some steps is not used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

JSON_KEYS, SECTIONS, WHOLE, PER_STEP = "json_keys", "sections", "whole", "per_step"

_FENCE_RE = re.compile(r"```(?:json|JSON)?[ \t]*\n(.*?)\n[ \t]*```", re.S)
_ATX_RE = re.compile(r"^[ \t]{0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_BOLD_RE = re.compile(r"^[ \t]*(?:\*\*|__)(.+?)(?:\*\*|__)[ \t:]*$")
_STEP_LINE_RE = re.compile(r"^[ \t]*(step[ \t]*\d+\b.*)$", re.I)
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class AnswerMap:
    texts: list[str]  # per scenario step, in order
    method: str  # json_keys | sections | whole
    keys: list[str | None]  # the JSON key or heading text each step got (None: whole)

    def record(self) -> dict:
        """What scored.json keeps: `answer_mapping`."""
        return {"method": self.method, "keys": list(self.keys)}


def norm(text: str) -> str:
    """Lower case, every run of other characters one `_`: `Find-Helper` ~ `find_helper`."""
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower()).strip("_")


# --- JSON ------------------------------------------------------------------------


_WS = re.compile(r"\s*")


def _skip_ws(text: str, i: int) -> int:
    """The index of the first non-space at or after `i`."""
    m = _WS.match(text, i)
    assert m is not None  # `\s*` matches the empty string too
    return m.end()


def _object_members(text: str, start: int) -> list[tuple[str, int, int, int]] | None:
    """(key, start, value start, end) of each member of the JSON object at text[start] ('{'), the span
    covering `"key": value` as written; None when it is not a JSON object."""
    i = start + 1
    out: list[tuple[str, int, int, int]] = []
    try:
        while True:
            i = _skip_ws(text, i)
            if text[i] == "}":
                return out
            if text[i] != '"':
                return None
            key, j = _DECODER.raw_decode(text, i)
            j = _skip_ws(text, j)
            if text[j] != ":":
                return None
            j = _skip_ws(text, j + 1)
            _, end = _DECODER.raw_decode(text, j)
            out.append((key, i, j, end))
            i = _skip_ws(text, end)
            if text[i] == ",":
                i += 1
            elif text[i] != "}":
                return None
    except (ValueError, IndexError):
        return None


def _json_candidates(answer: str):
    """Positions of JSON objects the answer may hold: fenced blocks, the whole answer, the
    first `{` (each as (text, offset of '{'))."""
    for m in _FENCE_RE.finditer(answer):
        body = m.group(1)
        k = body.find("{")
        if k >= 0:
            yield m.start(1) + k
    k = answer.find("{")
    if k >= 0:
        yield k


def _key_matches(key: str, step: dict, n: int) -> int | None:
    """How well a key (or heading) names step n (1-based): lower is better; None: not at all."""
    k = norm(key)
    own = step.get("answer_key")
    if own is not None and norm(own) and (k == norm(own)):
        return 0
    name = norm(step["name"])
    if k == name:
        return 1
    if re.fullmatch(rf"(?:step_?)?0*{n}(?:_.*)?", k):
        return 2
    if name and re.search(rf"(?:^|_){re.escape(name)}(?:_|$)", k):
        return 3
    return None


def _assign(labels: list[str], steps: list[dict], match) -> list[int] | None:
    """Each step's label index (distinct), the best match first, else None."""
    taken: set[int] = set()
    out = []
    for n, step in enumerate(steps, 1):
        best = None
        for i, label in enumerate(labels):
            if i in taken:
                continue
            q = match(label, step, n)
            if q is not None and (best is None or q < best[0]):
                best = (q, i)
        if best is None:
            return None
        taken.add(best[1])
        out.append(best[1])
    return out


def _by_json(answer: str, steps: list[dict]) -> AnswerMap | None:
    seen = set()
    for start in _json_candidates(answer):
        if start in seen:
            continue
        seen.add(start)
        members = _object_members(answer, start)
        if not members:
            continue
        levels = [members]
        if len(members) == 1 and answer[members[0][2]] == "{":  # {"report": {"step1": ..., "step2": ...}}
            sub = _object_members(answer, members[0][2])
            if sub:
                levels.append(sub)
        for mem in levels:
            picked = _assign([k for k, *_ in mem], steps, _key_matches)
            if picked is not None:
                return AnswerMap(
                    [answer[mem[i][1] : mem[i][3]] for i in picked], JSON_KEYS, [mem[i][0] for i in picked]
                )
    return None


# --- markdown sections -------------------------------------------------------------


def headings(answer: str) -> list[tuple[int, int, str]]:
    """(character offset of the line, level, text) of each heading: ATX `#` headings keep
    their level; a bold-only line or a `Step N` line is level 7 (below every `#`)."""
    out, pos, fenced = [], 0, False
    for line in answer.splitlines(keepends=True):
        bare = line.rstrip("\r\n")
        if bare.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced:
            m = _ATX_RE.match(bare)
            if m:
                out.append((pos, len(m.group(1)), m.group(2).strip("*_ ")))
            elif (m := _BOLD_RE.match(bare)) or (m := _STEP_LINE_RE.match(bare)):
                out.append((pos, 7, m.group(1).strip("*_ ")))
        pos += len(line)
    return out


def _heading_matches(heading: str, step: dict, n: int) -> int | None:
    h = norm(heading)
    own = step.get("answer_key")
    if own is not None and norm(own) and re.search(rf"(?:^|_){re.escape(norm(own))}(?:_|$)", h):
        return 0
    name = norm(step["name"])
    if name and re.search(rf"(?:^|_){re.escape(name)}(?:_|$)", h):
        return 1
    if re.match(rf"step_?0*{n}(?:_|$)", h):
        return 2
    if re.match(rf"^\W*0*{n}\s*[.):]", heading.lstrip("*_ ")) or re.fullmatch(rf"0*{n}", h):
        return 3
    return None


def _by_sections(answer: str, steps: list[dict]) -> AnswerMap | None:
    hs = headings(answer)
    if not hs:
        return None
    picked = _assign([t for _, _, t in hs], steps, _heading_matches)
    if picked is None:
        return None
    chosen = set(picked)
    texts = []
    for i in picked:
        start, level, _ = hs[i]
        end = len(answer)
        for j in range(i + 1, len(hs)):
            if j in chosen or hs[j][1] < level:
                end = hs[j][0]
                break
        texts.append(answer[start:end].strip())
    return AnswerMap(texts, SECTIONS, [hs[i][2] for i in picked])


# --- the one function -------------------------------------------------------------------


def map_answer(answer: str, steps: list[dict]) -> AnswerMap:
    """The mapping of one answer onto the scenario's steps (see the module's docstring)."""
    answer = answer or ""
    if len(steps) > 1 or any(s.get("answer_key") for s in steps):
        for how in (_by_json, _by_sections):
            got = how(answer, steps)
            if got is not None:
                return got
    return AnswerMap([answer] * len(steps), WHOLE, [None] * len(steps))


def split_answer(answer_text: str, steps: list[dict]) -> tuple[list[str], str]:
    """(the text of each step, method: json_keys | sections | whole)."""
    m = map_answer(answer_text, steps)
    return m.texts, m.method


def step_answers(transcript: Mapping[str, Any], steps: list[dict]) -> tuple[list[dict] | None, dict]:
    """For a `one_answer` transcript: one answer record per scenario step ({index, name,
    answer_text, outcome, state_check}, the text from map_answer), and the mapping record;
    for any other transcript (an answer per step): (None, {"method": "per_step"}), and the
    caller reads the transcript's own steps."""
    if not transcript.get("one_answer"):
        return None, {"method": PER_STEP, "keys": None}
    recorded = (transcript.get("steps") or [{}])[-1]
    m = map_answer(recorded.get("answer_text") or "", steps)
    out = [
        {
            "index": i,
            "name": s["name"],
            "answer_text": m.texts[i],
            "outcome": recorded.get("outcome"),
            "state_check": None,
        }
        for i, s in enumerate(steps)
    ]
    return out, m.record()
