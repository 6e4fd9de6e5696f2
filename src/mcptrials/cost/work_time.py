"""Time as a cost: the agent's working seconds of a trial, recorded on its transcript (run.trial)
and compared by efficiency (grade.usage, analyze.aggregate)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def work_seconds(transcript: Mapping[str, Any]) -> float | None:
    """The agent's working time: what efficiency compares (aggregate), instead of wall time.

    work_seconds = sum of the steps' wall_seconds (each step's agent loop: model replies and
    tool calls), when the steps record them; else wall_seconds - server_startup_seconds.
    Left out either way: the server's start-up (a host pays it once per session, not per
    task; reported apart as server_startup_seconds) and the harness's own set-up and
    clean-up (sandbox, tools/list, server shutdown), which are the same for every task.
    Rounded to milliseconds, as wall_seconds is.
    """
    steps = [s.get("wall_seconds") for s in transcript.get("steps", [])]
    if steps and all(isinstance(v, (int, float)) for v in steps):
        return round(sum(steps), 3)
    wall = transcript.get("wall_seconds")
    if wall is None:
        return None
    return round(max(0.0, wall - (transcript.get("server_startup_seconds") or 0.0)), 3)
