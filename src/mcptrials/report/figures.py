"""Where the figures go: each plot of mcptrials.report.plots drawn from the summary, written to
plots/<name>.png and placed in the document."""

from __future__ import annotations

from pathlib import Path

from mcptrials.report.render import Doc
from mcptrials.core.keys import FAIRNESS
from mcptrials.core.rows import Summary


def add_plots(doc: Doc, s: Summary, plot_dir: Path) -> list[str]:
    from mcptrials.report import plots

    doc.h(2, "Plots", "plots")
    noise = s["judge_noise"]["fairness_noise"]
    made: list[str] = []
    # missing trials are not scores: plotted nowhere (a tool whose trials are all missing has no bar)
    tools = [r for r in s["tools"] if r[FAIRNESS] is not None]
    trials = [r for r in s["trials"] if not r.get("missing")]
    for name, png, alt in (
        ("fairness", plots.fairness_by_tool(tools), "Fairness by tool with 95% intervals"),
        (
            "forest",
            plots.forest(tools, noise, s.get("margin")),
            "Paired differences against the baseline (forest plot)",
        ),
        ("cost_quality", plots.cost_vs_quality(trials), "Cost against judge quality"),
        ("grounding", plots.grounding_buckets(trials), "Citation grounding buckets"),
        ("pass_hat_k", plots.pass_hat_k_curve(s["pass_hat_curve"]), "pass^k against k"),
    ):
        if png is None:
            continue
        plot_dir.mkdir(parents=True, exist_ok=True)
        (plot_dir / f"{name}.png").write_bytes(png)
        doc.image(name, png, alt)
        made.append(name)
    return made
