"""The report: results/report/report.md and a self-contained index.html (inline CSS, plots as
base64 PNG, no network), plus one page per trial under trials/<model>/<tool>/<scenario>/<trial>.html
and the trial explorer. This module reads the inputs and puts the main page together from its
sections (mcptrials.report, the package docstring, names the module of each).

Inputs are files only: results/aggregate/summary.json (mcptrials.analyze.aggregate), the held-out
agreement (results/heldout/agreement.json) and lock state (lock_verified.json beside it), and
the trial records under results/runs for the trial pages. Everything that comes from a
transcript or a record is HTML-escaped.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.specs import JudgeSpec
from mcptrials.report.citations import add_citation_composition
from mcptrials.report.details import add_adoption, add_errors, add_judge_noise, add_profile, add_scenarios
from mcptrials.report.explorer import write_explorer
from mcptrials.report.figures import add_plots
from mcptrials.report.headline import (
    add_comparisons,
    add_explorer_link,
    add_failed_stages,
    add_gold_recall,
    add_headline,
    add_model_host,
)
from mcptrials.report.calibration import add_calibration, calibration_warnings
from mcptrials.report.heldout import StrictHeldout, add_heldout, heldout_state, missing_anchor
from mcptrials.report.identity import add_identity
from mcptrials.report.patterns import add_feedback, add_patterns
from mcptrials.report.render import Doc, page
from mcptrials.report.contribution import add_contribution
from mcptrials.report.sequential import add_sequential
from mcptrials.report.trial_page import write_trial_page
from mcptrials.core.keys import PAGES
from mcptrials.core.rows import Summary


# --- inputs ------------------------------------------------------------------------------


def read_optional(path) -> dict | None:
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{p}: not valid JSON ({e}); delete it and rerun its stage") from None


def load_summary(aggregate_dir) -> Summary:
    path = Path(aggregate_dir) / "summary.json"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; run `mcptrials aggregate --out-dir {aggregate_dir}` first")
    return json.loads(path.read_text())


# --- the main page ---------------------------------------------------------------------------


def build_report(
    summary: Summary,
    agreement: dict | None,
    lock: dict | None,
    runs,
    out_dir,
    judge: JudgeSpec,
    current_set_sha256: str | None = None,
    lockfile_sha256: str | None = None,
) -> dict:
    """Write report.md, index.html, plots/*.png and the trial pages under out_dir.
    judge is the config's `judge:` (threshold and strict: the held-out verdict is made here).
    Raises StrictHeldout, before writing anything, when judge.strict is true and the check fails.
    Returns {"html", "md", "pages"} paths."""
    held = heldout_state(
        agreement,
        lock,
        judge.threshold,
        judge.strict,
        lockfile_sha256,
        summary["identity"]["judge"].get("provider"),
    )
    if held["refuse"]:
        raise StrictHeldout(held["refuse"])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ident = summary["identity"]
    doc = Doc()
    doc.h(1, "mcptrials report")
    doc.p(
        "Models: "
        + "; ".join(f"{n} = {m['label']}" for n, m in ident["models"].items())
        + f". Judge: {ident['judge']['label']}."
    )
    warnings = list(held["warnings"]) + calibration_warnings(summary)
    if current_set_sha256 and current_set_sha256 != ident["scenario_set_sha256"]:
        warnings.append(
            "The aggregate was built from a different scenario set than the config's current one: "
            "rerun `mcptrials aggregate`."
        )
    for w in warnings:
        doc.p("WARNING: " + w, "warning")
    for n in held["notes"] + summary["notes"]:
        doc.p("Note: " + n, "note")
    add_failed_stages(doc, summary)
    add_explorer_link(doc, summary)
    add_headline(doc, summary)
    add_sequential(doc, summary)  # a run in waves only
    add_gold_recall(doc, summary)
    add_comparisons(doc, summary)
    add_contribution(doc, summary, out / "plots")  # ablation arms only
    add_model_host(doc, summary)
    add_identity(doc, summary, held)
    add_adoption(doc, summary)
    add_citation_composition(doc, summary)
    add_calibration(doc, summary)
    add_plots(doc, summary, out / "plots")
    add_scenarios(doc, summary)
    add_errors(doc, summary)
    add_patterns(doc, summary)
    add_feedback(doc, summary)
    add_profile(doc, summary)
    add_judge_noise(doc, summary)
    add_heldout(doc, agreement, held)

    md_path, html_path = out / "report.md", out / "index.html"
    md_path.write_text("\n".join(doc.md))
    html_path.write_text(page("mcptrials report", "\n".join(doc.html)))
    pages = [write_trial_page(r, runs, out, summary) for r in summary["trials"]]
    explorer = write_explorer(summary, runs, out)
    return {"html": html_path, "md": md_path, PAGES: pages, "explorer": explorer}


# --- command ---------------------------------------------------------------------------------


def report_job(m, aggregate_dir, heldout, lock, runs, out_dir) -> dict:
    """The report of a config's run: its aggregate (summary.json under `aggregate_dir`), the
    held-out agreement (`heldout`, optional) and the verified lock (`lock`, default beside
    `heldout`), or the reason the config has no anchor. Raises StrictHeldout (nothing
    written) when judge.strict is true and the held-out check fails."""
    summary = load_summary(aggregate_dir)
    reason = missing_anchor(m)
    lockfile_sha256 = None
    agreement: dict | None
    if reason:  # the same shape the held-out stage writes when its held-out scenarios have no frozen transcripts
        agreement, lock = {"anchor": None, "reason": reason, "n": 0, "rho": None}, None
    else:
        from mcptrials.matrix.hashing import file_sha256
        from mcptrials.analyze.lock import LOCKFILE

        lockfile = m.locked_dir / LOCKFILE
        lockfile_sha256 = file_sha256(lockfile) if lockfile.is_file() else None
        agreement = read_optional(heldout)
        lock = read_optional(lock or (Path(heldout).parent / "lock_verified.json" if heldout else None))
    current = m.scenario_set_sha256()  # differs from the aggregate's when the aggregate is stale
    return build_report(summary, agreement, lock, runs, out_dir, m.specs.judge, current, lockfile_sha256)
