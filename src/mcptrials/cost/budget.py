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

`mcptrials run-trial` (mcptrials.run.runner) **reserves** the most the trial can cost before it
starts (its upper bound from the limits and the pricing: costplan.upper_bound_usd), in one
locked read-and-append: when what is spent, plus what the trials in flight have reserved,
plus this reservation would pass the config's `budget.max_cost_usd`, the trial is not run
(outcome `not_run`, detail "budget: spent $S, reserved $R by trials in flight, of $X; this
trial may cost up to $B"). A trial that ran settles its reservation with its actual cost.
Why the bound and not the expected cost: only the bound holds the cap; trials in flight that
were each expected to fit can together pass it by whatever they cost beyond the expectation.
The price of it: near the cap fewer trials run at once, and a trial whose bound no longer fits
waits for a larger budget. A tighter bound (`budget.input_tokens_per_call`, the limits)
lets more run.

    {"kind": "reserve", "id": "<uuid>", "trial": "...", "reserve_usd": 0.0135, "at", "node", "pid"}
    {"trial": "...", "cost_usd": 0.0102, "settles": "<uuid>", ...}          # the settled cost

A reservation counts until it is settled, or until the same trial reserves again (a rerun:
the first attempt died), or its process is gone on this machine (a killed trial); on another
node it counts until settled or superseded.

A paid judge's calls are reserved with the trial: it reserves its own bound plus its judging's
(costplan.judge_upper_bound_usd), and when it ends it keeps the judging's part reserved under
`<trial>/judge` (`judge_key`) before it settles its own cost; `mcptrials judge` settles that
reservation with the judge's cost, or, judging again (a new judge or rubric), reserves anew
and refuses to call the judge when that no longer fits. A judge's reservation is not tied to
the trial's process (it outlives it), so it counts until settled or superseded.

Only trials of a model that calls an API are recorded (reference and recorded models spend
nothing and are never stopped); the ledger is written only when the config sets a budget.

This module imports nothing of mcptrials but the cost formula: config reads it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import uuid
from datetime import datetime, timezone
from pathlib import Path

from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import Cell, TranscriptRecord

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


def stop_detail(spent: float, cap: float, reserved: float = 0.0, expected: float | None = None) -> str:
    text = f"budget: spent ${spent:.4f}"
    if reserved:
        text += f", reserved ${reserved:.4f} by trials in flight,"
    text += f" of ${cap:.4f}"
    return text + (f"; this trial may cost up to ${expected:.4f}" if expected else "")


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
        return _parse(data)

    def spent(self) -> float:
        """USD of the trials that ended (records with an unknown cost count 0)."""
        return _spent(self.records())

    def reserved(self) -> float:
        """USD reserved by the trials in flight (see the module docstring for when one counts)."""
        return _open_reserved(self.records())

    def total(self) -> float:
        """USD spent so far plus what the trials in flight have reserved: what is committed."""
        recs = self.records()
        return _spent(recs) + _open_reserved(recs)

    def append(self, record: dict) -> None:
        fd = os.open(self._ensure(), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                _write(fd, record)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def reserve(self, trial: str, amount: float, cap: float) -> tuple[str | None, str | None]:
        """(reservation id, None), or (None, why not) when spent + reserved + amount > cap. The read
        and the append happen under one exclusive lock, so two trials never both take the last room."""
        fd = os.open(self._ensure(), os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                with os.fdopen(os.dup(fd), "rb") as f:
                    f.seek(0)
                    recs = _parse(f.read())
                spent = _spent(recs)
                reserved = _open_reserved([r for r in recs if r.get("trial") != trial])  # a rerun replaces its own
                if spent + reserved + amount > cap + 1e-12:
                    return None, stop_detail(spent, cap, reserved, amount)
                rid = uuid.uuid4().hex
                _write(fd, {"kind": "reserve", "id": rid, "trial": trial, "reserve_usd": amount})
                return rid, None
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def open_reservation(self, trial: str) -> str | None:
        """The id of `trial`'s newest reservation when it is not settled yet, else None."""
        recs = self.records()
        settled = {r.get("settles") for r in recs if r.get("settles")}
        mine = [r for r in recs if r.get("kind") == "reserve" and r.get("trial") == trial]
        return mine[-1]["id"] if mine and mine[-1]["id"] not in settled else None

    def _ensure(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path


def _parse(data: bytes) -> list[dict]:
    out = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn last line of a machine that died mid-write
        if isinstance(rec, dict):
            out.append(rec)
    return out


def _write(fd: int, record: dict) -> None:
    rec = dict(record)
    rec.setdefault("at", datetime.now(timezone.utc).isoformat(timespec="milliseconds"))
    rec.setdefault("node", socket.gethostname())
    rec.setdefault("pid", os.getpid())
    view = memoryview((json.dumps(rec, sort_keys=True, ensure_ascii=False) + "\n").encode())
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _spent(recs: list[dict]) -> float:
    return sum(float(r.get("cost_usd") or 0.0) for r in recs if r.get("kind") != "reserve")


def _alive(rec: dict) -> bool:
    """False for a reservation whose process is gone on this machine; True elsewhere (unknown)."""
    if rec.get("node") != socket.gethostname() or not rec.get("pid") or str(rec.get("trial", "")).endswith("/judge"):
        return True
    try:
        os.kill(int(rec["pid"]), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _open_reserved(recs: list[dict]) -> float:
    settled = {r.get("settles") for r in recs if r.get("settles")}
    last = {}
    for r in recs:  # the newest reservation of a trial is the one that counts
        if r.get("kind") == "reserve":
            last[r.get("trial")] = r
    return sum(float(r.get("reserve_usd") or 0.0) for r in last.values() if r["id"] not in settled and _alive(r))


def trial_key(cell: Cell) -> str:
    return TrialKey.of(cell).key


def judge_key(cell: Cell) -> str:
    """The ledger key of a trial's judging (reserved by the trial, settled by `mcptrials judge`)."""
    return trial_key(cell) + "/judge"


def ledger_record(pricing: dict, transcript: TranscriptRecord, settles: str | None = None) -> dict:
    """The ledger line of a finished trial: its cost from its recorded usage at the config's
    pricing, and the reservation it settles."""
    from mcptrials.cost.pricing import trial_cost

    cost, priced_as = trial_cost(pricing, transcript)
    rec = {
        "trial": trial_key(transcript["cell"]),
        "cell": transcript["cell"],
        "cost_usd": cost,
        "priced_as": priced_as,
        "outcome": transcript["outcome"],
    }
    return dict(rec, settles=settles) if settles else rec


def gate(
    config: dict, provider: str, out: Path, trial: str = "", expected: float | None = 0.0
) -> tuple[Ledger | None, str | None, str | None]:
    """(the ledger to settle in after the trial, or None; the reservation id; why the trial must
    not run, or None).

    None, None, None without a budget or for a model that spends nothing; else the ledger of
    the results folder of `out`, with `expected` (USD, the trial's upper bound; None, unknown:
    counted as 0, the plan refuses an unpriced model before any job) reserved for `trial`, or
    the detail of why not."""
    cap = budget_cap(config)
    if cap is None or (provider in FREE_PROVIDERS and not expected):  # a free model with a paid judge reserves
        return None, None, None
    ledger = Ledger(ledger_path(results_dir_of(out)))
    rid, stopped = ledger.reserve(trial, float(expected or 0.0), cap)
    return ledger, rid, stopped
