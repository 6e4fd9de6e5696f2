"""Trials in waves, stopped by an anytime-valid interval (`trials: {min, max, until: decided}`):
after each wave, per tool against the baseline of the same model and host, a confidence
sequence (mcptrials.stats.sequential) of the paired difference in fairness decides whether the
tool needs another wave.

The observations of a tool: per trial number k and scenario s, the tool's fairness minus the
baseline's, both of trial k of scenario s (in [-1, 1]); a trial number is one block of the
sequence, its scenarios in a fixed order (the run's), so the sequence covers the mean over the
run's scenarios of the tool's expected difference: the difference on these scenarios, given
their trials, not on tasks at large (the report's clustered headline interval is about that,
and stays). A trial number where a pair is missing (a missing trial: api_failed,
harness_failed, not_run) is left out whole, and named (`skipped_trials`): the next invocation
retries the missing trial and decides again.

Wave 1 runs trials 1..min of every cell; each later wave one more trial number of the cells
still undecided (and of the baseline while any tool of its model and host is), up to max.
The wave records (results/sequential/{model}/wave-{w}.json, `decide_wave`) are the
checkpoints of the workflow (workflow/rules/sequential.smk).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from mcptrials.core.identity import TrialKey
from mcptrials.core.keys import FAIRNESS, MODEL_NAME
from mcptrials.core.rows import SequentialRow, SequentialSummary
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.stats.sequential import BETTING, UNDECIDED, confidence_sequence, sequential_decision

# Why a tool stopped (summary.json `sequential`, the report): decided (with the decision),
# max (undecided after max trials), budget (the next wave did not fit budget.max_cost_usd).
DECIDED, MAX, BUDGET = "decided", "max", "budget"
METHOD = (
    "hedged-capital betting confidence sequence (Waudby-Smith & Ramdas 2024, JRSS-B 86(1); "
    "mcptrials.stats.sequential) of the paired difference in fairness, one block per trial number over the "
    "run's scenarios, read after every wave: better above +margin, worse below -margin, equivalent within"
)

Scores = Mapping[tuple[str, str, int], "float | None"]  # (tool, scenario, trial) -> fairness


def paired_values(
    scores: Scores, tool: str, baseline: str, scenarios: list[str], trials: Iterable[int]
) -> tuple[list[float], list[int], list[int]]:
    """The tool's observations, block after block: for each trial number k (in order) whose
    every scenario has both fairness values, tool - baseline per scenario. Returns (values,
    trial numbers used, trial numbers skipped for a missing pair)."""
    values: list[float] = []
    used, skipped = [], []
    for k in trials:
        block = []
        for s in scenarios:
            a, b = scores.get((tool, s, k)), scores.get((baseline, s, k))
            if a is None or b is None:
                break
            block.append(a - b)
        else:
            values += block
            used.append(k)
            continue
        skipped.append(k)
    return values, used, skipped


def tool_decision(
    scores: Scores, tool: str, baseline: str, scenarios: list[str], trials: int, alpha: float, margin: float
) -> dict:
    """The decision on `tool` against `baseline` after trials 1..`trials`: {decision (better,
    worse, equivalent, undecided), lo, hi (the sequence's interval now; None before any complete
    trial number), trials_used, skipped_trials}."""
    values, used, skipped = paired_values(scores, tool, baseline, scenarios, range(1, trials + 1))
    out: dict = {"decision": UNDECIDED, "lo": None, "hi": None, "trials_used": len(used), "skipped_trials": skipped}
    if values:
        lo, hi = confidence_sequence(values, -1.0, 1.0, alpha, block=len(scenarios), method=BETTING)[-1]
        out.update(lo=lo, hi=hi, decision=sequential_decision(lo, hi, margin))
    return out


# --- the waves and their records --------------------------------------------------------

WAVE_FILE = "sequential/{model}/wave-{wave}.json"  # under the results folder: one checkpoint's record
RUNNING = "running"


def wave_path(results, model: str, wave: int) -> Path:
    return Path(results) / WAVE_FILE.format(model=model, wave=wave)


def settings(m: Matrix) -> tuple[float, float]:
    """(alpha, margin) of the decisions: `decide.alpha`, and `decide.margin` when given, else
    the config's `margin:` (the compare gate's and the report's smallest difference that matters)."""
    decide = m.config["decide"]
    return decide["alpha"], decide.get("margin", m.config["margin"])


def max_waves(m: Matrix) -> int:
    """The most waves a run can have: the first (min trials), then one per trial up to max."""
    seq = m.sequential or {}
    return seq["max"] - seq["min"] + 1


def wave_trials(m: Matrix, wave: int) -> list[int]:
    """The trial numbers wave `wave` runs: 1..min for the first, min + wave - 1 after."""
    low = (m.sequential or {})["min"]
    return list(range(1, low + 1)) if wave == 1 else [low + wave - 1]


def model_hosts(m: Matrix, model: str) -> list[str]:
    return [h for h in m.hosts if m.runs_under(model, h)]


def wave_keys(m: Matrix, model: str, wave: int, before: dict | None) -> list[TrialKey]:
    """The trials wave `wave` of `model` runs: every cell in the first; after it, the cells the
    previous wave's record (`before`) names in `next` (undecided tools and their baseline)."""
    if wave == 1:
        plan = {h: list(m.tools) for h in model_hosts(m, model)}
    else:
        plan = (before or {}).get("next") or {}
    return [
        TrialKey(model, host, tool, sc.repo, sc.id, k)
        for host, tools in plan.items()
        for tool in tools
        for sc in m.run_scenarios()
        for k in wave_trials(m, wave)
    ]


def read_wave(results, model: str, wave: int) -> dict | None:
    try:
        return json.loads(wave_path(results, model, wave).read_text())
    except (OSError, ValueError):
        return None


def chain(results, model: str) -> list[dict]:
    """The model's wave records in order, from wave 1 to the last one on disk or the one that is done."""
    out: list[dict] = []
    while (rec := read_wave(results, model, len(out) + 1)) is not None:
        out.append(rec)
        if rec["done"]:
            break
    return out


def ran_keys(m: Matrix, results) -> list[TrialKey]:
    """Every trial the finished waves ran, model by model (the aggregate's trials of a run in
    waves); a model whose waves are not done is an error that says so."""
    out: list[TrialKey] = []
    for model in m.models:
        records = chain(results, model)
        if not records or not records[-1]["done"]:
            raise ConfigError(
                f"{wave_path(results, model, len(records) + 1)}: the waves of model {model} are not finished; "
                "run the workflow (snakemake) until every wave is decided"
            )
        before = None
        for wave, rec in enumerate(records, 1):
            out += wave_keys(m, model, wave, before)
            before = rec
    return out


def fairness_table(m: Matrix, results, keys: list[TrialKey]) -> dict[str, dict]:
    """host -> (tool, scenario, trial) -> fairness of the trials `keys`, computed as the aggregate
    computes it (mcptrials.analyze.trial_rows) over these trials only: the efficiency reference is
    the geometric mean of the baseline trials among them (so it follows the waves run so far)."""
    from mcptrials.analyze.trial_rows import load_records, raw_row, score_rows

    rows = [raw_row(r, m) for r in load_records(m, Path(results) / "runs", cells=keys)]
    score_rows(rows, m.config["weights"], True)
    out: dict[str, dict] = {}
    for r in rows:
        out.setdefault(r["host"], {})[r["tool"], r["scenario"], int(r["trial"])] = r[FAIRNESS]
    return out


def wave_cost(m: Matrix, results, model: str, plan: dict[str, list[str]]) -> float | None:
    """What one more wave of `plan` (host -> tools) is expected to cost: one trial of each of its
    cells, each at the cost plan's expected cost per trial with its judge's (mcptrials.cost.plan;
    a cell with no history at its upper bound). None when a cell's cost cannot be known."""
    from mcptrials.cost.plan import cell_cost

    total = 0.0
    for host, tools in plan.items():
        for tool in tools:
            for sc in m.run_scenarios():
                c = cell_cost(m, TrialKey(model, host, tool, sc.repo, sc.id, 1), Path(results))
                if c.per_trial is None or c.judge_per_trial is None:
                    return None
                total += c.per_trial + c.judge_per_trial
    return total


def reserve(m: Matrix, results, model: str, plan: dict[str, list[str]]) -> dict | None:
    """Whether the next wave fits `budget.max_cost_usd` before it starts: the ledger's committed
    spend plus the wave's expected cost (`wave_cost`) at most the cap. None without a budget."""
    from mcptrials.cost.budget import Ledger, budget_cap, ledger_path

    cap = budget_cap(m.config)
    if cap is None or not plan:
        return None
    spent = Ledger(ledger_path(Path(results))).total()
    cost = wave_cost(m, results, model, plan)
    return {"cap": cap, "spent": spent, "next_wave_usd": cost, "fits": cost is not None and spent + cost <= cap}


def decide_wave(m: Matrix, results, model: str, wave: int) -> dict:
    """The record of wave `wave` of `model` (results/sequential/{model}/wave-{wave}.json): each
    tool's decision against the baseline of its host after this wave, why a tool stopped, and the
    cells of the next wave (`next`, host -> tools; empty, and `done`, when none is left)."""
    seq = m.sequential
    if seq is None:
        raise ConfigError(f"{m.path}: field trials: a number; decisions are for trials {{min, max, until: decided}}")
    if not 1 <= wave <= max_waves(m):
        raise ConfigError(
            f"wave {wave}: this config has waves 1 to {max_waves(m)} (trials min {seq['min']}, max {seq['max']})"
        )
    before = read_wave(results, model, wave - 1) if wave > 1 else None
    if wave > 1 and (before is None or before["done"]):
        raise ConfigError(f"{wave_path(results, model, wave - 1)}: no wave {wave - 1} to follow, or it was the last")
    alpha, margin = settings(m)
    n, hosts = seq["min"] + wave - 1, model_hosts(m, model)
    prev = {(t["host"], t["tool"]): t for t in (before or {}).get("tools", [])}
    tools = [(h, t) for h in hosts for t in m.tools if t != BASELINE]
    running = [(h, t) for h, t in tools if prev.get((h, t), {}).get("state", RUNNING) == RUNNING]
    keys = [
        TrialKey(model, h, t, sc.repo, sc.id, k)
        for h in sorted({h for h, _ in running})
        for t in (BASELINE, *[t for hh, t in running if hh == h])
        for sc in m.run_scenarios()
        for k in range(1, n + 1)
    ]
    scores = fairness_table(m, results, keys)
    scenarios = [sc.id for sc in m.run_scenarios()]
    entries = []
    for h, t in tools:
        if (h, t) not in running:
            entries.append(prev[h, t])
            continue
        d = tool_decision(scores.get(h, {}), t, BASELINE, scenarios, n, alpha, margin)
        state = DECIDED if d["decision"] != UNDECIDED else MAX if wave == max_waves(m) else RUNNING
        entries.append({"host": h, "tool": t, "state": state, **d, "trials": n, "waves": wave})
    plan = {h: [t for hh, t in tools if hh == h and _state(entries, h, t) == RUNNING] for h in hosts}
    plan = {h: [*ts, BASELINE] for h, ts in plan.items() if ts}
    budget = reserve(m, results, model, plan)
    if budget is not None and not budget["fits"]:
        for e in entries:
            if e["state"] == RUNNING:
                e["state"] = BUDGET
        plan = {}
    ran = {h for h, _ in running}
    base = {h: n if h in ran else (before or {}).get("baseline_trials", {}).get(h, n) for h in hosts}
    return {
        "schema": "mcptrials/wave/1",
        "model": model,
        "wave": wave,
        "trials": wave_trials(m, wave),
        "min": seq["min"],
        "max": seq["max"],
        "alpha": alpha,
        "margin": margin,
        "method": METHOD,
        "tools": entries,
        "baseline_trials": base,
        "budget": budget,
        "next": plan,
        "done": not plan,
    }


def _state(entries: list[dict], host: str, tool: str) -> str:
    return next(e["state"] for e in entries if e["host"] == host and e["tool"] == tool)


# --- the record of the whole run: summary.json `sequential` ------------------------------

ABOUT = (
    "The sequential verdict is about these scenarios and their trials: whether the tool's expected fairness on "
    "the run's scenarios, trial after trial, differs from the baseline's by more than the margin, with a "
    "confidence sequence that holds however often it was looked at (after every wave). The headline's clustered "
    "interval is about the scenarios as a sample of tasks at large; the two answer different questions and "
    "can disagree."
)


def per_trial_cost(m: Matrix, results, model: str, host: str, tool: str) -> float | None:
    """One more trial of every scenario of a cell row, priced as the cost plan prices it
    (expected per trial, with its judge's); None when it cannot be known."""
    from mcptrials.cost.plan import cell_cost

    total = 0.0
    for sc in m.run_scenarios():
        c = cell_cost(m, TrialKey(model, host, tool, sc.repo, sc.id, 1), Path(results))
        if c.per_trial is None or c.judge_per_trial is None:
            return None
        total += c.per_trial + c.judge_per_trial
    return total


def sequential_summary(m: Matrix, results) -> SequentialSummary:
    """summary.json `sequential`: per model, host and tool (the baseline too) the waves and trials
    run, why it stopped (`decided: better|worse|equivalent`, `max`, `budget`), the interval when it
    stopped, and what was not spent: the trials `max` would have run beyond those, priced per
    trial as the cost plan prices them (mcptrials.cost.plan)."""
    seq = m.sequential or {}
    alpha, margin = settings(m)
    rows: list[SequentialRow] = []
    for model in m.models:
        last = chain(results, model)[-1]
        rows += [_stop(m, results, model, e) for e in last["tools"]]
        rows += [_baseline(m, results, model, host, n) for host, n in last["baseline_trials"].items()]
    known = [r["unspent_usd"] for r in rows]
    return {
        "method": METHOD,
        "about": ABOUT,
        "alpha": alpha,
        "margin": margin,
        "min": seq["min"],
        "max": seq["max"],
        "tools": rows,
        "unspent_trials": sum(r["unspent_trials"] for r in rows),
        "unspent_usd": None if any(v is None for v in known) else sum(v for v in known if v is not None),
    }


def _unspent(m: Matrix, results, model: str, host: str, tool: str, trials: int) -> tuple[int, float | None]:
    """(trials, usd) that `max` would have run beyond `trials` per scenario; usd None when unknown."""
    left = (m.sequential or {})["max"] - trials
    cost = per_trial_cost(m, results, model, host, tool)
    return left * len(m.run_scenarios()), None if cost is None else left * cost


def _stop(m: Matrix, results, model: str, e: dict) -> SequentialRow:
    """A tool's row: why it stopped in words, the interval then, and what was not spent."""
    from mcptrials.analyze.trial_rows import model_label

    stopped = f"decided: {e['decision']}" if e["state"] == DECIDED else e["state"]
    left, usd = _unspent(m, results, model, e["host"], e["tool"], e["trials"])
    return {
        "host": e["host"],
        "tool": e["tool"],
        "waves": e["waves"],
        "trials": e["trials"],
        "stopped": stopped,
        "decision": e["decision"],
        "lo": e["lo"],
        "hi": e["hi"],
        "skipped_trials": e.get("skipped_trials", []),
        "model": model_label(m, model, e["host"]),
        MODEL_NAME: model,
        "unspent_trials": left,
        "unspent_usd": usd,
    }


def _baseline(m: Matrix, results, model: str, host: str, n: int) -> SequentialRow:
    """The baseline's row of one host: it ran `n` trials, as long as its last undecided tool."""
    from mcptrials.analyze.trial_rows import model_label

    left, usd = _unspent(m, results, model, host, BASELINE, n)
    return {
        "model": model_label(m, model, host),
        MODEL_NAME: model,
        "host": host,
        "tool": BASELINE,
        "waves": n - (m.sequential or {})["min"] + 1,
        "trials": n,
        "stopped": "with its last tool",
        "lo": None,
        "hi": None,
        "unspent_trials": left,
        "unspent_usd": usd,
    }
