"""The share of input tokens served from the prompt cache, per host, on one scripted trial.

    python bench/cache_share.py [--turns 6] [--chars 6000] [--hosts loop,cc]

One trial of the tiny repo's find-helper scenario through `mcptrials.run.runner.run_trial`,
against the fault-injecting test server (tests/fixtures/faulty_mcp_server.py, `ok` mode)
and the fake Messages API, whose prompt-caching emulation bills every request (reads,
writes and uncached input by the documented rules; see PromptCache in
tests/fakes/messages_api.py: tokens are chars/4 of each block's JSON). The script is the
same for both hosts: turns 1..N-1 each call one MCP tool (`big` returning --chars
characters, alternating with `echo`), turn N answers. Each host gets its own fake (its own
cache). Hosts:
  loop  our agent loop (providers/anthropic.py: breakpoints on the system prompt, the
        last tool and the newest message block);
  cc    the real Claude Code CLI (.tools/_hosts/cc, installed by `mcptrials install-host`
        as tests/run/test_claude_code.py does; reused when there), pointed at the fake.
Prints per host and turn the billed input side, then per host: turn 1's writes, input
tokens of turns 2..N, of which read from cache, and the share; and the share over all
turns (turn 1's writes included, the form of the published 78%).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fakes.messages_api import FakeMessagesAPI, reply, text, tool_use  # noqa: E402
from matrix_helpers import faulty_tool, write_matrix  # noqa: E402

KEY = "sk-bench-cache-share-0123456789"
ANSWER = "`helper` is defined at `src/util.py:1`; it returns `x * 2`, doubling its argument."


def script(turns: int, chars: int) -> list[dict]:
    out = []
    for k in range(1, turns):
        call = (
            tool_use("mcp__faulty__big", {"chars": chars}, id=f"toolu_b{k}")
            if k % 2
            else tool_use("mcp__faulty__echo", {"text": f"note {k}: helper is in src/util.py"}, id=f"toolu_e{k}")
        )
        out.append(reply(text(f"Step {k}: looking further."), call))
    out.append(reply(text(ANSWER)))
    return out


def install_cc(tmp: Path) -> None:
    cfg = write_matrix(
        tmp / "install",
        extra={
            "models": {"c": {"provider": "anthropic", "model": "claude-sonnet-4-6"}},
            "hosts": {"cc": {"kind": "claude-code"}},
        },
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "install-host",
            "--config",
            str(cfg),
            "--host",
            "cc",
            "--out",
            str(tmp / "cc.json"),
        ],
        check=True,
        capture_output=True,
    )


def run_host(tmp: Path, host: str, turns: int, chars: int) -> list[dict]:
    from mcptrials.prepare.checkout import checkout
    from mcptrials.matrix.config import load_matrix
    from mcptrials.run.runner import run_trial

    with FakeMessagesAPI(script(turns, chars), prompt_cache=True) as api:
        extra = {
            "models": {
                "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url, "max_retries": 0}
            },
            "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
            "limits": {"max_turns": turns + 2},
            "pricing": {"claude-sonnet-4-6": {"input": 3.0, "output": 15.0}},
        }
        d = tmp / host
        m = load_matrix(write_matrix(d, tools={"faulty": faulty_tool("ok")}, extra=extra))
        co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], d / "co")
        snap = {"tools": [{"name": n} for n in ("echo", "big", "fail")], "server_name": "faulty"}
        t, _ = run_trial(m, "claude", "faulty", "find-helper", 1, co, snap, None, d / "out", host=host)
        if t["outcome"] != "completed":
            raise SystemExit(f"{host}: {t['outcome']}: {t['outcome_detail']}")
        rows = []
        for r in api.message_requests():
            u, body = r["reply"]["usage"], r["body"]
            rows.append(
                {
                    "input": u["input_tokens"],
                    "read": u["cache_read_input_tokens"],
                    "write": u["cache_creation_input_tokens"],
                    "breakpoints": json.dumps(body).count('"cache_control"'),
                    "messages": len(body["messages"]),
                }
            )
        return rows


def summary(rows: list[dict]) -> dict:
    later = rows[1:]
    prev = sum(r["input"] + r["read"] + r["write"] for r in rows[:-1])  # the most turn k could read: turn k-1's prompt
    total = sum(r["input"] + r["read"] + r["write"] for r in later)
    read = sum(r["read"] for r in later)
    every = sum(r["input"] + r["read"] + r["write"] for r in rows)
    return {
        "turn1_write": rows[0]["write"],
        "turn1_input": rows[0]["input"],
        "later_total": total,
        "later_read": read,
        "later_share": read / total if total else 0.0,
        "all_total": every,
        "all_read": sum(r["read"] for r in rows),
        "all_share": sum(r["read"] for r in rows) / every if every else 0.0,
        "of_prev": read / prev if prev else 0.0,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--chars", default="1000,6000", help="characters each `big` call returns (a list: one trial each)")
    ap.add_argument("--hosts", default="loop,cc")
    args = ap.parse_args()
    os.environ["ANTHROPIC_API_KEY"] = KEY
    hosts = args.hosts.split(",")
    results = {}
    with tempfile.TemporaryDirectory(prefix="mcptrials-bench-cache-") as d:
        tmp = Path(d)
        if "cc" in hosts:
            install_cc(tmp)
        for chars, host in [(int(c), h) for c in args.chars.split(",") for h in hosts]:
            rows = run_host(tmp / str(chars), host, args.turns, chars)
            results[host, chars] = summary(rows)
            print(
                f"host {host}, big returns {chars} chars: turn  input  cache_read  cache_write  messages  breakpoints"
            )
            for k, r in enumerate(rows, 1):
                print(
                    f"{'':>40}{k:>4} {r['input']:>6} {r['read']:>11} {r['write']:>12} {r['messages']:>9} "
                    f"{r['breakpoints']:>12}"
                )
    print()
    print(
        "| host | `big` chars | turn 1 writes | turn 1 uncached | input tokens, turns 2..N | of which cache read | "
        "share | share, all turns (turn 1's writes included) | reads / previous turn's prompt |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for (host, chars), s in results.items():
        print(
            f"| {host} | {chars:,} | {s['turn1_write']:,} | {s['turn1_input']:,} | {s['later_total']:,} | "
            f"{s['later_read']:,} | {100 * s['later_share']:.1f}% | {s['all_read']:,} of {s['all_total']:,}: "
            f"{100 * s['all_share']:.1f}% | {100 * s['of_prev']:.1f}% |"
        )


if __name__ == "__main__":
    main()
