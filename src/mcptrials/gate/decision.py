"""The gate's numbers and its decision (`mcptrials compare`, steps 2 and 4): HEAD - BASE paired
over the scenarios both ran (each side's trials of a scenario averaged), for fairness, pass
rate, cost per trial and error rate, at GATE_LEVEL; then the decision rule on fairness
(stats.paired.margin_test) and, for an inconclusive verdict, the scenarios that would decide it.
"""

from __future__ import annotations

from mcptrials.analyze.trial_rows import ERROR_KINDS
from mcptrials.core.rows import TrialRow
from mcptrials.core.keys import FAIRNESS

PROBABLE = "probable regression"
DECISION_RULE = (
    "a tool fails on any finding (server did not start, a called tool gone, more trials crashed "
    "or timed out, server tool errors up by more than the error rise), on a regression (90% "
    "interval of HEAD - BASE fairness entirely below -margin) and on a probable regression "
    "(inconclusive, point estimate below -margin; passes with --lenient); --strict also fails "
    "every inconclusive one; it passes when non-inferior (lower bound above -margin) or "
    "inconclusive with the point estimate at or above -margin"
)
GATE_LEVEL = 0.90  # two-sided level of the gate's interval: a one-sided test at 0.05
TEST_NAME = (
    "non-inferiority of HEAD against BASE in fairness: one-sided test at alpha 0.05 via the "
    "two-sided 90% paired interval of HEAD - BASE over scenarios (logit-transformed t, df = scenarios - 1); "
    "regression when its upper bound < -margin, non-inferior when its lower bound > -margin"
)


# figure -> (how one trial's value is read, the bounds of a per-scenario difference: 0-1 figures
# on [-1, 1], so their interval never leaves it; cost is unbounded, a plain paired t interval)
METRICS = {
    FAIRNESS: (lambda r: r[FAIRNESS], (-1, 1)),
    "pass_rate": (lambda r: None if r["passed"] is None else float(bool(r["passed"])), (-1, 1)),
    "cost_usd": (lambda r: r["cost_usd"], None),
    "error_rate": (lambda r: float(any(int(r.get(k) or 0) for k in ERROR_KINDS)), (-1, 1)),
}


def _per_scenario(rows: list[TrialRow], metric: str) -> dict:
    read = METRICS[metric][0]
    out: dict = {}
    for r in rows:
        v = read(r)
        if v is not None:
            out.setdefault(r["scenario"], []).append(float(v))
    return {k: sum(v) / len(v) for k, v in out.items()}


def paired_figures(base_rows: list[TrialRow], head_rows: list[TrialRow], level: float = GATE_LEVEL) -> dict:
    """metric -> {base, head (means over the paired scenarios' means), paired_difference's dict}
    of HEAD minus BASE, for the trials that count (missing ones left out)."""
    from mcptrials.stats.paired import paired_difference

    out: dict[str, dict | None] = {}
    for metric, (_, bounds) in METRICS.items():
        b, h = _per_scenario(base_rows, metric), _per_scenario(head_rows, metric)
        shared = sorted(set(b) & set(h))
        if not shared:
            out[metric] = None
            continue
        d = paired_difference(h, b, level=level, bounds=bounds)
        out[metric] = {
            "base": sum(b[k] for k in shared) / len(shared),
            "head": sum(h[k] for k in shared) / len(shared),
            **d,
        }
    return out


def _trial_scores(rows: list[TrialRow]) -> dict:
    out: dict = {}
    for r in rows:
        if (v := r.get(FAIRNESS)) is not None:
            out.setdefault(r["scenario"], []).append(float(v))
    return out


def scenarios_to_decide(b_rows: list[TrialRow], h_rows: list[TrialRow], diff: dict, margin: float) -> dict:
    """How many scenarios would make an inconclusive gate conclusive, with the spread as measured:
    stats.power.scenarios_to_decide_margin at alpha 0.05 one-sided (the gate's 90% interval), 80% power,
    delta = |mean_diff + margin| (the estimate's distance from -margin), the variance of the paired
    difference from stats.power.variance_components over the trials' fairness (as the report's power).
    Returns {scenarios, trials_per_scenario, note}; scenarios None with the reason in note."""
    from mcptrials.stats.power import scenarios_to_decide_margin, variance_components

    vc = variance_components(_trial_scores(h_rows), _trial_scores(b_rows))
    k = round(vc["k_a"]) if vc["k_a"] else None
    if vc["omega2"] is None:
        return {
            "scenarios": None,
            "trials_per_scenario": k,
            "note": "an interval needs at least 2 paired scenarios; add scenarios",
        }
    delta = abs(diff["mean_diff"] + margin)
    if delta < 1e-9:
        return {
            "scenarios": None,
            "trials_per_scenario": k,
            "note": "the estimate sits on -margin: no number of scenarios decides it",
        }
    variance = vc["omega2"] + vc["sigma2_a"] / vc["k_a"] + vc["sigma2_b"] / vc["k_b"]
    n = scenarios_to_decide_margin(delta, variance)
    if n is None:
        return {"scenarios": None, "trials_per_scenario": k, "note": "more than 10,000 scenarios would be needed"}
    return {
        "scenarios": n,
        "trials_per_scenario": k,
        "note": f"about {n} scenarios at {k} trial(s) each would make it conclusive (80% power, the spread "
        f"as measured; {vc['n']} now)",
    }


def default_margin(head_summary: dict) -> tuple[float, str]:
    """(margin, where it came from) when --margin is not given: the config's `margin:` (the
    smallest difference in fairness that matters, the headline's verdicts' too) as HEAD's
    summary.json records it; for a summary made before that field, the config schema's default."""
    if head_summary.get("margin") is not None:
        return float(head_summary["margin"]), "HEAD's config `margin:` (its summary.json)"
    from mcptrials.matrix.schema import config_default

    return float(config_default("margin")), "the config schema's default `margin:` (HEAD's summary.json has none)"


def decide(gate: dict, diff: dict | None, found: list, strict: bool, lenient: bool) -> tuple[str, str]:
    """(verdict, status) of one tool: findings first, then the margin test and the rule above."""
    from mcptrials.stats.paired import INCONCLUSIVE, NON_INFERIOR, REGRESSION

    if found:
        return "deterministic failure", "fail"
    v = gate["verdict"]
    if v == INCONCLUSIVE and diff and diff.get("mean_diff") is not None and diff["mean_diff"] < -gate["margin"]:
        v = PROBABLE
    failed = v == REGRESSION or (v == PROBABLE and not lenient) or (strict and v != NON_INFERIOR)
    return v, "fail" if failed else "pass"
