"""Provider `openai`: the real `openai` SDK against the fake chat-completions server
(tests/fakes/openai_api.py), the Messages-API <-> chat-completions translation, usage and
cost, retries and faults, and a whole trial through the loop graded like any other."""

import asyncio
import json

import openai
import pytest

from host_helpers import started_apis
from fakes.openai_api import FakeOpenAIAPI, error, hang, malformed, reply, spawn, tool_call
from matrix_helpers import write_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.schema import validate_against
from mcptrials.cost.pricing import cost_usd
from mcptrials.grade.scoring import score_trial
from mcptrials.providers.base import ProviderError
from mcptrials.providers.openai import OpenAIProvider, to_openai_messages, usage_of
from mcptrials.run.runner import run_trial

KEY = "sk-openai-test-0123456789abcdef"


@pytest.fixture
def fake_openai(tmp_path):
    yield from started_apis(FakeOpenAIAPI, tmp_path, "openai")


def complete(provider, system, messages, tools, max_tokens=512):
    async def go():
        try:
            return await provider.complete(system, messages, tools, max_tokens)
        finally:
            await provider.aclose()

    return asyncio.run(go())


TOOLS = [
    {
        "name": "grep",
        "description": "search",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    },
    {"name": "read_file", "description": "read", "input_schema": {"type": "object"}},
]


def test_translation_by_hand():
    system = [{"type": "text", "text": "Be brief."}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Where?"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Searching."},
                {"type": "tool_use", "id": "a", "name": "grep", "input": {"pattern": "x"}},
                {"type": "tool_use", "id": "b", "name": "read_file", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "f.py:1", "is_error": False},
                {"type": "tool_result", "tool_use_id": "b", "content": "no such file", "is_error": True},
                {"type": "text", "text": "Next question."},
            ],
        },
    ]
    assert to_openai_messages(system, messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Where?"},
        {
            "role": "assistant",
            "content": "Searching.",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}},
                {"id": "b", "type": "function", "function": {"name": "read_file", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "f.py:1"},
        {"role": "tool", "tool_call_id": "b", "content": "Error: no such file"},
        {"role": "user", "content": "Next question."},
    ]


def test_usage_formula_by_hand():
    # prompt 1000 of which 300 read from cache and 100 written: uncached 600
    u = openai.types.CompletionUsage(
        prompt_tokens=1000,
        completion_tokens=50,
        total_tokens=1050,
        prompt_tokens_details={"cached_tokens": 300, "cache_write_tokens": 100},
    )
    got = usage_of(u)
    assert (got.input_tokens, got.cache_read_input_tokens, got.cache_creation_input_tokens, got.output_tokens) == (
        600,
        300,
        100,
        50,
    )
    # $2/M input, $8/M output, cache read 0.1 x input, cache write 1.25 x input:
    # (600*2 + 100*2.5 + 300*0.2 + 50*8) / 1e6 = (1200 + 250 + 60 + 400) / 1e6
    assert cost_usd({"gpt-x": {"input": 2.0, "output": 8.0}}, "gpt-x", got) == pytest.approx(1910 / 1e6)


def test_real_sdk_several_tool_calls_and_usage(fake_openai):
    api = fake_openai(
        [
            reply(
                "Two searches.",
                tool_call("grep", {"pattern": "helper"}, id="c1"),
                tool_call("read_file", {"path": "src/util.py"}, id="c2"),
                usage={"prompt_tokens": 120, "completion_tokens": 30, "cached_tokens": 20},
            ),
            reply("It is in `src/util.py:1`."),
        ]
    )
    p = OpenAIProvider("gpt-test", KEY, base_url=api.url, max_retries=0)
    r = complete(
        p, [{"type": "text", "text": "sys"}], [{"role": "user", "content": [{"type": "text", "text": "q"}]}], TOOLS
    )
    assert r.stop_reason == "tool_use"
    assert r.content == [
        {"type": "text", "text": "Two searches."},
        {"type": "tool_use", "id": "c1", "name": "grep", "input": {"pattern": "helper"}},
        {"type": "tool_use", "id": "c2", "name": "read_file", "input": {"path": "src/util.py"}},
    ]
    assert (r.usage.input_tokens, r.usage.cache_read_input_tokens, r.usage.output_tokens) == (100, 20, 30)
    body = api.completion_requests()[0]["body"]
    assert body["model"] == "gpt-test" and body["max_completion_tokens"] == 512
    assert body["tools"][0] == {
        "type": "function",
        "function": {"name": "grep", "description": "search", "parameters": TOOLS[0]["input_schema"]},
    }
    assert not {"temperature", "top_p", "max_tokens", "response_format"} & set(body)  # the agent's calls: free text
    assert api.completion_requests()[0]["auth_present"]


def test_bad_arguments_and_stop_reasons(fake_openai):
    api = fake_openai([reply(None, tool_call("grep", "{not json", id="x")), reply("cut", finish_reason="length")])
    p = OpenAIProvider("gpt-test", KEY, base_url=api.url, max_retries=0)
    r = complete(p, [], [{"role": "user", "content": "q"}], TOOLS)
    assert r.content == [{"type": "tool_use", "id": "x", "name": "grep", "input": {"_unparsed_arguments": "{not json"}}]
    p = OpenAIProvider("gpt-test", KEY, base_url=api.url, max_retries=0)
    assert complete(p, [], [{"role": "user", "content": "q"}], TOOLS).stop_reason == "max_tokens"


def test_retries_and_faults(fake_openai):
    api = fake_openai([error(429, retry_after=0), reply("ok")])
    r = complete(OpenAIProvider("m", KEY, base_url=api.url, max_retries=2), [], [{"role": "user", "content": "q"}], [])
    assert r.retries == 1 and r.content == [{"type": "text", "text": "ok"}]

    api = fake_openai([error(500)], exhausted="repeat")
    with pytest.raises(ProviderError) as e:
        complete(OpenAIProvider("m", KEY, base_url=api.url, max_retries=1), [], [{"role": "user", "content": "q"}], [])
    assert e.value.status == 500 and e.value.retries == 1 and len(api.completion_requests()) == 2

    api = fake_openai([malformed()])
    with pytest.raises(ProviderError, match="malformed"):
        complete(OpenAIProvider("m", KEY, base_url=api.url, max_retries=0), [], [{"role": "user", "content": "q"}], [])


def test_fake_server_streams_and_checks_pairing(fake_openai):
    """The fake itself: its SSE stream reassembles, through the real SDK, into the same reply;
    an unanswered tool call is a 400 as from the API."""
    api = fake_openai(
        [
            reply(
                "Looking.",
                tool_call("grep", {"pattern": "a" * 40}, id="s1"),
                tool_call("read_file", {}, id="s2"),
                usage={"prompt_tokens": 9, "completion_tokens": 4},
            )
        ]
    )
    client = openai.OpenAI(api_key=KEY, base_url=api.url, max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "q"}], stream=True, stream_options={"include_usage": True}
    )
    text, calls, usage, finish = "", {}, None, None
    for chunk in stream:
        usage = chunk.usage or usage
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
            for tc in ch.delta.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": tc.id, "name": tc.function.name, "args": ""})
                c["args"] += tc.function.arguments or ""
    assert text == "Looking." and finish == "tool_calls" and usage.prompt_tokens == 9
    assert [(c["id"], c["name"], json.loads(c["args"])) for c in calls.values()] == [
        ("s1", "grep", {"pattern": "a" * 40}),
        ("s2", "read_file", {}),
    ]
    with pytest.raises(openai.BadRequestError, match="s1"):
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "s1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}],
                },
                {"role": "user", "content": "again"},
            ],
        )
    client.close()


def test_fake_server_as_a_process(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps([reply("from a process")]))
    proc, url = spawn(tmp_path / "s.json", tmp_path / "log.jsonl", tmp_path / "port")
    try:
        client = openai.OpenAI(api_key=KEY, base_url=url, max_retries=0)
        out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        assert out.choices[0].message.content == "from a process"
        client.close()
    finally:
        proc.terminate()
        proc.wait(5)
    assert json.loads((tmp_path / "log.jsonl").read_text().splitlines()[0])["body"]["model"] == "m"


def matrix(tmp_path, url, key_env="MCPTRIALS_TEST_OPENAI_KEY"):
    cfg = write_matrix(
        tmp_path,
        extra={
            "models": {
                "gpt": {
                    "provider": "openai",
                    "model": "gpt-test",
                    "base_url": url,
                    "api_key_env": key_env,
                    "max_retries": 0,
                }
            },
            "pricing": {"gpt-test": {"input": 2.0, "output": 8.0}},
        },
    )
    m = load_matrix(cfg)
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    return m, co


def test_whole_trial_through_the_loop_is_graded(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("MCPTRIALS_TEST_OPENAI_KEY", KEY)
    api = fake_openai(
        [
            reply(
                "I will search and read.",
                tool_call("grep", {"pattern": "def helper"}, id="g"),
                tool_call("read_file", {"path": "src/util.py"}, id="r"),
            ),
            reply(
                "`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument.\n\n"
                "Feedback on the tools: grep found it at once.",
                usage={"prompt_tokens": 400, "completion_tokens": 40, "cached_tokens": 100},
            ),
        ]
    )
    m, co = matrix(tmp_path, api.url)
    t, meta = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out")
    validate_against("transcript.schema.yaml", t, "transcript")
    assert t["outcome"] == "completed" and t["provider"] == "openai" and meta["provider"] == "openai"
    assert [(c["id"], c["source"], c["is_error"]) for c in t["tool_calls"]] == [
        ("g", "builtin", False),
        ("r", "builtin", False),
    ]
    assert "return x * 2" in t["tool_calls"][1]["result_text"]
    assert t["steps"][0]["answer_text"].startswith("`helper` is defined at `src/util.py:1`")
    assert t["feedback_text"].startswith("Feedback on the tools")
    # the second request carried both tool results as `tool` messages, in order
    sent = api.completion_requests()[1]["body"]["messages"]
    assert [(x["role"], x.get("tool_call_id")) for x in sent[-2:]] == [("tool", "g"), ("tool", "r")]
    u = t["usage"]
    assert u["api_calls"] == 2 and u["cache_read_input_tokens"] == 100
    assert u["cost_usd"] == pytest.approx(cost_usd(m.config["pricing"], "gpt-test", u))
    sc = score_trial(
        t, m.scenarios["find-helper"].data, str(tmp_path / "repo"), m.repos["tiny"]["commit"], m.config["pricing"], None
    )
    assert sc["passed"] is True and sc["citations"]["counts"]["grounded"] >= 1


def test_api_failure_and_missing_key(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("MCPTRIALS_TEST_OPENAI_KEY", KEY)
    api = fake_openai([error(500)], exhausted="repeat")
    m, co = matrix(tmp_path, api.url)
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "api_failed" and t["errors"]["api_error"] == 1
    assert t["error_events"][0]["status"] == 500
    monkeypatch.delenv("MCPTRIALS_TEST_OPENAI_KEY")
    with pytest.raises(ConfigError, match=r"models.gpt.*MCPTRIALS_TEST_OPENAI_KEY"):
        run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out")


def test_default_key_variable_is_openais(tmp_path):
    cfg = write_matrix(
        tmp_path,
        extra={
            "models": {
                "gpt": {"provider": "openai", "model": "gpt-test"},
                "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
            }
        },
    )
    m = load_matrix(cfg)
    assert m.models["gpt"]["api_key_env"] == "OPENAI_API_KEY"
    assert m.models["claude"]["api_key_env"] == "ANTHROPIC_API_KEY"


def test_hang_is_bounded_by_the_trial_time_limit(tmp_path, fake_openai, monkeypatch):
    monkeypatch.setenv("MCPTRIALS_TEST_OPENAI_KEY", KEY)
    api = fake_openai([hang()])
    m, co = matrix(tmp_path, api.url)
    m.config["limits"]["max_seconds"] = 1
    t, _ = run_trial(m, "gpt", "baseline", "find-helper", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "timed_out"


def test_reply_schema_is_a_strict_response_format(fake_openai):
    """A `reply_schema` (the judge's) is sent as structured outputs; the fake checks it as the
    API does, so a schema the API would refuse fails here too."""
    from mcptrials.judge.prompt import REPLY_FORMAT

    api = fake_openai([reply('{"criteria": []}')])
    p = OpenAIProvider("gpt-test", KEY, base_url=api.url, max_retries=0)

    async def go():
        try:
            return await p.complete(
                [{"type": "text", "text": "Grade."}],
                [{"role": "user", "content": "q"}],
                [],
                64,
                reply_schema=REPLY_FORMAT,
                cache_conversation=False,
            )
        finally:
            await p.aclose()

    r = asyncio.run(go())
    assert r.content == [{"type": "text", "text": '{"criteria": []}'}]
    body = api.completion_requests()[0]["body"]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": REPLY_FORMAT["name"], "schema": REPLY_FORMAT["schema"], "strict": True},
    }
    assert api.completion_requests()[0]["status"] == 200


def test_fake_server_checks_response_format(fake_openai):
    """The fake answers a bad response_format with the API's 400 (message and param)."""
    api = fake_openai(exhausted="default")
    client = openai.OpenAI(api_key=KEY, base_url=api.url, max_retries=0)
    closed = {
        "type": "object",
        "additionalProperties": False,
        "required": ["a"],
        "properties": {"a": {"type": "string"}},
    }
    q = [{"role": "user", "content": "q"}]
    bad = [
        ({"type": "xml"}, "response_format.type", "Supported values are"),
        ({"type": "json_schema"}, "response_format.json_schema", "Missing required parameter"),
        ({"type": "json_schema", "json_schema": {"schema": closed}}, "response_format.json_schema.name", "Missing"),
        (
            {"type": "json_schema", "json_schema": {"name": "a b", "schema": closed}},
            "response_format.json_schema.name",
            "does not match pattern",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "array"}}},
            "response_format",
            "must be a JSON Schema of 'type: \"object\"'",
        ),
        (
            {
                "type": "json_schema",
                "json_schema": {"name": "s", "strict": True, "schema": dict(closed, additionalProperties=True)},
            },
            "response_format",
            "'additionalProperties' is required to be supplied and to be false",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "s", "strict": True, "schema": dict(closed, required=[])}},
            "response_format",
            "Missing 'a'",
        ),
        (
            {
                "type": "json_schema",
                "json_schema": {
                    "name": "s",
                    "strict": True,
                    "schema": dict(
                        closed,
                        properties={
                            "a": {"type": "array", "items": {"type": "object", "properties": {"b": {"type": "number"}}}}
                        },
                    ),
                },
            },
            "response_format",
            "context=('properties', 'a', 'items')",
        ),
        ({"type": "json_object"}, "messages", "must contain the word 'json'"),
    ]
    for rf, param, message in bad:
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="m", messages=q, response_format=rf)
        assert e.value.param == param and message in e.value.message, (rf, e.value.message)
    ok = [
        {"type": "text"},
        {"type": "json_schema", "json_schema": {"name": "s", "schema": closed, "strict": True}},
        {"type": "json_schema", "json_schema": {"name": "loose", "schema": {"type": "object"}}},
    ]
    for rf in ok:
        client.chat.completions.create(model="m", messages=q, response_format=rf)
    client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "Answer in JSON."}], response_format={"type": "json_object"}
    )
    assert [r["status"] for r in api.completion_requests()] == [400] * len(bad) + [200] * (len(ok) + 1)
