"""The kinds of trial outcome, in one place, and the record of a trial's attempts.

Attributable outcomes are the tool's (or the model's) doing and are scored: a trial that
did not complete counts as a fail and scores 0 on fairness. Infrastructure outcomes are
ours or the API's (an outage, a rate-limit burst, a spent key, a bug of the harness, a trial
the budget stopped before it started): the trial is *missing*, neither a pass nor a fail nor
a zero; the aggregate leaves it out of every mean, pass@k and interval and says so per cell.

A missing trial is retried by the next `snakemake` invocation, up to the config's
`retries.max_attempts`. `mcptrials run-trial` keeps every missing attempt's records under
`<trial dir>/attempts/<n>/` and the state in `<trial dir>/attempts/attempts.json` (ATTEMPTS):
the number of the last attempt, how many failed attempts count against max_attempts (a
`not_run` trial spent nothing and is not counted), and whether the last one is missing. At DAG
time `retry_attempts` finds these files with one glob and gives each such trial the attempt
number its transcript job should carry in its params: one more than the last while the trial
is missing and attempts are left (so Snakemake reruns exactly it and what reads it), else the
last one's (nothing changes, nothing reruns).
"""

from __future__ import annotations

import glob
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

COMPLETED = "completed"
ATTRIBUTABLE = ("completed", "max_turns", "budget_exceeded", "timed_out", "server_crashed")
INFRASTRUCTURE = ("api_failed", "harness_failed", "not_run")
OUTCOMES = ATTRIBUTABLE + INFRASTRUCTURE
# An infrastructure outcome that spent nothing (the budget stopped the trial before it began):
# it does not use up one of the trial's attempts.
UNCHARGED = ("not_run",)

ATTEMPTS_DIR = "attempts"
ATTEMPTS = "attempts.json"
DEFAULT_MAX_ATTEMPTS = 3


def is_missing(outcome: str) -> bool:
    """True for an infrastructure outcome: the trial is missing data, not a score."""
    return outcome in INFRASTRUCTURE


def missing_reason(outcome: str, detail: str | None = None) -> str | None:
    """Why a trial is missing ('api_failed', 'not_run: budget'), or None when it is not. For
    not_run the reason is its detail up to the first colon ('budget: spent $S of $X' -> budget),
    so the trials a cell lost for one reason are counted together."""
    if not is_missing(outcome):
        return None
    why = (detail or "").split(":", 1)[0].strip()
    return f"{outcome}: {why}" if outcome == "not_run" and why else outcome


def read_attempts(trial_dir) -> dict | None:
    p = Path(trial_dir) / ATTEMPTS_DIR / ATTEMPTS
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def record_attempt(
    trial_dir,
    transcript: Mapping[str, Any],
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    retriable: bool = True,
    kept: str | None = None,
) -> dict | None:
    """After a trial's transcript.json and run_meta.json are written: when its outcome is
    missing, copy both to attempts/<run>/ and update attempts.json; a trial that completes after
    missing attempts keeps attempts.json (missing false), so the attempt number its job ran with
    stays in its params. Returns the new state, or None for a trial that never had a missing
    attempt (it gets no attempts folder).

    State: `attempt` = the number this job carried in its params (next_attempt of the previous
    state, 1 without one), `runs` = every run recorded (the folder names), `failed` = missing
    runs that count against max_attempts, `missing`, `retriable`, `outcome`, `outcome_detail`,
    `history`. retriable=False (a recorded model: its conversion gives the same result again;
    a new recording changes its params anyway) keeps the trial missing without a retry.
    `kept` (why): the job kept the trial's finished records (`restore_finished`) instead of
    running it; the state is `stale`, so the next invocation tries it again."""
    from mcptrials.core.records import write_json

    d = Path(trial_dir)
    prev = read_attempts(d)
    outcome = transcript["outcome"]
    missing = is_missing(outcome)
    if prev is None and not missing and kept is None:
        return None
    attempt = next_attempt(prev, max_attempts) if prev else 1
    prev = prev or {"runs": 0, "failed": 0, "history": []}
    run = int(prev.get("runs", 0)) + 1
    reason = missing_reason(outcome, transcript.get("outcome_detail"))
    if kept is not None:
        reason = f"kept: {kept}"
    state = {
        "attempt": attempt,
        "runs": run,
        "failed": int(prev.get("failed", 0)) + (missing and outcome not in UNCHARGED),
        "max_attempts": max_attempts,
        "missing": missing,
        "retriable": retriable,
        "outcome": outcome,
        "outcome_detail": transcript.get("outcome_detail"),
        "stale": kept is not None,
        "history": list(prev.get("history", []))
        + [{"run": run, "attempt": attempt, "outcome": outcome, "reason": reason}],
    }
    if missing:
        keep = d / ATTEMPTS_DIR / str(run)
        keep.mkdir(parents=True, exist_ok=True)
        for name in ("transcript.json", "run_meta.json"):
            if (d / name).is_file():
                shutil.copy2(d / name, keep / name)
    write_json(d / ATTEMPTS_DIR / ATTEMPTS, state)
    return state


def next_attempt(state: dict, max_attempts: int) -> int:
    """The attempt number a trial's transcript job carries: the last attempt's + 1 while it is
    missing and has attempts left, or while it is a finished trial kept because a stage it needs
    failed (`stale`: its retry spends nothing until that stage works), else the last attempt's
    (no rerun)."""
    n = int(state["attempt"])
    if state.get("stale"):
        return n + 1
    if state.get("missing") and state.get("retriable", True) and int(state.get("failed", 0)) < max_attempts:
        return n + 1
    return n


def retry_attempts(runs="results/runs", max_attempts: int = DEFAULT_MAX_ATTEMPTS, retried: list | None = None) -> dict:
    """(model, host, tool, repo, scenario, trial as str) -> the attempt number of each trial with
    an attempts record whose number is not 1 (one glob; the files read are those trials' only).
    `retried`, when given, receives the keys of the trials this number reruns (missing ones with
    attempts left)."""
    out = {}
    for p in glob.glob(os.path.join(glob.escape(str(runs)), *["*"] * 6, ATTEMPTS_DIR, ATTEMPTS)):
        parts = Path(p).parts[-8:-2]
        try:
            state = json.loads(Path(p).read_text())
            a = next_attempt(state, max_attempts)
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if a > 1:
            out[tuple(parts)] = a
        if retried is not None and a > int(state["attempt"]):
            retried.append(tuple(parts))
    return out


# --- finished trials are never replaced by a placeholder ---------------------------------
# Snakemake deletes a job's outputs before it runs it, so a trial's transcript job that is
# rerun (an edited server, a retried checkout) cannot see the records it replaces. Each
# finished trial's records are therefore also hard-linked (no copy: the same file) into a tree
# beside runs/, `results/finished/<model>/<host>/<tool>/<repo>/<scenario>/<trial>/`, which no
# reader of runs/ sees; when a later run cannot run the trial (a stage it needs failed, the
# budget stopped it), the job links them back instead of writing a `not_run` record, byte for byte.

FINISHED_DIR = "finished"
RECORDS = ("transcript.json", "run_meta.json")


def finished_dir(trial_dir) -> Path:
    """Where a trial's finished records are kept: the same six folders under `finished/`
    beside the `runs/` folder (a trial folder outside a runs/ tree keeps them in its own
    `finished/`)."""
    d = Path(trial_dir)
    parts = d.absolute().parts
    if len(parts) > 7 and parts[-7] == "runs":
        return Path(*parts[:-7], FINISHED_DIR, *parts[-6:])
    return d / FINISHED_DIR


def keep_finished(trial_dir) -> None:
    """After a trial's records were written with an outcome that is not missing: link them
    into its finished folder, replacing an older finished trial's."""
    d = Path(trial_dir)
    keep = finished_dir(d)
    keep.mkdir(parents=True, exist_ok=True)
    for name in RECORDS:
        (keep / name).unlink(missing_ok=True)
        os.link(d / name, keep / name)


def restore_finished(trial_dir) -> dict | None:
    """The transcript of the finished trial kept in its finished folder, its records linked
    back in place; None (nothing touched) when there is none, or it is missing data."""
    d = Path(trial_dir)
    keep = finished_dir(d)
    try:
        transcript = json.loads((keep / "transcript.json").read_text())
    except (OSError, ValueError):
        return None
    if is_missing(transcript.get("outcome", "")) or not all((keep / n).is_file() for n in RECORDS):
        return None
    for name in RECORDS:
        (d / name).unlink(missing_ok=True)
        os.link(keep / name, d / name)
    return transcript
