"""The harness's own overhead per trial: everything but model time and server work.

    python bench/trial_overhead.py [--trials 5]

Runs one-step trials of a tiny repo through `mcptrials run-trial` (a new process each,
as Snakemake runs them) with
  - the `anthropic` provider against the test Messages-API server answering at once
    (one tool call, then the answer), and
  - the `reference` model,
for the baseline (no server) and the fault-injecting test server in `ok` mode (a stdlib
MCP server that starts in ~50 ms), each in-process (a cold `mcptrials run-trial` process)
and through the warm trial worker (`mcptrials serve-trials`, env MCPTRIALS_WORKER: the
client process forwards the command to a forked child of a process that has already
imported anthropic and mcp). Prints, per configuration, medians of:
  process   wall time of the whole `mcptrials run-trial` process (imports included)
  trial     the trial's own wall_seconds (workspace, server, loop, records)
  startup   the server's start-up time (run_meta)
  model     time the Messages-API server spent on requests (its log)
  overhead  process - startup - model
and overhead as a share of a 60-second trial.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fakes.messages_api import FakeMessagesAPI, reply, text, tool_use  # noqa: E402
from matrix_helpers import faulty_tool, write_matrix  # noqa: E402


def run(tmp: Path, model: str, tool: str, api: FakeMessagesAPI | None, k: int, worker: Path | None) -> dict:
    out = tmp / "runs" / ("worker" if worker else "cold") / model / tool / str(k)
    env = {"ANTHROPIC_API_KEY": "sk-bench", "PATH": "/usr/bin:/bin"}
    if worker:
        env["MCPTRIALS_WORKER"] = str(worker)
    before = len(api.requests) if api else 0
    t0 = time.monotonic()
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "run-trial",
            "--config",
            str(tmp / "config.yaml"),
            "--model",
            model,
            "--tool",
            tool,
            "--scenario",
            "find-helper",
            "--trial",
            str(k),
            "--checkout",
            str(tmp / "co" / "checkout.json"),
            "--out",
            str(out / "transcript.json"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    process = time.monotonic() - t0
    if p.returncode != 0:
        raise SystemExit(p.stderr[-2000:])
    t = json.loads((out / "transcript.json").read_text())
    meta = json.loads((out / "run_meta.json").read_text())
    assert t["outcome"] == "completed", t["outcome_detail"]
    model_s = sum(r["finished"] - r["arrived"] for r in api.requests[before:]) if api else 0.0
    startup = meta["server_startup_seconds"] or 0.0
    return {
        "process": process,
        "trial": t["wall_seconds"],
        "startup": startup,
        "model": model_s,
        "overhead": process - startup - model_s,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=5)
    args = ap.parse_args()
    script = [
        reply(text("Searching."), tool_use("grep", {"pattern": "def helper"})),
        reply(text("`helper` is at `src/util.py:1`.")),
    ]
    with (
        tempfile.TemporaryDirectory(prefix="mcptrials-bench-") as d,
        FakeMessagesAPI(script * (4 * args.trials + 4), exhausted="repeat") as api,
    ):
        tmp = Path(d)
        write_matrix(
            tmp,
            tools={"baseline": {"transport": "none"}, "stdlib-server": faulty_tool("ok")},
            extra={
                "models": {
                    "reference": {"provider": "reference"},
                    "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6", "base_url": api.url},
                }
            },
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mcptrials.cli",
                "checkout",
                "--config",
                str(tmp / "config.yaml"),
                "--repo",
                "tiny",
                "--out",
                str(tmp / "co" / "checkout.json"),
            ],
            check=True,
            capture_output=True,
        )
        sock = tmp / "w.sock"
        worker = subprocess.Popen(
            [sys.executable, "-m", "mcptrials.cli", "serve-trials", "--socket", str(sock)],
            stdout=subprocess.PIPE,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
        )
        worker.stdout.readline()  # "listening": its imports are done
        try:
            print(
                f"{'model':<10} {'tool':<14} {'run':<7} {'process s':>9} {'trial s':>8} {'startup s':>9} "
                f"{'model s':>8} {'overhead s':>10} {'of 60 s':>8}"
            )
            for model in ("claude", "reference"):
                for tool in ("baseline", "stdlib-server"):
                    for how, w in (("cold", None), ("worker", sock)):
                        rows = [
                            run(tmp, model, tool, api if model == "claude" else None, k, w)
                            for k in range(1, args.trials + 1)
                        ]
                        med = {key: statistics.median(r[key] for r in rows) for key in rows[0]}
                        print(
                            f"{model:<10} {tool:<14} {how:<7} {med['process']:>9.2f} {med['trial']:>8.2f} "
                            f"{med['startup']:>9.2f} {med['model']:>8.3f} {med['overhead']:>10.2f} "
                            f"{100 * med['overhead'] / 60:>7.1f}%",
                            flush=True,
                        )
        finally:
            worker.terminate()
            worker.wait()


if __name__ == "__main__":
    main()
