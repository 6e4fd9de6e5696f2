"""Conformance of a server's tool definitions, checked at snapshot time (before any trial).

What the MCP specification (2025-11-25, server/tools: "Tool names", "Tool" and "Output
Schema") asks of each tool that `tools/list` returns, and this module checks:

- `name`: 1 to 128 characters of A-Z a-z 0-9 _ - . (case-sensitive), unique within the server;
- `inputSchema`: a JSON Schema object (`type: object`), valid under its dialect (2020-12 by
  default: jsonschema's check_schema);
- `outputSchema`, when given: the same.

A definition that breaks one stops the snapshot with a ConfigError naming the tool, the field
and the fix, unless the tool entry says `conformance: warn`: then the snapshot records the
problems (`conformance`) and the server runs as it is.
"""

from __future__ import annotations

import re

NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


def _schema_problem(schema) -> str | None:
    """Why `schema` is not a valid JSON Schema object, or None."""
    if not isinstance(schema, dict):
        return f"is {type(schema).__name__}, not a JSON object"
    if schema.get("type") != "object":
        return f"has type {schema.get('type')!r}; a tool's schema must be `type: object`"
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator).check_schema(schema)
    except jsonschema.SchemaError as e:
        return f"is not a valid JSON Schema: {e.message} (at {'/'.join(map(str, e.path)) or 'its top'})"
    return None


def conformance_problems(tools: list[dict]) -> list[dict]:
    """[{tool, field, problem, fix}] for the snapshot's tool list (name, input_schema, output_schema)."""
    out = []
    seen: set[str] = set()
    for t in tools:
        name = t.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            out.append(
                {
                    "tool": name,
                    "field": "name",
                    "problem": f"{name!r} is outside the allowed pattern {NAME.pattern}",
                    "fix": "rename it with 1-128 of A-Z a-z 0-9 _ - . (no spaces)",
                }
            )
        elif name in seen:
            out.append(
                {
                    "tool": name,
                    "field": "name",
                    "problem": f"{name!r} is listed twice",
                    "fix": "give each tool its own name",
                }
            )
        seen.add(str(name))
        for field, key in (("inputSchema", "input_schema"), ("outputSchema", "output_schema")):
            if key not in t or (key == "output_schema" and t[key] is None):
                continue
            why = _schema_problem(t[key])
            if why:
                out.append(
                    {
                        "tool": name,
                        "field": field,
                        "problem": f"its {field} {why}",
                        "fix": f"make {field} a JSON Schema object ({{type: object, properties: ...}})",
                    }
                )
    return out


def conformance_message(path, tool: str, problems: list[dict]) -> str:
    p = problems[0]
    more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
    return (
        f"{path}: field tools.{tool}: the server's tools/list breaks the MCP specification: tool {p['tool']!r}, "
        f"field {p['field']}: {p['problem']}{more}; fix the server ({p['fix']}), or set `conformance: warn` "
        f"on tools.{tool} to run it as it is (the problems are then recorded in its snapshot and flagged)"
    )
