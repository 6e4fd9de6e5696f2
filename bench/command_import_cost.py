"""What each `mcptrials` subcommand imports before it runs: the mcptrials modules its parser
pulls in and the seconds to build it, in a fresh interpreter each (a per-trial job pays this
on every trial, so a command must import only its own module: cli.COMMANDS is lazy).

    python bench/command_import_cost.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import sys, time, json
t0 = time.perf_counter()
from mcptrials.cli import build_parser
build_parser({cmd!r})
dt = time.perf_counter() - t0
print(json.dumps({{"seconds": dt, "modules": sorted(m for m in sys.modules if m.startswith("mcptrials"))}}))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from mcptrials.cli import COMMANDS

    print(f"{'command':22} {'modules':>7} {'median ms':>10}")
    for cmd in COMMANDS:
        runs = [
            json.loads(
                subprocess.run(
                    [sys.executable, "-c", PROBE.format(cmd=cmd)], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(args.repeat)
        ]
        ms = statistics.median(r["seconds"] for r in runs) * 1000
        print(f"{cmd:22} {len(runs[0]['modules']):>7} {ms:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
