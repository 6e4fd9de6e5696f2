"""State checks: the runner ran the scenario's command in the workspace after the agent
finished and kept {command, exit_code, output} on the transcript's step; the check passes
when that output contains the scenario's `expect` text. A missing record fails."""

from __future__ import annotations


def grade_state(spec: dict, record: dict | None) -> dict:
    """{command, expect, required, passed, exit_code, output, reason} for one step."""
    out = {"command": spec["command"], "expect": spec["expect"], "required": spec["required"],
           "passed": False, "exit_code": None, "output": None}
    if not record:
        out["reason"] = "the transcript has no state_check record for this step (the run did not reach it)"
        return out
    output = record.get("output") or ""
    out.update(exit_code=record.get("exit_code"), output=output[-2000:], passed=spec["expect"] in output)
    out["reason"] = "output contains the expected text" if out["passed"] else "output lacks the expected text"
    return out
