"""What our MCP proxy (src/mcptrials/prepare/proxy.py, a description variant's) adds to a tools/call.

    python bench/proxy_latency.py [--calls 1000] [--big-chars 100000]

Two sessions of the real `mcp` 2.3.0 client are open at once against the same stdio server,
the fault-injecting test server in `ok` mode (stdlib only, so the server's own time is
small and steady): one started directly, one behind the proxy with overrides that rename
`echo` to `say` and rewrite descriptions (so every call of `say` is parsed, mapped and
re-serialized on its way in). Calls alternate between the two sessions, the order flipped
each round, so that load from other work on the machine falls on both alike; 20 warm-up
calls of each are discarded. Kinds of call:
  small   echo / say with a short text (the rename path)
  big     big with --big-chars characters of result (the fast path: a result line the proxy
          copies without parsing, as with any tool result once tools/list is answered)
Prints, per kind, median and p95 in ms of each side, the added median and p95 (proxied
minus direct), and the median of the per-round differences, next to the 2 ms target.
Numbers only: nothing is asserted. Unsandboxed on both sides: bubblewrap adds nothing per
call (the same pipes), only to the start (bench/sandbox_overhead.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from matrix_helpers import BASE_PYTHON, FAULTY_SERVER  # noqa: E402

from mcptrials.prepare.proxy import command_line  # noqa: E402
from mcptrials.prepare.servers import proxy_script  # noqa: E402

TARGET_MS = 2.0
OVERRIDES = {
    "tools": {
        "echo": {"name": "say", "description": "Say the text back.", "parameters": {"text": "What to say."}},
        "big": {"description": "A long text."},
    }
}


def p95(xs: list[float]) -> float:
    """The 95th percentile, by linear interpolation between order statistics (numpy's default)."""
    s = sorted(xs)
    k = (len(s) - 1) * 0.95
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def client(argv: list[str], errlog):
    from mcp import Client, StdioServerParameters, stdio_client

    params = StdioServerParameters(command=argv[0], args=argv[1:], env={"PATH": "/usr/bin:/bin"})
    return Client(stdio_client(params, errlog=errlog), mode="auto", read_timeout_seconds=60, cache=None)


async def timed(c, name: str, args: dict) -> float:
    t0 = time.perf_counter()
    r = await c.call_tool(name, args)
    elapsed = (time.perf_counter() - t0) * 1000
    if r.is_error:
        raise RuntimeError(f"{name}: {r.content}")
    return elapsed


async def measure(calls: int, big_chars: int) -> dict:
    direct = [BASE_PYTHON, str(FAULTY_SERVER), "ok"]
    proxied = command_line(BASE_PYTHON, proxy_script(), OVERRIDES, direct)
    kinds = {
        "small": (("echo", {"text": "hello"}), ("say", {"text": "hello"})),
        "big": (("big", {"chars": big_chars}), ("big", {"chars": big_chars})),
    }
    out = {}
    with tempfile.TemporaryDirectory() as tmp, open(Path(tmp, "err.log"), "w") as errlog:
        async with client(direct, errlog) as d, client(proxied, errlog) as p:
            names = {t.name for t in (await p.list_tools()).tools}
            assert "say" in names and "echo" not in names, names
            for kind, ((dn, da), (pn, pa)) in kinds.items():
                for _ in range(20):
                    await timed(d, dn, da)
                    await timed(p, pn, pa)
                ds, ps = [], []
                for i in range(calls):
                    if i % 2:
                        ds.append(await timed(d, dn, da))
                        ps.append(await timed(p, pn, pa))
                    else:
                        ps.append(await timed(p, pn, pa))
                        ds.append(await timed(d, dn, da))
                out[kind] = (ds, ps)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--big-chars", type=int, default=100_000)
    a = ap.parse_args()
    res = asyncio.run(measure(a.calls, a.big_chars))
    print(
        f"proxy latency: {a.calls} calls per kind and side, python {sys.version.split()[0]}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'kind':6} {'direct med':>10} {'p95':>7} {'proxy med':>10} {'p95':>7} {'added med':>10} {'added p95':>10} "
        f"{'paired med':>10}"
    )
    for kind, (ds, ps) in res.items():
        added_med = statistics.median(ps) - statistics.median(ds)
        added_p95 = p95(ps) - p95(ds)
        paired = statistics.median(x - y for x, y in zip(ps, ds))
        print(
            f"{kind:6} {statistics.median(ds):10.3f} {p95(ds):7.3f} {statistics.median(ps):10.3f} {p95(ps):7.3f} "
            f"{added_med:10.3f} {added_p95:10.3f} {paired:10.3f}"
        )
    worst = max(statistics.median(ps) - statistics.median(ds) for ds, ps in res.values())
    print(
        f"added per tools/call (median, worst kind): {worst:.3f} ms; target < {TARGET_MS} ms: "
        f"{'met' if worst < TARGET_MS else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
