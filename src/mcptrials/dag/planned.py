"""Which trials the next run will run, and why: the count and the cost of the plan.

Snakemake runs a trial's transcript job when it has no transcript (new), when its params
changed (the retry of a missing or kept trial carries a new attempt number:
mcptrials.core.outcomes), or when a job upstream of it reruns (a failed checkout or install is
retried by the next invocation: mcptrials.core.failures; an edited server reruns its snapshot).
Each finished trial records the values it was made with (run_meta.json `inputs`:
mcptrials.dag.rerun.trial_inputs), so comparing them with today's tells which trials an edit
reruns, by name, before any job: the plan line, `mcptrials plan --cost` and the budget check
count every one of them, not only the absent ones.

A trial recorded before `inputs` existed cannot be compared: it is counted as kept and the
plan says how many such trials there are (`unknown`).
"""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.core.failures import failure
from mcptrials.core.outcomes import next_attempt, read_attempts
from mcptrials.matrix.matrix import Matrix
from mcptrials.dag.rerun import changed_inputs, trial_inputs

NEW = "new"
RETRY = "retry of a missing trial"
RETRY_KEPT = "retry of a finished trial kept when a stage it needs failed"

# The first matching prefix names the kind of change (the plan counts trials per kind).
KINDS = (
    ("files:", "server files changed"),
    ("tools.", "tool entry changed"),
    ("scenario.", "scenario changed"),
    ("repos.", "repository changed"),
    ("models.", "model changed"),
    ("hosts.", "host changed"),
    ("prompt:", "packaged prompt changed"),
    ("recording", "recording changed"),
)


def change_kind(label: str) -> str:
    """What a changed input label is, in words: `files:tools.mine` -> server files changed."""
    return next((kind for prefix, kind in KINDS if label.startswith(prefix)), "config changed")


def rerun_reason(labels: list[str]) -> str:
    """`rerun: server files changed` (the kinds, sorted) for a trial whose inputs changed."""
    return "rerun: " + ", ".join(sorted({change_kind(x) for x in labels}))


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


class Planned(dict):
    """TrialKey -> why its transcript job will run (`new`, `retry of a missing trial`,
    `rerun: ...`); `unknown` counts the finished trials whose records hold no `inputs` (made
    by an older mcptrials: not counted)."""

    def __init__(self):
        super().__init__()
        self.unknown = 0

    def counts(self) -> dict[str, int]:
        """reason -> how many trials, most first."""
        out: dict[str, int] = {}
        for why in self.values():
            out[why] = out.get(why, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: (-kv[1], kv[0])))


def planned_trials(m: Matrix, results: Path = Path("results")) -> Planned:
    """Every trial of the matrix whose transcript job the next run will run, with its reason."""
    results = Path(results)
    max_attempts = m.config["retries"]["max_attempts"]
    planned = Planned()
    cache: dict = {}  # trial_inputs' work, shared by the trials of this plan
    stage_failed = _failed_stages(m, results)
    if m.sequential:  # a run in waves: the waves planned so far (the checkpoints plan the rest)
        from mcptrials.dag.waves import planned_keys

        keys = planned_keys(m, results)
    for key in keys if m.sequential else m.cells():
        d = key.dir(results / "runs")
        if not (d / "transcript.json").is_file():
            planned[key] = NEW
            continue
        failed = stage_failed.get(("checkout", key.repo)) or stage_failed.get(("install", m.server_of(key.tool)))
        if failed:  # the stage is retried, and every trial that needs it reruns after it
            planned[key] = f"retry: {failed}"
            continue
        state = read_attempts(d)
        if state is not None and next_attempt(state, max_attempts) > int(state["attempt"]):
            planned[key] = RETRY_KEPT if state.get("stale") else RETRY
            continue
        recorded = (_read(d / "run_meta.json") or {}).get("inputs")
        if recorded is None:
            planned.unknown += 1
            continue
        labels = changed_inputs(recorded, trial_inputs(m, key, cache))
        if labels:
            planned[key] = rerun_reason(labels)
    return planned


def _failed_stages(m: Matrix, results: Path) -> dict[tuple[str, str], str]:
    """(stage, repo or tool) -> 'the checkout of demo failed' for each failed stage record the
    next invocation retries (mcptrials.core.failures.dag_attempt), with its dependent trials."""
    out = {}
    for repo in m.run_repos():
        if failure(_read(results / "checkouts" / repo / "checkout.json")):
            out[("checkout", repo)] = f"the checkout of {repo} failed"
    for tool in m.installed_tools():
        if failure(_read(results / "tools" / tool / "install.json")):
            out[("install", tool)] = f"the install of {tool} failed"
    return out


def reasons_line(planned: Planned) -> str:
    """'8 rerun: server files changed, 2 new' (empty when nothing runs)."""
    text = ", ".join(f"{n} {why}" for why, n in planned.counts().items())
    if planned.unknown:
        text += (", " if text else "") + (
            f"{planned.unknown} finished trial(s) recorded without their inputs (an older mcptrials) not counted"
        )
    return text


def trial_numbers(planned: Planned) -> dict[tuple, set[int]]:
    """(model, host, tool, scenario) -> the trial numbers planned: the cost plan's per-cell count."""
    out: dict[tuple, set[int]] = {}
    for k in planned:
        out.setdefault((k.model, k.host, k.tool, k.scenario), set()).add(k.trial)
    return out


def matrix_product(m: Matrix) -> str:
    """'2 model(s) x 2 host(s) x 2 tool(s) x 4 scenario(s) x 2 trial(s) = 64 trials' for the plan
    line, saying which (model, host) pairs a host cannot drive and how many trials that leaves,
    so the product and the count always agree."""
    seq = m.sequential  # in waves: min to max trials a cell, so the product is the most
    text = (
        f"{len(m.models)} model(s) x {len(m.hosts)} host(s) x {len(m.tools)} tool(s) x "
        f"{len(m.run_scenarios())} scenario(s) x "
        + (f"{seq['min']} to {seq['max']} trial(s) in waves" if seq else f"{m.trials} trial(s)")
    )
    product = len(m.models) * len(m.hosts) * len(m.tools) * len(m.run_scenarios()) * m.trials
    held = {sc.id for sc in m.confirm_scenarios()}
    n = sum(1 for k in m.cells() if k.scenario not in held)
    more = sum(1 for k in m.cells() if k.scenario in held)
    more_text = (
        f", and {more} trial(s) confirming ablation arms on held-out scenario(s) (ablate.confirm)" if more else ""
    )
    dropped = [f"{model} under {host}" for model in m.models for host in m.hosts if not m.runs_under(model, host)]
    if not dropped:
        return f"{text} = {'at most ' if seq else ''}{n} trials{more_text}"
    return (
        f"{text} = {product}, less {product - n} for the (model, host) pair(s) the host cannot drive "
        f"({', '.join(dropped)}): {n} trials{more_text}"
    )
