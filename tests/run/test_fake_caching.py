"""The fake Messages API's prompt-caching emulation (tests/fakes/messages_api.py, PromptCache):
writes, reads, misses on a changed prefix, expiry, the minimum cacheable length, the
lookback, ttl 1h, the 4-breakpoint limit, and the same usage in JSON and SSE replies
through the real SDK."""

import anthropic
import pytest

from fakes.messages_api import LOOKBACK, PromptCache, block_tokens, min_cacheable_tokens, prompt_blocks, reply, text

CC = {"type": "ephemeral"}
LONG = "You answer questions about code. " * 200  # ~6,600 chars: ~1,650 tokens
TOOLS = [
    {
        "name": "grep",
        "description": "Search.",
        "input_schema": {"type": "object", "properties": {}},
        "cache_control": CC,
    }
]


class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def body(system=LONG, question="Where is helper?", model="claude-sonnet-4-6", **kw):
    b = {
        "model": model,
        "max_tokens": 100,
        "tools": TOOLS,
        "system": [{"type": "text", "text": system, "cache_control": CC}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": question, "cache_control": CC}]}],
    }
    b.update(kw)
    return b


def total(b):
    return sum(block_tokens(ident) for ident, _ in prompt_blocks(b))


def test_first_request_writes_identical_prefix_reads(fake_api):
    api = fake_api([reply(text("one")), reply(text("two"))], prompt_cache=True)
    client = anthropic.Anthropic(api_key="k", base_url=api.url, max_retries=0)
    b = body()
    kw = {k: v for k, v in b.items()}
    u1 = client.messages.create(**kw).usage
    assert u1.cache_read_input_tokens == 0 and u1.cache_creation_input_tokens == total(b) and u1.input_tokens == 0
    assert u1.cache_creation.ephemeral_5m_input_tokens == total(b)
    # the second turn: the same prefix and one more exchange; streamed this time
    kw["messages"] = [
        {"role": "user", "content": [{"type": "text", "text": "Where is helper?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "one"}]},
        {"role": "user", "content": [{"type": "text", "text": "And callers?", "cache_control": CC}]},
    ]
    with client.messages.stream(**kw) as s:
        u2 = s.get_final_message().usage
    assert u2.cache_read_input_tokens == total(b)  # the first turn's prefix, moved breakpoint included
    assert u2.cache_creation_input_tokens == total(dict(b, messages=kw["messages"])) - total(b)
    assert u2.input_tokens == 0
    logged = [r["reply"]["usage"] for r in api.message_requests()]
    assert logged[1]["cache_read_input_tokens"] == total(b)


def test_uncached_tail_after_the_last_breakpoint():
    cache = PromptCache(Clock())
    b = body()
    b["messages"][0]["content"] = [{"type": "text", "text": "Where is helper?"}]  # no breakpoint in messages
    u = cache.bill(b)
    tail = total(b) - total(dict(b, messages=[]))
    assert (u["cache_creation_input_tokens"], u["input_tokens"]) == (total(b) - tail, tail)


def test_changed_system_prompt_misses_but_tools_still_read():
    cache = PromptCache(Clock())
    cache.bill(body())
    u = cache.bill(body(system=LONG + " Be brief."))
    assert u["cache_read_input_tokens"] == 0  # the tools alone are below the minimum: never cached
    assert u["cache_creation_input_tokens"] == total(body(system=LONG + " Be brief."))
    # a large tool list is its own cache entry: a new system prompt still reads it
    big_tools = [{"name": "grep", "description": LONG, "input_schema": {"type": "object"}, "cache_control": CC}]
    cache.bill(body(tools=big_tools))
    u = cache.bill(body(system="Other.", tools=big_tools))
    assert u["cache_read_input_tokens"] == total({"tools": big_tools}) > 0


def test_changed_model_misses():
    cache = PromptCache(Clock())
    cache.bill(body())
    assert cache.bill(body(model="claude-sonnet-5"))["cache_read_input_tokens"] == 0


def test_expired_entry_misses_and_a_read_refreshes(fake_api):
    clock = Clock()
    api = fake_api([reply(text("x"))], exhausted="repeat", prompt_cache=True, clock=clock)
    client = anthropic.Anthropic(api_key="k", base_url=api.url, max_retries=0)
    b = body()
    n = total(b)
    assert client.messages.create(**b).usage.cache_creation_input_tokens == n
    clock.t += 299
    assert client.messages.create(**b).usage.cache_read_input_tokens == n  # read at 4:59, refreshed
    clock.t += 299
    assert client.messages.create(**b).usage.cache_read_input_tokens == n  # 4:59 after the refresh
    clock.t += 301
    u = client.messages.create(**b).usage
    assert u.cache_read_input_tokens == 0 and u.cache_creation_input_tokens == n


def test_ttl_1h_outlives_5m():
    clock = Clock()
    cache = PromptCache(clock)
    b = body()
    b["system"][0]["cache_control"] = {"type": "ephemeral", "ttl": "1h"}
    u = cache.bill(b)
    sys_part = total(dict(b, messages=[]))
    assert u["ephemeral_1h_input_tokens"] == sys_part and u["ephemeral_5m_input_tokens"] == total(b) - sys_part
    clock.t += 1800
    u = cache.bill(b)
    assert u["cache_read_input_tokens"] == sys_part and u["cache_creation_input_tokens"] == total(b) - sys_part


def test_prefix_below_minimum_is_not_cached():
    cache = PromptCache(Clock())
    b = body(system="Short system prompt.")
    assert total(b) < min_cacheable_tokens("claude-sonnet-4-6") == 1024
    for _ in range(2):
        u = cache.bill(b)
        assert (u["cache_read_input_tokens"], u["cache_creation_input_tokens"], u["input_tokens"]) == (0, 0, total(b))
    # the minimum is the model's: Opus 4.6 needs 4,096
    assert min_cacheable_tokens("claude-opus-4-6") == 4096 and min_cacheable_tokens("claude-opus-5") == 512
    u = cache.bill(body(model="claude-opus-4-6"))
    assert u["cache_creation_input_tokens"] == 0 and u["input_tokens"] == total(body())


def test_lookback_is_20_blocks():
    """The breakpoint moves forward; an entry more than 19 blocks before it is not found."""
    cache = PromptCache(Clock())
    base = body()
    msgs = [{"role": "user", "content": [{"type": "text", "text": "q0", "cache_control": CC}]}]
    cache.bill(dict(base, messages=msgs))
    old = total(dict(base, messages=msgs))

    def grown(n):
        blocks = [{"type": "text", "text": f"r{i}"} for i in range(n)]
        blocks[-1] = dict(blocks[-1], cache_control=CC)
        return [{"role": "user", "content": [{"type": "text", "text": "q0"}]}, {"role": "assistant", "content": blocks}]

    assert cache.bill(dict(base, messages=grown(LOOKBACK - 1)))["cache_read_input_tokens"] >= old
    # a fresh cache: 20 new blocks put the old breakpoint 20 back, outside the window;
    # the system breakpoint's own window still finds the system prefix
    cache = PromptCache(Clock())
    cache.bill(dict(base, messages=msgs))
    u = cache.bill(dict(base, messages=grown(LOOKBACK)))
    assert u["cache_read_input_tokens"] == total(dict(base, messages=[]))


def test_top_level_cache_control_and_the_4_breakpoint_limit(fake_api):
    cache = PromptCache(Clock())
    b = body()
    b["messages"][0]["content"] = "Where is helper?"
    b["cache_control"] = CC
    assert cache.bill(b)["cache_creation_input_tokens"] == total(b)
    api = fake_api([reply(text("x"))])
    client = anthropic.Anthropic(api_key="k", base_url=api.url, max_retries=0)
    five = body()  # tools, system and message breakpoints, and 2 more system blocks: 5
    five["system"] += [{"type": "text", "text": f"s{i}", "cache_control": CC} for i in range(2)]
    with pytest.raises(anthropic.BadRequestError, match="maximum of 4 blocks with cache_control.*Found 5"):
        client.messages.create(**five)
    assert api.script and api._next == 0  # the refused request took no script entry


def test_scripted_usage_wins():
    from fakes.messages_api import FakeMessagesAPI

    script = [reply(text("a"), usage={"input_tokens": 11}), reply(text("b"), usage={"output_tokens": 3})]
    with FakeMessagesAPI(script, prompt_cache=True) as api:
        client = anthropic.Anthropic(api_key="k", base_url=api.url, max_retries=0)
        u = client.messages.create(**body()).usage
        assert (u.input_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens) == (11, 0, 0)
        u = client.messages.create(**body()).usage  # output only scripted: the input side is emulated
        assert u.output_tokens == 3 and u.cache_read_input_tokens == total(body())


def test_off_by_default_and_on_in_a_separate_process(fake_api, tmp_path):
    import json
    import urllib.request

    from fakes.messages_api import spawn

    api = fake_api([reply(text("x"))], exhausted="repeat")
    client = anthropic.Anthropic(api_key="k", base_url=api.url, max_retries=0)
    for _ in range(2):
        u = client.messages.create(**body()).usage
        assert (u.cache_read_input_tokens, u.cache_creation_input_tokens) == (0, 0) and u.input_tokens > 0
    (tmp_path / "s.json").write_text(json.dumps([reply(text("x"))] * 2))
    proc, url = spawn(tmp_path / "s.json", tmp_path / "log.jsonl", tmp_path / "port.txt", "--prompt-cache")
    try:
        got = []
        for _ in range(2):
            req = urllib.request.Request(
                url + "/v1/messages", json.dumps(body()).encode(), {"content-type": "application/json"}
            )
            got.append(json.loads(urllib.request.urlopen(req, timeout=10).read())["usage"])
        assert got[0]["cache_creation_input_tokens"] == got[1]["cache_read_input_tokens"] == total(body())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_the_loops_breakpoints_read_the_whole_previous_request(tmp_path, fake_api, monkeypatch):
    """Our loop (providers/anthropic.py) through run_trial: once the prompt passes the minimum,
    every request reads all of the one before it and writes only what is new."""
    from fakes.messages_api import tool_use
    from matrix_helpers import faulty_tool, write_matrix
    from mcptrials.prepare.checkout import checkout
    from mcptrials.matrix.config import load_matrix
    from mcptrials.run.runner import run_trial

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-cache")
    calls = [reply(tool_use("mcp__faulty__big", {"chars": 6000}, id=f"toolu_{k}")) for k in range(3)]
    api = fake_api(calls + [reply(text("`helper` is at `src/util.py:1`."))], prompt_cache=True)
    extra = {
        "models": {
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
        }
    }
    m = load_matrix(write_matrix(tmp_path, tools={"faulty": faulty_tool("ok")}, extra=extra))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    t, _ = run_trial(m, "claude", "faulty", "find-helper", 1, co, None, None, tmp_path / "out")
    assert t["outcome"] == "completed", t["outcome_detail"]
    reqs = api.message_requests()
    assert len(reqs) == 4
    prompt = [total(r["body"]) for r in reqs]
    usage = [r["reply"]["usage"] for r in reqs]
    for k in range(1, 4):
        if prompt[k - 1] >= 1024:
            assert usage[k]["cache_read_input_tokens"] == prompt[k - 1]
            assert usage[k]["cache_creation_input_tokens"] == prompt[k] - prompt[k - 1]
        assert usage[k]["input_tokens"] == 0  # the breakpoint is on the newest block: nothing after it
    assert usage[3]["cache_read_input_tokens"] > 0
    assert t["usage"]["cache_read_input_tokens"] == sum(u["cache_read_input_tokens"] for u in usage)
