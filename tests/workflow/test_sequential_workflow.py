"""Issue 36, done when: a run in waves (`trials: {min: 2, max: 8, until: decided}`) against the
test Messages API, scripted so that one tool is clearly better than the baseline, one equal and
one worse, stops the clearly different tools before max and runs the equal one to max (or to
equivalent); its report and summary.json say why each stopped and what was not spent; rerunning
plans nothing. The real workflow, with its checkpoints (workflow/rules/sequential.smk)."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from fakes.messages_api import FakeMessagesAPI, reply, text
from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from workflow_helpers import copy_workflow, planned, run_snakemake

# What the scripted model answers, by the tools it is offered (a server's tools are named
# mcp__<tool>__<name>): the full answer with its citation, half of it, or nothing useful.
FULL = "`helper` is defined at `src/util.py:1`; helper doubles its argument: it returns `x * 2`."
HALF = "helper is defined in src/util.py."
NONE = "I could not find it."
ANSWERS = {"good": FULL, "same": HALF, "bad": NONE}


def answer(body: dict) -> dict:
    offered = json.dumps(body.get("tools") or [])
    tool = next((t for t in ANSWERS if f"mcp__{t}__" in offered), None)
    return reply(text(ANSWERS.get(tool, HALF)), stop_reason="end_turn")


@pytest.mark.slow
def test_waves_stop_the_clear_tools_early_and_say_why(tmp_path):
    scenarios = {f"find-{i}": dict(copy.deepcopy(SCENARIO), title=f"Find the helper ({i})") for i in range(4)}
    with FakeMessagesAPI([answer], exhausted="repeat") as api:
        write_matrix(
            tmp_path,
            tools={"baseline": {"transport": "none"}, **{t: faulty_tool("ok") for t in ANSWERS}},
            scenarios=scenarios,
            extra={
                "models": {
                    "claude": {
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-6",
                        "base_url": api.url,
                        "max_retries": 0,
                    }
                },
                "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
                "trials": {"min": 2, "max": 8, "until": "decided"},
            },
        )
        copy_workflow(tmp_path)
        before = planned(tmp_path)
        assert before["decide"] == 1 and before["transcript"] == 4 * 4 * 2  # wave 1, then the checkpoint
        p = run_snakemake(tmp_path, "-j2", timeout=1800)
        assert "wave 1 of at most 7 planned" in p.stderr
        summary = json.loads((tmp_path / "results" / "aggregate" / "summary.json").read_text())
        seq = summary["sequential"]
        by = {r["tool"]: r for r in seq["tools"]}
        print(
            "\n"
            + "\n".join(
                f"{t}: {r['stopped']} after {r['trials']} trials, [{r['lo']}, {r['hi']}], "
                f"not spent {r['unspent_trials']} trials ${r['unspent_usd']}"
                for t, r in by.items()
            )
        )
        assert by["good"]["stopped"] == "decided: better" and by["good"]["trials"] < 8
        assert by["bad"]["stopped"] == "decided: worse" and by["bad"]["trials"] < 8
        assert by["same"]["stopped"] in ("max", "decided: equivalent")
        assert by["same"]["trials"] == 8 or by["same"]["stopped"] == "decided: equivalent"
        assert by["baseline"]["trials"] == max(r["trials"] for r in seq["tools"])
        for t in ("good", "bad"):  # what max would have run beyond: priced, not free
            assert by[t]["unspent_trials"] == (8 - by[t]["trials"]) * 4 and by[t]["unspent_usd"] > 0
        assert seq["unspent_usd"] == pytest.approx(sum(r["unspent_usd"] for r in seq["tools"]))
        # the trials the waves ran, and no other, are in the tables
        ran = {t: sum(1 for r in summary["trials"] if r["tool"] == t) for t in by}
        assert ran == {t: 4 * r["trials"] for t, r in by.items()}
        report = (tmp_path / "results" / "report" / "report.md").read_text()
        assert "## Trials in waves: where each tool stopped" in report and "decided: better" in report
        assert "The sequential verdict is about these scenarios and their trials" in report
        waves = sorted((tmp_path / "results" / "sequential" / "claude").glob("wave-*.json"))
        assert json.loads(waves[-1].read_text())["done"]
        assert planned(tmp_path) == {}, "a finished run in waves plans nothing"
        # a rubric change re-judges every wave and decides again from the new scores
        sc = tmp_path / "scenarios" / "find-0.yaml"
        data = yaml.safe_load(sc.read_text())
        data["rubric"]["criteria"][0]["question"] = "Does it say exactly where helper is defined?"
        sc.write_text(yaml.safe_dump(data, sort_keys=False))
        decided_at = {w: w.stat().st_mtime_ns for w in waves}
        again = planned(tmp_path)
        assert again["judged"] == 4 * 2 and again["decide"] == 1  # wave 1 first; the checkpoint brings the rest
        run_snakemake(tmp_path, "-j2", timeout=1800)
        rejudged = [
            json.loads(p.read_text())
            for p in (tmp_path / "results" / "runs" / "claude" / "loop" / "baseline").glob("*/find-0/*/judged.json")
        ]
        assert len(rejudged) == by["baseline"]["trials"]
        assert all(w.stat().st_mtime_ns > t for w, t in decided_at.items()), "every wave decided again"
        assert planned(tmp_path) == {}
