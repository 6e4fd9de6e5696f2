"""What the workflow asks of a run in waves (`trials: {min, max, until: decided}`;
workflow/rules/sequential.smk): the files each wave's checkpoint reads, its params, the trials
planned so far, and the plan's line about the waves.

The checkpoint `decide` of wave w of a model reads that wave's trials (scored.json and
judged.json: the cells `mcptrials.analyze.sequential.wave_keys` names from wave w - 1's record)
and wave w - 1's record, and writes wave w's (mcptrials.analyze.sequential.decide_wave). The
aggregate reads every wave's trials and records, model by model, until a record is `done`:
Snakemake runs each checkpoint when an input function first asks for its record, then
re-evaluates the DAG, so each invocation plans the waves whose predecessors are decided and
resumes where the records stand. A run with `trials: N` has none of this.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.analyze.sequential import (
    RUNNING,
    WAVE_FILE,
    chain,
    max_waves,
    wave_keys,
    wave_trials,
)
from mcptrials.core.identity import TrialKey
from mcptrials.dag.targets import RESULTS, RUNS
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE

SEQUENTIAL_FILE = f"{RESULTS}/{WAVE_FILE}"  # a checkpoint's output, as a wildcard pattern


def wave_files(m: Matrix, model: str, wave: int, before: dict | None, name: str) -> list[str]:
    """Record `name` (scored.json, judged.json) of every trial of wave `wave` of `model`."""
    return [f"{key.dir(RUNS)}/{name}" for key in wave_keys(m, model, wave, before)]


def decide_params(m: Matrix, rerun: dict) -> dict[str, dict]:
    """model -> the checkpoint's params: one hash of what its decisions depend on beyond its
    input files: its own settings (`decide.*`, rerun table), everything the aggregate's fairness
    depends on (the aggregate's key: weights, pricing, margin, ...), the waves' shape (trials
    min and max) and the budget (a raised budget lets a wave stopped by it go on)."""
    extra = {"trials": m.config["trials"], "budget": m.config["budget"].get("max_cost_usd")}
    agg = rerun["aggregate"][()]
    return {model: {"rerun": canonical_hash([rerun["decide"][(model,)], agg, extra])} for model in m.models}


def planned_keys(m: Matrix, results: Path = Path(RESULTS)) -> list[TrialKey]:
    """The trials of every wave planned so far, model by model: the waves whose records exist,
    and the one each last record (not done) asks for, or wave 1 when there is none."""
    out: list[TrialKey] = []
    for model in m.models:
        before = None
        records = chain(results, model)
        for wave in range(1, len(records) + 2):
            if wave > 1 and (before is None or before["done"]):
                break
            out += wave_keys(m, model, wave, before)
            before = records[wave - 1] if wave <= len(records) else None
    return out


def waves_line(m: Matrix, results: Path = Path(RESULTS)) -> str:
    """The plan's words on the waves: per model the waves decided and planned, the tools still
    undecided, and the most that may follow (trials at max for every undecided tool and its baseline)."""
    scenarios = len(m.run_scenarios())
    parts = []
    for model in m.models:
        records = chain(results, model)
        last = records[-1] if records else None
        if last is not None and last["done"]:
            why = ", ".join(sorted({e["state"] for e in last["tools"]}))
            parts.append(f"{model}: done after {len(records)} wave(s) ({why})")
            continue
        wave = len(records) + 1
        running = _running(m, model, last)
        hosts = {h for h, _ in running}
        now = len(wave_keys(m, model, wave, last))
        more = max_waves(m) - wave
        at_most = more * scenarios * (len(running) + len(hosts))
        numbers = wave_trials(m, wave)
        span = f"{numbers[0]}-{numbers[-1]}" if len(numbers) > 1 else str(numbers[0])
        parts.append(
            f"{model}: wave {wave} of at most {max_waves(m)} planned ({now} trial(s), trial {span} of their cells), "
            f"{len(running)} tool(s) undecided; at most {more} more wave(s), {at_most} trial(s), may follow"
        )
    seq = m.sequential or {}
    return f"waves (trials min {seq['min']}, max {seq['max']}, until decided): " + "; ".join(parts)


def _running(m: Matrix, model: str, last: dict | None) -> list[tuple[str, str]]:
    """(host, tool) still undecided after `last` (every tool before the first wave)."""
    if last is None:
        return sorted({(k.host, k.tool) for k in wave_keys(m, model, 1, None) if k.tool != BASELINE})
    return [(e["host"], e["tool"]) for e in last["tools"] if e["state"] == RUNNING]


def wave_record(path: str) -> dict:
    """A checkpoint's record, read by the workflow's input functions."""
    return json.loads(Path(path).read_text())
