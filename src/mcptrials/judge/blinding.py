"""Blindness: before any judging, names of MCP tools (`mcp__server__tool`), the tool names the
trial called, and every configured tool/server name are replaced by "[tool]" in the answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "[tool]"
MCP_NAME_RE = re.compile(r"mcp__[A-Za-z0-9_.-]+")


def identity_names(tool_names, transcript: Mapping[str, Any] | None = None) -> list[str]:
    """Names that would reveal the tool: the configured tool/server names, plus the names
    (e.g. mcp__git__git_log) and server-side names (git_log) of the MCP tools the trial called.
    Built-in tool names (read_file, grep, ...) are left alone: every tool has them."""
    names = set(n for n in tool_names if n)
    for call in (transcript or {}).get("tool_calls", []):
        if call.get("source") == "mcp":
            names.update(n for n in (call.get("name"), call.get("tool")) if n)
    return sorted(names, key=lambda n: (-len(n), n))  # longest first, so no partial masks


def mask_identities(text: str, names) -> tuple[str, int]:
    """Replace every `mcp__...` name and every whole-word occurrence (case-insensitive) of
    `names` by "[tool]" in one pass; returns the masked text and the number of replacements.
    A name counts as a whole word when no letter, digit or underscore touches it, so
    `git` is masked in "the git server" but not in "github" or "git_log"."""
    words = sorted({n for n in names if n}, key=lambda n: (-len(n), n))  # longest first
    pattern = MCP_NAME_RE.pattern
    if words:
        pattern += r"|(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
    return re.compile(pattern, re.IGNORECASE).subn(MASK, text)
