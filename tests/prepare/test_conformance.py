"""Conformance at snapshot time (issue 37 item 6): tool definitions that break the MCP
specification are refused with the tool, the field and the fix, or recorded with
`conformance: warn`; the snapshot records the protocol version and the instructions."""

from __future__ import annotations

import pytest

from matrix_helpers import faulty_tool
from mcptrials.matrix.errors import ConfigError
from mcptrials.prepare.conformance import conformance_problems
from variant_helpers import variant_project, variant_snapshot

OBJ = {"type": "object", "properties": {"q": {"type": "string"}}}


def test_names_schemas_and_duplicates_by_hand():
    tools = [
        {"name": "ok.tool-1_x", "input_schema": OBJ},
        {"name": "has space", "input_schema": OBJ},
        {"name": "x" * 129, "input_schema": OBJ},
        {"name": "ok.tool-1_x", "input_schema": OBJ},
        {"name": "arr", "input_schema": {"type": "array"}},
        {"name": "bad", "input_schema": {"type": "object", "properties": 5}},
        {"name": "out", "input_schema": OBJ, "output_schema": {"type": "object", "required": "q"}},
        {"name": "fine_out", "input_schema": OBJ, "output_schema": {"type": "object"}},
    ]
    got = [(p["tool"], p["field"]) for p in conformance_problems(tools)]
    assert got == [
        ("has space", "name"),
        ("x" * 129, "name"),
        ("ok.tool-1_x", "name"),
        ("arr", "inputSchema"),
        ("bad", "inputSchema"),
        ("out", "outputSchema"),
    ]
    probs = {(p["tool"], p["field"]): p for p in conformance_problems(tools)}
    assert "listed twice" in probs["ok.tool-1_x", "name"]["problem"]
    assert "type 'array'" in probs["arr", "inputSchema"]["problem"]
    assert "not a valid JSON Schema" in probs["bad", "inputSchema"]["problem"]
    assert conformance_problems([{"name": "a", "input_schema": OBJ}]) == []


def test_a_bad_name_stops_the_snapshot_or_is_recorded_with_warn(tmp_path):
    bad = faulty_tool("ok", env={"FAULT_MODE": "ok", "FAULT_TOOL_PREFIX": "my tool "})
    m, _ = variant_project(tmp_path, {"baseline": {"transport": "none"}, "faulty": bad})
    with pytest.raises(ConfigError) as e:
        variant_snapshot(m, tmp_path, "faulty")
    msg = str(e.value)
    assert (
        "field tools.faulty: the server's tools/list breaks the MCP specification: tool 'my tool echo', field name"
        in msg
    )
    assert "rename it with 1-128 of A-Z a-z 0-9 _ - ." in msg and "set `conformance: warn` on tools.faulty" in msg
    m2, _ = variant_project(
        tmp_path / "w", {"baseline": {"transport": "none"}, "faulty": dict(bad, conformance="warn")}
    )
    snap = variant_snapshot(m2, tmp_path / "w", "faulty")
    assert [p["tool"] for p in snap["conformance"]] == ["my tool echo", "my tool big", "my tool fail"]
    assert snap["protocol_version"] == "2025-11-25" and snap["instructions"] == "A test server in mode ok."
    good, _ = variant_project(tmp_path / "g", {"baseline": {"transport": "none"}, "faulty": faulty_tool("ok")})
    assert variant_snapshot(good, tmp_path / "g", "faulty")["conformance"] == []


def test_structured_content_that_breaks_the_output_schema_is_a_pattern_of_the_trial(tmp_path, fake_api, monkeypatch):
    """A server that does it on purpose (the fixture's FAULT_STRUCTURED): its snapshot records the
    outputSchema, the loop's call is refused by the client's check, and the trial's patterns name it."""
    from fakes.messages_api import reply, text, tool_use
    from mcptrials.analyze.patterns import detect
    from mcptrials.run.runner import run_trial
    from variant_helpers import KEY, anthropic_extra

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    api = fake_api([reply(tool_use("mcp__faulty__stats", {}, id="toolu_1")), reply(text("`src/util.py:1`."))])
    tool = faulty_tool("ok", env={"FAULT_MODE": "ok", "FAULT_STRUCTURED": "1"})
    m, co = variant_project(tmp_path, {"baseline": {"transport": "none"}, "faulty": tool}, extra=anthropic_extra(api))
    snap = variant_snapshot(m, tmp_path, "faulty")
    stats = next(t for t in snap["tools"] if t["name"] == "stats")
    assert stats["output_schema"]["required"] == ["count"] and snap["conformance"] == []
    t, _ = run_trial(m, "claude", "faulty", "find-helper", 1, co, snap, None, tmp_path / "out", host="loop")
    (c,) = [c for c in t["tool_calls"] if c["source"] == "mcp"]
    assert c["is_error"] and "Invalid structured content returned by tool stats" in c["result_text"]
    found = [f for f in detect(t) if f["pattern"] == "invalid_structured_content"]
    assert len(found) == 1 and found[0]["call"] == t["tool_calls"].index(c)


def test_a_tool_entry_name_so_long_that_two_tools_would_share_a_model_name_is_refused(tmp_path):
    # mcp__ + 47 characters + __ is 54, leaving 10 of the 64 for the tool's name: prefix_long_echo and
    # prefix_long_big are both cut to prefix_lon
    name = "f" * 47
    bad = faulty_tool("ok", env={"FAULT_MODE": "ok", "FAULT_TOOL_PREFIX": "prefix_long_"}, conformance="warn")
    m, _ = variant_project(tmp_path, {"baseline": {"transport": "none"}, name: bad})
    with pytest.raises(
        ConfigError,
        match=rf"field tools\.{name}: the model would see tools 'prefix_long_echo' and 'prefix_long_big' under one name",
    ):
        variant_snapshot(m, tmp_path, name)
