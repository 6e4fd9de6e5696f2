"""A stage that failed (a checkout, a tool's install) is missing data, not the end of the run.

`mcptrials checkout` and `mcptrials install-tool` catch their own failure (an unreachable
URL, a commit the source does not hold, a package that does not install) and write their
record anyway, marked failed:

    {"stage": "checkout", "failed": true, "error": "<one line>", "attempt": 1, ...}

so the DAG goes on: the snapshot of a tool on that repo (or of that tool) says why it is
unavailable (`unavailable`), and its trials are `not_run` with that reason (missing: never a
pass, a fail or a zero). The aggregate lists the failed stages (`failed_stages`), the report
opens with them and how to fix them, and `mcptrials status`, the workflow's last job, fails the
run after the report is written, so CI sees it.

Retries. A failed stage's rule carries `attempt` in its params (`dag_attempt`): the
recorded attempt + 1 while its record is failed, else the attempt it succeeded with. So the
next invocation runs exactly the failed stages again, and once one succeeds nothing reruns
but what depends on it (a repository's trials, a tool's trials).
"""

from __future__ import annotations

import json
from pathlib import Path

STAGES = {"checkout": "results/checkouts/*/checkout.json", "install": "results/tools/*/install.json"}


def first_line(error: BaseException | str) -> str:
    text = str(error).strip() or type(error).__name__
    return " ".join(text.split())[:1000]


def last_line(text: str | None) -> str:
    """The last non-blank line of a log tail (the usual cause of a crash), at most 300 characters."""
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def failed_record(stage: str, error: BaseException | str, attempt: int, **what) -> dict:
    """The record a stage writes when it failed."""
    return {"stage": stage, **what, "failed": True, "error": first_line(error), "attempt": attempt}


def _read(path: Path) -> dict | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def failure(rec: dict | None) -> str | None:
    """ "checkout failed: <error>" of a failed record, else None."""
    if rec and rec.get("failed"):
        return f"{rec.get('stage', 'stage')} failed: {rec.get('error')}"
    return None


def dag_attempt(path) -> int:
    """The attempt a stage's job is planned with (see the module docstring): 0 without a record."""
    rec = _read(Path(path))
    if rec is None:
        return 0
    attempt = int(rec.get("attempt") or 0)
    return attempt + 1 if rec.get("failed") else attempt


def failed_stages(results: Path = Path("results")) -> list[dict]:
    """Every failed checkout and install, and every tools snapshot whose server did not start,
    in `results`: [{stage, name, error, log, fix}]; `log` is the file that holds the cause (a
    server's: its server.stderr.log), and the fix names it."""
    results = Path(results)
    out = []
    for stage, pattern in STAGES.items():
        for p in sorted(results.glob(pattern.removeprefix("results/"))):
            rec = _read(p)
            if rec and rec.get("failed"):
                name = p.parent.name
                log = f"results/logs/{stage}/{name}.log"
                fix = (
                    f"see {log}, make the repository reachable (its url, or a mirror in `mirrors:`) or fix its "
                    "commit, then run snakemake again: only its trials run"
                    if stage == "checkout"
                    else f"see {log}, fix the tool's `install:`, then run snakemake again: only its trials run"
                )
                out.append({"stage": stage, "name": name, "error": rec.get("error"), "log": log, "fix": fix})
    for p in sorted(results.glob("snapshots/*/*/tools.json")):
        rec = _read(p)
        if rec and rec.get("error") and not rec.get("unavailable"):
            tool, repo = p.parent.parent.name, p.parent.name
            # the server's own stderr is in server.stderr.log beside tools.json (the stage's log under
            # results/logs/snapshot/ holds the harness's side only, e.g. "Connection closed")
            log = f"results/snapshots/{tool}/{repo}/server.stderr.log"
            said = last_line(rec.get("stderr_tail"))
            out.append(
                {
                    "stage": "snapshot",
                    "name": f"{tool}/{repo}",
                    "error": first_line(rec["error"]) + (f"; the server's stderr ends: {said}" if said else ""),
                    "log": log,
                    "fix": f"the server did not start: read its stderr in {log}, fix its command, args, "
                    "read_only or install, then run snakemake again (the stage's own log is "
                    f"results/logs/snapshot/{tool}/{repo}.log)",
                }
            )
    return out


def status_text(found: list[dict]) -> str:
    return "\n".join(f"mcptrials: {f['stage']} {f['name']} failed: {f['error']} ({f['fix']})" for f in found)
