"""The top of the main page: what could not run, the link to the trial explorer, the headline
tables per model (does the server beat the baseline?), gold recall, the configured comparisons
and the models × hosts view."""

from __future__ import annotations

from mcptrials.report.explorer import EXPLORER
from mcptrials.report.formats import (
    esc,
    f3,
    fci,
    fci_missing,
    fmissing,
    fnum,
    fp,
    fsec,
    fsigned_ci,
    fusd,
    href,
    model_labels,
    model_text,
    with_n,
)
from mcptrials.report.render import Cell, Doc, Table
from mcptrials.core.keys import (
    CITATION_GROUNDING,
    CITED_RECALL,
    COST_PER_TRIAL,
    DIFF_HI,
    DIFF_LO,
    EFFICIENCY_BASIS,
    FAILED_OUTCOMES,
    FAIRNESS,
    FAIRNESS_A,
    FAIRNESS_B,
    FAIRNESS_HI,
    FAIRNESS_LO,
    HOLM_T_P,
    HOLM_WILCOXON_P,
    KEYWORD_COVERAGE,
    MENTION_RECALL,
    MISSING_REASON,
    N_MISSING,
    N_MISSING_A,
    N_MISSING_B,
    N_SCENARIOS,
    N_TRIALS,
    N_TRIALS_A,
    N_TRIALS_B,
    PASS_AT_1,
    PASS_AT_K,
    PASS_HAT_K,
    RANK,
    STARTUP_PER_TRIAL,
    TOKENS_PER_TRIAL,
    T_P,
    VERIFIED_RATE,
    WALL_PER_TRIAL,
    WILCOXON_P,
    WORK_PER_TRIAL,
)
from mcptrials.core.rows import Summary, ToolRow


VERDICT_CLASS = {
    "better": "better",
    "worse": "worse",
    "within noise": "noise",
    "no practical difference": "noise",
    "did not start": "worse",
}


def verdict_text(s: Summary) -> str:
    """The verdicts' rule with the run's margin (summary.json `margin`, the config's `margin:`)."""
    margin = s.get("margin")
    if margin is None:  # a summary made before the margin: the plain significance verdicts
        return (
            "within noise: the 95% interval contains 0, or the difference is smaller than the judge's "
            "spread; such tools are not ranked"
        )
    return (
        f"margin ±{margin:g} (the config's `margin:`, the smallest difference in fairness that matters): "
        f"better / worse only when the whole 95% interval of Δ lies above +{margin:g} / below -{margin:g} "
        f"(and Δ is at least the judge's spread); no practical difference when it lies within ±{margin:g}; "
        "within noise otherwise"
    )


def verdict_header(s: Summary) -> str:
    """The verdict column's header, with the margin beside it."""
    return "verdict" if s.get("margin") is None else f"verdict (margin ±{s['margin']:g})"


def add_failed_stages(doc: Doc, s: Summary) -> None:
    """What could not run, and how to fix it: first, since every figure below lacks those trials."""
    failed = s.get("failed_stages") or []
    env = s.get("environment_failures") or []
    if not failed and not env:
        return
    doc.h(2, "What could not run", "failed-stages")
    if failed:
        add_stage_failures(doc, s, failed)
    if env:
        add_environment_failures(doc, env, s["methods"].get("environment"))


def add_environment_failures(doc: Doc, env: list[dict], method: str | None) -> None:
    """Servers that started but failed their calls the same way in most trials of a repository
    (mcptrials.analyze.environment): their trials count, their verdict carries the cause."""
    n_env = sum(1 for f in env if f.get("kind", "environment") == "environment")
    doc.p(
        f"{len(env)} server error(s) failed the same call in most of a tool's trials on a repository"
        + (f" ({method})" if method else "")
        + f"; {n_env} of them say this machine lacks something (kind "
        "environment: fix the environment and run the tool's trials again for a verdict about the server), the "
        "others are repeated errors (the agent's use of the tool, or the server's set-up: read one trial page). "
        "Those trials count as run, and the tool's headline verdict names the error beside it.",
        "warning",
    )
    t = Table(
        ["tool", "repo", "model", "kind", "error", "trials with it", "failed calls", "fix", "a trial"],
        caption="repeated server errors (results/aggregate/summary.json `environment_failures`)",
    )
    for f in env:
        t.add(
            f["tool"],
            f["repo"],
            f["model"],
            f.get("kind", "environment"),
            f["error"],
            f"{f['trials_with_error']}/{f['trials']}",
            f["calls"],
            f["fix"],
            Cell("trial page", href=href(f["page"])) if f.get("page") else "–",
        )
    doc.table(t, "environment-failures-table")


def add_stage_failures(doc: Doc, s: Summary, failed: list[dict]) -> None:
    """The stages that failed (checkouts, installs, server starts) and the trials they left missing."""
    lost = [r for r in s["trials"] if r.get(MISSING_REASON) in ("not_run: checkout failed", "not_run: install failed")]
    doc.p(
        f"{len(failed)} stage(s) failed; {len(lost)} trial(s) could not run because of them and are missing "
        "(neither a pass nor a fail nor a 0, left out of every figure below). The run exits non-zero after "
        "this report; fix each and run snakemake again: only the trials they held back run.",
        "warning",
    )
    # recorded trials need no checkout (mcptrials.run.runner): graded, only their citation checks missing
    unchecked = [
        r
        for r in s["trials"]
        if not r.get("missing") and str(r.get("citations_not_checked") or "").startswith("checkout failed")
    ]
    if unchecked:
        doc.p(
            f"{len(unchecked)} recorded trial(s) were graded without a checkout: their citation checks (grounding, "
            "lenient and strict verification), which read files at the commit, are missing (not checked: neither "
            "a 0 nor a pass, left out of the citation figures, and fairness is weighed without them); their "
            "recordings, gold recall, judge, usage and patterns are graded as usual.",
            "warning",
        )
    # not results/status.json: the status job fails on these, and Snakemake deletes a failed job's output
    t = Table(
        ["stage", "of", "error", "fix", "log"],
        caption="failed stages (results/aggregate/summary.json `failed_stages`; the status job's lines: "
        "results/logs/status.log)",
    )
    for f in failed:
        t.add(f["stage"], f["name"], f["error"], f["fix"], f["log"])
    doc.table(t, "failed-stages-table")


def add_headline(doc: Doc, s: Summary) -> None:
    ident = s["identity"]
    doc.h(2, "Headline: does the server make the answers better than no server?", "headline")
    # The answer first; how it is computed folded below the tables.
    method = (
        "Fairness = "
        + " + ".join(f"{v:.2f} × {k}" for k, v in ident["weights"].items())
        + " (0-1). Difference = paired over scenarios against the baseline of the same model; p-values "
        "Holm-adjusted across the tools of a model. Verdicts: "
        + verdict_text(s)
        + ". Rank: only the tools better than the "
        "baseline, 1 = the largest difference; a worse tool has none. Intervals: "
        + s["methods"]["interval"]
        + ". Costs: "
        + s["methods"]["costs"]
        + ". Efficiency: "
        + s["methods"].get("efficiency", "cost and wall time against the baseline")
        + ". Time / trial is the wall time, split into the agent's work and the "
        "server's start-up."
    )
    k = ident["trials"]
    doc.p("Verdicts: " + verdict_text(s) + ".", "note")
    for model in model_labels(s):
        mdl = {"label": model_text(s, model)}
        rows = [r for r in s["tools"] if r["model"] == model]
        # with one trial per cell pass@k and pass^k are pass@1: said once
        passes = ["pass@1"] if k == 1 else ["pass@1", f"pass@{k}", f"pass^{k}"]
        t = Table(
            [
                "tool",
                "fairness [95% CI]",
                "Δ vs baseline [95% CI]",
                "Holm p (t)",
                "Holm p (Wilcoxon)",
                verdict_header(s),
                "rank",
                *passes,
                "cost / trial",
                "time / trial",
                "work / trial",
                "start-up / trial",
                "trials",
            ],
            caption=f"model {model}: {mdl['label']}",
            cls="headline",
        )
        for r in rows:
            vcls = VERDICT_CLASS.get(r["verdict"])
            pass_cells = [f3(r[PASS_AT_1])] if k == 1 else [f3(r[PASS_AT_1]), f3(r[PASS_AT_K]), f3(r[PASS_HAT_K])]
            verdict = (r["verdict"] or "–") + (f" ({r['environment']})" if r.get("environment") else "")
            t.add(
                r["tool"],
                fci_missing(r[FAIRNESS], r[FAIRNESS_LO], r[FAIRNESS_HI], r[N_TRIALS], r),
                Cell(fsigned_ci(r["diff"], r[DIFF_LO], r[DIFF_HI]), cls=vcls),
                fp(r[HOLM_T_P]),
                fp(r[HOLM_WILCOXON_P]),
                Cell(verdict, cls=vcls),
                "–" if r[RANK] is None else r[RANK],
                *pass_cells,
                fusd(r[COST_PER_TRIAL]),
                fsec(r[WALL_PER_TRIAL]),
                fsec(r.get(WORK_PER_TRIAL)),
                fsec(r.get(STARTUP_PER_TRIAL)),
                f"{r[N_TRIALS]} ({r[FAILED_OUTCOMES]} failed; {r.get(N_MISSING, 0)} missing)",
            )
        doc.table(t, f"headline-{model}")
        lost = [r for r in rows if r.get(N_MISSING)]
        if lost:
            doc.p(
                f"Missing trials (model {model}): "
                + "; ".join(f"{r['tool']} {fmissing(r[N_TRIALS], r)}" for r in lost)
                + ". A missing trial (api_failed, harness_failed, not_run) is an infrastructure failure, not the "
                "tool's: it is neither a pass nor a fail nor a 0, and is left out of every figure here.",
                "note",
            )
        comp = Table(
            [
                "tool",
                "judge quality",
                "keyword coverage",
                "citation grounding (n citations)",
                "citations verified",
                "efficiency (what it measured, when not cost and time)",
                "tokens / trial",
            ],
            caption=f"model {model}: the components of fairness (means over trials); citations verified "
            "= verified / (verified + mismatch), beside grounding, not part of fairness",
        )
        for r in rows:
            comp.add(
                r["tool"],
                f3(r["quality"]),
                f3(r[KEYWORD_COVERAGE]),
                grounding_cell(s, r),
                f3(r.get(VERIFIED_RATE)),
                f3(r["efficiency"])
                + (f" ({r[EFFICIENCY_BASIS]})" if r.get(EFFICIENCY_BASIS) not in (None, "cost and time") else ""),
                fnum(r[TOKENS_PER_TRIAL]),
            )
        doc.table(comp)
    for pw in s["power"]:
        doc.p(f"Power ({pw['model']}): {pw['text']}.")
    doc.folded("How these figures are computed", method)


def grounding_cell(s: Summary, r: ToolRow) -> str:
    """A tool row's citation grounding beside its n, and how many of its trials that count had
    their citations not checked (no checkout of the commit): missing, never a 0."""
    unchecked = sum(
        1
        for t in s["trials"]
        if (t["model"], t["tool"]) == (r["model"], r["tool"])
        and not t.get("missing")
        and t.get("citations_not_checked")
    )
    cell = with_n(r[CITATION_GROUNDING], r.get("citations"))
    return cell + (f"; not checked in {unchecked} of {r[N_TRIALS]} trial(s): no checkout" if unchecked else "")


def add_gold_recall(doc: Doc, s: Summary) -> None:
    """Scenario gold rows (scenario `gold:`): cited and mention recall per tool, and per row group."""
    view = s.get("gold_recall") or []
    if not view:
        return
    doc.h(2, "Gold recall: the must-find rows, overall and per group", "gold-recall")
    doc.p(
        "Cited recall = share of a scenario's gold rows the answer pins to a line; mention recall = named at all "
        "(grade/gold_recall.py, the reference bench's rule). Means over the trials that count; a group's mean "
        "over the trials whose scenario has rows in it (n beside it).",
        "note",
    )
    for model in dict.fromkeys(v["model"] for v in view):
        rows = [v for v in view if v["model"] == model]
        groups = sorted({g for v in rows for g in v["groups"]})
        t = Table(
            ["tool", "trials", "cited recall", "mention recall"] + [f"cited: {g}" for g in groups],
            caption=f"model {model}",
        )
        for v in rows:
            t.add(
                v["tool"],
                v["n"],
                f3(v[CITED_RECALL]),
                f3(v[MENTION_RECALL]),
                *[
                    (f"{f3(v['groups'][g]['mean'])} (n={v['groups'][g]['n']})" if g in v["groups"] else "–")
                    for g in groups
                ],
            )
        doc.table(t, f"gold-recall-{model}")


def add_model_host(doc: Doc, s: Summary) -> None:
    """The model x host view: fairness per (model, host) for each tool, and paired differences."""
    v = s.get("model_host") or {}
    if not v.get("cells"):
        return
    doc.h(2, "Models × hosts: the same tools and scenarios side by side", "model-host")
    doc.p(
        "Each cell: fairness [95% CI] over that pair's trials, pass@1, and the trial count; – = the host "
        "cannot drive that model (claude-code needs provider anthropic, codex and opencode provider "
        "openai). Differences are paired over the "
        "scenarios both sides ran: hosts against the first host of the config for the same model, models "
        "against the first model for the same host.",
        "note",
    )
    cells = {(c["tool"], c["model"], c["host"]): c for c in v["cells"]}
    for tool in dict.fromkeys(c["tool"] for c in v["cells"]):
        t = Table(["model"] + v["hosts"], caption=f"tool {tool}: fairness by model and host", cls="model-host")
        for model in v["models"]:
            row = [model]
            for host in v["hosts"]:
                c = cells.get((tool, model, host))
                row.append(
                    "–"
                    if c is None
                    else f"{fci(c[FAIRNESS], c[FAIRNESS_LO], c[FAIRNESS_HI])}; "
                    f"pass@1 {f3(c[PASS_AT_1])}; {fusd(c[COST_PER_TRIAL])}; "
                    + (fmissing(c[N_TRIALS], c) or f"n={c[N_TRIALS]}")
                )
            t.add(*row)
        doc.table(t, f"model-host-{tool}")
    if v["pairs"]:
        t = Table(
            ["tool", "comparing", "for", "a − b", "Δ fairness [95% CI]", "p (t)", "p (Wilcoxon)", "scenarios"],
            caption="paired differences (a minus b)",
        )
        for p in v["pairs"]:
            t.add(
                p["tool"],
                p["compare"],
                p["fixed"],
                f"{p['a']} − {p['b']}",
                fsigned_ci(p["diff"], p[DIFF_LO], p[DIFF_HI]),
                fp(p[T_P]),
                fp(p[WILCOXON_P]),
                p["n"],
            )
        doc.table(t, "model-host-pairs")


def add_comparisons(doc: Doc, s: Summary) -> None:
    """The config's `compare:` pairs: A minus B, paired over scenarios, Holm across the pairs of a model."""
    rows = s.get("comparisons") or []
    if not rows:
        return
    doc.h(2, "Tools compared with each other (the config's `compare:`)", "comparisons")
    doc.p(
        "Δ = fairness of A minus B, paired over the scenarios both ran (per-scenario means), the same "
        "statistics as against the baseline; p-values Holm-adjusted across the configured pairs of a model. "
        "Verdicts, A against B: " + verdict_text(s) + ". Missing trials are left out and counted.",
        "note",
    )
    t = Table(
        [
            "model",
            "A − B",
            "fairness A",
            "fairness B",
            "Δ fairness [95% CI]",
            "Holm p (t)",
            "Holm p (Wilcoxon)",
            verdict_header(s),
            "scenarios",
            "trials A (missing)",
            "trials B (missing)",
        ],
        cls="comparisons",
    )
    for r in rows:
        vcls = VERDICT_CLASS.get(r["verdict"])
        t.add(
            r["model"],
            f"{r['a']} − {r['b']}",
            f3(r[FAIRNESS_A]),
            f3(r[FAIRNESS_B]),
            Cell(fsigned_ci(r["diff"], r[DIFF_LO], r[DIFF_HI]), cls=vcls),
            fp(r[HOLM_T_P]),
            fp(r[HOLM_WILCOXON_P]),
            Cell(r["verdict"], cls=vcls),
            r[N_SCENARIOS],
            f"{r[N_TRIALS_A]} ({r[N_MISSING_A]})",
            f"{r[N_TRIALS_B]} ({r[N_MISSING_B]})",
        )
    doc.table(t, "comparisons")


def add_explorer_link(doc: Doc, s: Summary) -> None:
    """The way to the trial explorer (mcptrials.report.explorer), near the top of the report."""
    text = f"every trial ({len(s['trials']):,}) in one table: filter, sort, search the answers, open a trial"
    doc.md.append(f"[Trial explorer]({EXPLORER}): {text}\n")
    doc.html.append(f'<p id="explorer-link"><a href="{esc(EXPLORER)}">Trial explorer</a>: {esc(text)}</p>')
