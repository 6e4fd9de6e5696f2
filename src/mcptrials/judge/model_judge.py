"""The model judge (config `judge.provider`: `anthropic`, `openai`): a language model, called
only through the provider layer (mcptrials.providers: the same clients, retries, errors
and `Usage` as the agent loop's models), with the prompt of judge/prompt.py (its sha256 goes
into every record). A malformed reply gets one retry, then `JudgeError`; an API failure after
the provider's retries is a `JudgeError` too (the judged job fails, naming status and
retries), never a silent zero. The fixed system part is the cached prefix (anthropic: a cache
breakpoint on it only; openai caches prefixes by itself). No sampling parameters (API version
2026-10-21, sent by anthropic 2.x, rejects temperature with a 400; none is sent to openai
either): the judge's own noise is measured with `judge.repeats` instead.
"""

from __future__ import annotations

import os

from mcptrials.core.record_types import JudgedUsage
from mcptrials.judge.prompt import REPLY_FORMAT, MalformedReply, load_prompt, parse_reply, render_user
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.specs import JudgeSpec
from mcptrials.providers.base import ProviderError, Usage

NOTES = {
    "anthropic": (
        "API 2026-10-21 takes no temperature: the judge runs at the model's default "
        "sampling; its spread is measured by judge.repeats"
    ),
    "openai": (
        "no sampling parameters are sent: the judge runs at the model's default sampling; "
        "its spread is measured by judge.repeats"
    ),
}
MAX_TOKENS = JudgeSpec.MAX_TOKENS
MAX_RETRIES = 4  # the provider's retries per judge call (429/529/5xx, honouring retry-after)


class JudgeError(Exception):
    """The judge could not produce a valid score (never turned into a silent zero)."""


def judge_usage(
    usage: Usage, cost_usd: float | None, api_calls: int = 0, retries: int = 0, malformed_replies: int = 0
) -> JudgedUsage:
    """A judged.json `usage`: the tokens, the calls, retries and malformed replies they took, and their cost."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "api_calls": api_calls,
        "retries": retries,
        "malformed_replies": malformed_replies,
        "cost_usd": cost_usd,
    }


class ModelJudge:
    """A language-model judge through the provider layer: one client of
    `providers.create(spec.provider, ...)`; `score` judges one answer once (with one retry on
    a malformed reply). The API key is read from the env var and never stored elsewhere."""

    def __init__(self, spec: JudgeSpec, prompt_path):
        from mcptrials import providers

        key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        if not key:
            raise ConfigError(
                f"judge: provider {spec.provider} needs ${spec.api_key_env}; export it or set judge.provider: reference"
            )
        if not spec.model:
            raise ConfigError(
                f"judge.model: provider {spec.provider} needs a model id (e.g. "
                f"{'gpt-5.1' if spec.provider == 'openai' else 'claude-sonnet-4-6'}); add `model:` under `judge`"
            )
        self.spec = spec
        self.model = spec.model
        self.system, self.template = load_prompt(prompt_path)
        self.provider = providers.create(spec.provider, spec.model, key, spec.base_url, MAX_RETRIES)
        self.usage = Usage()
        self.api_calls = self.retries = self.malformed_replies = 0
        self.temperature = None
        self.note = NOTES[spec.provider]

    def usage_record(self, cost_usd: float | None) -> JudgedUsage:
        return judge_usage(self.usage, cost_usd, self.api_calls, self.retries, self.malformed_replies)

    async def _call(self, messages: list[dict]) -> tuple[str, str]:
        """One judge call; returns the reply's text and its stop reason."""
        try:
            # The fixed instructions are the cached prefix shared by every judge call.
            reply = await self.provider.complete(
                [{"type": "text", "text": self.system}],
                messages,
                [],
                MAX_TOKENS,
                reply_schema=REPLY_FORMAT,
                cache_conversation=False,
            )
        except ProviderError as e:
            status = f" with HTTP {e.status}" if e.status is not None else ""
            raise JudgeError(
                f"judge API call ({self.spec.provider} model {self.model}) failed{status} after "
                f"{e.retries} retr{'y' if e.retries == 1 else 'ies'}: {e}; the trial is not judged"
            ) from None
        self.api_calls += 1
        self.retries += reply.retries
        self.usage.add(reply.usage)
        return "".join(b.get("text", "") for b in reply.content if b.get("type") == "text"), reply.stop_reason

    async def score(self, step_prompt: str, criteria: list[dict], step: dict, answer: str) -> list[dict]:
        names = [c["name"] for c in criteria]
        messages = [{"role": "user", "content": render_user(self.template, step_prompt, criteria, step, answer)}]
        text, stop = await self._call(messages)
        try:
            return parse_reply(text, names)
        except MalformedReply as first:
            self.malformed_replies += 1
            cut = f" (it was cut at {MAX_TOKENS} output tokens: be brief)" if stop == "max_tokens" else ""
            messages += [
                {"role": "assistant", "content": text.strip() or "(no text)"},
                {
                    "role": "user",
                    "content": f"Your reply could not be used: {first}{cut}. Reply again with only the "
                    f"JSON object, one entry for each of: {', '.join(names)}.",
                },
            ]
        text, stop = await self._call(messages)
        try:
            return parse_reply(text, names)
        except MalformedReply as second:
            self.malformed_replies += 1
            cut = f" (cut at {MAX_TOKENS} output tokens)" if stop == "max_tokens" else ""
            raise JudgeError(
                f"judge model {self.model} gave a malformed reply twice (last: {second}{cut}); "
                f"the step is not scored. Reply began: {text[:200]!r}"
            ) from None

    async def aclose(self) -> None:
        await self.provider.aclose()
