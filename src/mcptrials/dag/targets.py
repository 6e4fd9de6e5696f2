"""The files the workflow's rules name, made from a trial's identity (mcptrials.core.identity).

The per-trial rules (transcript, scored, judged) take their wildcards from `run_file` and
`log_file`, the aggregate takes every trial's record from `trial_files`, and the wildcards'
patterns are `WILDCARDS`: the rules ask here instead of spelling
`results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}`, so the trial folder is laid
out once (`RUN_DIR`) for the library and the workflow alike. The stages before a trial
(checkout, installs, index, snapshot) write one record each, named here too.
"""

from __future__ import annotations

from mcptrials.core.identity import FIELDS, RUN_DIR

RESULTS = "results"
RUNS = f"{RESULTS}/runs"

# The records of the stages before a trial, as wildcard patterns (`.format(repo=...)` for one).
CHECKOUT_FILE = f"{RESULTS}/checkouts/{{repo}}/checkout.json"
TOOL_INSTALL_FILE = f"{RESULTS}/tools/{{tool}}/install.json"
HOST_INSTALL_FILE = f"{RESULTS}/hosts/{{host}}/install.json"
INDEX_FILE = f"{RESULTS}/index/{{tool}}/{{repo}}/index.json"
SNAPSHOT_FILE = f"{RESULTS}/snapshots/{{tool}}/{{repo}}/tools.json"

# Each field is one path segment; the trial a number (counted from 1).
WILDCARDS = {**{f: "[^/]+" for f in FIELDS}, "trial": "[0-9]+"}


def run_file(name: str) -> str:
    """A trial's record `name` (transcript.json, scored.json, ...) as a wildcard pattern."""
    return f"{RUNS}/{RUN_DIR}/{name}"


def log_file(stage: str) -> str:
    """A per-trial stage's log as a wildcard pattern: results/logs/<stage>/<trial folder>.log."""
    return f"{RESULTS}/logs/{stage}/{RUN_DIR}.log"


def trial_files(m, name: str) -> list[str]:
    """Record `name` of every trial of matrix `m` (Matrix.cells order): a stage's targets."""
    return [f"{key.dir(RUNS)}/{name}" for key in m.cells()]
