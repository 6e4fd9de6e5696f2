"""The offered tools: what each is for (its role: symbol, search, file search, read, history,
or none for a tool that changes state), and the order they are tried in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcptrials.providers.reference.question import Term

# Tool-name words that mark a tool the agent must not call (it changes state or the server's setup).
MUTATING = {
    "write",
    "edit",
    "create",
    "delete",
    "remove",
    "move",
    "rename",
    "commit",
    "add",
    "reset",
    "checkout",
    "set",
    "clear",
    "configure",
    "refresh",
    "build",
    "insert",
    "replace",
    "restart",
    "activate",
    "switch",
    "execute",
    "run",
    "shell",
    "init",
    "initial",
    "onboarding",
    "memory",
    "memories",
    "push",
    "pull",
    "merge",
    "apply",
    "update",
    "install",
    "delete",
    "branch",
    "temp",
}


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    schema: dict
    mcp: bool
    role: str | None  # symbol | search | filesearch | read | history | None
    rank: int  # lower is tried first within a role


def _tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if t]


def classify_tool(tool: dict) -> ToolSpec:
    name = str(tool.get("name", ""))
    desc = str(tool.get("description") or "")
    schema = tool.get("input_schema")
    schema = schema if isinstance(schema, dict) else {}  # a server may send a broken schema
    mcp = name.startswith("mcp__")
    base = name[len("mcp__") :].split("__", 1)[-1] if mcp else name
    toks = _tokens(base)
    role, rank = None, 0
    if not mcp:
        role = {"grep": "search", "read_file": "read"}.get(name)
        rank = 100  # built-ins come after every server tool
    elif any(t in MUTATING for t in toks) or any(t in ("multiple", "media", "image", "tail") for t in toks):
        role = None
    elif any(t in ("log", "history", "blame") for t in toks):
        role = "history"  # e.g. git_log: the commits, which no file of the work tree records
    elif (
        "symbol" in toks and any(t in ("find", "search", "lookup", "query") for t in toks) and "referencing" not in toks
    ):
        role = "symbol"
    elif any(t in ("find", "search", "grep", "query", "lookup", "locate") for t in toks):
        role = (
            "filesearch" if any(t in ("file", "files", "dir", "path", "paths", "filename") for t in toks) else "search"
        )
        rank = 0 if any(t in ("grep", "code", "pattern", "text", "content") for t in toks) else 1
    elif "read" in toks or ("get" in toks and any(t in ("body", "content", "contents", "source") for t in toks)):
        role = "read"
        rank = (0 if "read" in toks else 1) + (5 if "deprecated" in desc.lower() else 0)
    return ToolSpec(name, desc, schema, mcp, role, rank)


def search_order(specs: dict[str, ToolSpec], term: Term | None) -> list[ToolSpec]:
    """Search tools in the order they are tried for a term."""
    order: dict[str | None, int] = {"symbol": 0, "search": 1, "filesearch": 2}
    chain = [
        s
        for s in specs.values()
        if s.mcp
        and s.role in order
        and not (s.role == "symbol" and term and term.kind != "ident")
        and not (s.role == "filesearch" and term and term.kind == "phrase")
    ]
    chain.sort(key=lambda s: (order[s.role], s.rank, s.name))
    if "grep" in specs:
        chain.append(specs["grep"])
    return chain


def read_order(specs: dict[str, ToolSpec]) -> list[ToolSpec]:
    """Read tools in the order they are tried for a file: the server's, then the built-in read_file."""
    chain = sorted((s for s in specs.values() if s.mcp and s.role == "read"), key=lambda s: (s.rank, s.name))
    if "read_file" in specs:
        chain.append(specs["read_file"])
    return chain


def history_tool(specs: dict[str, ToolSpec]) -> ToolSpec | None:
    """The server's history tool (e.g. git's git_log), or None when none is offered."""
    offered = [s for s in specs.values() if s.mcp and s.role == "history"]
    return min(offered, key=lambda s: (s.rank, s.name)) if offered else None
