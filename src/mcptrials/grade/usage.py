"""Raw efficiency figures and tool adoption from a transcript (no score: the normalised
efficiency score needs the baseline of the same scenario and model, known only at
aggregation; adoption is reported and never folded into the quality score).

Turns: a "turn" is one model call. A tool call's trial turn is its step's `turn` plus the
turns of all earlier steps, so "the first N turns" are the first N model calls of the
whole trial, whatever step they fall in.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from mcptrials.matrix.tools import BASELINE
from mcptrials.cost.pricing import trial_cost
from mcptrials.cost.work_time import work_seconds
from mcptrials.core.record_types import Adoption, Efficiency, TranscriptRecord
from mcptrials.core.keys import SERVER_TOOLS_USED

SEARCH_BUILTINS = ("grep", "list_files")  # built-in calls that an MCP server's search competes with
DISCOVERY_TURNS = 3
COUNTED_ERRORS = ("tool_error", "protocol_error")


def trial_turn_offsets(transcript: Mapping[str, Any]) -> dict[int, int]:
    """Step index -> model calls made before that step began."""
    offsets, done = {}, 0
    for s in sorted(transcript.get("steps", []), key=lambda s: s["index"]):
        offsets[s["index"]] = done
        done += s.get("turns", 0)
    return offsets


def efficiency(transcript: TranscriptRecord, pricing: dict | None) -> Efficiency:
    """Tokens split four ways, cost, turns, tool calls and time (wall, server start-up and the
    agent's working time, see work_seconds), per trial and per step.

    pricing None means "no pricing table given": the transcript's own cost_usd is kept.
    A pricing table without the model gives cost null.
    """
    u = transcript.get("usage", {})
    cost: float | None
    priced_as: str | None
    if pricing is None:
        cost, priced_as = u.get("cost_usd"), "transcript"
    else:
        cost, priced_as = trial_cost(pricing, transcript)
    calls = transcript.get("tool_calls", [])
    tokens = {
        "input_uncached": u.get("input_tokens", 0),
        "cache_write": u.get("cache_creation_input_tokens", 0),
        "cache_read": u.get("cache_read_input_tokens", 0),
        "output": u.get("output_tokens", 0),
    }
    tokens["total"] = sum(tokens.values())
    steps = [
        {
            "index": s["index"],
            "turns": s.get("turns", 0),
            "wall_seconds": s.get("wall_seconds"),
            "tool_calls": sum(1 for c in calls if c["step"] == s["index"]),
        }
        for s in transcript.get("steps", [])
    ]
    return {
        "tokens": tokens,
        "cost_usd": cost,
        "priced_as": priced_as,
        "turns": sum(s.get("turns", 0) for s in transcript.get("steps", [])),
        "api_calls": u.get("api_calls"),
        "retries": u.get("retries"),
        "tool_calls": len(calls),
        "tool_calls_mcp": sum(1 for c in calls if c["source"] == "mcp"),
        "tool_calls_builtin": sum(1 for c in calls if c["source"] == "builtin"),
        "wall_seconds": transcript.get("wall_seconds"),
        "server_startup_seconds": transcript.get("server_startup_seconds"),
        "work_seconds": work_seconds(transcript),
        "steps": steps,
    }


def _tool_stats(calls: list[dict]) -> dict:
    sizes = [c["result_chars"] for c in calls]
    return {
        "calls": len(calls),
        "errors": sum(1 for c in calls if c["is_error"]),
        "median_latency_ms": statistics.median(c["latency_ms"] for c in calls),
        "mean_result_chars": sum(sizes) / len(sizes),
        "max_result_chars": max(sizes),
    }


def _expected_vs_called(expected: list[str], calls: list[dict]) -> dict:
    """The step's tools against the ones it was expected to use (reported, never scored).

    precision = distinct tools called that are expected / distinct tools called (null when
    none was called); recall = expected tools called / expected tools (null when none is
    expected: `expected_tools: []` says the answer needs no tool, and any call is unexpected).
    A tool is named by what the model saw or by the server's own name (`name` or `tool`)."""
    called = sorted({c["name"] for c in calls})
    names = {c["name"] for c in calls} | {c["tool"] for c in calls}
    tools = {c["tool"]: {c["name"], c["tool"]} for c in calls}
    hit = sorted(t for t, ns in tools.items() if ns & set(expected))
    used = [e for e in expected if e in names]
    return {
        "expected": list(expected),
        "called": called,
        "used": used,
        "missing": [e for e in expected if e not in names],
        "unexpected": sorted(set(tools) - set(hit)),
        "precision": len(hit) / len(tools) if tools else None,
        "recall": len(used) / len(expected) if expected else None,
    }


def adoption(transcript: TranscriptRecord, scenario: dict | None = None, window: int = DISCOVERY_TURNS) -> Adoption:
    """Tool fluency, discoverability, tool error rate, per-server-tool stats, expected tools.

    tool_fluency = MCP calls / (MCP calls + built-in search calls), null when both are 0.
    tool_error_rate = (tool_error + protocol_error calls) / all calls, null with no calls.
    Discoverability is null for the baseline (it has no server).
    """
    calls = transcript.get("tool_calls", [])
    mcp = [c for c in calls if c["source"] == "mcp"]
    search = [c for c in calls if c["source"] == "builtin" and c["tool"] in SEARCH_BUILTINS]
    offsets = trial_turn_offsets(transcript)
    first = min((offsets.get(c["step"], 0) + c["turn"] for c in mcp), default=None)
    has_server = transcript["cell"]["tool"] != BASELINE
    per_tool = {}
    for name in sorted({c["tool"] for c in mcp}):
        per_tool[name] = _tool_stats([c for c in mcp if c["tool"] == name])
    n_err = sum(1 for c in calls if c.get("error_kind") in COUNTED_ERRORS)
    steps = []
    for i, step in enumerate((scenario or {}).get("steps", [])):
        expected = step.get("expected_tools")
        if expected is not None:  # [] too: a step where any tool call is a mistake
            steps.append(dict(index=i, **_expected_vs_called(expected, [c for c in calls if c["step"] == i])))
    return {
        "mcp_calls": len(mcp),
        "builtin_search_calls": len(search),
        "tool_fluency": len(mcp) / (len(mcp) + len(search)) if (mcp or search) else None,
        "discoverability": {
            "window_turns": window,
            "first_server_call_turn": first,
            "used_within_window": (first is not None and first <= window) if has_server else None,
            "distinct_server_tools": len(per_tool),
            SERVER_TOOLS_USED: sorted(per_tool),
        },
        "tool_errors": {
            k: sum(1 for c in calls if c.get("error_kind") == k)
            for k in ("tool_error", "protocol_error", "harness_error")
        },
        "tool_error_rate": n_err / len(calls) if calls else None,
        "per_tool": per_tool,
        "expected_tools": steps,
    }
