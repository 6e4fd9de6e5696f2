"""The budget ledger: what the trials of one results folder have spent, shared by every job.

`results/budget/ledger.jsonl` holds one JSON line per trial that called a priced model
API, appended when the trial ends:

    {"trial": "claude/loop/git/demo/find-helper/2", "cell": {...}, "cost_usd": 0.0123,
     "priced_as": "claude-sonnet-4-6", "outcome": "completed", "at": "<UTC ISO time>",
     "node": "<hostname>", "pid": 1234}

Every append takes an exclusive `fcntl.flock` on the ledger file and writes the line in one
`write` (then fsync), every read takes a shared one, so concurrent trials on one machine, or
on the nodes of a cluster whose shared file system supports flock (NFS emulates it with
POSIX locks; Lustre needs the `flock` mount option), never see a torn or lost line. A line
that does not parse (only possible as the last line after a machine died mid-write) is
skipped, not fatal.

`mcptrials run-trial` (mcptrials.runner) reads the total before a trial: at or above the
config's `budget.max_cost_usd` the trial is not run (outcome `not_run`, detail
"budget: spent $S of $X"). The check and the append are not one transaction: trials that
start while the spend is just below the cap all run, so the spend can pass the cap by at
most the cost of the trials in flight at that moment (at most `--resources api=N` of them).

Only trials of a model that calls an API are recorded (reference and recorded models spend
nothing and are never stopped); the ledger is written only when the config sets a budget.

This module imports nothing of mcptrials but the cost formula: config reads it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

LEDGER = Path("budget") / "ledger.jsonl"  # under the results folder
FREE_PROVIDERS = ("reference", "recorded")  # spend nothing: cost 0, never stopped by the budget
NOT_RUN = "not_run"


def ledger_path(results: Path) -> Path:
    return Path(results) / LEDGER


def results_dir_of(out: Path) -> Path:
    """The results folder of a transcript path results/runs/<model>/<host>/<tool>/<repo>/
    <scenario>/<trial>/transcript.json (the workflow's layout); for any other path (a trial run
    by hand), the transcript's own folder."""
    out = Path(out)
    parents = out.parents
    if len(parents) > 7 and parents[6].name == "runs":
        return parents[7]
    return out.parent


def budget_cap(config: dict) -> float | None:
    """The config's `budget.max_cost_usd`, or None when no cap is set."""
    return (config.get("budget") or {}).get("max_cost_usd")


def stop_detail(spent: float, cap: float) -> str:
    return f"budget: spent ${spent:.4f} of ${cap:.4f}"


class Ledger:
    """The ledger file of one results folder (see the module docstring)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self) -> list[dict]:
        if not self.path.exists():
            return []
        with open(self.path, "rb") as f:
            fcntl.flock(f, fcntl.LOCK_SH)
            try:
                data = f.read()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        out = []
        for line in data.decode("utf-8", "replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line of a machine that died mid-write
            if isinstance(rec, dict):
                out.append(rec)
        return out

    def total(self) -> float:
        """USD spent so far (records with an unknown cost count 0)."""
        return sum(float(r.get("cost_usd") or 0.0) for r in self.records())

    def append(self, record: dict) -> None:
        rec = dict(record)
        rec.setdefault("at", datetime.now(timezone.utc).isoformat(timespec="milliseconds"))
        rec.setdefault("node", socket.gethostname())
        rec.setdefault("pid", os.getpid())
        line = (json.dumps(rec, sort_keys=True, ensure_ascii=False) + "\n").encode()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


def trial_key(cell: dict) -> str:
    return "/".join(str(cell[k]) for k in ("model", "host", "tool", "repo", "scenario", "trial"))


def ledger_record(pricing: dict, transcript: dict) -> dict:
    """The ledger line of a finished trial: its cost from its recorded usage at the config's pricing."""
    from .graders.cost import trial_cost

    cost, priced_as = trial_cost(pricing, transcript)
    return {"trial": trial_key(transcript["cell"]), "cell": transcript["cell"], "cost_usd": cost,
            "priced_as": priced_as, "outcome": transcript["outcome"]}


def gate(config: dict, provider: str, out: Path) -> tuple[Ledger | None, str | None]:
    """(the ledger to append to after the trial, or None; why the trial must not run, or None).

    None, None without a budget or for a model that spends nothing; else the ledger of the
    results folder of `out`, and the "budget: spent $S of $X" detail when its total has
    reached the cap."""
    cap = budget_cap(config)
    if cap is None or provider in FREE_PROVIDERS:
        return None, None
    ledger = Ledger(ledger_path(results_dir_of(out)))
    spent = ledger.total()
    return ledger, (stop_detail(spent, cap) if spent >= cap else None)
