"""The cost formula against a hand-computed case."""

import pytest

from mcptrials.cost.pricing import cost_usd
from mcptrials.providers.base import Usage

M = 1_000_000


def test_default_cache_prices():
    # 1M each: input 3 + cache write 1.25*3 + cache read 0.1*3 + output 15 = 22.05
    usage = {
        "input_tokens": M,
        "cache_creation_input_tokens": M,
        "cache_read_input_tokens": M,
        "output_tokens": M,
        "api_calls": 3,
        "cost_usd": None,
    }
    assert cost_usd({"m": {"input": 3, "output": 15}}, "m", usage) == pytest.approx(22.05)


def test_explicit_prices_and_usage_object():
    pricing = {"m": {"input": 2, "output": 10, "cache_write": 4, "cache_read": 1}}
    u = Usage(
        input_tokens=500_000, output_tokens=100_000, cache_creation_input_tokens=250_000, cache_read_input_tokens=2 * M
    )
    # 0.5*2 + 0.1*10 + 0.25*4 + 2*1 = 5.0
    assert cost_usd(pricing, "m", u) == pytest.approx(5.0)


def test_unknown_model_is_none_not_zero():
    assert cost_usd({"m": {"input": 1, "output": 1}}, "other", {"input_tokens": 10}) is None
    assert cost_usd({}, "m", {"input_tokens": 10}) is None
    assert cost_usd({"m": {"input": 1, "output": 1}}, None, {}) is None


def _transcript(model_id, cell_model="sonnet", frozen=99.0):
    return {
        "model_id": model_id,
        "cell": {"model": cell_model},
        "usage": {
            "input_tokens": 1000,
            "output_tokens": 200,
            "cache_creation_input_tokens": 50,
            "cache_read_input_tokens": 300,
            "api_calls": 3,
            "cost_usd": frozen,
        },
    }


def test_trial_cost_from_usage_not_the_frozen_figure():
    from mcptrials.cost.pricing import trial_cost

    # (1000*3 + 50*3.75 + 300*0.3 + 200*15) / 1e6 = (3000 + 187.5 + 90 + 3000) / 1e6 = 0.0062775
    pricing = {"claude-sonnet-4-6": {"input": 3, "output": 15}}
    assert trial_cost(pricing, _transcript("claude-sonnet-4-6")) == (pytest.approx(0.0062775), "claude-sonnet-4-6")
    # keyed by the config's model name when the id has no entry
    assert trial_cost({"sonnet": {"input": 1, "output": 5}}, _transcript("x")) == (
        pytest.approx((1000 + 50 * 1.25 + 300 * 0.1 + 200 * 5) / M),
        "sonnet",
    )
    # no entry: unknown (None), never the transcript's frozen 99.0
    assert trial_cost({}, _transcript("claude-sonnet-4-6")) == (None, None)


def test_judge_cost_from_usage():
    from mcptrials.cost.pricing import judge_cost

    usage = {
        "input_tokens": 10_000,
        "output_tokens": 500,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "api_calls": 2,
        "cost_usd": 42.0,
    }
    judged = {"judge": {"provider": "anthropic", "model": "claude-haiku-4-5"}, "usage": usage}
    # (10000*1 + 500*5) / 1e6 = 0.0125
    assert judge_cost({"claude-haiku-4-5": {"input": 1, "output": 5}}, judged) == pytest.approx(0.0125)
    assert judge_cost({}, judged) is None
    assert judge_cost({}, {"judge": {"provider": "anthropic", "model": "m"}, "usage": dict(usage, api_calls=0)}) == 0.0
    assert judge_cost({}, {"judge": {"provider": "reference", "model": None}, "usage": usage}) == 0.0
