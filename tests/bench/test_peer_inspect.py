"""bench/peer_inspect.py's arithmetic, hand-computed (the bench itself runs both harnesses: not here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("peer_inspect", Path(__file__).parents[2] / "bench" / "peer_inspect.py")
peer = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(peer)


def test_per_trial_and_marginal():
    # 96 trials in 32.4 CPU-s, 48 in 17.1: 0.3375 s a trial; a further trial (32.4 - 17.1) / 48 = 0.31875
    assert peer.per_trial(32.4, 96) == pytest.approx(0.3375)
    assert peer.marginal(32.4, 96, 17.1, 48) == pytest.approx(0.31875)
    with pytest.raises(ValueError):
        peer.marginal(1.0, 48, 1.0, 48)


def test_summary_takes_medians():
    # CPU at 96: 30, 33, 31 -> median 31 (0.32292 a trial); at 48: 16, 18, 17 -> 17; (31 - 17) / 48 = 0.29167
    at_n = [{"cpu": 30.0, "wall": 20.0, "own": 4.0}, {"cpu": 33.0, "wall": 19.0, "own": 5.0}]
    at_n.append({"cpu": 31.0, "wall": 25.0, "own": 6.0})
    at_m = [
        {"cpu": 16.0, "wall": 9.0, "own": 3.0},
        {"cpu": 18.0, "wall": 9.0, "own": 3.0},
        {"cpu": 17.0, "wall": 9.0, "own": 3.0},
    ]
    s = peer.summarize(at_n, 96, at_m, 48)
    assert s["cpu_per_trial"] == pytest.approx(31 / 96)
    assert s["marginal_cpu"] == pytest.approx(14 / 48)
    assert s["wall"] == 20.0
    # the top process alone: median 5 at 96 (0.05208 a trial), 3 at 48: (5 - 3) / 48 = 0.041667
    assert s["own_per_trial"] == pytest.approx(5 / 96) and s["own_marginal"] == pytest.approx(2 / 48)
    assert peer.ratio(0.3, 0.075) == pytest.approx(4.0)


def test_the_fake_answers_by_the_conversation():
    answer = peer.conversation_reply(0)
    first = answer({"messages": [{"role": "user", "content": "where?"}]})
    assert [b["type"] for b in first["content"]] == ["text", "tool_use"]
    result = [{"type": "tool_result", "tool_use_id": "t1", "content": "src/util.py:1:def helper(x):"}]
    second = answer({"messages": [{"role": "user", "content": result}]})
    assert second["content"] == [{"type": "text", "text": peer.ANSWER}]
    assert "delay" not in second and peer.conversation_reply(2)({"messages": []})["delay"] == 2
