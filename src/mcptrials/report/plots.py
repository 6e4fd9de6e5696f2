"""The report's plots (matplotlib, Agg backend), each returned as PNG bytes (None when there
is nothing to draw). Inputs are the rows of summary.json (mcptrials.analyze.aggregate)."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from mcptrials.core.keys import DIFF_HI, DIFF_LO, FAIRNESS, FAIRNESS_HI, FAIRNESS_LO
from mcptrials.core.rows import ToolRow

DPI = 96
BASE_COLOR = "#888888"
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=DPI)
    _plt().close(fig)
    return buf.getvalue()


def _color(tool: str, tools: list) -> str:
    """One colour per tool across every plot; the baseline is grey."""
    if tool == "baseline":
        return BASE_COLOR
    others = [t for t in tools if t != "baseline"]
    return COLORS[others.index(tool) % len(COLORS)]


def _label(r: Mapping[str, Any], models: list) -> str:
    return r["tool"] if len(models) == 1 else f"{r['model']} / {r['tool']}"


def fairness_by_tool(tools: list[ToolRow]) -> bytes | None:
    """Mean fairness per (model, tool) with its 95% interval (stats.bounded_mean_ci, clustered by scenario)."""
    if not tools:
        return None
    plt = _plt()
    models = list(dict.fromkeys(r["model"] for r in tools))
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(tools) + 1.4))
    names = list(dict.fromkeys(r["tool"] for r in tools))
    ys = range(len(tools))[::-1]
    for y, r in zip(ys, tools):
        mean, lo, hi = r[FAIRNESS], r[FAIRNESS_LO], r[FAIRNESS_HI]
        ax.barh(y, mean, color=_color(r["tool"], names), alpha=0.8)
        if mean is not None and lo is not None and hi is not None:  # an interval has all three
            ax.errorbar(
                mean,
                y,
                xerr=[[mean - lo], [hi - mean]],
                fmt="none",
                ecolor="black",
                capsize=4,
            )
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_label(r, models) for r in tools])
    ax.set_xlabel("fairness (mean, 95% logit-transformed interval clustered by scenario)")
    ax.set_xlim(0, max(1.0, max((r[FAIRNESS_HI] or 0) for r in tools)))
    ax.axvline(1.0, color="#cccccc", lw=0.8)
    return _png(fig)


def forest(tools: list[ToolRow], noise: float | None, margin: float | None = None) -> bytes | None:
    """Paired differences against the baseline with their 95% intervals; the shaded band is
    the judge's spread (differences inside it are not ranked), the dashed lines ±margin (the
    smallest difference that matters: better / worse only beyond them)."""
    rows = [r for r in tools if r["diff"] is not None]
    if not rows:
        return None
    plt = _plt()
    models = list(dict.fromkeys(r["model"] for r in tools))
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(rows) + 1.4))
    if noise:
        ax.axvspan(-noise, noise, color="#f2e5b5", label=f"judge spread ±{noise:.3f}")
    ax.axvline(0, color="black", lw=1)
    if margin:
        for x in (-margin, margin):
            ax.axvline(x, color="#555555", lw=0.8, ls="--", label=f"margin ±{margin:g}" if x > 0 else None)
    ys = range(len(rows))[::-1]
    for y, r in zip(ys, rows):
        inside = r["verdict"] not in ("better", "worse")
        color = "#999999" if inside else ("#2ca02c" if (r["diff"] or 0.0) > 0 else "#d62728")
        if r[DIFF_LO] is not None:
            ax.plot([r[DIFF_LO], r[DIFF_HI]], [y, y], color=color, lw=2)
        ax.plot(r["diff"], y, "s", color=color, ms=8)
    ax.set_yticks(list(ys))
    ax.set_yticklabels(
        [
            _label(r, models)
            + (f" ({r['verdict']})" if r["verdict"] in ("within noise", "no practical difference") else "")
            for r in rows
        ]
    )
    ax.set_xlabel("fairness difference vs baseline (paired over scenarios, 95% logit-transformed interval on [-1, 1])")
    if noise or margin:
        ax.legend(loc="lower right", fontsize=8)
    return _png(fig)


def cost_vs_quality(trials: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Judge quality against cost per trial, one panel per model (wall time for a model none of
    whose trials has a cost), one point per trial, a large marker per tool's mean."""
    if not trials:
        return None
    plt = _plt()
    models = list(dict.fromkeys(r["model"] for r in trials))
    names = list(dict.fromkeys(r["tool"] for r in trials))
    fig, axes = plt.subplots(1, len(models), figsize=(min(14, 5 * len(models) + 1), 4), squeeze=False)
    for ax, model in zip(axes[0], models):
        rows = [r for r in trials if r["model"] == model]
        use_cost = any(r["cost_usd"] is not None for r in rows)
        xkey, xlabel = (
            ("cost_usd", "cost per trial (USD)")
            if use_cost
            else ("wall_seconds", "wall time per trial (s); no cost: model not priced")
        )
        for tool in dict.fromkeys(r["tool"] for r in rows):
            pts = [
                (r[xkey], r["quality"])
                for r in rows
                if r["tool"] == tool and r[xkey] is not None and r["quality"] is not None
            ]
            if not pts:
                continue
            c = _color(tool, names)
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], color=c, alpha=0.35, s=18)
            mx, my = sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts)
            ax.scatter([mx], [my], color=c, s=120, edgecolor="black", label=tool)
        ax.set_title(f"model {model}", fontsize=10)
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_ylabel("judge quality (0-1)")
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=8)
    return _png(fig)


def grounding_buckets(trials: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Share of citations grounded / hallucinated / unresolved per (model, tool)."""
    groups = list(dict.fromkeys((r["model"], r["tool"]) for r in trials))
    if not groups:
        return None
    plt = _plt()
    models = list(dict.fromkeys(m for m, _ in groups))
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(groups) + 1.6))
    ys = list(range(len(groups)))[::-1]
    buckets = (("grounded", "#2ca02c"), ("hallucinated", "#d62728"), ("unresolved", "#bbbbbb"))
    labels = []
    for y, (model, tool) in zip(ys, groups):
        # trials whose citations were not checked (no checkout) have no counts: left out
        rs = [r for r in trials if (r["model"], r["tool"]) == (model, tool) and r["citations"] is not None]
        total = sum(r["citations"] for r in rs)
        left = 0.0
        for name, color in buckets:
            share = sum(r[name] for r in rs) / total if total else 0.0
            ax.barh(y, share, left=left, color=color, label=name if y == ys[0] else None)
            left += share
        labels.append((tool if len(models) == 1 else f"{model} / {tool}") + f"  (n={total})")
    ax.set_yticks(ys)
    ax.set_yticklabels(labels)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the answers' citations")
    ax.legend(fontsize=8, loc="lower right")
    return _png(fig)


def pass_hat_k_curve(curves: list[dict]) -> bytes | None:
    """pass^k against k (the chance that k trials in a row all pass), per (model, tool)."""
    if not curves:
        return None
    plt = _plt()
    models = list(dict.fromkeys(c["model"] for c in curves))
    names = list(dict.fromkeys(c["tool"] for c in curves))
    styles = ["o-", "s--", "^:", "d-."]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for c in curves:
        pts = [(k, v) for k, v in c["points"] if v is not None]
        style = styles[models.index(c["model"]) % len(styles)]
        ax.plot(
            [p[0] for p in pts],
            [p[1] for p in pts],
            style,
            color=_color(c["tool"], names),
            label=c["tool"] if len(models) == 1 else f"{c['model']} / {c['tool']}",
        )
    kmax = max(len(c["points"]) for c in curves)
    ax.set_xticks(range(1, kmax + 1))
    ax.set_xlabel("k (trials)")
    ax.set_ylabel("pass^k (mean over scenarios)")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=8)
    return _png(fig)


def tokens_vs_fairness(rows: Sequence[Mapping[str, Any]]) -> bytes | None:
    """Each ablation arm and its full server (summary.json contribution.surface): definition tokens
    against fairness with its 95% interval; the Pareto front joined, the smallest surface within the
    margin of the full server ringed."""
    if not rows:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    groups = list(dict.fromkeys((r["model"], r["tool"]) for r in rows))
    for i, key in enumerate(groups):
        mine = [r for r in rows if (r["model"], r["tool"]) == key]
        color = COLORS[i % len(COLORS)]
        for r in mine:
            lo, hi = r.get(FAIRNESS_LO), r.get(FAIRNESS_HI)
            err = [[r[FAIRNESS] - lo], [hi - r[FAIRNESS]]] if lo is not None and hi is not None else None
            full = r["arm"] == r["tool"]
            ax.errorbar(r["definition_tokens"], r[FAIRNESS], yerr=err, fmt="s" if full else "o", color=color, capsize=3)
            if r.get("smallest_within_margin"):
                ax.scatter([r["definition_tokens"]], [r[FAIRNESS]], s=260, facecolors="none", edgecolors="black")
            name = r["arm"].removeprefix(r["tool"] + "-")
            ax.annotate(name if not full else f"{r['tool']} (full)", (r["definition_tokens"], r[FAIRNESS]), fontsize=7)
        front = sorted((r["definition_tokens"], r[FAIRNESS]) for r in mine if r.get("pareto"))
        if front:
            ax.plot(
                [p[0] for p in front],
                [p[1] for p in front],
                "--",
                color=color,
                lw=1,
                label=f"{key[0]} / {key[1]}: Pareto front",
            )
    ax.set_xlabel("tool-definition tokens per request (tools + instructions)")
    ax.set_ylabel("fairness (mean, 95% interval)")
    ax.legend(fontsize=7, loc="best")
    return _png(fig)
