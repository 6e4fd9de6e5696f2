"""The main page's detail sections: adoption, the scenarios (flags and one table per model and
scenario, linked to the trial pages), errors, the server profile and the judge's noise."""

from __future__ import annotations

from mcptrials.matrix.tools import BASELINE
from mcptrials.report.formats import error_counts, f3, fci, fci_missing, fnum, fsec, fusd, href, model_labels
from mcptrials.report.render import Cell, Doc, Table
from mcptrials.core.keys import (
    ADOPTION_HI,
    ADOPTION_LO,
    CITATION_GROUNDING,
    EXPECTED_TOOLS_PRECISION,
    EXPECTED_TOOLS_RECALL,
    FAIRNESS,
    FAIRNESS_HI,
    FAIRNESS_LO,
    KEYWORD_COVERAGE,
    MISSING_REASON,
    N_MISSING,
    N_TOTAL,
    PASSES,
    PASS_HAT_K,
)
from mcptrials.core.rows import Summary


def add_adoption(doc: Doc, s: Summary) -> None:
    doc.h(2, "Adoption (reported apart, never part of fairness)", "adoption")
    from mcptrials.stats.adoption import ADOPTION_WEIGHTS as w  # the weights live in stats only

    doc.p(
        f"adoption = {w['fluency']:.2f} tool fluency (server calls / (server calls + built-in searches)) + "
        f"{w['discoverability']:.2f} discoverability (a server tool called within the first model calls).",
        "note",
    )
    t = Table(
        ["model", "tool", "adoption [95% CI]", "tool fluency", "discoverability", "expected tools: precision", "recall"]
    )
    for r in s["tools"]:
        if r["tool"] == BASELINE:
            continue
        t.add(
            r["model"],
            r["tool"],
            fci(r["adoption"], r[ADOPTION_LO], r[ADOPTION_HI]),
            f3(r["tool_fluency"]),
            f3(r["discoverability"]),
            f3(r.get(EXPECTED_TOOLS_PRECISION)),
            f3(r.get(EXPECTED_TOOLS_RECALL)),
        )
    doc.table(t, "adoption-table")
    doc.p(
        "Expected tools (the scenarios' expected_tools against the tools each step called; reported, never "
        "scored): precision = expected tools called / distinct tools called, recall = expected tools called / "
        "expected tools, each the mean over steps, then over trials; a step that expects no tool makes any "
        "call unexpected.",
        "note",
    )


def never_passed_text(s: Summary) -> str:
    """What a scenario no trial passes points to. With real models, most often a defect in the
    task or its grader (the seed method); when only the reference agent (no language model) ran,
    it may just be a task that needs reasoning, so the text says both."""
    if all(mdl["provider"] == "reference" for mdl in s["identity"]["models"].values()):
        return (
            "no trial passes — only the reference agent (no language model) ran: the task may need "
            "reasoning it cannot do; with a real model this would point to a defect in the task or its grader"
        )
    return "no trial passes — likely a defect in the task or its grader"


def add_scenarios(doc: Doc, s: Summary) -> None:
    doc.h(2, "Scenarios", "scenarios")
    t = Table(["scenario", "title", "suite", "repo", "steps", "passes", "flag"])
    for sc in s["scenarios"]:
        flag = {
            "saturated": "saturated: every tool passes every trial — ready for the regression suite",
            "never_passed": never_passed_text(s),
        }.get(sc["flag"], "")
        gone = sc.get(N_MISSING) or 0
        t.add(
            sc["scenario"],
            sc["title"] or "",
            sc["suite"],
            sc["repo"],
            sc["steps"],
            f"{sc[PASSES]}/{sc['trials']}" + (f" ({gone} missing)" if gone else ""),
            Cell(flag, cls="pass" if sc["flag"] == "saturated" else "fail" if sc["flag"] else None),
        )
    doc.table(t, "scenario-flags")
    for model in model_labels(s):
        for sc in s["scenarios"]:
            cells = [c for c in s["cells"] if c["model"] == model and c["scenario"] == sc["scenario"]]
            if not cells:
                continue
            k = max(c["k"] for c in cells) or s["identity"]["trials"]  # 0 when every trial is missing
            n_trials = max(c.get(N_TOTAL, c["n"]) for c in cells)  # one column per trial, missing ones too
            t = Table(
                [
                    "tool",
                    "fairness [95% CI]",
                    "quality",
                    "keyword",
                    "grounding",
                    "efficiency",
                    "adoption",
                    "passes",
                    f"pass^{k}",
                    "cost",
                    "time",
                    "work",
                    "start-up",
                    "errors",
                ]
                + [f"trial {i}" for i in range(1, n_trials + 1)],
                caption=f"model {model}, scenario {sc['scenario']}",
            )
            for c in cells:
                trials = [
                    r
                    for r in s["trials"]
                    if (r["model"], r["tool"], r["scenario"]) == (model, c["tool"], sc["scenario"])
                ]
                links = [
                    Cell(f"#{r['trial']} missing ({r[MISSING_REASON]})", href=href(r["page"]), cls="noise")
                    if r.get("missing")
                    else Cell(
                        f"#{r['trial']} {'pass' if r['passed'] else 'fail'}"
                        + ("" if r["outcome"] == "completed" else f" ({r['outcome']})"),
                        href=href(r["page"]),
                        cls="pass" if r["passed"] else "fail",
                    )
                    for r in trials
                ]
                links += [Cell("")] * (n_trials - len(links))
                t.add(
                    c["tool"],
                    fci_missing(c[FAIRNESS], c[FAIRNESS_LO], c[FAIRNESS_HI], c["n"], c),
                    f3(c["quality"]),
                    f3(c[KEYWORD_COVERAGE]),
                    f3(c[CITATION_GROUNDING]),
                    f3(c["efficiency"]),
                    f3(c["adoption"]),
                    f"{c[PASSES]}/{c['n']}" + (f" ({c[N_MISSING]} missing)" if c.get(N_MISSING) else ""),
                    f3(c[PASS_HAT_K]),
                    fusd(c["cost_usd"]),
                    fsec(c["wall_seconds"]),
                    fsec(c.get("work_seconds")),
                    fsec(c.get("server_startup_seconds")),
                    sum(n for _, n in error_counts(c)),
                    *links,
                )
            doc.table(t, f"scenario-{model}-{sc['scenario']}")


def add_errors(doc: Doc, s: Summary) -> None:
    doc.h(2, "Errors per tool", "errors")
    doc.p(
        "tool_error: the server answered with isError; protocol_error: MCP/JSON-RPC failures (time-outs, "
        "closed connections, bad replies); api_error: the model API; harness_error: a fault of the harness.",
        "note",
    )
    t = Table(
        [
            "model",
            "tool",
            "trials",
            "missing",
            "tool_error",
            "protocol_error",
            "api_error",
            "harness_error",
            "trials with errors",
            "outcomes",
        ]
    )
    for e in s["errors"]:
        t.add(
            e["model"],
            e["tool"],
            e["trials"],
            e.get(N_MISSING, 0),
            e["tool_error"],
            e["protocol_error"],
            e["api_error"],
            e["harness_error"],
            e["trials_with_errors"],
            ", ".join(f"{k} {v}" for k, v in e["outcomes"].items()),
        )
    doc.table(t, "errors-table")


def add_profile(doc: Doc, s: Summary) -> None:
    doc.h(2, "Server profile per tool", "profile")
    t = Table(
        [
            "tool",
            "server",
            "tool definitions, tokens per request",
            "start-up (median / max)",
            "calls",
            "latency p50",
            "latency p95",
            "result chars (mean / p95 / max)",
            "truncated",
            "peak memory",
        ]
    )
    methods: set[str] = set()
    builtin = None
    for p in s["server_profile"]:
        server = " ".join(p["server_name"] + p["server_version"]) or (
            "built-in tools" if p["tool"] == BASELINE else "–"
        )
        d = p.get("definition_tokens") or {}
        methods.update(d.get("methods") or [])
        builtin = d.get("builtin_tokens") if d.get("builtin_tokens") is not None else builtin
        t.add(
            p["tool"],
            server,
            definition_cell(d),
            f"{fsec(p['startup_median_s'])} / {fsec(p['startup_max_s'])}",
            f"{p['calls']} {p['calls_measured']}",
            fnum(p["latency_p50_ms"], " ms"),
            fnum(p["latency_p95_ms"], " ms"),
            f"{fnum(p['result_chars_mean'])} / {fnum(p['result_chars_p95'])} / {fnum(p['result_chars_max'])}",
            p["truncated_results"],
            "–" if p["peak_rss_kb_max"] is None else f"{p['peak_rss_kb_max'] / 1024:.1f} MiB",
        )
    doc.table(t, "profile-table")
    for p in s["server_profile"]:
        for host, o in (p.get("over_host_limit") or {}).items():  # the host cuts these before its model reads them
            doc.p(
                f"{p['tool']}: {o['calls']} result(s) over {host}'s limit of {o['limit']:,} tokens (largest "
                f"{o['max_tokens']:,}; {o['source']}), in {len(o['trials'])} trial(s): "
                + ", ".join(o["trials"][:5])
                + (" …" if len(o["trials"]) > 5 else "")
            )
        if p.get("never_called"):  # a tool never called contributes nothing, and costs its definition on every request
            doc.p(
                f"{p['tool']}: {len(p['never_called'])} server tool(s) never called in any trial of this run: "
                + ", ".join(p["never_called"])
                + ". Each still costs its definition on every request; an ablation arm without them "
                "(docs/ablation.md) measures whether anything is lost."
            )
    if methods:
        doc.p(
            "Tool definitions: the input tokens the server's tool definitions add to every request of the loop "
            "(each turn of a trial pays them again, as cache reads once cached), from the tools snapshot, by "
            + "; ".join(sorted(methods))
            + (
                ""
                if builtin is None
                else f". The built-in tools (read_file, grep, list_files), sent in every trial "
                f"including the baseline's, add {builtin:,} more"
            )
            + ".",
            "note",
        )


def definition_cell(d: dict) -> str:
    """A tool's definition tokens: one figure, or the range over its repos, and its tool count."""
    if d.get("tokens") is None:
        return "–"
    n = f"{d['tokens']:,}" if d["tokens_min"] == d["tokens"] else f"{d['tokens_min']:,}–{d['tokens']:,}"
    counts = {r.get("definition_tools") for r in d["per_repo"].values()} - {None}
    return n + (f" ({max(counts)} tools)" if counts and max(counts) else "")


def _spread_row(t: Table, name: str, sp: dict | None) -> None:
    if sp is None:
        t.add(name, "–", "–", "–", "–", "–")
        return
    t.add(
        name,
        sp["n_items"],
        f"{sp['min_repeats']}-{sp['max_repeats']}" if sp["min_repeats"] != sp["max_repeats"] else sp["min_repeats"],
        f3(sp["mean_sd"]),
        f3(sp["max_range"]),
        f3(sp.get("icc")),
    )


def add_judge_noise(doc: Doc, s: Summary) -> None:
    jn = s["judge_noise"]
    doc.h(2, "Judge noise", "judge-noise")
    if jn["note"]:
        doc.p(jn["note"], "note")
    else:
        doc.p(
            f"The judge's spread in fairness units is {f3(jn['fairness_noise'])} (quality weight × mean SD of "
            "repeated scenario judgements): smaller differences are not ranked.",
            "note",
        )
    t = Table(["item", "items", "repeats", "mean SD", "max range", "ICC(1,1)"], caption="per criterion, overall")
    _spread_row(t, "scenario quality (all trials)", jn["overall"]["scenario"])
    _spread_row(t, "step quality (all steps)", jn["overall"]["step"])
    for name, sp in jn["overall"]["criteria"].items():
        _spread_row(t, f"criterion {name}", sp)
    doc.table(t, "judge-criteria")
    t = Table(["item", "items", "repeats", "mean SD", "max range", "ICC(1,1)"], caption="per scenario and step")
    for sc, v in jn["by_scenario"].items():
        _spread_row(t, f"{sc}", v["scenario"])
        for step, sp in v["steps"].items():
            _spread_row(t, f"{sc} / {step}", sp)
    doc.table(t, "judge-scenarios")
