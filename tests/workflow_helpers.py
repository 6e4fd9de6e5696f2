"""Running the real workflow on a temporary project, with the test Messages-API server as a
separate process (shared by tests/run/test_concurrency.py and tests/run/test_interrupt.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from fakes.messages_api import spawn
from matrix_helpers import ROOT, TOOLS_ENV

KEY = "fake-key-scale-test-0123456789"
PATH = f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"


def copy_workflow(dest: Path) -> None:
    shutil.copy(ROOT / "Snakefile", dest / "Snakefile")
    shutil.copytree(ROOT / "workflow", dest / "workflow")
    if (ROOT / "locked").exists():
        shutil.copytree(ROOT / "locked", dest / "locked")


def snakemake_cmd(wd: Path, *args) -> list[str]:
    return [
        sys.executable,
        "-m",
        "snakemake",
        "--directory",
        str(wd),
        "--snakefile",
        str(wd / "Snakefile"),
        "--configfile",
        str(wd / "config.yaml"),
        "--scheduler",
        "greedy",
        *args,
    ]


def library_path() -> dict:
    """PYTHONPATH passed on: the workflow (and its jobs) then run the library these tests import (a
    git worktree's src/, not the checkout the venv's editable install names)."""
    return {k: os.environ[k] for k in ("PYTHONPATH",) if os.environ.get(k)}


def workflow_env(wd: Path) -> dict:
    return {"PATH": PATH, "HOME": str(wd), "ANTHROPIC_API_KEY": KEY, **TOOLS_ENV, **library_path()}


def run_snakemake(
    wd: Path, *args, check=True, timeout=600, env=None, failed_stages_ok=False
) -> subprocess.CompletedProcess:
    """Snakemake on the project in wd (env: workflow_env unless given); raises with its logs on failure.
    failed_stages_ok: a run whose only failure is its last job, `mcptrials status` (a server that
    did not start, a failed checkout or install: mcptrials.core.failures), after the report was written,
    passes too (a test of a broken server expects that)."""
    p = subprocess.run(
        snakemake_cmd(wd, *args),
        capture_output=True,
        text=True,
        env=env if env is not None else workflow_env(wd),
        timeout=timeout,
    )
    if failed_stages_ok and p.returncode != 0 and stages_failed_only(wd, p):
        return p
    if check and p.returncode != 0:
        logs = "\n".join(f"--- {f}\n{f.read_text()[-1500:]}" for f in (wd / "results" / "logs").rglob("*.log"))
        raise AssertionError(f"snakemake {args} failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}\n{logs[-6000:]}")
    return p


def stages_failed_only(wd: Path, p: subprocess.CompletedProcess) -> bool:
    """The run failed in its status job only: the report is there and no other rule erred."""
    out = p.stdout + p.stderr
    errs = set(re.findall(r"Error in rule (\w+):", out))
    return errs == {"status"} and (wd / "results" / "report" / "index.html").is_file()


class MessagesServer:
    """tests/fakes/messages_api.py as its own process; `requests()` reads its JSONL log."""

    def __init__(self, folder: Path, script: list, *extra: str):
        folder.mkdir(parents=True, exist_ok=True)
        self.script_path = folder / "script.json"
        self.script_path.write_text(json.dumps(script))
        self.log = folder / "requests.jsonl"
        self.proc, self.url = spawn(self.script_path, self.log, folder / "port.txt", *extra)

    def requests(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [r for r in map(json.loads, self.log.read_text().splitlines()) if r["path"] == "/v1/messages"]

    def clear(self) -> None:
        self.log.unlink(missing_ok=True)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def max_overlap(intervals: list[tuple[float, float]]) -> int:
    """The largest number of [start, end] intervals open at one instant (a sweep over the
    sorted ends; an interval that ends exactly when another starts does not overlap it)."""
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals], key=lambda x: (x[0], x[1]))
    best = cur = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


def snakemake(wd: Path, *args, check=True, failed_stages_ok=False):
    """No API key in this environment: the missing-key test relies on it."""
    return run_snakemake(
        wd,
        *args,
        check=check,
        env={"PATH": PATH, "HOME": str(wd), **TOOLS_ENV, **library_path()},
        failed_stages_ok=failed_stages_ok,
    )


def planned(wd: Path, *targets) -> dict[str, int]:
    """Job counts per rule of a dry run ({} when nothing is to be done)."""
    p = snakemake(wd, "-n", *targets)
    out = p.stdout + p.stderr
    counts = {}
    if "Job stats:" in out:
        table = out.split("Job stats:")[1]
        for line in table.splitlines()[3:]:
            m = re.match(r"^(\w+)\s+(\d+)$", line.strip())
            if not m:
                break
            counts[m.group(1)] = int(m.group(2))
    counts.pop("total", None)
    return counts
