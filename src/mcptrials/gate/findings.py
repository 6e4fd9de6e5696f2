"""The deterministic failures of one tool, HEAD against BASE (`mcptrials compare`, step 3):
each a regression whatever the interval. HEAD's server did not start or has no snapshot; a
server tool that BASE's trials called is gone (or renamed) from HEAD's tools/list; the share of
trials ending server_crashed or timed_out rose; the server tools' error rate rose by more than
DEFAULT_ERROR_RISE (absolute).
"""

from __future__ import annotations

from mcptrials.gate.tools_diff import cut, renamed_to
from mcptrials.core.rows import TrialRow
from mcptrials.core.keys import SERVER_TOOLS_USED, SERVER_TOOL_ERRORS

DEFAULT_ERROR_RISE = 0.2  # absolute rise of the server tools' error rate that fails: the --error-rise default
ENDED_BADLY = ("server_crashed", "timed_out")  # trial outcomes whose rising share is a finding


def counted(rows: list[TrialRow]) -> list[TrialRow]:
    """The trials that count: those not missing (a missing trial is left out and counted apart)."""
    return [r for r in rows if not r.get("missing")]


def _share_ended_badly(rows: list[TrialRow]) -> float | None:
    return sum(r.get("outcome") in ENDED_BADLY for r in rows) / len(rows) if rows else None


def _server_error_rate(rows: list[TrialRow]) -> float | None:
    """Errored server-tool calls / server-tool calls, pooled over the trials (None without calls).
    A summary made before the per-trial count (server_tool_errors) falls back to tool_error_rate."""
    calls = sum(int(r.get("tool_calls_mcp") or 0) for r in rows)
    if not calls:
        return None
    if all(SERVER_TOOL_ERRORS in r for r in rows):
        return sum(int(r[SERVER_TOOL_ERRORS] or 0) for r in rows) / calls
    rates = [v for r in rows if (v := r.get("tool_error_rate")) is not None]
    return sum(rates) / len(rates) if rates else None


def findings(
    tool: str,
    has_server: bool,
    b_rows: list[TrialRow],
    h_rows: list[TrialRow],
    snaps: dict,
    error_rise: float = DEFAULT_ERROR_RISE,
) -> list[dict]:
    """The deterministic failures of one tool, HEAD against BASE, in the order a reader needs them:
    [{kind, message}]; kinds: did_not_start, tool_gone, ended_badly, server_errors.
    snaps: repo -> (BASE tools.json or None, HEAD tools.json or None)."""
    out = []
    started = {}
    if has_server:
        for repo, (bs, hs) in snaps.items():
            if hs is None and bs is None:
                continue  # neither side kept its snapshots: nothing to compare
            if hs is None:
                out.append(
                    {
                        "kind": "did_not_start",
                        "message": f"HEAD has no tools snapshot of {tool} for {repo}: its "
                        "tools_snapshot job failed (see results/logs/snapshot/)",
                    }
                )
            elif hs.get("error"):
                out.append(
                    {"kind": "did_not_start", "message": f"HEAD's server did not start ({repo}): " + cut(hs["error"])}
                )
            else:
                started[repo] = hs
        called = sorted({n for r in b_rows for n in (r.get(SERVER_TOOLS_USED) or [])})
        known = all(SERVER_TOOLS_USED in r for r in b_rows)
        for repo, hs in started.items():
            bs = snaps[repo][0] or {}
            # a BASE summary made before server_tools_used: every tool BASE offered counts as called
            names = called if known else sorted(t["name"] for t in bs.get("tools", []))
            live = {t["name"] for t in hs.get("tools", [])}
            for name in names:
                if name not in live:
                    new = renamed_to(name, bs, hs)
                    out.append(
                        {
                            "kind": "tool_gone",
                            "message": f"{name}, which BASE's trials called, is "
                            + (f"renamed to {new} (same input schema)" if new else "gone")
                            + f" in HEAD's tools/list ({repo})",
                        }
                    )
    bb, hb = _share_ended_badly(counted(b_rows)), _share_ended_badly(counted(h_rows))
    if bb is not None and hb is not None and hb > bb:
        out.append(
            {
                "kind": "ended_badly",
                "message": f"trials ending server_crashed or timed_out rose from {bb:.0%} to {hb:.0%}",
            }
        )
    be, he = _server_error_rate(counted(b_rows)), _server_error_rate(counted(h_rows))
    if be is not None and he is not None and he - be > error_rise:
        out.append(
            {
                "kind": "server_errors",
                "message": f"the server tools' error rate rose from {be:.0%} to "
                f"{he:.0%} (more than {error_rise:g} absolute)",
            }
        )
    return out
