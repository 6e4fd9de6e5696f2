"""Provider `anthropic`: the real Messages API through the official SDK.

Retries on 408/409/429/5xx (529 included) are the SDK's own, which honour
`retry-after`; `max_retries` from the config caps them. Prompt caching: a breakpoint
on the system prompt, one on the last tool definition, and a moving one on the
newest message block, so each turn reads the previous turn's prefix from cache
(`cache_conversation=False`, for single-turn calls such as the judge's: the system
prompt only). A `reply_schema` is left to the prompt: the caller checks the reply.
No sampling parameters: API version 2026-10-21 (sent by anthropic 2.x) rejects
temperature/top_p/top_k with a 400, and the SDK no longer takes them.
"""

from __future__ import annotations

import copy
import functools
import os

from mcptrials.providers.base import Provider, ProviderError, Reply, Usage

EPHEMERAL = {"type": "ephemeral"}


def with_cache_breakpoints(system: list[dict], tools: list[dict], messages: list[dict], conversation: bool = True):
    """Copies of the request parts with cache_control set where caching pays: the system
    prompt, the last tool and (with `conversation`) the newest message block."""
    system = copy.deepcopy(system)
    tools = copy.deepcopy(tools)
    messages = copy.deepcopy(messages)
    if system:
        system[-1]["cache_control"] = EPHEMERAL
    if tools:
        tools[-1]["cache_control"] = EPHEMERAL
    if messages and conversation:
        content = messages[-1]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
            messages[-1]["content"] = content
        if content:
            content[-1]["cache_control"] = EPHEMERAL
    return system, tools, messages


@functools.lru_cache(maxsize=4)
def tls_context(cert_env: tuple[str | None, str | None]):
    """The TLS settings the SDK's HTTP client would build (its HTTP package's create_ssl_context,
    which reads `cert_env`: $SSL_CERT_FILE, $SSL_CERT_DIR), built once per process: loading the
    CA store costs ~20 ms of CPU a client. The warm worker builds it before forking its trials."""
    from anthropic import _base_client

    names = vars(_base_client)
    http = names.get("httpx2") or names["httpx"]  # the package the SDK speaks through (httpx2 in anthropic 2.x)
    return http.create_ssl_context()


def cert_env() -> tuple[str | None, str | None]:
    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


class AnthropicProvider(Provider):
    name = "anthropic"

    def __init__(
        self, model: str, api_key: str, base_url: str | None = None, max_retries: int = 4, timeout: float = 600
    ):
        import anthropic

        self._anthropic = anthropic
        self.model = model
        http_client = anthropic.DefaultAsyncHttpxClient(verify=tls_context(cert_env()))
        self.client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout, http_client=http_client
        )

    async def complete(
        self, system, messages, tools, max_tokens, *, reply_schema=None, cache_conversation=True
    ) -> Reply:
        # reply_schema: left to the prompt (the caller checks the reply); see Provider.complete.
        a = self._anthropic
        system, tools, messages = with_cache_breakpoints(system, tools, messages, cache_conversation)
        kwargs = dict(model=self.model, max_tokens=max_tokens, system=system, messages=messages)
        if tools:
            kwargs["tools"] = tools
        try:
            raw = await self.client.messages.with_raw_response.create(**kwargs)
            msg = await raw.parse()
        except a.APIStatusError as e:
            retried = e.status_code in (408, 409, 429) or e.status_code >= 500
            raise ProviderError(
                f"{e.status_code}: {_short(e)}", status=e.status_code, retries=self.client.max_retries if retried else 0
            ) from None
        except a.APIConnectionError as e:
            raise ProviderError(f"connection: {_short(e)}", retries=self.client.max_retries) from None
        except (a.APIResponseValidationError, ValueError) as e:  # ValueError: a body that is not JSON
            raise ProviderError(f"malformed response: {type(e).__name__}: {_short(e)}", retries=0) from None
        if not hasattr(msg, "usage"):  # a non-JSON content type parses to a plain str
            raise ProviderError(f"malformed response: expected a message, got {type(msg).__name__}", retries=0)
        u = msg.usage
        usage = Usage(
            input_tokens=u.input_tokens or 0,
            output_tokens=u.output_tokens or 0,
            cache_creation_input_tokens=getattr(u, "cache_creation_input_tokens", None) or 0,
            cache_read_input_tokens=getattr(u, "cache_read_input_tokens", None) or 0,
        )
        content = [
            b.model_dump(exclude_none=True, include={"type", "text", "id", "name", "input"})
            for b in msg.content
            if b.type in ("text", "tool_use")
        ]
        return Reply(
            content=content,
            stop_reason=msg.stop_reason or "end_turn",
            usage=usage,
            retries=getattr(raw, "retries_taken", 0),
        )

    async def aclose(self) -> None:
        await self.client.close()


def _short(e) -> str:
    return str(e).replace("\n", " ")[:300]
