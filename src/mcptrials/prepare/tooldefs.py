"""The tool definitions a model is sent, and the chars-per-token measure.

A leaf module (it imports only the built-ins' definitions) so that the loop host, the trial
core and the snapshot's definition-token count share one rendering without an import cycle.
"""

from __future__ import annotations

import re

CHARS_PER_TOKEN = 4  # a rough estimate, the same Claude Code uses for its cap


def model_tool_name(tool: str, name: str) -> str:
    """mcp__<tool>__<name>, reduced to what the Messages API accepts (^[a-zA-Z0-9_-]{1,64}$)."""
    raw = f"mcp__{tool}__{name}"
    return re.sub(r"[^a-zA-Z0-9_-]", "_", raw)[:64]


def tool_definitions(tool: str, server_tools: list[dict]) -> tuple[list[dict], list[dict], dict[str, str]]:
    """The tool definitions the loop sends with every request, in the order it sends them:
    (the built-ins, the server's tools as `mcp__<tool>__<name>`, model-facing name -> the
    server's own name). The one rendering of them: the trial's loop and the snapshot's
    definition-token count (mcptrials.prepare.definition_tokens) both use it."""
    from mcptrials.prepare.builtins import BUILTIN_TOOLS

    builtin = [dict(t) for t in BUILTIN_TOOLS]
    server, names = [], {}
    for t in server_tools:
        name = model_tool_name(tool, t["name"])
        names[name] = t["name"]
        schema = t.get("input_schema") if isinstance(t.get("input_schema"), dict) else {"type": "object"}
        server.append(
            {"name": name, "description": (t.get("description") or "")[:4000] or t["name"], "input_schema": schema}
        )
    return builtin, server, names
