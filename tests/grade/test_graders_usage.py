"""Efficiency figures and adoption from a hand-built transcript."""

import pytest

from mcptrials.cost.work_time import work_seconds
from mcptrials.grade.usage import adoption, efficiency


def call(step, turn, tool, source, latency=10.0, chars=100, error=None, name=None):
    return {
        "id": f"c{step}{turn}{tool}",
        "step": step,
        "turn": turn,
        "name": name or (f"mcp__git__{tool}" if source == "mcp" else tool),
        "tool": tool,
        "source": source,
        "arguments": {},
        "result_text": "",
        "result_chars": chars,
        "truncated": False,
        "is_error": error is not None,
        "error_kind": error,
        "latency_ms": latency,
        "result_tokens_est": chars // 4,
    }


def transcript(calls, tool="git", turns=(2, 3)):
    return {
        "cell": {"model": "m", "host": "loop", "tool": tool, "repo": "r", "scenario": "s", "trial": 1},
        "model_id": "claude-x",
        "outcome": "completed",
        "steps": [
            {
                "index": i,
                "name": f"s{i}",
                "prompt": "",
                "answer_text": "",
                "audit_text": "",
                "outcome": "completed",
                "turns": t,
                "wall_seconds": 1.5 * (i + 1),
            }
            for i, t in enumerate(turns)
        ],
        "tool_calls": calls,
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 200,
            "cache_creation_input_tokens": 3000,
            "cache_read_input_tokens": 9000,
            "api_calls": 5,
            "retries": 0,
            "cost_usd": 0.5,
        },
        "wall_seconds": 4.5,
    }


CALLS = [
    call(0, 1, "grep", "builtin"),
    call(0, 2, "git_log", "mcp", latency=10, chars=100),
    call(1, 1, "git_log", "mcp", latency=30, chars=50, error="tool_error"),
    call(1, 2, "git_show", "mcp", latency=5, chars=0, error="protocol_error"),
    call(1, 3, "read_file", "builtin"),
]


def test_adoption_hand_case():
    sc = {
        "steps": [
            {"name": "a", "expected_tools": ["mcp__git__git_log", "grep"]},
            {"name": "b", "expected_tools": ["git_diff", "git_show"]},
        ]
    }
    a = adoption(transcript(CALLS), sc)
    assert a["mcp_calls"] == 3 and a["builtin_search_calls"] == 1  # read_file is not a search call
    assert a["tool_fluency"] == pytest.approx(0.75)
    assert a["discoverability"] == {
        "window_turns": 3,
        "first_server_call_turn": 2,
        "used_within_window": True,
        "distinct_server_tools": 2,
        "server_tools_used": ["git_log", "git_show"],
    }
    assert a["tool_error_rate"] == pytest.approx(2 / 5)
    assert a["tool_errors"] == {"tool_error": 1, "protocol_error": 1, "harness_error": 0}
    assert a["per_tool"]["git_log"] == {
        "calls": 2,
        "errors": 1,
        "median_latency_ms": 20.0,
        "mean_result_chars": 75.0,
        "max_result_chars": 100,
    }
    # precision = expected tools called / distinct tools called; recall = expected called / expected
    assert a["expected_tools"] == [
        {
            "index": 0,
            "expected": ["mcp__git__git_log", "grep"],
            "called": ["grep", "mcp__git__git_log"],
            "used": ["mcp__git__git_log", "grep"],
            "missing": [],
            "unexpected": [],
            "precision": 1.0,
            "recall": 1.0,
        },
        {
            "index": 1,
            "expected": ["git_diff", "git_show"],
            "called": ["mcp__git__git_log", "mcp__git__git_show", "read_file"],
            "used": ["git_show"],
            "missing": ["git_diff"],
            "unexpected": ["git_log", "read_file"],
            "precision": pytest.approx(1 / 3),
            "recall": 0.5,
        },
    ]


def test_expected_tools_empty_means_any_call_is_unexpected():
    """`expected_tools: []` (the answer is in the prompt): precision 0 when a tool was called,
    null when none was; recall null (nothing to recall)."""
    sc = {"steps": [{"name": "a", "expected_tools": []}, {"name": "b", "expected_tools": []}]}
    a = adoption(transcript([call(0, 1, "git_log", "mcp")]), sc)["expected_tools"]
    assert (a[0]["precision"], a[0]["recall"], a[0]["unexpected"]) == (0.0, None, ["git_log"])
    assert (a[1]["called"], a[1]["precision"], a[1]["recall"]) == ([], None, None)


def test_discovery_counts_turns_across_steps():
    # step 0 has 2 turns, so step 1's turn 2 is the trial's 4th model call
    late = [call(0, 1, "grep", "builtin"), call(1, 2, "git_log", "mcp")]
    d = adoption(transcript(late))["discoverability"]
    assert d["first_server_call_turn"] == 4 and d["used_within_window"] is False
    assert adoption(transcript(late), window=4)["discoverability"]["used_within_window"] is True


def test_baseline_and_no_calls():
    base = adoption(transcript([call(0, 1, "grep", "builtin")], tool="baseline"))
    assert base["tool_fluency"] == 0.0 and base["discoverability"]["used_within_window"] is None
    none = adoption(transcript([]))
    assert none["tool_fluency"] is None and none["tool_error_rate"] is None
    assert none["discoverability"]["used_within_window"] is False


def test_efficiency_figures():
    t = transcript(CALLS)
    e = efficiency(t, {"claude-x": {"input": 3, "output": 15}})
    assert e["tokens"] == {
        "input_uncached": 1000,
        "cache_write": 3000,
        "cache_read": 9000,
        "output": 200,
        "total": 13200,
    }
    # (1000*3 + 3000*3.75 + 9000*0.3 + 200*15) / 1e6
    assert e["cost_usd"] == pytest.approx(0.01995) and e["priced_as"] == "claude-x"
    assert (e["turns"], e["api_calls"], e["tool_calls"], e["tool_calls_mcp"], e["tool_calls_builtin"]) == (
        5,
        5,
        5,
        3,
        2,
    )
    assert e["wall_seconds"] == 4.5
    assert e["steps"] == [
        {"index": 0, "turns": 2, "wall_seconds": 1.5, "tool_calls": 2},
        {"index": 1, "turns": 3, "wall_seconds": 3.0, "tool_calls": 3},
    ]
    assert efficiency(t, {"other": {"input": 1, "output": 1}})["cost_usd"] is None
    kept = efficiency(t, None)
    assert kept["cost_usd"] == 0.5 and kept["priced_as"] == "transcript"


def test_work_seconds_leaves_server_start_up_out():
    # the steps' own wall time when they record it: 0.2 + 0.3 of a 1.5 s trial whose server took 0.8 s to start
    t = {"wall_seconds": 1.5, "server_startup_seconds": 0.8, "steps": [{"wall_seconds": 0.2}, {"wall_seconds": 0.3}]}
    assert work_seconds(t) == 0.5
    # steps without times (an older host): wall minus start-up, 1.5 - 0.8
    assert work_seconds({"wall_seconds": 1.5, "server_startup_seconds": 0.8, "steps": [{"index": 0}]}) == 0.7
    assert work_seconds({"wall_seconds": 1.5, "steps": []}) == 1.5  # no server: no start-up
    assert work_seconds({"wall_seconds": None, "steps": []}) is None
    base = transcript([], turns=(2, 3))  # its steps record 1.5 s and 3.0 s
    eff = efficiency({**base, "wall_seconds": 5.0, "server_startup_seconds": 0.4}, None)
    assert (eff["wall_seconds"], eff["server_startup_seconds"], eff["work_seconds"]) == (5.0, 0.4, 4.5)


def test_a_trials_expected_tools_means_leave_null_steps_out():
    """trial_rows.expected_tools_means by hand: precision (1 + 0) / 2, recall 0.5 / 1."""
    from mcptrials.analyze.trial_rows import expected_tools_means

    ad = {
        "expected_tools": [
            {"precision": 1.0, "recall": 0.5},
            {"precision": None, "recall": None},
            {"precision": 0.0, "recall": None},
        ]
    }
    assert expected_tools_means(ad) == {"expected_tools_precision": 0.5, "expected_tools_recall": 0.5}
    assert expected_tools_means({"expected_tools": []}) == {
        "expected_tools_precision": None,
        "expected_tools_recall": None,
    }
