"""API concurrency through the real workflow: the model-calling rule declares `api=1`, so
`--resources api=2` keeps at most 2 Messages-API requests in flight even at `-j 8`; without
the cap the same run has more. Rate-limit answers (429/529 with retry-after) are retried
inside the trial, which still completes. The test Messages-API server runs as its own
process and logs every request's arrival and end."""

import json

import pytest

from fakes.messages_api import error, reply, text, tool_use
from matrix_helpers import faulty_tool, write_matrix
from workflow_helpers import MessagesServer, copy_workflow, max_overlap, run_snakemake

TRIALS = 4  # x 2 tools = 8 trials: enough for 8 jobs to want to run at once


def test_max_overlap_hand_computed():
    # [0,2] [1,3] [2,4] [2.5,5]: at 2.5 the last three are open; [0,2] ends as [2,4] starts
    assert max_overlap([(0, 2), (1, 3), (2, 4), (2.5, 5)]) == 3
    assert max_overlap([(0, 1), (1, 2)]) == 1
    assert max_overlap([]) == 0


@pytest.mark.slow
def test_api_resource_caps_requests_in_flight(tmp_path):
    # Two rate-limit answers first (retried by the SDK after retry-after), then a tool call
    # and an answer per trial, each reply taking 0.4 s so that requests overlap.
    answer = reply(text("`helper` is defined at `src/util.py:1`; it returns x * 2."), delay=0.4)
    script = [error(429, retry_after=0.2), error(529, retry_after=0.1)]
    script += [reply(text("Searching."), tool_use("grep", {"pattern": "def helper"}), delay=0.4), answer] * 3 * TRIALS
    api = MessagesServer(tmp_path / "api", script + [answer], "--exhausted", "repeat")
    try:
        wd = tmp_path / "project"
        wd.mkdir()
        write_matrix(
            wd,
            tools={"baseline": {"transport": "none"}, "echo": faulty_tool("ok")},
            trials=TRIALS,
            extra={
                "models": {
                    "claude": {
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-6",
                        "base_url": api.url,
                        "max_retries": 3,
                    }
                }
            },
        )
        copy_workflow(wd)
        targets = [
            f"results/runs/claude/loop/{tool}/tiny/find-helper/{k}/transcript.json"
            for tool in ("baseline", "echo")
            for k in range(1, TRIALS + 1)
        ]

        run_snakemake(wd, *targets, "-j", "8", "--resources", "api=2")  # targets first: --resources takes a list
        capped = api.requests()
        transcripts = [json.loads((wd / t).read_text()) for t in targets]
        assert len(transcripts) == 2 * TRIALS >= 6
        assert {t["outcome"] for t in transcripts} == {"completed"}
        # the 429 and the 529 were retried inside trials that still completed
        assert sum(t["usage"]["retries"] for t in transcripts) == 2
        # both rate-limit answers were served (two requests in flight: either may be logged first)
        assert sorted(r["status"] for r in capped if r["status"] >= 400) == [429, 529]
        assert max_overlap([(r["arrived"], r["finished"]) for r in capped]) == 2

        # the same run without the cap: more than 2 at once, so the cap above did the work
        api.clear()
        run_snakemake(wd, "-j", "8", "--forcerun", "transcript", *targets)
        assert max_overlap([(r["arrived"], r["finished"]) for r in api.requests()]) > 2
    finally:
        api.stop()
