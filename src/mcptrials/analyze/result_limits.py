"""The most of one tool result each host passes to its model, in tokens (issue 37 item 5): a
result over a host's limit is cut, or set aside in a file, before the model reads it.

Tokens are counted as the transcripts count them (`result_tokens_est`, about chars/4). The
limits, and where they come from:

- claude-code: `MAX_MCP_OUTPUT_TOKENS`, 25,000 tokens by default (Claude Code's documentation,
  "MCP output limits"); our trials set it to the config's `limits.max_result_tokens`.
- codex: `tool_output_token_limit`, which our trials set to `limits.max_result_tokens` (Codex's
  own default is not assumed here).
- loop: our host's cap on every result, `limits.max_result_tokens`.
- opencode: its own cap, 50 KB (51,200 bytes) or 2,000 lines, the rest saved to a file
  (docs/hosts.md); `max_result_tokens` does not change it: 51,200 / 4 = 12,800 tokens.

`limits.max_result_tokens` defaults to 25,000 in the config schema, Claude Code's default.
"""

from __future__ import annotations

OPENCODE_BYTES = 51_200  # opencode's cap on one tool output (50 KB)


def host_limits(max_result_tokens: int) -> dict[str, tuple[int, str]]:
    """host -> (its limit in tokens, where it comes from), given the config's limits.max_result_tokens."""
    ours = f"limits.max_result_tokens ({max_result_tokens:,})"
    return {
        "claude-code": (max_result_tokens, f"MAX_MCP_OUTPUT_TOKENS = {ours}; Claude Code's default 25,000"),
        "codex": (max_result_tokens, f"tool_output_token_limit = {ours}"),
        "loop": (max_result_tokens, f"the loop host's cap, {ours}"),
        "opencode": (OPENCODE_BYTES // 4, "opencode's own cap, 50 KB (51,200 bytes / 4); not configurable"),
    }


def result_tokens(call: dict) -> int:
    """A recorded call's whole result in tokens (result_tokens_est, else result_chars / 4)."""
    est = call.get("result_tokens_est")
    return int(est) if est is not None else int(call.get("result_chars") or 0) // 4


def over_limits(tokens: int, limits: dict[str, tuple[int, str]]) -> list[str]:
    """The hosts whose limit a result of `tokens` tokens is over."""
    return [h for h, (cap, _) in limits.items() if tokens > cap]


def over_host_limits(calls: list[tuple[str, dict]], limits: dict[str, tuple[int, str]]) -> dict[str, dict]:
    """host -> {limit, source, calls, max_tokens, trials} over (trial, call) pairs; hosts no result is over are left out."""
    out: dict[str, dict] = {}
    for trial, c in calls:
        n = result_tokens(c)
        for h in over_limits(n, limits):
            row = out.setdefault(
                h, {"limit": limits[h][0], "source": limits[h][1], "calls": 0, "max_tokens": 0, "trials": []}
            )
            row["calls"] += 1
            row["max_tokens"] = max(row["max_tokens"], n)
            if trial not in row["trials"]:
                row["trials"].append(trial)
    return out
