"""The Responses-API fake (tests/fakes/responses_api.py) against the real `openai` SDK: the
wire protocol as the SDK parses it, streamed and not, and its faults."""

import openai
import pytest

from fakes.responses_api import FakeResponsesAPI, error, failed, reply, tool_call


def client(api, retries=0):
    return openai.OpenAI(api_key="test", base_url=api.url, max_retries=retries)


def test_text_and_function_calls_streamed_and_not():
    script = [
        reply(
            "Let me look.",
            tool_call("echo", {"text": "hi"}, id="call_1", namespace="mcp__faulty"),
            usage={"input_tokens": 100, "output_tokens": 7, "cached_tokens": 60},
        ),
        reply("Done."),
    ]
    with FakeResponsesAPI(script) as api:
        c = client(api)
        with c.responses.stream(model="m", input="x") as stream:
            deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
            final = stream.get_final_response()
        assert "".join(deltas) == "Let me look." and final.output_text == "Let me look."
        (call,) = [o for o in final.output if o.type == "function_call"]
        assert (call.call_id, call.name, call.arguments) == ("call_1", "echo", '{"text": "hi"}')
        assert final.usage.input_tokens == 100 and final.usage.input_tokens_details.cached_tokens == 60
        r = c.responses.create(
            model="m",
            input=[
                {"type": "function_call", "call_id": "call_1", "name": "echo", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "hi"},
            ],
        )
        assert r.output_text == "Done." and r.status == "completed"
        assert api.response_requests()[0]["body"]["stream"] is True


def test_unpaired_call_output_is_a_400():
    with FakeResponsesAPI([]) as api:
        with pytest.raises(openai.BadRequestError, match="No tool call found"):
            client(api).responses.create(
                model="m", input=[{"type": "function_call_output", "call_id": "nope", "output": "x"}]
            )


def test_faults_retries_incomplete_and_failed():
    with FakeResponsesAPI(
        [error(429, retry_after=0), reply("ok"), reply("cut", incomplete=True), failed("broke")]
    ) as api:
        c = client(api, retries=1)
        assert c.responses.create(model="m", input="x").output_text == "ok"  # the SDK retried the 429
        r = c.responses.create(model="m", input="x")
        assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
        with c.responses.stream(model="m", input="x") as stream:
            kinds = [e.type for e in stream]
        assert kinds[-1] == "response.failed"
        assert [q["status"] for q in api.response_requests()] == [429, 200, 200, 200]
