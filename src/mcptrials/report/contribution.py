"""The report's section on ablation arms (summary.json `contribution`, mcptrials.analyze.contribution):
per model and ablated server, each tool's leave-one-out difference with its interval and Holm's
adjustment, the calls beside it, each tool's Shapley value when subsets were run, and each arm's
definition tokens against its fairness (table and plot, the Pareto front, the smallest surface
within the margin of the full server)."""

from __future__ import annotations

from pathlib import Path

from mcptrials.core.keys import DIFF_HI, DIFF_LO, FAIRNESS, FAIRNESS_HI, FAIRNESS_LO, HOLM_T_P
from mcptrials.core.rows import Summary
from mcptrials.report.formats import f3, fci, fp, fsigned_ci
from mcptrials.report.render import Cell, Doc, Table

VERDICT_CLASS = {"better": "better", "worse": "worse"}
HELD_CLASS = {"held": "better", "did not hold": "worse"}
NOT_CONFIRMED = "not confirmed on held-out"  # analyze.contribution's word for an arm without held-out trials


def add_surface(doc: Doc, c: dict, margin, plot_dir: Path | None = None) -> None:
    """Tokens against fairness: the table, the plot, and the smallest surface named."""
    rows = c.get("surface") or []
    if not rows:
        return
    doc.h(3, "Tokens against fairness", "contribution-surface")
    t = Table(
        ["model", "server", "arm", "definition tokens", "fairness [95%]", "Pareto front", "smallest within margin"],
        caption="definition tokens: what the arm's tool definitions and instructions add to every request "
        "(its snapshot); Pareto front: no arm has fewer tokens and more fairness",
    )
    for r in rows:
        t.add(
            r["model"],
            r["tool"],
            r["arm"],
            r["definition_tokens"],
            fci(r[FAIRNESS], r[FAIRNESS_LO], r[FAIRNESS_HI]),
            "yes" if r["pareto"] else "",
            Cell("yes", cls="better") if r["smallest_within_margin"] else "",
        )
    doc.table(t, "contribution-surface-table")
    for r in rows:
        if r["smallest_within_margin"]:
            full = next(x for x in rows if (x["model"], x["tool"], x["arm"]) == (r["model"], r["tool"], r["tool"]))
            doc.p(
                f"{r['model']}, {r['tool']}: the smallest surface within the margin ({margin}) of the full server is "
                f"{r['arm']}: {r['definition_tokens']} definition tokens against {full['definition_tokens']}, fairness "
                f"{r[FAIRNESS]:.3f} against {full[FAIRNESS]:.3f} (point estimates; chosen on this run's scenarios: "
                + held_out_word(c, r["model"], r["arm"])
                + ")."
            )
    from mcptrials.report import plots

    png = plots.tokens_vs_fairness(rows)
    if png is not None:
        if plot_dir is not None:
            plot_dir.mkdir(parents=True, exist_ok=True)
            (plot_dir / "tokens_fairness.png").write_bytes(png)
        doc.image("tokens_fairness", png, "Definition tokens against fairness, Pareto front marked")


def held_out_word(c: dict, model, arm) -> str:
    """What the held-out split says of an arm chosen on train: its confirmation's verdict, or not confirmed."""
    r = next((x for x in c.get("confirmation") or [] if (x["model"], x["arm"]) == (model, arm)), None)
    if r is None or r["verdict"] == NOT_CONFIRMED:
        return "not confirmed on held-out ones"
    return f"on held-out ones it {r['verdict']}, {r['heldout_diff']:+.3f} against the full server"


def add_contribution(doc: Doc, s: Summary, plot_dir: Path | None = None) -> None:
    c = s.get("contribution") or {}
    if not c.get("leave_one_out") and not c.get("shapley") and not c.get("surface"):
        return
    doc.h(2, "Which tools help: each tool's contribution", "contribution")
    doc.p(
        "Each ablation arm runs the same server behind mcptrials' proxy with some of its tools hidden (a call to one "
        "is refused as an unknown tool). Leave one out: the full server's fairness minus the arm's without the tool, "
        "paired over scenarios; positive: the server is better with the tool. 'better' means the tool helps beyond "
        f"the margin ({s.get('margin')}), 'worse' that the server is better without it. Method: {c['method']}"
    )
    if c.get("leave_one_out"):
        t = Table(
            [
                "model",
                "server",
                "left out",
                "full − without [95%]",
                "Holm t p",
                "verdict",
                "calls (full)",
                "calls (arm)",
                "held-out",
            ],
            caption="leave one out; calls: to the left-out tool in the full server's trials and in the arm's; "
            "held-out: the arm's confirmation on the held-out scenarios (ablate.confirm)",
        )
        for r in c["leave_one_out"]:
            t.add(
                r["model"],
                r["tool"],
                r["left_out"] + (f" ({r['note']})" if r.get("note") else ""),
                fsigned_ci(r["diff"], r[DIFF_LO], r[DIFF_HI]),
                fp(r[HOLM_T_P]),
                Cell(r["verdict"], cls=VERDICT_CLASS.get(r["verdict"])),
                "–" if r["calls_full"] is None else r["calls_full"],
                "–" if r["calls_arm"] is None else r["calls_arm"],
                Cell(r.get("held_out") or NOT_CONFIRMED, cls=HELD_CLASS.get(r.get("held_out"))),
            )
        doc.table(t, "contribution-loo")
    if c.get("shapley"):
        t = Table(
            ["model", "server", "tool", "Shapley value", "SE", "calls (full)", "method"],
            caption="Shapley values of fairness over the server's tools; they sum to v(full) − v(empty)",
        )
        for r in c["shapley"]:
            t.add(r["model"], r["tool"], r["name"], f3(r["shapley"]), f3(r["se"]), r["calls_full"], r["method"])
        doc.table(t, "contribution-shapley")
        for key in dict.fromkeys((r["model"], r["tool"]) for r in c["shapley"]):
            rows = [r for r in c["shapley"] if (r["model"], r["tool"]) == key]
            total = sum(r["shapley"] for r in rows)
            doc.p(
                f"{key[0]}, {key[1]}: the values sum to {total:+.3f}; v(full) − v(empty) = "
                f"{rows[0]['v_full']:.3f} − {rows[0]['v_empty']:.3f} = {rows[0]['v_full'] - rows[0]['v_empty']:+.3f}."
            )
    add_confirmation(doc, c, s.get("margin"))
    add_surface(doc, c, s.get("margin"), plot_dir)


def add_confirmation(doc: Doc, c: dict, margin) -> None:
    """Each confirmed arm's train and held-out differences side by side, and whether it held."""
    rows = c.get("confirmation") or []
    if not rows:
        return
    doc.h(3, "Confirmed on held-out scenarios", "contribution-confirmation")
    doc.p(
        "An arm chosen on the run's (train) scenarios is run again, with its full server, on the held-out ones "
        f"(ablate.confirm). Difference: the arm's fairness minus the full server's, paired over scenarios; 'did not "
        f"hold' when the held-out difference is below −margin (−{margin}), 'held' otherwise. An arm without "
        "held-out trials is not confirmed, whatever its train difference."
    )
    t = Table(["model", "server", "arm", "train: arm − full [95%]", "held-out: arm − full [95%]", "verdict"])
    for r in rows:
        t.add(
            r["model"],
            r["tool"],
            r["arm"],
            fsigned_ci(r["train_diff"], r["train_lo"], r["train_hi"]) + f" (n={r['train_n']})",
            fsigned_ci(r["heldout_diff"], r["heldout_lo"], r["heldout_hi"]) + f" (n={r['heldout_n']})",
            Cell(r["verdict"], cls=HELD_CLASS.get(r["verdict"])),
        )
    doc.table(t, "contribution-confirmation-table")
