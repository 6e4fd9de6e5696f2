"""State checks compare the runner's recorded output with the scenario's expect text."""

from matrix_helpers import filled_step as filled
from mcptrials.graders import state

SPEC = {"command": "git log -1 --format=%s", "expect": "fix: handle None"}


def grade_state(spec, record):
    return state.grade_state(filled(state_check=spec)["state_check"], record)


def test_contains_passes_and_fails():
    ok = grade_state(SPEC, {"command": SPEC["command"], "exit_code": 0, "output": "fix: handle None in parse\n"})
    assert ok["passed"] and ok["required"] and ok["exit_code"] == 0
    bad = grade_state(SPEC, {"command": SPEC["command"], "exit_code": 0, "output": "initial commit\n"})
    assert not bad["passed"] and "lacks" in bad["reason"]


def test_missing_record_fails():
    r = grade_state(dict(SPEC, required=False), None)
    assert not r["passed"] and r["required"] is False and "no state_check record" in r["reason"]
