"""What ablation arms cost (issue 37 item 7): expanding `ablate` at load, and the proxy's filtering per call.

    python bench/ablation_speed.py [--tools 60] [--calls 20000]

1. Load: `mcptrials.matrix.ablation.expand_ablations` on a config whose tool has `ablate:
   leave_one_out` with the names read from a recorded tools/list of --tools tools (written in a
   temporary folder), best of 20; and load_matrix of the same config with and without `ablate`
   (median of 10), the whole of what the expansion adds to a load. Target: < 50 ms.
2. Per call: the proxy's logic (`mcptrials.prepare.proxy.Rewriter`) on the message of a
   `tools/call` in (a kept tool: parsed, looked up, passed on) and on its result out, for an arm
   hiding one tool of --tools, against a rewriter with no overrides; and on a `tools/list` answer
   of --tools tools (filtered). The relay's pipes are the same with or without filtering
   (bench/proxy_latency.py measures them). Target: < 0.2 ms per call.
Numbers only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from matrix_helpers import faulty_tool, write_matrix  # noqa: E402

from mcptrials.matrix.ablation import expand_ablations  # noqa: E402
from mcptrials.matrix.config import load_matrix  # noqa: E402
from mcptrials.prepare.proxy import Rewriter  # noqa: E402


def tool(i: int) -> dict:
    return {
        "name": f"tool_{i:02d}",
        "description": f"Tool number {i}: does one thing to the repository and says what it did. " * 3,
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "A path."}}},
    }


def per_call_us(r: Rewriter, calls: int, name: str) -> float:
    call = (json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": name}}) + "\n").encode()
    result = (
        json.dumps({"jsonrpc": "2.0", "id": 5, "result": {"content": [{"type": "text", "text": "x" * 2000}]}}) + "\n"
    ).encode()
    t0 = time.perf_counter()
    for _ in range(calls):
        r.from_client(call)
        r.from_server(result)
    return (time.perf_counter() - t0) / calls * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", type=int, default=60)
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    tools = [tool(i) for i in range(a.tools)]
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        snap = Path("results/snapshots/srv/tiny/tools.json")
        snap.parent.mkdir(parents=True)
        snap.write_text(json.dumps({"tools": [{"name": t["name"]} for t in tools]}))
        plain = write_matrix(Path(tmp, "plain"), tools={"baseline": {"transport": "none"}, "srv": faulty_tool()})
        abl = write_matrix(
            Path(tmp, "abl"), tools={"baseline": {"transport": "none"}, "srv": faulty_tool(ablate="leave_one_out")}
        )
        m = load_matrix(abl)
        best = min(
            _time(
                lambda: expand_ablations(
                    m.path, {"tools": {"srv": dict(m.tools["srv"], ablate="leave_one_out")}, "repos": m.repos}
                )
            )
            for _ in range(20)
        )
        with_ms = statistics.median(_time(lambda: load_matrix(abl)) for _ in range(10))
        without_ms = statistics.median(_time(lambda: load_matrix(plain)) for _ in range(10))
    print(f"ablation speed: {a.tools} tools, python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f}")
    print(f"expand leave_one_out ({len(m.tools) - 2} arms): {best:.2f} ms (best of 20); target < 50 ms")
    print(
        f"load_matrix: {with_ms:.1f} ms with ablate, {without_ms:.1f} ms without (median of 10): +{with_ms - without_ms:.1f} ms"
    )
    arm = Rewriter({"tools": {}, "hide": [tools[0]["name"]]})
    none = Rewriter({})
    for _ in range(2):  # warm
        per_call_us(arm, 1000, tools[1]["name"])
        per_call_us(none, 1000, tools[1]["name"])
    us_arm, us_none = per_call_us(arm, a.calls, tools[1]["name"]), per_call_us(none, a.calls, tools[1]["name"])
    listing = (json.dumps({"jsonrpc": "2.0", "id": 9, "result": {"tools": tools}}) + "\n").encode()
    request = (json.dumps({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}) + "\n").encode()
    t0 = time.perf_counter()
    for _ in range(200):
        arm.from_client(request)
        arm.from_server(listing)
    list_ms = (time.perf_counter() - t0) / 200 * 1000
    print(
        f"per tools/call (in and out): {us_arm:.1f} us with one of {a.tools} tools hidden, {us_none:.1f} us with "
        f"no overrides: +{(us_arm - us_none) / 1000:.4f} ms; target < 0.2 ms"
    )
    print(f"a tools/list answer of {a.tools} tools, filtered: {list_ms:.3f} ms")
    return 0


def _time(f) -> float:
    t0 = time.perf_counter()
    f()
    return (time.perf_counter() - t0) * 1000


if __name__ == "__main__":
    sys.exit(main())
