"""The interface every provider implements, in Messages-API shapes throughout."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Usage:
    input_tokens: int = 0  # uncached input
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: "Usage") -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens


@dataclass
class Reply:
    """One assistant message: `content` is a list of Messages-API blocks
    ({"type": "text", "text"} and {"type": "tool_use", "id", "name", "input"})."""

    content: list[dict]
    stop_reason: str  # end_turn | tool_use | max_tokens | ...
    usage: Usage = field(default_factory=Usage)
    retries: int = 0


class ProviderError(Exception):
    """The model API failed for good (retries spent, or a non-retryable status)."""

    def __init__(self, message: str, status: int | None = None, retries: int = 0):
        super().__init__(message)
        self.status = status
        self.retries = retries


class Provider:
    name = "abstract"

    async def complete(
        self,
        system: list[dict],
        messages: list[dict],
        tools: list[dict],
        max_tokens: int,
        *,
        reply_schema: dict | None = None,
        cache_conversation: bool = True,
    ) -> Reply:
        """system: text blocks; messages: alternating user/assistant turns; tools: [{name, description, input_schema}].

        reply_schema: {"name", "schema"}: the reply's text must be one JSON object matching
        `schema` (a strict JSON schema: every object closes its properties and requires them
        all). A provider whose API can constrain the output to it does so (openai:
        `response_format` json_schema, strict); the others leave it to the prompt. The caller
        checks the reply in every case.
        cache_conversation: whether prompt caching should also cover the conversation (it
        pays in a multi-turn agent loop); False caches the fixed part (system, tools) only.
        Providers whose API caches by itself ignore it."""
        raise NotImplementedError

    async def aclose(self) -> None:
        pass
