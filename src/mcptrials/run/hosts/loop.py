"""Host `loop`: the harness's own agent loop, for any provider.

The model gets the server's live tools/list (named `mcp__<tool>__<name>`, reduced to what
the Messages API accepts) plus the built-in read_file/grep/list_files. A scenario's steps
are successive user turns of one conversation; every tool_use block of a reply is run in
order and all results go back in one user turn. Limits per step: max_turns,
max_output_tokens, max_seconds; every tool result is capped at max_result_tokens.
"""

from __future__ import annotations

import asyncio
import json
import time
import traceback

from mcptrials.providers.base import Provider, ProviderError
from mcptrials.prepare.tooldefs import CHARS_PER_TOKEN, tool_definitions
from mcptrials.run.trial import (
    INSTRUCTIONS_HEADING,
    TrialAbort,
    TrialContext,
    TrialServer,
    cap_text,
    split_feedback,
    step_prompt,
    unanswered_call,
)


def make_provider(ctx: TrialContext) -> Provider:
    """The model's client: the deterministic reference agent, or a model API's (the
    provider layer's one path, shared with the judge)."""
    from mcptrials import providers

    spec = ctx.model
    if spec.provider == "reference":
        from mcptrials.providers.reference import ReferenceProvider

        return ReferenceProvider(str(ctx.sandbox.workspace))
    assert spec.model is not None  # loading refuses a provider other than reference without `model:`
    return providers.create(spec.provider, spec.model, ctx.api_key(), spec.base_url, spec.max_retries)


def result_text(result) -> str:
    """An MCP tool result as text: text blocks, resources by text or URI, others named."""
    parts = []
    for block in result.content or []:
        t = getattr(block, "type", None)
        if t == "text":
            parts.append(block.text)
        elif t == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {getattr(res, 'uri', '')}]")
        else:
            parts.append(f"[{t} content]")
    if not parts and getattr(result, "structured_content", None) is not None:
        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


class Loop:
    """One trial's conversation: the provider, the server (None for the baseline), the tools."""

    def __init__(self, ctx: TrialContext, provider: Provider, server: TrialServer | None):
        from mcptrials.prepare.builtins import BuiltinTools

        self.ctx = ctx
        self.rec = ctx.rec
        self.provider = provider
        self.server = server
        self.builtins = BuiltinTools(ctx.sandbox.workspace)
        self.mcp_names: dict[str, str] = {}  # model-facing name -> the server's own tool name

    def tool_definitions(self) -> list[dict]:
        builtin, server, names = tool_definitions(self.ctx.tool.name, self.server.tools if self.server else [])
        self.mcp_names.update(names)
        return builtin + server

    async def run(self, system_text: str) -> tuple[str, str | None]:
        tools = self.tool_definitions()
        system = [{"type": "text", "text": system_text}]
        steps = self.ctx.steps
        for i, step in enumerate(steps):
            rec = await self.run_step(i, step, i == len(steps) - 1, system, tools)
            if rec["outcome"] != "completed":
                return rec["outcome"], None
        return "completed", None

    async def run_step(self, index: int, step: dict, last: bool, system: list[dict], tools: list[dict]) -> dict:
        ctx, lim = self.ctx, self.ctx.limits
        self.rec.messages.append({"role": "user", "content": [{"type": "text", "text": step_prompt(step, last)}]})
        rec = {
            "index": index,
            "name": step["name"],
            "prompt": step["prompt"],
            "answer_text": "",
            "reasoning_text": "",
            "audit_text": "",
            "outcome": "completed",
            "turns": 0,
            "state_check": None,
        }
        reasoning, audit = [], []
        out_tokens = 0
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(lim.max_seconds):
                while True:
                    if rec["turns"] >= lim.max_turns:
                        rec["outcome"] = "max_turns"
                        break
                    rec["turns"] += 1
                    try:
                        reply = await self.provider.complete(system, self.rec.messages, tools, ctx.reply_cap)
                    except ProviderError as e:
                        self.rec.error("api_error", str(e), step=index, status=e.status, retries=e.retries)
                        raise TrialAbort("api_failed", str(e))
                    self.rec.api_calls += 1
                    self.rec.retries += reply.retries
                    self.rec.usage.add(reply.usage)
                    out_tokens += reply.usage.output_tokens
                    self.rec.messages.append({"role": "assistant", "content": reply.content})
                    texts = [b["text"] for b in reply.content if b.get("type") == "text" and b.get("text")]
                    uses = [b for b in reply.content if b.get("type") == "tool_use"]
                    if not uses:
                        answer, feedback = split_feedback(ctx.sandbox.relative("\n\n".join(texts)))
                        rec["answer_text"] = answer
                        if feedback:
                            self.rec.feedback = feedback
                        if reply.stop_reason == "max_tokens":
                            rec["outcome"] = "budget_exceeded"
                        break
                    reasoning += texts
                    results = []
                    for b in uses:
                        res = await self.call_tool(b, index, rec["turns"])
                        results.append(res)
                        audit.append(f"> {b['name']} {b.get('input')}\n{res['content'][:2000]}")
                    self.rec.messages.append({"role": "user", "content": results})
                    if out_tokens >= lim.max_output_tokens:
                        rec["outcome"] = "budget_exceeded"
                        break
        except TimeoutError:
            rec["outcome"] = "timed_out"
            self.close_unanswered(index, rec["turns"], time.monotonic() - t0)
        finally:
            rec["reasoning_text"] = "\n\n".join(reasoning)
            rec["audit_text"] = "\n\n".join(audit)
            rec["wall_seconds"] = round(time.monotonic() - t0, 3)
            self.rec.steps.append(rec)
        rec["state_check"] = ctx.state_check(step)
        return rec

    def close_unanswered(self, step: int, turn: int, seconds: float) -> None:
        """The assistant asked for tools that never answered (the step timed out mid-call):
        record those calls (run.trial.unanswered_call) and close the turn for the record."""
        if not self.rec.messages or self.rec.messages[-1]["role"] != "assistant":
            return
        pending = [b for b in self.rec.messages[-1]["content"] if b.get("type") == "tool_use"]
        if not pending:
            return
        done = {c["id"]: c for c in self.rec.tool_calls}
        for b in pending:
            if b["id"] not in done:
                name = b["name"]
                source, tool = ("mcp", self.mcp_names[name]) if name in self.mcp_names else ("builtin", name)
                done[b["id"]] = unanswered_call(
                    {
                        "id": b["id"],
                        "step": step,
                        "turn": turn,
                        "name": name,
                        "arguments": b.get("input") or {},
                        "tool": tool,
                        "source": source,
                    },
                    round(seconds * 1000, 2),
                )
                self.rec.tool_calls.append(done[b["id"]])
        self.rec.messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": b["id"],
                        "content": done[b["id"]]["result_text"],
                        "is_error": done[b["id"]]["is_error"],
                    }
                    for b in pending
                ],
            }
        )

    async def call_tool(self, block: dict, step: int, turn: int) -> dict:
        """Execute one tool_use block; return the tool_result block. Records everything."""
        name, args = block["name"], block.get("input") or {}
        call = {
            "id": block["id"],
            "step": step,
            "turn": turn,
            "name": name,
            "arguments": args,
            "is_error": False,
            "error_kind": None,
            "error_code": None,
        }
        t0 = time.monotonic()
        if name in self.mcp_names:
            call.update(source="mcp", tool=self.mcp_names[name])
            text, is_error = await self._call_mcp(call, step)
        else:
            call.update(source="builtin", tool=name)
            try:
                text, is_error = self.builtins.call(name, args)
                if is_error:
                    call["error_kind"] = "tool_error"
                    self.rec.error("tool_error", f"{name}: {text[:300]}", step=step)
            except Exception as e:  # a bug in our own tools is ours, not the agent's
                text, is_error = f"harness error in {name}: {e}", True
                call["error_kind"] = "harness_error"
                self.rec.error("harness_error", f"{name}: {traceback.format_exc()}", step=step)
        call["latency_ms"] = round((time.monotonic() - t0) * 1000, 2)
        capped, truncated = cap_text(text, self.ctx.limits.max_result_tokens)
        call.update(
            is_error=is_error,
            result_text=capped,
            result_chars=len(text),
            truncated=truncated,
            result_tokens_est=len(text) // CHARS_PER_TOKEN,
        )
        self.rec.tool_calls.append(call)
        return {"type": "tool_result", "tool_use_id": block["id"], "content": capped, "is_error": is_error}

    async def _call_mcp(self, call: dict, step: int) -> tuple[str, bool]:
        from mcp import MCPError

        from mcptrials.prepare.servers import mcp_error_code

        assert self.server is not None  # only a tool with a server lists MCP tools to call
        from mcptrials.prepare.tree_state import MAX_NAMED, changed, fingerprint

        # a tool that says it only reads: the workspace's state around its call (prepare.tree_state)
        ws = self.ctx.sandbox.workspace if call["tool"] in getattr(self.server.live, "read_only", ()) else None
        before = fingerprint(ws) if ws is not None else None
        try:
            result = await self.server.client.call_tool(call["tool"], call["arguments"])
        except MCPError as e:
            code = mcp_error_code(e)
            call.update(error_kind="protocol_error", error_code=code)
            self.rec.error("protocol_error", f"{call['tool']}: {e}", step=step, code=code)
            if code == -32000:  # connection closed: the server is gone for this trial
                raise TrialAbort("server_crashed", f"server connection closed during {call['tool']}: {e}")
            return f"MCP error {code}: {e}", True
        except Exception as e:  # invalid result shape, output-schema mismatch, broken stream
            call.update(error_kind="protocol_error")
            self.rec.error("protocol_error", f"{call['tool']}: {type(e).__name__}: {e}", step=step)
            return f"MCP protocol error: {type(e).__name__}: {str(e)[:500]}", True
        text = result_text(result)
        if ws is not None and before is not None and (diff := changed(before, fingerprint(ws))):
            call["workspace_changed"] = {"count": len(diff), "paths": diff[:MAX_NAMED]}
        if result.is_error:
            call["error_kind"] = "tool_error"
            self.rec.error("tool_error", f"{call['tool']}: {text[:300]}", step=step)
        return text, bool(result.is_error)


class LoopHost:
    kind = "loop"

    def run(self, ctx: TrialContext) -> tuple[str, str | None]:
        return asyncio.run(self._run(ctx))

    async def _run(self, ctx: TrialContext) -> tuple[str, str | None]:
        provider = make_provider(ctx)
        try:
            if not ctx.tool.has_server:
                return await Loop(ctx, provider, None).run(ctx.system_text)
            async with TrialServer(ctx) as server:
                system_text = ctx.system_text
                if ctx.tool.instructions and server.instructions:  # as a host would
                    system_text += INSTRUCTIONS_HEADING + server.instructions
                try:
                    return await Loop(ctx, provider, server).run(system_text)
                except TrialAbort as e:  # an outcome, not a fault: the session ends normally
                    return e.outcome, e.detail
        finally:
            await provider.aclose()


HOST = LoopHost()
