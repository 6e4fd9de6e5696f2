"""The tool definitions a model is sent (mcptrials.prepare.tooldefs), the one rendering the
loop host and the snapshot's definition-token count share."""

from mcptrials.prepare.builtins import BUILTIN_TOOLS
from mcptrials.prepare.tooldefs import model_tool_name, tool_definitions


def test_names_are_reduced_to_what_the_messages_api_accepts():
    assert model_tool_name("git", "git_log") == "mcp__git__git_log"
    assert model_tool_name("my.server", "read file/v2") == "mcp__my_server__read_file_v2"
    long = model_tool_name("t", "x" * 100)
    assert len(long) == 64 and long.startswith("mcp__t__x")


def test_builtins_first_then_the_servers_tools_in_their_order():
    server = [
        {"name": "search", "description": "Find code.", "input_schema": {"type": "object", "properties": {"q": {}}}},
        {"name": "log", "description": "", "input_schema": None},
        {"name": "big", "description": "d" * 5000},
    ]
    builtin, tools, names = tool_definitions("idx", server)
    assert [t["name"] for t in builtin] == [t["name"] for t in BUILTIN_TOOLS]
    assert builtin is not BUILTIN_TOOLS and builtin[0] is not BUILTIN_TOOLS[0]  # copies: a caller may edit them
    assert [t["name"] for t in tools] == ["mcp__idx__search", "mcp__idx__log", "mcp__idx__big"]
    assert names == {"mcp__idx__search": "search", "mcp__idx__log": "log", "mcp__idx__big": "big"}
    assert tools[0]["input_schema"] == server[0]["input_schema"]
    assert tools[1]["description"] == "log"  # an empty description: its name
    assert tools[1]["input_schema"] == {"type": "object"}  # no usable schema: an open object
    assert len(tools[2]["description"]) == 4000  # capped as the loop sends it


def test_the_baseline_has_the_builtins_only():
    builtin, tools, names = tool_definitions("baseline", [])
    assert builtin and tools == [] and names == {}
