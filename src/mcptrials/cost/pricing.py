"""The price of a run: the one place the cost formula lives (the runner reuses it)."""

from __future__ import annotations

from mcptrials.core.record_types import JudgedRecord, TranscriptRecord

CACHE_WRITE_FACTOR = 1.25  # 5-minute cache writes cost 1.25x base input (Anthropic prompt-caching pricing)
CACHE_READ_FACTOR = 0.10  # cache hits cost 0.1x base input (same source)


def _get(usage, key: str) -> int:
    value = usage.get(key, 0) if isinstance(usage, dict) else getattr(usage, key, 0)
    return int(value or 0)


def cost_usd(pricing: dict | None, model_id: str | None, usage) -> float | None:
    """USD for `usage` (a transcript usage dict or a providers.base.Usage) at `model_id`'s prices.

    cost = (input_tokens * input + cache_creation_input_tokens * cache_write
            + cache_read_input_tokens * cache_read + output_tokens * output) / 1e6
    with prices in USD per million tokens from the config's `pricing`; cache_write
    defaults to 1.25 x input and cache_read to 0.1 x input when absent. None (not 0)
    when the model has no pricing entry: an unknown cost must not look free.
    """
    if not pricing or not model_id or model_id not in pricing:
        return None
    p = pricing[model_id]
    cache_write = p.get("cache_write", CACHE_WRITE_FACTOR * p["input"])
    cache_read = p.get("cache_read", CACHE_READ_FACTOR * p["input"])
    total = (
        _get(usage, "input_tokens") * p["input"]
        + _get(usage, "cache_creation_input_tokens") * cache_write
        + _get(usage, "cache_read_input_tokens") * cache_read
        + _get(usage, "output_tokens") * p["output"]
    )
    return total / 1_000_000


def trial_cost(pricing: dict | None, transcript: TranscriptRecord) -> tuple[float | None, str | None]:
    """(cost, priced_as) of one trial from its transcript's recorded `usage` at today's `pricing`.

    Priced as the transcript's model id, else as the config's model name (a model without an
    id, or a table keyed by name); priced_as is the key used, None when neither has an entry
    (then cost is None: unknown, not free).
    """
    model_id = transcript.get("model_id")
    key = model_id if pricing and model_id in pricing else transcript["cell"]["model"]
    return cost_usd(pricing, key, transcript["usage"]), key if pricing and key in pricing else None


def judge_cost(pricing: dict | None, judged: JudgedRecord) -> float | None:
    """USD of one trial's judgements from judged.json's recorded `usage` at today's `pricing`.

    A judge that made no model call (the reference judge, or only empty answers) costs 0.0;
    otherwise cost_usd at the judge's model id (None when the pricing lacks it).
    """
    usage = judged["usage"]
    if judged["judge"]["provider"] == "reference" or usage["api_calls"] == 0:
        return 0.0
    return cost_usd(pricing, judged["judge"].get("model"), usage)
