"""The test fixtures against the real clients: the fake Messages API against the real
`anthropic` SDK, and the faulty MCP server against the real `mcp` client, mode by mode.
These tests also pin down how each fault surfaces through each client."""

import asyncio
import json
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anthropic
import anyio
import pydantic
import pytest
from mcp import Client, MCPError, StdioServerParameters, stdio_client

from fakes.messages_api import error, hang, malformed, reply, spawn, text, tool_use

TESTS = Path(__file__).parents[1]
FAULTY_SERVER = TESTS / "fixtures" / "faulty_mcp_server.py"
MODEL = "claude-sonnet-4-6"
KEY = "fake-key-test-key-must-never-be-logged"
HELLO = [{"role": "user", "content": "hello"}]


def sdk(api, **kwargs):
    return anthropic.Anthropic(api_key=KEY, base_url=api.url, **kwargs)


# ---------------------------------------------------------------- Messages API fake


def test_json_reply_and_request_log(fake_api):
    api = fake_api(
        [
            reply(
                text("Hi."),
                usage={
                    "input_tokens": 11,
                    "output_tokens": 3,
                    "cache_creation_input_tokens": 5,
                    "cache_read_input_tokens": 7,
                },
            )
        ]
    )

    async def call():
        async with anthropic.AsyncAnthropic(api_key=KEY, base_url=api.url) as client:
            return await client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)

    m = asyncio.run(call())
    assert [b.type for b in m.content] == ["text"] and m.content[0].text == "Hi."
    assert m.stop_reason == "end_turn" and m.model == MODEL
    u = m.usage
    assert (u.input_tokens, u.output_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens) == (11, 3, 5, 7)

    (rec,) = api.requests
    assert rec["path"] == "/v1/messages" and rec["status"] == 200 and rec["kind"] == "reply"
    assert rec["body"] == {"model": MODEL, "max_tokens": 100, "messages": HELLO}
    assert rec["auth_present"] is True and "authorization" not in rec["headers"]
    assert rec["headers"]["anthropic-version"]
    assert rec["arrived"] <= rec["finished"]
    # the handler logs just after its last byte, which the client may read first: wait a moment
    deadline = time.monotonic() + 2
    while not (api.log_path.exists() and api.log_path.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.01)
    log = api.log_path.read_text()
    assert json.loads(log)["body"] == rec["body"]
    assert KEY not in log


def test_streaming_events_follow_the_api(fake_api):
    """Raw SSE events in the API's order, and the SDK's stream helper rebuilds the message."""
    blocks = [
        text("Let me look at both files first, then answer."),
        tool_use("read_file", {"path": "src/a.py", "lines": [1, 40]}, id="toolu_01"),
    ]
    api = fake_api([reply(*blocks), reply(*blocks)])
    client = sdk(api)

    events = list(client.messages.create(model=MODEL, max_tokens=100, messages=HELLO, stream=True))
    types = [e.type for e in events]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert events[0].message.stop_reason is None and events[0].message.content == []
    assert [(e.index, e.content_block.type) for e in events if e.type == "content_block_start"] == [
        (0, "text"),
        (1, "tool_use"),
    ]
    assert types.count("content_block_stop") == 2
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert "text_delta" in deltas and "input_json_delta" in deltas
    assert events[-2].delta.stop_reason == "tool_use" and events[-2].usage.output_tokens > 0

    with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == blocks[0]["text"]
    assert (final.content[1].id, final.content[1].name, final.content[1].input) == (
        "toolu_01",
        "read_file",
        {"path": "src/a.py", "lines": [1, 40]},
    )
    assert final.stop_reason == "tool_use"


def test_beta_path_streams(fake_api):
    """Claude Code's form: POST /v1/messages?beta=true with stream: true. (The Python SDK's
    beta client posts to plain /v1/messages; Claude Code's TypeScript SDK adds ?beta=true.)"""
    api = fake_api([reply(text("beta ok"))])
    client = sdk(api)
    with client.beta.messages.stream(
        model=MODEL, max_tokens=50, messages=HELLO, extra_query={"beta": "true"}
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "beta ok"
    (rec,) = api.requests
    assert rec["path"] == "/v1/messages" and rec["query"] == "beta=true" and rec["body"]["stream"] is True


def test_two_tool_uses_without_text_must_both_be_answered(fake_api):
    api = fake_api(
        [
            reply(tool_use("grep", {"pattern": "def main"}), tool_use("list_files", {"glob": "*.py"})),
            reply(text("done")),
        ]
    )
    client = sdk(api)
    m = client.messages.create(model=MODEL, max_tokens=100, messages=HELLO)
    assert [b.type for b in m.content] == ["tool_use", "tool_use"] and m.stop_reason == "tool_use"
    ids = [b.id for b in m.content]
    assert len(set(ids)) == 2
    turn = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": [b.model_dump() for b in m.content]}]

    # Answering one of two tool_use blocks is a 400, as with the real API; no script entry is used.
    only_one = [{"type": "tool_result", "tool_use_id": ids[0], "content": "x"}]
    with pytest.raises(anthropic.BadRequestError, match="without `tool_result`"):
        client.messages.create(model=MODEL, max_tokens=100, messages=turn + [{"role": "user", "content": only_one}])

    both = [{"type": "tool_result", "tool_use_id": i, "content": "x"} for i in ids]
    m2 = client.messages.create(model=MODEL, max_tokens=100, messages=turn + [{"role": "user", "content": both}])
    assert m2.content[0].text == "done"
    assert [r["status"] for r in api.requests] == [200, 400, 200]


def test_final_reply_with_no_text_block(fake_api):
    api = fake_api([reply(stop_reason="end_turn")])
    m = sdk(api).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert m.content == [] and m.stop_reason == "end_turn"


def test_429_with_retry_after_is_retried_by_the_sdk(fake_api):
    api = fake_api([error(429, retry_after=0.3), reply(text("after retry"))])
    t0 = time.monotonic()
    raw = sdk(api, max_retries=2).messages.with_raw_response.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert time.monotonic() - t0 >= 0.3  # the SDK waited as told
    assert raw.retries_taken == 1 and raw.parse().content[0].text == "after retry"
    assert [r["status"] for r in api.requests] == [429, 200]
    assert [r["headers"]["x-stainless-retry-count"] for r in api.requests] == ["0", "1"]


@pytest.mark.parametrize(
    "status, exc",
    [(529, anthropic.OverloadedError), (500, anthropic.InternalServerError), (429, anthropic.RateLimitError)],
)
def test_status_faults_raise_typed_errors(fake_api, status, exc):
    api = fake_api([error(status)], exhausted="repeat")
    with pytest.raises(exc) as info:
        sdk(api, max_retries=1).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert info.value.status_code == status
    assert info.value.body["type"] == "error" and info.value.body["error"]["type"]
    assert len(api.requests) == 2  # the first try and one retry, both answered with the fault


def test_529_then_success_counts_a_retry(fake_api):
    api = fake_api([error(529, retry_after=0.05), reply(text("ok"))])
    raw = sdk(api, max_retries=2).messages.with_raw_response.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert raw.retries_taken == 1 and raw.parse().content[0].text == "ok"


def test_malformed_body_raises(fake_api):
    api = fake_api([malformed(), malformed(), malformed("text/html")])
    client = sdk(api, max_retries=0)
    # Declared JSON but not JSON: the SDK raises json's ValueError, not an anthropic error.
    with pytest.raises(json.JSONDecodeError):
        client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    with pytest.raises(json.JSONDecodeError):
        list(client.messages.create(model=MODEL, max_tokens=10, messages=HELLO, stream=True))
    # Not declared JSON: the SDK hands back the raw text instead of a Message (a caller must check).
    got = client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert isinstance(got, str) and "not JSON" in got


def test_delay_hang_and_max_in_flight(fake_api):
    api = fake_api([reply(text("slow"), delay=0.4)], exhausted="repeat")

    async def three_at_once():
        async with anthropic.AsyncAnthropic(api_key=KEY, base_url=api.url) as client:
            return await asyncio.gather(
                *[client.messages.create(model=MODEL, max_tokens=10, messages=HELLO) for _ in range(3)]
            )

    assert [m.content[0].text for m in asyncio.run(three_at_once())] == ["slow"] * 3
    # all three were served at once; a handler counts itself out just after its last byte,
    # which the client may read first: give the counter a moment under load
    deadline = time.monotonic() + 2
    while api.in_flight and time.monotonic() < deadline:
        time.sleep(0.01)
    assert api.max_in_flight == 3 and api.in_flight == 0

    hung = fake_api([hang()])
    with pytest.raises(anthropic.APITimeoutError):
        sdk(hung, max_retries=0, timeout=0.5).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert hung.in_flight == 1
    t0 = time.monotonic()
    hung.stop()  # releases the hanging handler
    assert time.monotonic() - t0 < 2


def test_a_held_entry_answers_once_released(fake_api, tmp_path):
    """`hold_until`: the request waits, and says so in `<path>.held`, until the file exists."""
    import threading

    release = tmp_path / "release"
    api = fake_api([dict(reply(text("released")), hold_until=str(release))])
    answers = []
    caller = threading.Thread(
        target=lambda: answers.append(
            sdk(api, max_retries=0).messages.create(model=MODEL, max_tokens=10, messages=HELLO)
        )
    )
    caller.start()
    while not Path(f"{release}.held").exists():  # the request reached the hold
        assert caller.is_alive(), f"answered without holding: {answers}"
        time.sleep(0.01)
    assert not answers and api.in_flight == 1  # held: no answer before the release
    release.touch()
    caller.join(timeout=30)
    assert answers[0].content[0].text == "released" and api.requests[0]["held"] is True
    assert Path(f"{release}.held").read_text() == "/v1/messages\n"


def test_callable_entry_and_exhausted_default(fake_api):
    def echo_tool_result(body):
        last = body["messages"][-1]["content"]
        return reply(text("tool said: " + last[0]["content"]))

    api = fake_api(
        [reply(tool_use("echo", {"text": "hi"}, id="toolu_e")), echo_tool_result], default_text="no more script"
    )
    client = sdk(api)
    first = client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    msgs = HELLO + [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_e", "content": "hi"}]},
    ]
    assert client.messages.create(model=MODEL, max_tokens=10, messages=msgs).content[0].text == "tool said: hi"
    after = client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    assert after.content[0].text == "no more script" and after.stop_reason == "end_turn"
    assert [r["script_index"] for r in api.requests] == [0, 1, None]


def test_count_tokens(fake_api):
    api = fake_api()
    n = sdk(api).messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": "x" * 400}])
    assert 100 <= n.input_tokens <= 130  # chars/4 of the JSON request
    assert api.requests[0]["kind"] == "count_tokens"


def test_cli_process_with_port_file(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([reply(tool_use("grep", {"pattern": "x"})), error(429, retry_after=0.05)]))
    log = tmp_path / "requests.jsonl"
    proc, url = spawn(script, log, tmp_path / "port.txt", "--exhausted", "repeat")
    try:
        client = anthropic.Anthropic(api_key=KEY, base_url=url, max_retries=1)
        assert client.messages.create(model=MODEL, max_tokens=10, messages=HELLO).content[0].name == "grep"
        with pytest.raises(anthropic.RateLimitError):  # the last entry repeats
            client.messages.create(model=MODEL, max_tokens=10, messages=HELLO)
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [r["status"] for r in lines] == [200, 429, 429]
    assert KEY not in log.read_text()


# ---------------------------------------------------------------- faulty MCP server


@asynccontextmanager
async def faulty(tmp_path, *args, env=None, read_timeout=5):
    """A real mcp client (mode auto) on the faulty server; its stderr goes to tmp_path/server.stderr."""
    params = StdioServerParameters(command=sys.executable, args=[str(FAULTY_SERVER), *args], env=env or {})
    with open(tmp_path / "server.stderr", "w") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog), mode="auto", read_timeout_seconds=read_timeout, cache=None
        ) as client:
            yield client


def leaves(exc):
    """The non-group exceptions inside an exception (group)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in leaves(e)]
    return [exc]


def test_ok_mode_falls_back_to_initialize_quickly(tmp_path):
    async def go():
        t0 = time.monotonic()
        async with faulty(tmp_path, "ok") as c:
            connect = time.monotonic() - t0
            assert c.protocol_version == "2025-11-25" and c.server_info.name == "faulty-mcp-server"
            assert c.instructions == "A test server in mode ok."
            assert [t.name for t in (await c.list_tools()).tools] == ["echo", "big", "fail"]
            r = await c.call_tool("echo", {"text": "hello"})
            assert (r.is_error, r.content[0].text) == (False, "hello")
            assert len((await c.call_tool("big", {"chars": 5000})).content[0].text) == 5000
            r = await c.call_tool("fail", {})
            assert r.is_error is True and "always fails" in r.content[0].text
            with pytest.raises(MCPError) as info:
                await c.call_tool("no_such_tool", {})
            assert info.value.code == -32602
            await c.session.send_ping()
            return connect

    assert anyio.run(go) < 3  # -32601 to server/discover: no 10 s probe timeout
    assert "notification notifications/initialized" in (tmp_path / "server.stderr").read_text()


def test_mode_from_env_var(tmp_path):
    async def go():
        async with faulty(tmp_path, env={"FAULT_MODE": "is_error"}) as c:
            return await c.call_tool("echo", {"text": "x"})

    r = anyio.run(go)
    assert r.is_error is True and "simulated failure" in r.content[0].text


def test_crash_at_start_surfaces_as_connection_closed(tmp_path):
    dump = tmp_path / "env.json"

    async def go():
        async with faulty(tmp_path, "crash_at_start", env={"FAULT_ENV_DUMP": str(dump)}):
            pass

    with pytest.raises(BaseExceptionGroup) as info:  # raised by Client.__aenter__, wrapped by anyio
        anyio.run(go)
    (err,) = leaves(info.value)
    assert isinstance(err, MCPError) and err.code == -32000 and "Connection closed" in str(err)
    assert "crashing at start" in (tmp_path / "server.stderr").read_text()
    assert dump.exists()  # the env dump happens in every mode, before anything else


def test_crash_during_call_closes_the_connection_for_good(tmp_path):
    async def go():
        async with faulty(tmp_path, "crash_during_call") as c:
            assert len((await c.list_tools()).tools) == 3
            codes = []
            for call in (c.call_tool("echo", {"text": "x"}), c.list_tools()):
                with pytest.raises(MCPError) as info:
                    await call
                codes.append(info.value.code)
            return codes

    assert anyio.run(go) == [-32000, -32000]
    assert "crashing during tools/call echo" in (tmp_path / "server.stderr").read_text()


def test_hang_times_out_and_the_session_stays_usable(tmp_path):
    async def go():
        async with faulty(tmp_path, "hang") as c:
            t0 = time.monotonic()
            with pytest.raises(MCPError) as info:
                await c.call_tool("echo", {"text": "x"}, read_timeout_seconds=1)
            waited = time.monotonic() - t0
            assert len((await c.list_tools()).tools) == 3  # still answers other requests
            return info.value, waited

    err, waited = anyio.run(go)
    assert err.code == -32001 and "timed out" in str(err)
    assert 0.9 <= waited < 3
    assert "notification notifications/cancelled" in (tmp_path / "server.stderr").read_text()


def test_slow_call_times_out_then_a_patient_call_succeeds(tmp_path):
    """The server sleeps 1.2 s per call, one call at a time. The first call gives up after
    0.4 s; its late answer is dropped, and the next call gets its own answer."""

    async def go():
        async with faulty(tmp_path, "slow", "--slow-seconds", "1.2") as c:
            with pytest.raises(MCPError) as info:
                await c.call_tool("echo", {"text": "first"}, read_timeout_seconds=0.4)
            t0 = time.monotonic()
            r = await c.call_tool("echo", {"text": "second"}, read_timeout_seconds=5)
            return info.value.code, r, time.monotonic() - t0

    code, r, waited = anyio.run(go)
    assert code == -32001
    assert (r.is_error, r.content[0].text) == (False, "second")
    assert waited >= 1.2


def test_garbage_lines_are_logged_and_skipped(tmp_path, caplog):
    async def go():
        async with faulty(tmp_path, "garbage") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            return names, await c.call_tool("echo", {"text": "through the noise"})

    with caplog.at_level("ERROR", logger="mcp.client.stdio"):
        names, r = anyio.run(go)
    assert names == ["echo", "big", "fail"] and r.content[0].text == "through the noise"
    assert any("Failed to parse JSONRPC message" in m for m in caplog.messages)


def test_huge_result_arrives_whole(tmp_path):
    async def go():
        async with faulty(tmp_path, "huge") as c:
            big = await c.call_tool("echo", {"text": "x"})
        async with faulty(tmp_path, "huge", "--huge-chars", "250000") as c:
            bigger = await c.call_tool("big", {})
        return big, bigger

    big, bigger = anyio.run(go)
    assert big.is_error is False and len(big.content[0].text) == 150_000
    assert big.content[0].text.startswith("line 000000:")
    assert len(bigger.content[0].text) == 250_000


def test_is_error_mode(tmp_path):
    async def go():
        async with faulty(tmp_path, "is_error") as c:
            return [await c.call_tool(n, {"text": "x"}) for n in ("echo", "big")]

    for r in anyio.run(go):
        assert r.is_error is True and r.content[0].text.startswith("Error executing tool")


def test_invalid_schema_breaks_tools_list_in_the_client(tmp_path):
    """The client validates tools/list with pydantic (inputSchema.type must be 'object'), so
    list_tools raises pydantic.ValidationError (a ValueError, not an MCPError). A call whose
    result is not an error also raises it: the client re-lists tools to check output schemas.
    A call answered with isError, or a JSON-RPC error, still gets through."""

    async def go():
        async with faulty(tmp_path, "invalid_schema") as c:
            with pytest.raises(pydantic.ValidationError) as listing:
                await c.list_tools()
            with pytest.raises(pydantic.ValidationError):
                await c.call_tool("echo", {"text": "x"})
            failed = await c.call_tool("fail", {})
            with pytest.raises(MCPError) as unknown:
                await c.call_tool("no_such_tool", {})
            return listing.value, failed, unknown.value

    listing, failed, unknown = anyio.run(go)
    assert isinstance(listing, ValueError) and not isinstance(listing, MCPError)
    assert "inputSchema.type" in str(listing)
    assert failed.is_error is True and unknown.code == -32602


def test_server_environment_holds_no_api_key(tmp_path, monkeypatch):
    """The mcp client passes a server only HOME, LOGNAME, PATH, SHELL, TERM, USER plus
    params.env; the dump proves ANTHROPIC_API_KEY set in this process does not get through."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    dump = tmp_path / "env.json"

    async def go():
        async with faulty(tmp_path, "ok", env={"FAULT_ENV_DUMP": str(dump)}) as c:
            await c.list_tools()

    anyio.run(go)
    env = json.loads(dump.read_text())
    assert "ANTHROPIC_API_KEY" not in env and KEY not in dump.read_text()
    # LC_CTYPE comes from the server's own interpreter (PEP 538 locale coercion), not the client.
    assert set(env) <= {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LC_CTYPE", "FAULT_ENV_DUMP"}
