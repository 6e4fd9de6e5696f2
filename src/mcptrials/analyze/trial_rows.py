"""One row per trial: every trial's four records read, its figures picked, efficiency and
fairness filled in, and the rows as one pandas DataFrame (the trial frame the tables group).

The frame keeps the rows' Python values (dtype object): a figure is the same float, int,
bool or None the records gave, never a NaN or a numpy scalar, so the tables and summary.json
carry exactly what the formulas of mcptrials.stats return. A column a row lacks (a gold
column of a scenario without gold) is NaN in the frame and counts as None.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mcptrials.core.outcomes import COMPLETED, is_missing, missing_reason, read_attempts
from mcptrials.core.rows import TrialRow
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.core.keys import (
    CITATION_GROUNDING,
    CITATION_GROUNDING_LENIENT,
    CITED_RECALL,
    EFFICIENCY_BASIS,
    EXACT_PASSED,
    EXACT_STEPS,
    FAIRNESS,
    FAIRNESS_WITHOUT,
    GOLD_ROWS,
    GROUNDED_RATE,
    JUDGE_COST_USD,
    KEYWORD_COVERAGE,
    MENTION_RECALL,
    MISSING_REASON,
    MODEL_NAME,
    QUALITY_REPEATS,
    SERVER_TOOLS_USED,
    SERVER_TOOL_ERRORS,
    STATE_PASSED,
    STATE_STEPS,
    STRICT_GROUNDED_RATE,
    STRICT_VERIFIED_RATE,
    TOKENS_CACHE_READ,
    TOKENS_CACHE_WRITE,
    TOKENS_INPUT_UNCACHED,
    TOKENS_OUTPUT,
    TOKENS_TOTAL,
    VERIFIED_RATE,
    VERIFIED_RATE_STRICT,
)

if TYPE_CHECKING:
    import pandas as pd

ERROR_KINDS = ("tool_error", "protocol_error", "api_error", "harness_error")
# the figures of a trial that are scores: None for a missing trial (never 0)
SCORE_FIELDS = (
    "passed",
    KEYWORD_COVERAGE,
    CITATION_GROUNDING,
    VERIFIED_RATE,
    CITED_RECALL,
    EXACT_PASSED,
    STATE_PASSED,
    "quality",
    "efficiency",
    FAIRNESS,
    "tool_fluency",
    "discoverability",
    "adoption",
)
FILES = ("transcript.json", "run_meta.json", "scored.json", "judged.json")
GOLD_PREFIXES = ("cited_recall_", MENTION_RECALL)
COST_METHOD = "recomputed from usage with the config's pricing"
EFFICIENCY_METHOD = (
    "stats.relative_efficiency of cost and the agent's working time (work_seconds: the steps' "
    "wall time, graders.usage.work_seconds) against the same model and scenario's baseline: per "
    "part 0.5 + clip(log2(reference / value), -3, 3) / 6, the reference the geometric mean of the "
    "baseline's completed trials, the baseline's own trials measured alike (0.5 = as cheap and as "
    "fast as the baseline; 2x faster +1/6, 2x slower -1/6; 8x or more: 1 or 0); server start-up "
    "(server_startup_seconds) and the harness's set-up are reported apart and never count "
    "against efficiency"
)


def model_label(m: Matrix, model: str, host: str) -> str:
    """The unit every table compares within: the model, or model@host when the run has
    several hosts (a host changes what the model sees, so each pair has its own baseline)."""
    return model if len(m.hosts) == 1 else f"{model}@{host}"


def trial_page(model, tool, scenario, trial) -> str:
    """The trial's page, relative to the report folder."""
    return f"trials/{model}/{tool}/{scenario}/{trial}.html"


def read_json(path: Path) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{path}: not valid JSON ({e}); delete it and rerun its stage (snakemake rebuilds it)"
        ) from None


def load_records(m: Matrix, runs, cells=None) -> list[dict[str, Any]]:
    """The four records of every trial of the current matrix, in matrix order (or of `cells`,
    TrialKeys: a run in waves reads the trials its waves ran, mcptrials.analyze.sequential).
    A missing file is an error naming it: a trial is never silently dropped."""
    out, missing = [], []
    for cell in m.cells() if cells is None else cells:
        d = cell.dir(runs)
        paths = {name: d / name for name in FILES}
        gone = [p for p in paths.values() if not p.is_file()]
        if gone:
            missing += gone
            continue
        rec: dict[str, Any] = {name.removesuffix(".json"): read_json(p) for name, p in paths.items()}
        rec["key"] = {
            "model": model_label(m, cell.model, cell.host),
            MODEL_NAME: cell.model,
            "host": cell.host,
            "tool": cell.tool,
            "repo": cell.repo,
            "scenario": cell.scenario,
            "trial": cell.trial,
        }
        rec["attempts"] = read_attempts(d)
        out.append(rec)
    if missing:
        shown = "\n  ".join(str(p) for p in missing[:10])
        more = f"\n  ... and {len(missing) - 10} more" if len(missing) > 10 else ""
        raise ConfigError(
            f"{runs}: {len(missing)} record file(s) of the current matrix are missing:\n  {shown}{more}\n"
            "Run the workflow first (make demo, or snakemake) so every trial is run, scored and judged."
        )
    return out


def absent(value) -> bool:
    """A value the frame does not have: None, or the NaN of a column the row lacks (NaN is
    the one value unequal to itself)."""
    return value is None or value != value


def mean(values):
    """The mean of the values that are there (None when none is), summed left to right as
    the records list them."""
    vals = [v for v in values if not absent(v)]
    return sum(vals) / len(vals) if vals else None


def trial_frame(rows: list[TrialRow]) -> pd.DataFrame:
    """The trial rows as one DataFrame, columns in order of first appearance, values as they
    are (dtype object), but `missing` a bool column (a row without it counts: the trials that
    count are ~missing)."""
    import pandas as pd  # here, not at the top: importing the analyze modules stays cheap

    frame = pd.DataFrame(rows, columns=list(dict.fromkeys(k for r in rows for k in r)), dtype=object)
    frame["missing"] = frame["missing"].eq(True) if "missing" in frame else False  # a bool column, for masks
    return frame


# --- one row per trial ----------------------------------------------------------


def raw_row(rec: dict, m: Matrix) -> TrialRow:
    """Every figure of one trial that needs no other trial (efficiency and fairness come later).
    Costs come from the recorded usage at the config's pricing, not from the records' cost_usd."""
    from mcptrials.cost.pricing import judge_cost, trial_cost
    from mcptrials.stats.adoption import adoption

    k, t, s, j, meta = rec["key"], rec["transcript"], rec["scored"], rec["judged"], rec["run_meta"]
    eff, ad, cit = s["efficiency"], s["adoption"], s["citations"]
    outcome = t["outcome"]
    used = ad["discoverability"].get("used_within_window")
    disc = None if used is None else float(bool(used))
    fluency = None if k["tool"] == BASELINE else ad.get("tool_fluency")
    pricing = m.config["pricing"]
    cost, priced_as = trial_cost(pricing, t)
    row: dict[str, Any] = dict(k)
    row.update(
        {
            "suite": m.scenarios[k["scenario"]].data["suite"],
            "provider": t.get("provider"),
            "model_id": t.get("model_id"),
            "outcome": outcome,
            "completed": outcome == COMPLETED,
            "passed": bool(s["passed"]) and outcome == COMPLETED,
            KEYWORD_COVERAGE: s["keywords"]["coverage"],
            # fairness's citation part is the strict grounding (graders.citations.citation_rates)
            CITATION_GROUNDING: cit["rates"].get(STRICT_GROUNDED_RATE, cit["rates"][GROUNDED_RATE]),
            CITATION_GROUNDING_LENIENT: cit["rates"][GROUNDED_RATE],
            VERIFIED_RATE_STRICT: cit["rates"].get(STRICT_VERIFIED_RATE),
            "citations": cit["counts"]["total"],
            "grounded": cit["counts"]["grounded"],
            "hallucinated": cit["counts"]["hallucinated"],
            "unresolved": cit["counts"]["unresolved"],
            VERIFIED_RATE: cit["rates"][VERIFIED_RATE],
            CITED_RECALL: cit["rates"][CITED_RECALL],
            EXACT_STEPS: s["exact"]["steps"],
            EXACT_PASSED: s["exact"]["passed"],
            STATE_STEPS: s["state"]["steps"],
            STATE_PASSED: s["state"]["passed"],
            "quality": j["quality_mean"],
            QUALITY_REPEATS: len(j["quality"]),
            "efficiency": None,
            FAIRNESS: None,
            "tool_fluency": fluency,
            "discoverability": disc,
            "adoption": adoption(fluency, disc),
            "cost_usd": cost,
            "priced_as": priced_as,
            **usage_columns(t, eff),
            **{k2: int(t["errors"].get(k2, 0)) for k2 in ERROR_KINDS},
            "tool_error_rate": ad.get("tool_error_rate"),
            # which server tools the trial called and how many of those calls failed (compare's gate)
            SERVER_TOOLS_USED: sorted(ad.get("per_tool") or {}),
            SERVER_TOOL_ERRORS: sum(int(v.get("errors") or 0) for v in (ad.get("per_tool") or {}).values()),
            **expected_tools_means(ad),
            JUDGE_COST_USD: judge_cost(pricing, j),
            "server_startup_seconds": meta.get("server_startup_seconds"),
            "server_peak_rss_kb": meta.get("server_peak_rss_kb"),
            "page": trial_page(k["model"], k["tool"], k["scenario"], k["trial"]),  # model = model@host when several
        }
    )
    if s.get("citations_not_checked"):  # no checkout: the citation figures are missing, never zero
        row.update(
            {
                k: None
                for k in (
                    CITATION_GROUNDING,
                    "citations",
                    "grounded",
                    "hallucinated",
                    "unresolved",
                    VERIFIED_RATE,
                    CITED_RECALL,
                )
            }
        )
    row["citations_not_checked"] = s.get("citations_not_checked")
    row["not_judged"] = j.get("not_judged")
    row.update(gold_recall_columns(s.get("gold_recall")))
    att = rec.get("attempts")
    row.update(
        {
            "missing": is_missing(outcome),
            MISSING_REASON: missing_reason(outcome, t.get("outcome_detail")),
            "attempts": int(att["runs"]) if att else 1,
        }
    )
    if row["missing"]:  # neither a pass nor a fail nor a zero: no score at all
        row.update({f: None for f in (*SCORE_FIELDS, *(k for k in row if k.startswith(GOLD_PREFIXES)))})
    # a dict until here: the gold columns are named by the scenario (TrialRow's docstring);
    # tests/analyze/test_aggregate.py checks each row against TrialRow
    return cast(TrialRow, row)


def usage_columns(t: dict, eff: dict) -> dict:
    """A trial's tokens, turns, calls and times (scored.json `efficiency`), in the table's order."""
    from mcptrials.cost.work_time import work_seconds

    tokens = eff["tokens"]
    return {
        TOKENS_INPUT_UNCACHED: tokens["input_uncached"],
        TOKENS_CACHE_WRITE: tokens["cache_write"],
        TOKENS_CACHE_READ: tokens["cache_read"],
        TOKENS_OUTPUT: tokens["output"],
        TOKENS_TOTAL: tokens["total"],
        "turns": eff["turns"],
        "api_calls": eff.get("api_calls"),
        "retries": eff.get("retries"),
        "wall_seconds": eff["wall_seconds"],
        "work_seconds": work_seconds(t),  # the steps' wall time: what efficiency compares
        "tool_calls": eff["tool_calls"],
        "tool_calls_mcp": eff["tool_calls_mcp"],
        "tool_calls_builtin": eff["tool_calls_builtin"],
    }


def gold_recall_columns(gold: dict | None) -> dict:
    """A scenario with gold rows (scenario `gold:`): its cited_recall (which then replaces the
    steps' gold locations' figure), mention_recall and cited_recall_<group> per row group."""
    if not gold:
        return {}
    return {
        CITED_RECALL: gold[CITED_RECALL],
        MENTION_RECALL: gold[MENTION_RECALL],
        GOLD_ROWS: gold["total"],
        **{f"cited_recall_{g}": v[CITED_RECALL] for g, v in sorted(gold["groups"].items())},
    }


def expected_tools_means(ad: dict) -> dict:
    """A trial's mean precision and recall of tools over its steps with expected_tools
    (a step where it is null, e.g. no tool called, is left out; null when none is left)."""
    steps = ad.get("expected_tools") or []
    return {f"expected_tools_{k}": mean(st.get(k) for st in steps) for k in ("precision", "recall")}


# --- efficiency and fairness: the figures that need other trials --------------------------


def baseline_means(rows: list[TrialRow]) -> dict:
    """(model, scenario) -> (cost, working time) references of its completed baseline trials:
    stats.efficiency_reference of each (their geometric mean, what stats.relative_efficiency
    measures every arm's trials against, the baseline's own included). Working time is
    graders.usage.work_seconds (the steps' wall time), so a server is not judged by its
    start-up. Failed baseline trials are left out: a crash is quick and cheap, not efficient."""
    import pandas as pd

    from mcptrials.stats.fairness import efficiency_reference

    done = pd.DataFrame(
        [
            {
                "model": r["model"],
                "scenario": r["scenario"],
                "cost": r["cost_usd"],
                "work": r.get("work_seconds", r["wall_seconds"]),
            }
            for r in rows
            if r["tool"] == BASELINE and r["completed"]
        ],
        columns=["model", "scenario", "cost", "work"],
        dtype=object,
    )
    return {
        key: (efficiency_reference(g["cost"].tolist()), efficiency_reference(g["work"].tolist()))
        for key, g in done.groupby(["model", "scenario"], sort=False)
    }


def efficiency_basis(cost, work, base_cost, base_work) -> str:
    """Which parts a trial's efficiency measured (stats.relative_efficiency counts a part it
    cannot form as 0.5, the baseline's): "cost and time", "time only, no cost", "cost only, no
    time" or "none, 0.5"."""
    has_cost = cost is not None and base_cost is not None
    has_time = work is not None and base_work is not None
    if has_cost and has_time:
        return "cost and time"
    if has_time:
        return "time only, no cost"
    return "cost only, no time" if has_cost else "none, 0.5"


def score_rows(rows: list[TrialRow], weights: dict, has_baseline: bool) -> list[str]:
    """Fill efficiency and fairness in place; returns notes for the summary."""
    from mcptrials.stats.fairness import EFFICIENCY_EQUAL

    notes = []
    base = baseline_means(rows)
    lacking = set()
    for r in rows:
        r[EFFICIENCY_BASIS] = None
        if r["missing"]:
            continue  # efficiency and fairness stay None
        if not has_baseline:
            r["efficiency"], r[EFFICIENCY_BASIS] = EFFICIENCY_EQUAL, "none: no baseline, 0.5"
        elif (r["model"], r["scenario"]) in base:
            set_efficiency(r, *base[(r["model"], r["scenario"])])
        else:
            lacking.add((r["model"], r["scenario"]))
            r["efficiency"], r[EFFICIENCY_BASIS] = EFFICIENCY_EQUAL, "none: no completed baseline trial, 0.5"
        set_fairness(r, weights)
    if not has_baseline:
        notes.append(
            "no tool named `baseline` in the config: efficiency is 0.5 for every trial and there are "
            "no paired differences"
        )
    for model, scenario in sorted(lacking):
        notes.append(f"model {model}, scenario {scenario}: no completed baseline trial, so efficiency is 0.5 there")
    return notes


def set_efficiency(r: TrialRow, base_cost, base_work) -> None:
    """stats.relative_efficiency of the trial's cost and working time against its baseline's references."""
    from mcptrials.stats.fairness import relative_efficiency

    work = r.get("work_seconds", r["wall_seconds"])
    r["efficiency"] = relative_efficiency(r["cost_usd"], work, base_cost, base_work)
    r[EFFICIENCY_BASIS] = efficiency_basis(r["cost_usd"], work, base_cost, base_work)


def set_fairness(r: TrialRow, weights: dict) -> None:
    """stats.fairness of a trial that counts; a part that is missing, not zero (citations not
    checked: no checkout; quality not judged: no recorded judgement) is left out with
    stats.fairness_without's weights, and `fairness_without` says which and why."""
    from mcptrials.stats.fairness import fairness, fairness_without

    if not r["completed"]:
        r[FAIRNESS] = 0.0  # a failed (attributable) trial scores 0 and counts as a fail
        return
    gone = {
        k: why
        for k, why in (
            ("citation", r.get("citations_not_checked") and "not checked"),
            ("quality", r.get("not_judged") and "not judged"),
        )
        if why and weights[k]
    }
    rest = fairness_without(weights, gone) if gone else None
    r[FAIRNESS] = fairness(r[KEYWORD_COVERAGE], r["quality"], r[CITATION_GROUNDING], r["efficiency"], rest or weights)
    if rest:
        r[FAIRNESS_WITHOUT] = "; ".join(f"{k} ({why})" for k, why in gone.items())
