"""The files the workflow's rules name, made from a trial's identity (mcptrials.core.identity).

The per-trial rules (transcript, scored, judged) take their wildcards from `run_file` and
`log_file`, the aggregate takes every trial's record from `trial_files`, and the wildcards'
patterns are `wildcards(m)`, each an alternation of the matrix's values (a target with a
mistyped tool or scenario matches no rule, and Snakemake names it at once): the rules ask here instead of spelling
`results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}`, so the trial folder is laid
out once (`RUN_DIR`) for the library and the workflow alike. The stages before a trial
(checkout, installs, index, snapshot) write one record each, named here too.
"""

from __future__ import annotations

import re

from mcptrials.core.identity import FIELDS, RUN_DIR

RESULTS = "results"
RUNS = f"{RESULTS}/runs"

# The records of the stages before a trial, as wildcard patterns (`.format(repo=...)` for one).
CHECKOUT_FILE = f"{RESULTS}/checkouts/{{repo}}/checkout.json"
TOOL_INSTALL_FILE = f"{RESULTS}/tools/{{tool}}/install.json"
HOST_INSTALL_FILE = f"{RESULTS}/hosts/{{host}}/install.json"
INDEX_FILE = f"{RESULTS}/index/{{tool}}/{{repo}}/index.json"
SNAPSHOT_FILE = f"{RESULTS}/snapshots/{{tool}}/{{repo}}/tools.json"

# Each field is one path segment; the trial a number (counted from 1): the shape every
# matrix's wildcards(m) narrows to its own values.
WILDCARDS = {**{f: "[^/]+" for f in FIELDS}, "trial": "[0-9]+"}


def _alternation(values) -> str:
    """A regex matching exactly one of `values` (regex-escaped), or nothing when there are none."""
    values = sorted({str(v) for v in values})
    return "|".join(re.escape(v) for v in values) if values else "(?!)"


def wildcards(m) -> dict[str, str]:
    """The workflow's wildcard constraints for matrix `m`: each field an alternation of its
    values (every model, host, tool and repo of the config, the run's scenarios, trials 1 to
    `trials`), so a target outside the matrix matches no rule instead of failing in a lookup."""
    values = {
        "model": m.models,
        "host": m.hosts,
        "tool": m.tools,
        "repo": m.repos,
        "scenario": [sc.id for sc in m.trial_scenarios()],
        "trial": range(1, m.trials + 1),
    }
    return {f: _alternation(values[f]) for f in FIELDS}


def run_file(name: str) -> str:
    """A trial's record `name` (transcript.json, scored.json, ...) as a wildcard pattern."""
    return f"{RUNS}/{RUN_DIR}/{name}"


def log_file(stage: str) -> str:
    """A per-trial stage's log as a wildcard pattern: results/logs/<stage>/<trial folder>.log."""
    return f"{RESULTS}/logs/{stage}/{RUN_DIR}.log"


def trial_files(m, name: str) -> list[str]:
    """Record `name` of every trial of matrix `m` (Matrix.cells order): a stage's targets."""
    return [f"{key.dir(RUNS)}/{name}" for key in m.cells()]
