"""Model providers: each turns (system, messages, tools) into one assistant reply.

`MODEL_PROVIDERS` names the providers that call a model API with a key (the agent loop's
models and the judge both use them); `reference` (the providers/reference/ package) is the
deterministic agent with no model and no key. A floor of their own, below `run` (the agent
loop, the hosts' usage records) and `judge` (the model judge), so neither reaches into the other.

May import: cost, prepare, matrix, core, stats (today: nothing of mcptrials but itself).
"""

from __future__ import annotations

from mcptrials.providers.base import Provider

MODEL_PROVIDERS = ("anthropic", "openai")


def create(provider: str, model: str, api_key: str, base_url: str | None, max_retries: int) -> Provider:
    """A model provider's client: `anthropic` (providers/anthropic.py) or `openai`
    (providers/openai.py). Raises ValueError for any other name."""
    if provider == "anthropic":
        from mcptrials.providers.anthropic import AnthropicProvider

        return AnthropicProvider(model, api_key, base_url=base_url, max_retries=max_retries)
    if provider == "openai":
        from mcptrials.providers.openai import OpenAIProvider

        return OpenAIProvider(model, api_key, base_url=base_url, max_retries=max_retries)
    raise ValueError(f"unknown model provider {provider!r}; use one of {', '.join(MODEL_PROVIDERS)}")
