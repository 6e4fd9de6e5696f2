"""The reader's labels of citation occurrences (`mcptrials label`): the stratified sample drawn
from the scored records, what the page shows of each, and the labels file under the config's
`locked/` with its own lockfile.

    locked/citation_labels.json  {"schema", "labels": [label, ...]}, one label per occurrence:
        {"id", "trial": {model, model_name, host, tool, repo, scenario, trial}, "step", "span"
         (the occurrence's offsets in the step's answer), "file", "lines", "commit", "text",
         "grader_strict" (the strict verdict when labelled), "verdict" (VERDICTS), "seed",
         "who", "when"}
    locked/citation_labels.lock  {"files": {"citation_labels.json": sha256}, "history": [...]}

The labels are pinned like the held-out gold (same sha256, same lockfile shape), but by their
own lockfile: `mcptrials label` re-pins it on each save (one history entry per session), any
other change is drift, refused by the aggregate and by `mcptrials label` alike. Apart from
held-out.lock so that labelling reruns the aggregate and the report only, never the judge's
held-out check.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from pathlib import Path

from mcptrials.analyze.lock import LABEL_FILES, LockError, who_am_i, read_lock_json, verify_labels
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256

LABELS, LABELS_LOCK = LABEL_FILES
SCHEMA = "mcptrials/citation_labels/1"
# the reader's verdict as a 0/1 of "the citation is right"; can't tell is no label at all
VERDICTS = {"correct": 1, "wrong line": 0, "wrong file": 0, "can't tell": None}


def grader_ok(strict) -> int:
    """The grader's 0/1: 1 only for a strict `verified`; mismatch, undetermined, n/a or any
    other value is "not verified" (0)."""
    return 1 if strict == "verified" else 0


def occurrence_id(trial: dict, step: int, span, file: str, lines) -> str:
    """The trial, the step, the offsets and what is cited (one span can hold several citations: a list)."""
    t, where = trial, "-".join(str(n) for n in lines)
    trial_id = f"{t['model']}/{t['host']}/{t['tool']}/{t['repo']}/{t['scenario']}/{t['trial']}"
    return f"{trial_id}/step{step}@{span[0]}-{span[1]}:{file}:{where}"


def occurrences(records: list[dict]) -> list[dict]:
    """Every occurrence of a line citation (one with `lines`) in the trials whose citations
    were checked: {"id", "trial", "step", "span", "file", "lines", "commit", "text", "strict"},
    strict being the occurrence's own verdict (by_occurrence), else its citation's."""
    out = []
    for rec in records:
        scored = rec["scored"]
        if scored.get("citations_not_checked") is not None:
            continue
        trial = dict(rec["key"])
        for step in scored.get("steps") or []:
            for cit in (step.get("citations") or {}).get("items") or []:
                if not cit.get("lines"):
                    continue
                occs = cit.get("by_occurrence") or [
                    {"span": span, "strict": cit.get("strict")} for span in cit.get("spans") or []
                ]
                file = cit.get("resolved_path") or cit["path_as_cited"]
                for occ in occs:
                    span = list(occ["span"])
                    out.append(
                        {
                            "id": occurrence_id(trial, step["index"], span, file, cit["lines"]),
                            "trial": trial,
                            "step": step["index"],
                            "span": span,
                            "file": file,
                            "lines": list(cit["lines"]),
                            "commit": scored["repo_commit"],
                            "text": cit["text"],
                            "strict": occ.get("strict", cit.get("strict")),
                        }
                    )
    return out


def draw_sample(occs: list[dict], per_tool: int, seed: int) -> list[dict]:
    """Up to per_tool occurrences per (model, tool), drawn at random without replacement with a
    generator seeded by (seed, model, tool): the same records and seed give the same sample,
    and a stratum's draw does not depend on the others'. Ordered by stratum, then drawn order."""
    strata: dict[tuple, list[dict]] = {}
    for o in sorted(occs, key=lambda o: o["id"]):
        strata.setdefault((o["trial"]["model"], o["trial"]["tool"]), []).append(o)
    out = []
    for (model, tool), items in sorted(strata.items()):
        rng = random.Random(f"{seed}:{model}:{tool}")
        out += rng.sample(items, min(per_tool, len(items)))
    return out


def answer_context(answer: str, span, reach: int = 300) -> dict:
    """The answer's sentence around an occurrence: back to the previous line break or full
    stop and on to the next (at most `reach` characters either side)."""
    a, b = span
    stop = answer.rfind(". ", 0, a)
    start = max(answer.rfind("\n", 0, a) + 1, stop + 2 if stop >= 0 else 0, a - reach)
    ends = [i for i in (answer.find("\n", b), answer.find(". ", b)) if i >= 0]
    end = min(min(ends) + 1 if ends else len(answer), b + reach)
    return {"before": answer[start:a].lstrip(), "cited": answer[a:b], "after": answer[b:end].rstrip()}


def file_context(lines_of_file: list[str] | None, lines, context: int = 4) -> dict:
    """The cited lines with `context` lines either side: {"first", "rows": [[n, text, cited]]}."""
    if lines_of_file is None:
        return {"first": None, "rows": []}
    lo, hi = lines[0], lines[-1]
    first, last = max(1, lo - context), min(len(lines_of_file), hi + context)
    rows = [[n, lines_of_file[n - 1], lo <= n <= hi] for n in range(first, last + 1)]
    return {"first": first, "rows": rows}


# --- the labels file and its lock ----------------------------------------------------


def read_labels(locked_dir) -> dict | None:
    """The labels file, or None when there is none; ConfigError when it drifted from its lock."""
    problem = verify_labels(locked_dir)
    if problem:
        raise ConfigError(problem)
    path = Path(locked_dir) / LABELS
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    if data.get("schema") != SCHEMA or not isinstance(data.get("labels"), list):
        raise ConfigError(f"{path}: not a labels file ({SCHEMA}); restore it from git")
    return data


def pin_labels(locked_dir, reason: str | None, who: str | None = None) -> dict:
    """Pin the labels file's sha256 in its lockfile; a reason appends {who, when, reason} to the history."""
    root = Path(locked_dir)
    history = []
    if (root / LABELS_LOCK).exists():
        try:
            history = list(read_lock_json(root / LABELS_LOCK).get("history") or [])
        except LockError:
            history = []
    if reason:
        when = datetime.now(timezone.utc).isoformat(timespec="seconds")
        history.append({"who": who or who_am_i(), "when": when, "reason": reason})
    data = {"files": {LABELS: file_sha256(root / LABELS)}, "history": history}
    from mcptrials.core.records import write_json

    write_json(root / LABELS_LOCK, data)
    return data


def save_label(locked_dir, label: dict, reason: str | None) -> dict:
    """Add (or replace, by id) one label, write the file and re-pin it (reason: the session's
    history entry, given with its first label only). Refuses when the file drifted."""
    if label.get("verdict") not in VERDICTS:
        raise ConfigError(f"verdict {label.get('verdict')!r}: one of {', '.join(VERDICTS)}")
    data = read_labels(locked_dir) or {"schema": SCHEMA, "labels": []}
    data["labels"] = [x for x in data["labels"] if x["id"] != label["id"]] + [label]
    from mcptrials.core.records import write_json

    write_json(Path(locked_dir) / LABELS, data)
    pin_labels(locked_dir, reason)
    return data
