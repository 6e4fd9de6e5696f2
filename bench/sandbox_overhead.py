"""What the bubblewrap sandbox adds to a server start and to a state check.

    python bench/sandbox_overhead.py [--reps 20]

Each measurement runs --reps times with `sandbox: bubblewrap` and with `sandbox: none`,
interleaved (bubblewrap, none, bubblewrap, ...) so that load from other work on the
machine falls on both alike, after one discarded warm-up of each. Measured:
  server start   `servers.open_server` up to a connected MCP session (process start,
                 initialize handshake), for the fault-injecting test server in `ok` mode
                 (stdlib only, run by the base interpreter, its script in `read_only`) and,
                 when installed, the demo's git server (.tools/git/bin/mcp-server-git)
  state check    `trial.run_state_check("git status --short", workspace, mechanism)` in
                 a small git workspace
  bare           `true` through `ProcessSandbox.wrap` and subprocess.run: the sandbox's
                 own cost with nothing to start
Prints min / median / max in milliseconds per row, then the added time (median with
bubblewrap minus median without) per server start and per state check, next to the
50 ms target. Numbers only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# The tool installs of the checkout (the git server), as the tests share them.
os.environ.setdefault("MCPTRIALS_TOOLS_DIR", str(ROOT / ".tools"))
from matrix_helpers import faulty_tool, write_matrix  # noqa: E402

from mcptrials.matrix.config import load_matrix  # noqa: E402
from mcptrials.prepare.sandbox import BUBBLEWRAP, NONE, ProcessSandbox, bwrap_version, check_available  # noqa: E402
from mcptrials.prepare.servers import open_server, tool_env_dir  # noqa: E402
from mcptrials.matrix.specs import ToolSpec  # noqa: E402
from mcptrials.run.trial import run_state_check  # noqa: E402

MECHANISMS = (BUBBLEWRAP, NONE)
TARGET_MS = 50.0


async def server_start(spec: ToolSpec, workspace: Path, scratch: Path, k: int) -> float:
    """Seconds from open_server's start to a connected session (the server then stops)."""
    run = scratch / f"{spec.name}-{spec.sandbox}-{k}"
    home, tmp = run / "home", run / "tmp"
    home.mkdir(parents=True)
    tmp.mkdir()
    values = {"workspace": str(workspace), "repo": str(workspace), "home": str(home), "tmp": str(tmp), "index": ""}
    t0 = time.monotonic()
    async with open_server(spec, values, run / "stderr.log", set()) as s:
        elapsed = time.monotonic() - t0
        assert s.server_name, "no server info: the session did not initialize"
        assert s.sandbox["mechanism"] == spec.sandbox, s.sandbox
    shutil.rmtree(run)
    return elapsed


def state_check(workspace: Path, mechanism: str) -> float:
    t0 = time.monotonic()
    r = run_state_check("git status --short", workspace, mechanism)
    elapsed = time.monotonic() - t0
    if r["exit_code"] != 0:
        raise SystemExit(f"state check failed under {mechanism}: {r['output']}")
    return elapsed


def bare_true(mechanism: str) -> float:
    argv, env = ProcessSandbox(mechanism=mechanism).wrap(["true"], {"PATH": "/usr/bin:/bin"}, None)
    t0 = time.monotonic()
    subprocess.run(argv, env=env, check=True)
    return time.monotonic() - t0


def interleaved(reps: int, measure) -> dict[str, list[float]]:
    """measure(mechanism) -> seconds, reps times each, alternating, after a warm-up of each."""
    for mech in MECHANISMS:
        measure(mech)
    out: dict[str, list[float]] = {mech: [] for mech in MECHANISMS}
    for _ in range(reps):
        for mech in MECHANISMS:
            out[mech].append(measure(mech))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    check_available()
    git_server = tool_env_dir("git") / "bin" / "mcp-server-git"
    tools = {"stdlib-server": faulty_tool("ok")}
    if git_server.exists():
        tools["git"] = {"command": "mcp-server-git", "args": ["--repository", "{workspace}"]}

    with tempfile.TemporaryDirectory(prefix="mcptrials-bench-") as d:
        tmp = Path(d)
        m = load_matrix(write_matrix(tmp, tools=tools))
        workspace = tmp / "repo"  # a git repository with one commit
        (workspace / "src" / "new.py").write_text("x = 1\n")  # so `git status` has a line to print
        scratch = tmp / "scratch"

        rows: list[tuple[str, dict[str, list[float]]]] = []
        for name in tools:
            config = m.specs.tools[name].config
            specs = {mech: ToolSpec.from_config(name, config, mech) for mech in MECHANISMS}
            loop = asyncio.new_event_loop()
            counter = iter(range(10**9))
            try:
                times = interleaved(
                    args.reps,
                    lambda mech: loop.run_until_complete(server_start(specs[mech], workspace, scratch, next(counter))),
                )
            finally:
                loop.close()
            rows.append((f"server start: {name}", times))
        rows.append(("state check: git status", interleaved(args.reps, lambda mech: state_check(workspace, mech))))
        rows.append(("bare: true", interleaved(args.reps, bare_true)))

    print(
        f"bwrap {bwrap_version()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, "
        f"{args.reps} reps each (ms)"
    )
    print(f"{'what':<28} {'sandbox':<11} {'min':>7} {'median':>7} {'max':>7}")
    added = {}
    for label, times in rows:
        for mech in MECHANISMS:
            ms = [1000 * t for t in times[mech]]
            print(f"{label:<28} {mech:<11} {min(ms):>7.1f} {statistics.median(ms):>7.1f} {max(ms):>7.1f}")
        added[label] = 1000 * (statistics.median(times[BUBBLEWRAP]) - statistics.median(times[NONE]))
    print()
    print(f"{'added by bubblewrap (median difference)':<44} {'ms':>6}   target")
    for label, ms in added.items():
        target = f"< {TARGET_MS:.0f} ms: {'yes' if ms < TARGET_MS else 'NO'}" if not label.startswith("bare") else ""
        print(f"{label:<44} {ms:>6.1f}   {target}")


if __name__ == "__main__":
    main()
