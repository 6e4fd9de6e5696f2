"""`run_trial` (one trial under one config host: the host's code from the registry
mcptrials.run.hosts, the trial from the core mcptrials.run.trial) and `run_trial_job`, the
workflow's trial job (`mcptrials run-trial`), which writes its transcript.json and run_meta.json.

A fault inside the trial is recorded in its records and the command exits 0, so the
workflow goes on; a missing outcome (mcptrials.core.outcomes) also keeps the attempt's records
under attempts/<n>/ for the retry of the next invocation; only bad input (the config) fails it, before anything is spent. A model
with provider `recorded` runs nothing: its recorded file is converted (mcptrials.run.recorded).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import TranscriptRecord
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.matrix import Matrix
from mcptrials.run.trial import run_under, scrub_secrets

__all__ = ["check_trial", "run_key", "run_trial", "run_trial_job", "scrub_secrets"]


def run_trial(
    m: Matrix,
    model: str,
    tool: str,
    scenario_id: str,
    trial: int,
    checkout: dict,
    snapshot: dict | None,
    index_dir: Path | None,
    out_dir: Path,
    host: str = "loop",
) -> tuple[TranscriptRecord, dict]:
    """run_key of the trial these names make (the tests' and benches' way in)."""
    key = TrialKey(model, host, tool, m.scenarios[scenario_id].repo, scenario_id, trial)
    return run_key(m, key, checkout, snapshot, index_dir, out_dir)


def run_key(
    m: Matrix, key: TrialKey, checkout: dict, snapshot: dict | None, index_dir: Path | None, out_dir: Path
) -> tuple[TranscriptRecord, dict]:
    """Run one trial in a sandbox; always return (transcript, run_meta), API keys scrubbed.
    A recorded model's trial is its recording converted (mcptrials.run.recorded): nothing runs."""
    from mcptrials.run.hosts import host_for

    if m.specs.models[key.model].recorded:
        from mcptrials.run.recorded import run_recorded

        return run_recorded(m, key, checkout, snapshot)
    return run_under(host_for(m.specs.hosts[key.host].kind), m, key, checkout, snapshot, index_dir, out_dir)


def check_trial(m: Matrix, model: str, host: str, tool: str, scenario: str) -> None:
    """Bad input stops a trial before anything is spent: a name the config lacks, or the
    model's API key unset (ConfigError, with the file, the field and the fix)."""
    from mcptrials.matrix.config import check_api_keys

    for kind, name, known in (
        ("models", model, m.models),
        ("hosts", host, m.hosts),
        ("tools", tool, m.tools),
        ("scenarios", scenario, m.scenarios),
    ):
        if name not in known:
            raise ConfigError(
                f"{m.path}: field {kind}: no {kind[:-1]} {name!r}; use one of: {', '.join(sorted(known))}"
            )
    missing = [p for p in check_api_keys(m) if f"models.{model}" in p]
    if missing:
        raise ConfigError("\n".join(missing))


def trial_bound(m: Matrix, key: TrialKey, out: Path) -> tuple[float | None, float]:
    """(the most the trial and its judging can cost, the judge's part) under budget.max_cost_usd;
    (None, 0.0) without a budget (mcptrials.cost.budget)."""
    from mcptrials.cost.budget import FREE_PROVIDERS, results_dir_of
    from mcptrials.cost.plan import cell_cost

    if m.config["budget"].get("max_cost_usd") is None:
        return None, 0.0
    cost = cell_cost(m, key, results_dir_of(out))
    provider = m.specs.models[key.model].provider
    own = (
        0.0
        if provider in FREE_PROVIDERS
        else (cost.upper_per_trial if cost.upper_per_trial is not None else cost.per_trial) or 0.0
    )
    judge_part = cost.judge_upper_per_trial or 0.0
    return own + judge_part, judge_part


def run_trial_job(
    m: Matrix,
    model: str,
    host: str,
    tool: str,
    scenario: str,
    trial: int,
    checkout_json,
    snapshot_json,
    index_dir: Path | None,
    out: Path,
    inputs: dict | None = None,
) -> tuple[Mapping[str, Any], dict | None]:
    """The workflow's trial job: run one trial under the budget and write its transcript (`out`)
    and run_meta.json beside it; return (transcript, attempt state: None unless its outcome is
    missing). A trial whose checkout or install failed, or that the budget stops, is not run:
    when it finished in an earlier run, its records are kept byte for byte (never replaced by a
    placeholder) and retried by the next invocation; else it is `not_run`. A recorded model's
    trial is converted all the same (it needs no workspace and no server), the failed stage
    named in its run_meta (`converted_without`). `inputs` (mcptrials.dag.rerun.trial_inputs)
    go into run_meta.json: what the trial was made with."""
    from mcptrials.core.failures import failure
    from mcptrials.core.outcomes import is_missing, keep_finished, record_attempt, restore_finished
    from mcptrials.core.records import read_json, write_json

    # the budget (mcptrials.cost.budget): the trial reserves the most it and its judging can cost, or is
    # not run (no model call, no server); when it ends it settles its own cost and leaves the
    # judge's part reserved for `mcptrials judge` to settle
    from mcptrials.cost.budget import gate, judge_key, ledger_record

    check_trial(m, model, host, tool, scenario)
    out.parent.mkdir(parents=True, exist_ok=True)
    key = TrialKey(model, host, tool, m.scenarios[scenario].repo, scenario, trial)
    bound, judge_part = trial_bound(m, key, out)
    checkout = read_json(checkout_json)
    snapshot = read_json(snapshot_json) if snapshot_json else None
    # a checkout or install that failed: missing data, reserved and spent nothing (mcptrials.core.failures)
    unavailable = failure(checkout) or (snapshot or {}).get("unavailable")
    converted_without = None
    if unavailable and m.specs.models[model].recorded:
        # a recorded trial needs neither: its recording is converted (no workspace, no server);
        # run_meta names what it lacked, and scoring leaves its citations not checked
        converted_without = {
            k: v for k, v in (("checkout", failure(checkout)), ("snapshot", (snapshot or {}).get("unavailable"))) if v
        }
        if (snapshot or {}).get("unavailable"):
            snapshot = None  # no tools/list of ours: the recording's own, or unknown (mcptrials.run.recorded)
        unavailable = None
    ledger, reservation, stopped = (
        (None, None, None) if unavailable else gate(m.config, m.specs.models[model].provider, out, key.key, bound)
    )
    why = unavailable or stopped
    if why:
        kept = restore_finished(out.parent)
        if kept is not None:
            print(f"kept the finished trial of an earlier run: {why}", file=sys.stderr)
            return kept, record_attempt(out.parent, kept, m.config["retries"]["max_attempts"], kept=why)
        transcript, meta = _not_run(m, key, why)
    else:
        transcript, meta = run_key(m, key, checkout, snapshot, index_dir, out.parent)
        if converted_without:
            meta["converted_without"] = converted_without
        if ledger is not None:
            if judge_part:  # the judge's room, kept before the trial's reservation is settled
                ledger.append(
                    {
                        "kind": "reserve",
                        "id": f"{reservation}-judge",
                        "trial": judge_key(key.cell()),
                        "reserve_usd": judge_part,
                    }
                )
            ledger.append(ledger_record(m.config["pricing"], transcript, settles=reservation))
    if inputs is not None:
        meta["inputs"] = inputs
    # run_trial has scrubbed API-key values from both records already
    write_json(out.parent / "run_meta.json", meta)
    write_json(out, transcript)
    if not is_missing(transcript["outcome"]):
        keep_finished(out.parent)
    # a missing outcome (api_failed, harness_failed, not_run): keep this attempt's records
    # under attempts/<n>/ and the count in attempts/attempts.json, which the next DAG reads
    # (a recorded model's conversion would give the same again: kept missing, not retried)
    state = record_attempt(
        out.parent, transcript, m.config["retries"]["max_attempts"], retriable=not m.specs.models[model].recorded
    )
    return transcript, state


def _not_run(m: Matrix, key: TrialKey, detail: str) -> tuple[TranscriptRecord, dict]:
    """The records of a trial that did not start (the budget stopped it, or a checkout or install
    it needs failed): outcome not_run, nothing spent."""
    from mcptrials.matrix.hashing import file_sha256
    from mcptrials.run.trial import SYSTEM_PROMPT, Recorder, now_iso, transcript_record

    at = now_iso()
    model, scenario = m.specs.models[key.model], m.scenarios[key.scenario]
    meta = {
        "model": key.model,
        "host": key.host,
        "tool": key.tool,
        "scenario": key.scenario,
        "trial": key.trial,
        "provider": model.provider,
        "model_id": model.model,
        "repo": scenario.repo,
        "system_prompt_sha256": file_sha256(SYSTEM_PROMPT),
        "started_at": at,
        "ended_at": at,
        "not_run": detail,
    }
    return transcript_record(m, model, key, "not_run", detail, Recorder(), meta, 0.0), meta
