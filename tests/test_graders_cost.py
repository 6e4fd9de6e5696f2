"""The cost formula against a hand-computed case."""

import pytest

from mcptrials.graders.cost import cost_usd
from mcptrials.providers.base import Usage

M = 1_000_000


def test_default_cache_prices():
    # 1M each: input 3 + cache write 1.25*3 + cache read 0.1*3 + output 15 = 22.05
    usage = {"input_tokens": M, "cache_creation_input_tokens": M, "cache_read_input_tokens": M,
             "output_tokens": M, "api_calls": 3, "cost_usd": None}
    assert cost_usd({"m": {"input": 3, "output": 15}}, "m", usage) == pytest.approx(22.05)


def test_explicit_prices_and_usage_object():
    pricing = {"m": {"input": 2, "output": 10, "cache_write": 4, "cache_read": 1}}
    u = Usage(input_tokens=500_000, output_tokens=100_000, cache_creation_input_tokens=250_000,
              cache_read_input_tokens=2 * M)
    # 0.5*2 + 0.1*10 + 0.25*4 + 2*1 = 5.0
    assert cost_usd(pricing, "m", u) == pytest.approx(5.0)


def test_unknown_model_is_none_not_zero():
    assert cost_usd({"m": {"input": 1, "output": 1}}, "other", {"input_tokens": 10}) is None
    assert cost_usd({}, "m", {"input_tokens": 10}) is None
    assert cost_usd({"m": {"input": 1, "output": 1}}, None, {}) is None
