"""The loop host's agent loop (mcptrials.run.hosts.loop), driven directly: a scripted provider
(our own Provider interface, no SDK) against the real built-in tools on a real checkout.

What each test pins: a step's turns and answer, the tool calls and results it records, and
each way a step ends early (max_turns, max_tokens, the model API failing, the step's time
limit with a tool still pending). The loop through the real SDKs and Claude Code is covered
by tests/run/test_model_host.py and the host tests; here nothing but the loop runs.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from matrix_helpers import write_matrix
from mcptrials.matrix.config import load_matrix
from mcptrials.prepare.checkout import checkout
from mcptrials.run.hosts.loop import Loop, result_text
from mcptrials.providers.base import Provider, ProviderError, Reply, Usage
from mcptrials.run.trial import Sandbox, TrialAbort, TrialContext, step_limits


class Scripted(Provider):
    """Replies in order; records what the loop sent each time."""

    name = "scripted"

    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = []

    async def complete(self, system, messages, tools, max_tokens, **kw):
        self.calls.append(
            {
                "messages": json.loads(json.dumps(messages)),
                "tools": [t["name"] for t in tools],
                "max_tokens": max_tokens,
            }
        )
        step = self.replies.pop(0)
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return await step()
        return step


def text(t, stop="end_turn", out=5):
    return Reply([{"type": "text", "text": t}], stop, Usage(input_tokens=10, output_tokens=out))


def use(name, args, id="t1", out=5, say=None):
    blocks = ([{"type": "text", "text": say}] if say else []) + [
        {"type": "tool_use", "id": id, "name": name, "input": args}
    ]
    return Reply(blocks, "tool_use", Usage(input_tokens=10, output_tokens=out))


@pytest.fixture
def ctx(tmp_path):
    m = load_matrix(write_matrix(tmp_path))
    co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], tmp_path / "co")
    made = []

    def make(**limits):
        sc = m.scenarios["find-helper"]
        c = TrialContext(
            m=m,
            model=m.specs.models["reference"],
            host=m.specs.hosts["loop"],
            tool=m.specs.tools["baseline"],
            scenario=sc,
            trial=1,
            limits=replace(step_limits(m, sc), **limits),
            snapshot=None,
            sandbox=Sandbox.create(co["tree"], None),
            out_dir=tmp_path / "out",
            system_text="sys",
            meta={},
        )
        made.append(c)
        return c

    yield make
    for c in made:
        c.sandbox.remove()


def run(c, provider):
    return asyncio.run(Loop(c, provider, None).run(c.system_text))


def test_a_tool_turn_then_the_answer(ctx):
    c = ctx()
    p = Scripted(
        [
            use("read_file", {"path": "src/util.py"}, say="Let me look."),
            text("helper is defined at src/util.py:1 and doubles x."),
        ]
    )
    assert run(c, p) == ("completed", None)
    (step,) = c.rec.steps
    assert step["turns"] == 2 and step["outcome"] == "completed"
    assert step["answer_text"] == "helper is defined at src/util.py:1 and doubles x."
    assert step["reasoning_text"] == "Let me look."  # text beside a tool call is not the answer
    (call,) = c.rec.tool_calls
    assert (call["source"], call["tool"], call["is_error"]) == ("builtin", "read_file", False)
    assert "def helper(x):" in call["result_text"] and call["result_chars"] == len(call["result_text"])
    # the result went back to the model in one user turn, answering the tool_use id
    second = p.calls[1]["messages"]
    assert second[-1]["role"] == "user" and second[-1]["content"][0]["tool_use_id"] == "t1"
    assert p.calls[0]["tools"] == ["read_file", "grep", "list_files"]  # the baseline: built-ins only
    assert c.rec.api_calls == 2 and c.rec.usage.output_tokens == 10


def test_an_unknown_tool_is_a_tool_error_the_model_sees(ctx):
    c = ctx()
    run(c, Scripted([use("no_such_tool", {}), text("done")]))
    (call,) = c.rec.tool_calls
    assert call["is_error"] is True and call["error_kind"] == "tool_error"
    assert c.rec.errors["tool_error"] == 1


def test_the_turn_limit_ends_the_step(ctx):
    c = ctx(max_turns=2)
    assert run(c, Scripted([use("list_files", {}, id="a"), use("list_files", {}, id="b"), text("never sent")])) == (
        "max_turns",
        None,
    )
    assert c.rec.steps[0]["turns"] == 2 and c.rec.api_calls == 2


def test_a_reply_cut_at_max_tokens_is_over_budget(ctx):
    c = ctx()
    assert run(c, Scripted([text("partial", stop="max_tokens")])) == ("budget_exceeded", None)
    assert c.rec.steps[0]["answer_text"] == "partial"


def test_the_output_token_limit_across_turns(ctx):
    c = ctx(max_output_tokens=8)
    assert run(c, Scripted([use("list_files", {}, out=9), text("never sent")])) == ("budget_exceeded", None)
    assert len(c.rec.tool_calls) == 1  # the call it asked for still ran


def test_the_model_api_failing_aborts_the_trial_as_api_failed(ctx):
    c = ctx()
    with pytest.raises(TrialAbort) as e:
        run(c, Scripted([ProviderError("503 overloaded", status=503, retries=3)]))
    assert e.value.outcome == "api_failed"
    assert c.rec.errors["api_error"] == 1 and c.rec.error_events[0]["status"] == 503
    assert c.rec.steps[0]["turns"] == 1  # the step is recorded all the same


def test_the_time_limit_ends_the_step_and_keeps_what_it_did(ctx):
    c = ctx(max_seconds=0.5)

    async def slow():
        await asyncio.sleep(5)

    assert run(c, Scripted([use("list_files", {}, id="p"), slow])) == ("timed_out", None)
    step = c.rec.steps[0]
    assert step["outcome"] == "timed_out" and step["turns"] == 2 and step["wall_seconds"] < 5
    assert len(c.rec.tool_calls) == 1  # the finished call is kept
    # the conversation on record ends on the answered tool call, not on a dangling tool_use
    assert c.rec.messages[-1]["role"] == "user" and c.rec.messages[-1]["content"][0]["tool_use_id"] == "p"


def test_result_text_renders_every_block_kind():
    blocks = [
        SimpleNamespace(type="text", text="a"),
        SimpleNamespace(type="resource", resource=SimpleNamespace(text=None, uri="file:///x")),
        SimpleNamespace(type="image"),
    ]
    assert result_text(SimpleNamespace(content=blocks)) == "a\n[resource file:///x]\n[image content]"
    assert result_text(SimpleNamespace(content=[], structured_content={"n": 1})) == '{"n": 1}'
