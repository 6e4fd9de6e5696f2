"""The cost of a run before it runs: expected from measured usage, bounded from the limits.

Per cell of the matrix (model, host, tool, scenario; `trials` trials each):

- **measured** (`history`): the mean cost of the cell's earlier trials, from the `usage` of
  every results/runs/<model>/<host>/<tool>/<repo>/<scenario>/<trial>/transcript.json (any trial
  number, the last attempt of each; `not_run` trials left out), priced with the config's *current*
  `pricing` by graders.cost.trial_cost, as the aggregate prices them. A pilot
  (`mcptrials pilot`: trial 1 of every cell) is such a history: its trials are the run's
  trial 1, kept, not rerun.
- **upper bound**: `upper_bound_usd` below, from the limits and the pricing.
- a cell with no history is expected at its upper bound, and says "no history".
- the `reference` and `recorded` models cost 0 (no model call).
- a model that calls an API but has no `pricing` entry: unknown (None), never free.
- **the judge**, apart: a paid judge's cost per trial, measured from the cell's judged.json
  records (graders.cost.judge_cost) or bounded by `judge_upper_bound_usd`; the reference judge
  costs 0. It is in every total and in the budget's check, and the ledger reserves it.

`to_run`: the cell's trials 1..trials whose transcript is absent or is missing data that the
next invocation retries (`not_run`, `api_failed`, `harness_failed`); what the run is still
expected to spend is their count times the cell's expected cost per trial.

This module imports nothing of mcptrials but the cost formula and the ledger: config reads it
(`dag.preflight.check_budget`), and the CLI (`mcptrials plan`, `mcptrials pilot`) lives in mcptrials.cli.cost.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import JudgedRecord, TranscriptRecord
from mcptrials.cost.budget import FREE_PROVIDERS, NOT_RUN, Ledger, budget_cap, ledger_path
from mcptrials.cost.pricing import CACHE_READ_FACTOR, CACHE_WRITE_FACTOR, judge_cost, trial_cost
from mcptrials.matrix.specs import JudgeSpec

# Outcomes that are missing data, retried by the next invocation: their trials are still to run.
RETRIED = (NOT_RUN, "api_failed", "harness_failed")


def upper_bound_usd(
    price: dict,
    steps: int,
    max_turns: int,
    max_output_tokens: int,
    input_tokens_per_call: int,
    max_tokens: int | None = None,
) -> float:
    """The most one trial can cost, in USD, at `price` (a `pricing` entry, USD per million tokens):

        reply_cap = min(max_tokens or max_output_tokens, max_output_tokens)
        in_rate   = max(input, cache_write, cache_read)     (cache_write default 1.25 x input,
                                                              cache_read 0.1 x input)
        bound     = steps x max_turns x (input_tokens_per_call x in_rate + reply_cap x output) / 1e6

    Each step makes at most `max_turns` model calls (the loop stops the step there; claude-code
    gets --max-turns; under codex and opencode the key proxy refuses the next call, and under
    every CLI host it refuses any call past steps x max_turns in the trial, whoever sends it);
    each call writes at most `reply_cap` output tokens (the model's `params.max_tokens` within
    the step's `max_output_tokens`; the key proxy lowers a larger request) and reads at most
    `input_tokens_per_call` input tokens (config `budget.input_tokens_per_call`, default
    200,000: the context window of the Claude models, which no request can exceed), every one
    billed at the dearest input rate. `max_turns` and `max_output_tokens` are the step's limits
    (the config's, a scenario's overriding them). E.g. 2 steps x 3 turns, 10,000 input and
    1,000 output tokens per call at input 3, output 15: 6 x (10,000 x 3.75 + 1,000 x 15) / 1e6
    = $0.315.
    """
    reply_cap = min(max_tokens or max_output_tokens, max_output_tokens)
    in_rate = max(
        price["input"],
        price.get("cache_write", CACHE_WRITE_FACTOR * price["input"]),
        price.get("cache_read", CACHE_READ_FACTOR * price["input"]),
    )
    return steps * max_turns * (input_tokens_per_call * in_rate + reply_cap * price["output"]) / 1_000_000


def floor_usd(price: dict, steps: int, fixed_tokens: int) -> float:
    """The least a trial can cost, in USD: one call per step that reads only the fixed prompt
    (system prompt, tool definitions) at the input price and writes nothing:
        floor = steps x fixed_tokens x input / 1e6.
    Beside the upper bound it shows how wide the plan of a cell with no history is. E.g. 2 steps,
    3,000 fixed tokens at input 3: 2 x 3,000 x 3 / 1e6 = $0.018."""
    return steps * fixed_tokens * price["input"] / 1_000_000


def fixed_prompt_tokens(tool: str, snapshot: dict | None) -> int:
    """Tokens every request of a trial of `tool` carries before any turn (chars/4 estimates):
    the system prompt, the built-in tools' definitions and the server's (its snapshot's
    definition_tokens, when a snapshot exists)."""
    from mcptrials.prepare.definition_tokens import estimate_tokens
    from mcptrials.core.paths import PROMPT_DIR
    from mcptrials.prepare.tooldefs import CHARS_PER_TOKEN, tool_definitions

    system = len((PROMPT_DIR / "system.md").read_text()) // CHARS_PER_TOKEN
    builtin = estimate_tokens(tool_definitions(tool, [])[0])
    return system + builtin + int((snapshot or {}).get("definition_tokens") or 0)


def judge_upper_bound_usd(price: dict, steps: int, repeats: int, input_tokens_per_call: int) -> float:
    """The most a model judge can cost for one trial: one call per step and repeat, each reading
    at most `input_tokens_per_call` and writing at most JudgeSpec.MAX_TOKENS (2,048) tokens:
    upper_bound_usd with max_turns = repeats and the judge's output cap. E.g. 2 steps x 3 repeats,
    10,000 input tokens at input 3 (cache write 3.75), output 15: 6 x (37,500 + 2,048 x 15) / 1e6
    = $0.40932."""
    return upper_bound_usd(price, steps, repeats, JudgeSpec.MAX_TOKENS, input_tokens_per_call)


def judge_bound(m, scenario: str) -> float | None:
    """One trial's judge bound in `m` (0.0 for the reference judge and for judgements recorded
    elsewhere, which call nothing; None: no pricing for its model)."""
    j = m.specs.judge
    if j.provider in FREE_PROVIDERS:
        return 0.0
    price = m.config["pricing"].get(j.model or "")
    if price is None:
        return None
    return judge_upper_bound_usd(
        price, len(m.scenarios[scenario].data["steps"]), j.repeats, m.config["budget"]["input_tokens_per_call"]
    )


def _price(pricing: dict, mspec) -> dict | None:
    """The pricing entry a model's trials are priced by (trial_cost's rule: the model id, else the name)."""
    for key in (mspec.model, mspec.name):
        if key and key in pricing:
            return pricing[key]
    return None


@dataclass
class CellCost:
    model: str
    host: str
    tool: str
    scenario: str
    trials: int
    basis: str  # free | history | no history | unpriced
    measured: int  # earlier trials whose usage was priced
    per_trial: float | None  # the expected cost of one trial (mean measured, else the upper bound)
    upper_per_trial: float | None
    to_run: int
    judge_per_trial: float | None = 0.0  # the judge's, apart (mean measured, else its bound)
    judge_upper_per_trial: float | None = 0.0
    to_judge: int = 0  # trials still to be judged (to run, or run and not judged)
    floor_per_trial: float | None = None  # the least one trial can cost (floor_usd), for cells with no history

    @property
    def judge_expected(self) -> float | None:
        return None if self.judge_per_trial is None else self.judge_per_trial * self.trials

    @property
    def judge_to_spend(self) -> float | None:
        return None if self.judge_per_trial is None else self.judge_per_trial * self.to_judge

    @property
    def expected(self) -> float | None:
        """The cell's trials and their judging."""
        return _sum([None if self.per_trial is None else self.per_trial * self.trials, self.judge_expected])

    @property
    def upper(self) -> float | None:
        return _sum(
            [
                None if self.upper_per_trial is None else self.upper_per_trial * self.trials,
                None if self.judge_upper_per_trial is None else self.judge_upper_per_trial * self.trials,
            ]
        )

    @property
    def to_spend(self) -> float | None:
        return _sum([None if self.per_trial is None else self.per_trial * self.to_run, self.judge_to_spend])


def _sum(values):
    values = list(values)
    return None if any(v is None for v in values) else sum(values)


@dataclass
class CostPlan:
    cells: list[CellCost]
    cap: float | None
    spent: float  # the ledger's total
    ledger: Path
    reasons: str = ""  # why the trials still to run run: '8 rerun: server files changed, 2 new'
    ablation: dict[str, str] = field(default_factory=dict)  # ablation arm -> the tool it ablates (matrix.ablation)
    confirm: set[str] = field(
        default_factory=set
    )  # the held-out scenarios of ablate.confirm (Matrix.confirm_scenarios)

    @property
    def expected(self) -> float | None:
        return _sum(c.expected for c in self.cells)

    @property
    def upper(self) -> float | None:
        return _sum(c.upper for c in self.cells)

    @property
    def to_spend(self) -> float | None:
        return _sum(c.to_spend for c in self.cells)

    @property
    def to_run(self) -> int:
        return sum(c.to_run for c in self.cells)

    def no_history(self) -> list[CellCost]:
        return [c for c in self.cells if c.basis == "no history"]

    def unpriced(self) -> list[str]:
        return sorted({c.model for c in self.cells if c.basis == "unpriced"})

    @property
    def judge_expected(self) -> float | None:
        return _sum(c.judge_expected for c in self.cells)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def cell_cost(m, key: TrialKey, results: Path = Path("results"), planned: set[int] | None = None) -> CellCost:
    """The cost of the cell of trial `key` (its `trials` trials, whatever key.trial) over the
    records in `results`: see the module docstring. mcptrials.run.runner reserves `per_trial`
    of it in the ledger before a trial starts.
    `planned`: the numbers of the cell's trials the next run will run, new and rerun
    (mcptrials.dag.planned); without it, the trials with no transcript or a missing one."""
    results = Path(results)
    pricing = m.config["pricing"]
    model, host, tool, repo, scenario, _ = key
    mspec = m.specs.models[model]
    sc = m.scenarios[scenario]
    mine = [
        key._replace(trial=k).dir(results / "runs") / "transcript.json" for k in range(1, m.trials + 1)
    ]  # trials >= 1 (the schema)
    folder = mine[0].parent.parent  # the cell's folder: its trial folders, this run's and any earlier one's
    judge = _judge_part(m, scenario, folder, mine, planned)
    if mspec.provider in FREE_PROVIDERS:  # never stopped, nothing to price: no transcript is read
        to_run = len(planned) if planned is not None else sum(1 for p in mine if not p.exists())
        return CellCost(model, host, tool, scenario, m.trials, "free", 0, 0.0, 0.0, to_run, *judge)
    # every trial folder of the cell, this run's and any earlier one's (more trials), read once
    found = {p: _read(p) for p in sorted(folder.glob("*/transcript.json"))}
    to_run = (
        len(planned)
        if planned is not None
        else sum(1 for p in mine if (t := found.get(p)) is None or t.get("outcome") in RETRIED)
    )
    price = _price(pricing, mspec)
    lim = m.specs.limits.overridden(sc.data["limits"])
    upper = (
        None
        if price is None
        else upper_bound_usd(
            price,
            len(sc.data["steps"]),
            lim.max_turns,
            lim.max_output_tokens,
            m.config["budget"]["input_tokens_per_call"],
            mspec.max_tokens,
        )
    )
    costs = []
    for t in found.values():
        if not t or t.get("outcome") == NOT_RUN or "usage" not in t or "cell" not in t:
            continue
        cost, _ = trial_cost(pricing, cast(TranscriptRecord, t))  # transcript.json, as run wrote it
        if cost is not None:
            costs.append(cost)
    if price is None and not costs:
        return CellCost(model, host, tool, scenario, m.trials, "unpriced", 0, None, None, to_run, *judge)
    if costs:
        return CellCost(
            model, host, tool, scenario, m.trials, "history", len(costs), sum(costs) / len(costs), upper, to_run, *judge
        )
    snap = _read(results / "snapshots" / tool / repo / "tools.json")
    floor = None if price is None else floor_usd(price, len(sc.data["steps"]), fixed_prompt_tokens(tool, snap))
    return CellCost(
        model, host, tool, scenario, m.trials, "no history", 0, upper, upper, to_run, *judge, floor_per_trial=floor
    )


def _judge_part(
    m, scenario: str, folder: Path, mine: list[Path], planned: set[int] | None = None
) -> tuple[float | None, float | None, int]:
    """(judge_per_trial, judge_upper_per_trial, to_judge) of one cell: a paid judge's measured
    mean over the cell's judged.json records, else its bound; 0 for the reference judge. A trial
    the run will (re)run is judged again; one not judged yet is judged."""
    bound = judge_bound(m, scenario)
    to_judge = sum(
        1
        for n, p in enumerate(mine, 1)
        if not (p.parent / "judged.json").exists() or (planned is not None and n in planned)
    )
    if m.specs.judge.provider in FREE_PROVIDERS:
        return 0.0, 0.0, to_judge
    costs = [
        c
        for p in sorted(folder.glob("*/judged.json"))
        if (j := _read(p))
        and "usage" in j
        and (c := judge_cost(m.config["pricing"], cast(JudgedRecord, j))) is not None
    ]
    return (sum(costs) / len(costs) if costs else bound), bound, to_judge


def cost_plan(
    m, results: Path = Path("results"), planned: dict[tuple, set[int]] | None = None, reasons: str = ""
) -> CostPlan:
    """The cost plan of matrix `m` (a mcptrials.matrix.matrix.Matrix) over the records in `results`.
    `planned`: (model, host, tool, scenario) -> the trial numbers the next run will run, new and
    rerun (mcptrials.dag.planned.trial_numbers), and `reasons` why, in words; without them only
    the trials with no transcript or a missing one count as still to run."""
    results = Path(results)
    cells = []
    seen = set()
    for key in m.cells():
        cell = (key.model, key.host, key.tool, key.scenario)
        if cell in seen:
            continue
        seen.add(cell)
        mine = None if planned is None else planned.get(cell, set())
        cells.append(cell_cost(m, key, results, mine))
    ledger = ledger_path(results)
    from mcptrials.matrix.ablation import ablation_of

    arms = {t: a["of"] for t, spec in m.tools.items() if (a := ablation_of(spec))}
    return CostPlan(
        cells=cells,
        cap=budget_cap(m.config),
        spent=Ledger(ledger).total(),
        ledger=ledger,
        reasons=reasons,
        ablation=arms,
        confirm={sc.id for sc in m.confirm_scenarios()},
    )


def usd(x: float | None) -> str:
    return "unknown" if x is None else "$0" if x == 0 else f"${x:.4f}" if x < 1 else f"${x:.2f}"


def format_plan(plan: CostPlan, config_name: str = "") -> str:
    """The table of `mcptrials plan --cost`: one row per model, host and tool."""
    groups: dict[tuple, list[CellCost]] = {}
    for c in plan.cells:
        groups.setdefault((c.model, c.host, c.tool), []).append(c)
    header = ("model", "host", "tool", "trials", "expected", "of which judge", "upper bound", "basis")
    rows = []
    for (model, host, tool), cs in groups.items():
        kinds = {c.basis for c in cs}
        if kinds == {"free"}:
            basis = "free (no model call)"
        elif "unpriced" in kinds:
            basis = f"no pricing entry for model {model}: cost unknown"
        else:
            measured = sum(c.measured for c in cs)
            nh = sum(1 for c in cs if c.basis == "no history")
            parts = [f"measured: {measured} earlier trial(s)"] if measured else []
            if nh:
                parts.append(f"no history: upper bound for {nh} of {len(cs)} scenario(s)")
            basis = "; ".join(parts)
        rows.append(
            (
                model,
                host,
                tool,
                str(sum(c.trials for c in cs)),
                usd(_sum(c.expected for c in cs)),
                usd(_sum(c.judge_expected for c in cs)),
                usd(_sum(c.upper for c in cs)),
                basis,
            )
        )
    rows.append(
        (
            "total",
            "",
            "",
            str(sum(c.trials for c in plan.cells)),
            usd(plan.expected),
            usd(plan.judge_expected),
            usd(plan.upper),
            "",
        )
    )
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = [f"mcptrials cost plan{': ' + config_name if config_name else ''} (USD at the config's pricing)"]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    lines.append(
        f"still to run: {plan.to_run} trial(s)"
        + (f" ({plan.reasons})" if plan.reasons else "")
        + f", expected {usd(plan.to_spend)}; "
        f"spent so far (ledger {plan.ledger}): {usd(plan.spent)}"
    )
    lines += ablation_lines(plan)
    bounded = [c for c in plan.no_history() if c.floor_per_trial]
    if bounded:
        ratio = max((c.upper_per_trial or 0.0) / (c.floor_per_trial or 1.0) for c in bounded)  # both set here
        lines.append(
            f"no history for {len(bounded)} cell(s): each is planned at its upper bound, which bills every turn "
            f"at budget.input_tokens_per_call input tokens; the least such a trial can cost (one call per "
            f"step reading only the system prompt and tool definitions) is "
            f"{usd(_sum((c.floor_per_trial or 0.0) * c.trials for c in bounded))} in all, the bound up to {ratio:,.0f}x "
            "that. Measure them first: `mcptrials pilot` runs trial 1 of every cell, then "
            "`mcptrials plan --cost` prices the rest from it"
        )
    if plan.cap is not None:
        lines.append(f"budget: max_cost_usd ${plan.cap:.2f}: " + ("; ".join(budget_refusal(plan)) or "the run fits"))
    return "\n".join(lines)


def ablation_lines(plan: CostPlan) -> list[str]:
    """The ablation arms' part of the plan, apart: per ablated tool, its arms' trials and cost on the run's
    scenarios, then the confirmation's (arms, full servers and baseline on held-out scenarios)."""
    out = []
    parts: list[tuple[str, str, list[CellCost]]] = [
        (f"ablation of tools.{base}", "arm", [c for c in plan.cells if plan.ablation.get(c.tool) == base])
        for base in dict.fromkeys(plan.ablation.values())
    ]
    parts = [(what, unit, [c for c in cs if c.scenario not in plan.confirm]) for what, unit, cs in parts]
    if plan.confirm:
        held = [c for c in plan.cells if c.scenario in plan.confirm]
        parts.append((f"the confirmation on {len(plan.confirm)} held-out scenario(s)", "tool", held))
    for what, unit, cs in parts:
        out.append(
            f"of which {what} ({len({c.tool for c in cs})} {unit}(s)): {sum(c.trials for c in cs)} trial(s), expected "
            f"{usd(_sum(c.expected for c in cs))}, upper bound {usd(_sum(c.upper for c in cs))}, still to run "
            f"{sum(c.to_run for c in cs)} ({usd(_sum(c.to_spend for c in cs))})"
        )
    return out


def plan_line(plan: CostPlan, waves: bool = False) -> str:
    """The cost part of the workflow's plan line. `waves`: a run in waves, whose cells are priced
    at their most trials (max); still to run are the waves planned so far."""
    nh = plan.no_history()
    what = "cost if every cell ran to max: expected" if waves else "expected cost"
    text = f"{what} {usd(plan.expected)} (upper bound {usd(plan.upper)}"
    if nh:
        text += f"; {len(nh)} cell(s) with no history, at their upper bound"
    text += (
        f"; {plan.to_run} trial(s) still to run"
        + (f" ({plan.reasons})" if plan.reasons else "")
        + f", {usd(plan.to_spend)}"
    )
    if plan.cap is not None:
        text += f"; budget ${plan.cap:.2f}, spent {usd(plan.spent)}"
    return text + ")"


def budget_refusal(plan: CostPlan, where: str = "") -> list[str]:
    """Why the run must not start under its budget (empty when it fits, or no budget is set):
    the spend so far plus the expected cost of the trials still to run (a cell with no history
    at its upper bound) above `budget.max_cost_usd`, or a cost that cannot be known."""
    if plan.cap is None:
        return []
    field = f"{where}field budget.max_cost_usd"
    unpriced = plan.unpriced()
    if any(c.judge_per_trial is None for c in plan.cells):
        return [
            f"{field}: the judge's cost cannot be estimated or capped: its model has no `pricing` entry; add one "
            "(USD per million tokens) or remove the budget"
        ]
    if unpriced:
        return [
            f"{field}: the cost of model(s) {', '.join(unpriced)} cannot be estimated or capped: they have no "
            "`pricing` entry; add one (USD per million tokens) or remove the budget"
        ]
    need = plan.spent + (plan.to_spend or 0.0)  # known: no cell is unpriced (above)
    if need <= plan.cap:
        return []
    nh = [c for c in plan.no_history() if c.to_run]
    how = f"{usd(plan.to_spend)} expected for the {plan.to_run} trial(s) still to run"
    if nh:
        how += (
            f", of which {sum(c.to_run for c in nh)} in {len(nh)} cell(s) with no history at their upper bound "
            f"{usd(_sum(c.to_spend for c in nh))}"
        )
    if plan.spent:
        how += f", plus {usd(plan.spent)} already spent ({plan.ledger})"
    fixes = f"raise budget.max_cost_usd to at least {need:.2f}, or run fewer trials, models or tools"
    if nh:
        fixes += ", or measure the cells with no history first (`mcptrials pilot`, then `mcptrials plan --cost`)"
    return [f"{field}: this run is expected to cost {usd(need)} ({how}), above the budget of ${plan.cap:.2f}; {fixes}"]
