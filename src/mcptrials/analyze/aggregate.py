"""Every trial's records into tables: one row per trial, per (model, tool, scenario) cell
and per (model, tool), plus summary.json with everything the report needs.

Reads only files (results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/transcript.json,
run_meta.json, scored.json, judged.json) and only the trials of the config's current matrix
(`Matrix.cells()`): leftovers of an older matrix in results/runs are ignored. Nothing is
rerun. Every formula is in mcptrials.stats; the analyze modules only pick the inputs
(trial_rows the trial rows and their frame, tables and comparisons its groups, identity,
records_summary and feedback what comes from the records), and this one writes the files:

- fairness   = stats.fairness(keyword coverage, judge quality, citation grounding,
               efficiency, config weights); 0 for a trial whose attributable outcome is not
               `completed` (it counts as a fail, it is never dropped); a part missing rather
               than zero (citations not checked, quality not judged) is left out with
               stats.fairness_without's weights;
- missing    = a trial whose outcome is an infrastructure one (mcptrials.core.outcomes: api_failed,
               harness_failed, not_run): `missing` true with `missing_reason`, every score None
               (never 0), left out of every mean, pass@k and interval; every table counts it
               (`n_missing`, `missing_reasons`) beside the trials used (`n`, `n_trials`);
- cost       = recomputed here from the recorded token usage at the config's current
               `pricing` (graders.cost: trial_cost on transcript.json `usage`, judge_cost on
               judged.json `usage`), never the cost_usd frozen in the records at run time, so a
               new pricing needs only aggregate and report;
- efficiency = stats.relative_efficiency against the references (stats.efficiency_reference:
               geometric means) of the (recomputed) cost and working time (the steps' wall time,
               `work_seconds`, graders.usage.work_seconds; server start-up is reported apart,
               `server_startup_seconds`) of the completed `baseline` trials of the same model
               and scenario, every arm's trials measured alike, the baseline's own included
               (0.5 when there is no baseline tool, said in summary.json `notes`);
- adoption   = stats.adoption(tool fluency, discoverability): reported apart, never in
               fairness; None for the baseline (it has no server to adopt).
- verdicts   of paired differences (tools against the baseline, the `compare:` pairs) =
               stats.practical_verdict against the config's `margin:` (summary.json `margin`):
               better / worse beyond it, no practical difference within it, else within noise;
- intervals  of 0-1 scores (fairness, adoption) = stats.bounded_mean_ci, and paired
               differences of fairness = stats.paired_difference(bounds=(-1, 1)): they never
               leave the score's range (INTERVAL_METHOD names them in summary.json).
- citation grounding = the strict grounding, (grounded - strict mismatch) / all citations
  (scored.citations.rates.strict_grounded_rate; the lenient grounded / all beside it as
  citation_grounding_lenient, the strict verified share as verified_rate_strict);
  an answer without citations has no grounding (None, which fairness counts as 0).
- citation composition (summary.json `citation_composition`, per model and tool): the trials'
  citations pooled, strict beside lenient, by form and the ungrounded kinds
  (citation_composition; formulas in grade.citations.composition; trials whose citations were not
  checked left out and counted, n_not_checked);
- citations verified = verified / (verified + mismatch) (scored.citations.rates.verified_rate),
  per cell and tool the mean over the trials that have one; shown beside grounding, never in
  fairness.
- environment failures (summary.json `environment_failures`; analyze.environment): a server tool
  whose calls fail with the same (normalised) error in most of its trials on a repository;
  the tool row's `environment` says so beside its verdict, which is computed as for any tool.
- calibration (summary.json `calibration`, citation_calibration.csv; analyze.calibration): with
  the reader's labels of a sample of citations, the strict verdict's agreement with them and
  the prediction-powered estimate of the strict verified rate (stats.ppi) per model and tool.
- discoverability = 1 when the trial called a server tool within the first
  `window_turns` model calls, else 0 (scored.adoption.discoverability.used_within_window).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcptrials.analyze.calibration import CSV_FIELDS as CALIBRATION_FIELDS
from mcptrials.analyze.calibration import calibration
from mcptrials.analyze.citation_labels import read_labels
from mcptrials.analyze.comparisons import COMPARISON_FIELDS, comparison_rows, model_host_view
from mcptrials.analyze.contribution import contribution_view
from mcptrials.analyze.result_limits import host_limits
from mcptrials.analyze.environment import METHOD as ENVIRONMENT_METHOD
from mcptrials.analyze.environment import environment_failures, environment_note
from mcptrials.analyze.feedback import add_patterns, feedback_table, pattern_csv_rows, pattern_summary
from mcptrials.analyze.identity import identity
from mcptrials.analyze.records_summary import (
    citation_composition,
    definition_costs,
    did_not_start,
    offered_names,
    judge_noise,
    server_profile,
)
from mcptrials.analyze.sequential import ran_keys, sequential_summary
from mcptrials.analyze.tables import (
    INTERVAL_METHOD,
    VERDICT_METHOD,
    cell_rows,
    error_taxonomy,
    gold_recall_view,
    missing_summary,
    pass_hat_curve,
    power_line,
    pricing_notes,
    scenario_flags,
    scenarios_with_data,
    tool_rows,
)
from mcptrials.analyze.trial_rows import (
    COST_METHOD,
    EFFICIENCY_METHOD,
    absent,
    load_records,
    raw_row,
    score_rows,
    trial_frame,
)
from mcptrials.core.outcomes import is_missing
from mcptrials.core.rows import Summary
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE
from mcptrials.core.keys import MODEL_NAME, RANK


def aggregate(m: Matrix, runs) -> Summary:
    """Read every trial of the matrix and compute the tables and the summary (no writing)."""
    # a run in waves: the trials its waves ran (mcptrials.analyze.sequential), not every cell up to max
    records = load_records(m, runs, cells=ran_keys(m, Path(runs).parent) if m.sequential else None)
    snapshots = Path(runs).parent / "snapshots"
    # the confirmation's trials on held-out scenarios (ablate.confirm) count in its table only
    held = {s.id for s in m.confirm_scenarios()}
    confirming = [r for r in records if r["key"]["scenario"] in held]
    records = [r for r in records if r["key"]["scenario"] not in held]
    rows, confirm_rows = [raw_row(r, m) for r in records], [raw_row(r, m) for r in confirming]
    findings = add_patterns(rows, records, snapshots)  # row["patterns"]: {name: count}
    add_patterns(confirm_rows, confirming, snapshots)
    has_baseline = BASELINE in m.tools
    weights = m.config["weights"]
    notes = score_rows(rows, weights, has_baseline)
    score_rows(confirm_rows, weights, has_baseline)
    trials = trial_frame(rows)
    notes += pricing_notes(trials)
    missing = missing_summary(trials, m.config["retries"]["max_attempts"])
    if missing["note"]:
        notes.append(missing["note"])
    # the judge's spread over the trials that count (a missing trial's answer is not judged work)
    noise = judge_noise(
        [r for r in records if not is_missing(r["transcript"]["outcome"])] or records, weights["quality"]
    )
    if noise["note"]:
        notes.append(noise["note"])
    margin = m.config["margin"]  # the smallest difference in fairness that matters (the schema's default)
    tools = tool_rows(trials, m.trials, noise["fairness_noise"], has_baseline, margin)
    from mcptrials.core.failures import failed_stages

    failed = failed_stages(Path(runs).parent)  # checkouts, installs, server starts that failed
    # a recorded arm has no server; a recorded model's trials start none of ours: a stage that
    # failed before them leaves them converted all the same (mcptrials.run.runner), verdict kept
    dead = did_not_start(
        failed,
        {(t, s.repo) for t in m.tools for s in m.run_scenarios() if t != BASELINE and not m.specs.tools[t].recorded},
        {t: m.server_of(t) for t in m.tools},
    )
    recorded = {label for label, name in zip(trials["model"], trials[MODEL_NAME]) if m.specs.models[name].recorded}
    for r in tools:
        if r["tool"] in dead and r["model"] not in recorded:  # no verdict for a server that never ran
            r.update({"verdict": "did not start", RANK: None})
    # a server that ran but failed its calls the same way in most trials of a repository: named
    # beside its verdict (which stays as computed) and under "What could not run"
    env = environment_failures(records, rows)
    for r in tools:
        r["environment"] = environment_note(env, r["model"], r["tool"])
    labels = list(dict.fromkeys(trials["model"]))  # model, or model@host with several hosts
    out: Summary = {
        "schema": "mcptrials/summary/1",
        "identity": identity(m, records),
        "methods": {
            "interval": INTERVAL_METHOD,
            "costs": COST_METHOD,
            "efficiency": EFFICIENCY_METHOD,
            "environment": ENVIRONMENT_METHOD,
            "verdict": VERDICT_METHOD,
        },
        "margin": margin,
        "notes": notes,
        "failed_stages": failed,
        "environment_failures": env,
        "missing": missing,
        "trials": rows,
        "cells": cell_rows(trials, m.trials),
        "tools": tools,
        "comparisons": comparison_rows(trials, m.config["compare"], noise["fairness_noise"], margin),
        "judge_noise": noise,
        "errors": error_taxonomy(trials),
        "server_profile": server_profile(
            records,
            definition_costs(m, snapshots),
            offered_names(m, snapshots),
            host_limits(m.config["limits"]["max_result_tokens"]),
        ),
        "scenarios": scenario_flags(trials, m),
        "pass_hat_curve": pass_hat_curve(trials, m.trials),
        "power": [
            power_line(model, tools, scenarios_with_data(trials, model), m.trials, len(m.run_scenarios()))
            for model in labels
        ],
        "model_host": model_host_view(trials, list(m.hosts), list(m.models)),
        "gold_recall": gold_recall_view(trials),
        "patterns": pattern_summary(trials, findings),
        "feedback": feedback_table(records, rows, snapshots),
        "citation_composition": citation_composition(records),
        # the reader's labels (`mcptrials label`), when the config's locked/ holds them
        "calibration": calibration(records, read_labels(m.locked_dir) if m.locked_dir else None),
        # each tool's contribution from ablation arms (empty lists without any)
        "contribution": contribution_view(
            m,
            trials,
            records,
            margin,
            tools,
            definition_costs(m, snapshots),
            trial_frame(rows + confirm_rows) if confirm_rows else trials,
        ),
    }
    if m.sequential:  # a run in waves: why each tool stopped, and what was not spent
        out["sequential"] = sequential_summary(m, Path(runs).parent)
    return out


def csv_cell(value) -> str:
    """A table's value as its CSV cell: empty for None (or a column the row lacks), JSON for a
    list or dict, else as the csv module writes it (str; a float's shortest repr)."""
    if absent(value):
        return ""
    return json.dumps(value) if isinstance(value, (dict, list)) else str(value)


def write_csv(path: Path, rows: Sequence[Mapping[str, Any]], fields=None) -> None:
    """rows as CSV, written by pandas: the columns `fields`, or every row's keys in order of
    first appearance; a header even without rows; lines end in CRLF (the csv module's excel dialect)."""
    import pandas as pd

    fields = list(fields or dict.fromkeys(k for r in rows for k in r))
    table = pd.DataFrame(rows, columns=fields, dtype=object).map(csv_cell)
    table.to_csv(path, index=False, lineterminator="\r\n")


def write_aggregate(result: Summary, out_dir) -> dict[str, Path]:
    from mcptrials.core.records import write_json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "trials": out / "trials.csv",
        "cells": out / "cells.csv",
        "tools": out / "tools.csv",
        "summary": out / "summary.json",
    }
    write_csv(paths["trials"], result["trials"])
    write_csv(paths["cells"], result["cells"])
    write_csv(paths["tools"], result["tools"])
    if "patterns" in result:  # one row per (model, tool, pattern)
        paths["patterns"] = out / "patterns.csv"
        write_csv(paths["patterns"], pattern_csv_rows(result["patterns"]))
    paths["comparisons"] = out / "comparisons.csv"  # with its header even when the config compares nothing
    write_csv(paths["comparisons"], result.get("comparisons", []), COMPARISON_FIELDS)
    contrib = result.get("contribution") or {}
    if contrib.get("leave_one_out") or contrib.get("shapley"):  # ablation arms only: no file otherwise
        from mcptrials.analyze.contribution import LOO_FIELDS, SHAPLEY_FIELDS, SURFACE_FIELDS

        paths["contribution"] = out / "contribution.csv"
        write_csv(paths["contribution"], contrib["leave_one_out"], LOO_FIELDS)
        paths["surface"] = out / "surface.csv"  # tokens against fairness
        write_csv(paths["surface"], contrib.get("surface") or [], SURFACE_FIELDS)
        if contrib.get("shapley"):
            paths["shapley"] = out / "shapley.csv"
            write_csv(paths["shapley"], contrib["shapley"], SHAPLEY_FIELDS)
        if contrib.get("confirmation"):  # the arms confirmed on held-out scenarios (ablate.confirm)
            from mcptrials.analyze.contribution import CONFIRM_FIELDS

            paths["confirmation"] = out / "confirmation.csv"
            write_csv(paths["confirmation"], contrib["confirmation"], CONFIRM_FIELDS)
    calib = out / "citation_calibration.csv"  # only with labels: no file rather than an empty one
    if calibrated := result.get("calibration"):
        paths["calibration"] = calib
        write_csv(calib, calibrated["rows"], CALIBRATION_FIELDS)
    else:
        calib.unlink(missing_ok=True)
    write_json(paths["summary"], result)
    return paths
