"""Each tool's contribution from ablation arms (mcptrials.analyze.contribution), by hand: the
leave-one-out difference is stats' paired difference (full minus without), Holm across the
server's tools, calls beside it; the Shapley values of a three-tool game sum to v(full) - v(empty);
and the report section shows both."""

from __future__ import annotations

import pandas as pd
import pytest

from matrix_helpers import faulty_tool, write_matrix
from mcptrials.analyze.contribution import contribution_view
from mcptrials.matrix.config import load_matrix
from mcptrials.report.contribution import add_contribution
from mcptrials.report.render import Doc
from mcptrials.stats.paired import holm_adjust, paired_difference

approx = pytest.approx


def frame(rows):
    return pd.DataFrame(
        [
            {"model": "reference", "tool": t, "scenario": sc, "fairness": f, "missing": False}
            for t, per in rows.items()
            for sc, fs in per.items()
            for f in fs
        ]
    )


def record(tool, calls):
    return {"key": {"model": "reference", "tool": tool}, "scored": {"adoption": {"per_tool": calls}}}


def test_leave_one_out_is_the_paired_difference_with_holm_and_calls(tmp_path):
    tools = {"baseline": {"transport": "none"}, "faulty": faulty_tool(ablate={"leave_one_out": ["echo", "big"]})}
    m = load_matrix(write_matrix(tmp_path, tools=tools))
    full = {"s1": [0.8, 0.8], "s2": [0.6, 0.6], "s3": [0.7, 0.7]}
    no_echo = {"s1": [0.5, 0.5], "s2": [0.4, 0.4], "s3": [0.6, 0.6]}  # d = 0.3, 0.2, 0.1: mean 0.2
    no_big = {"s1": [0.8, 0.8], "s2": [0.6, 0.6], "s3": [0.7, 0.7]}  # d = 0
    trials = frame({"faulty": full, "faulty-without-echo": no_echo, "faulty-without-big": no_big})
    records = [
        record("faulty", {"echo": {"calls": 3}}),
        record("faulty", {"echo": {"calls": 1}}),
        record("faulty-without-echo", {}),
    ]
    c = contribution_view(m, trials, records, margin=0.05)
    echo, big = c["leave_one_out"]
    d = paired_difference({"s1": 0.8, "s2": 0.6, "s3": 0.7}, {"s1": 0.5, "s2": 0.4, "s3": 0.6}, bounds=(-1, 1))
    assert echo["left_out"] == "echo" and echo["diff"] == approx(0.2) == approx(d["mean_diff"])
    assert (echo["diff_lo"], echo["diff_hi"]) == approx((d["lo"], d["hi"])) and echo["n_scenarios"] == 3
    assert echo["holm_t_p"] == approx(holm_adjust({"echo": d["t_p"], "big": None})["echo"]) == approx(d["t_p"])
    assert (echo["calls_full"], echo["calls_arm"], echo["note"]) == (4, 0, None)
    assert big["diff"] == 0 and big["calls_full"] == 0 and "contributes nothing by construction" in big["note"]
    assert echo["fairness_full"] == approx(0.7) and echo["fairness_arm"] == approx(0.5)
    doc = Doc()
    add_contribution(doc, {"contribution": c, "margin": 0.05})
    md = "\n".join(doc.md)
    assert "Which tools help" in md and "+0.200 [" in md and "never called" in md


def test_shapley_of_subset_arms_sums_to_full_minus_empty(tmp_path):
    tools = {
        "baseline": {"transport": "none"},
        "faulty": faulty_tool(ablate={"subsets": "all", "tools": ["echo", "big", "fail"]}),
    }
    m = load_matrix(write_matrix(tmp_path, tools=tools))
    # the three-tool game of tests/analyze/test_shapley.py, a = echo, b = big, c = fail
    game = {"": 0.0, "a": 0.2, "b": 0.1, "c": 0.0, "ab": 0.5, "ac": 0.2, "bc": 0.3, "abc": 0.6}
    letter = {"echo": "a", "big": "b", "fail": "c"}
    rows = {}
    for t, spec in m.tools.items():
        if t == "baseline":
            continue
        hidden = set((spec.get("overrides") or {}).get("hide") or [])
        kept = "".join(sorted(letter[n] for n in letter if n not in hidden))
        rows[t] = {"s1": [game[kept]]}
    c = contribution_view(m, frame(rows), [], margin=0.05)
    phi = {r["name"]: r["shapley"] for r in c["shapley"]}
    assert phi == {"echo": approx(8 / 30), "big": approx(8 / 30), "fail": approx(2 / 30)}
    assert sum(phi.values()) == approx(c["shapley"][0]["v_full"] - c["shapley"][0]["v_empty"]) == approx(0.6)
    doc = Doc()
    add_contribution(doc, {"contribution": c, "margin": 0.05})
    assert "the values sum to +0.600; v(full) − v(empty) = 0.600 − 0.000 = +0.600" in "\n".join(doc.md)


def test_pareto_front_and_the_smallest_surface_within_the_margin(tmp_path):
    from mcptrials.analyze.contribution import pareto_front, surface_rows

    # (tokens, fairness): B dominates C (fewer tokens, more fairness); A, B, D are on the front
    assert pareto_front([(100, 0.70), (60, 0.68), (80, 0.60), (20, 0.30)]) == [True, True, False, True]
    assert pareto_front([(10, 0.5), (10, 0.5)]) == [True, True]  # equal points dominate neither
    arms = {"s-without-a": {"of": "s"}, "s-without-b": {"of": "s"}, "s-without-c": {"of": "s"}}
    rows = [
        {"model": "m", "tool": "s", "fairness": 0.70},
        {"model": "m", "tool": "s-without-a", "fairness": 0.68},
        {"model": "m", "tool": "s-without-b", "fairness": 0.60},
        {"model": "m", "tool": "s-without-c", "fairness": 0.30},
    ]
    costs = {
        "s": {"tokens": 100},
        "s-without-a": {"tokens": 60},
        "s-without-b": {"tokens": 80},
        "s-without-c": {"tokens": 20},
    }
    out = surface_rows(arms, rows, costs, margin=0.05)
    assert [(r["arm"], r["pareto"], r["smallest_within_margin"]) for r in out] == [
        ("s", True, False),
        ("s-without-a", True, True),  # 0.68 >= 0.70 - 0.05 with 60 tokens; c (0.30) is not within it
        ("s-without-b", False, False),
        ("s-without-c", True, False),
    ]
    doc = Doc()
    add_contribution(
        doc,
        {"contribution": {"leave_one_out": [], "shapley": [], "surface": out, "method": "m"}, "margin": 0.05},
        tmp_path,
    )
    md = "\n".join(doc.md)
    assert (
        "the smallest surface within the margin (0.05) of the full server is s-without-a: 60 definition tokens against 100"
        in md
    )
    assert (tmp_path / "tokens_fairness.png").read_bytes()[:4] == b"\x89PNG"


def test_held_out_verdict_against_the_margin():
    from mcptrials.analyze.contribution import NOT_CONFIRMED, held_out_verdict

    assert held_out_verdict(None, 0.05) == NOT_CONFIRMED  # no held-out trials: never an improvement
    assert held_out_verdict(-0.06, 0.05) == "did not hold"  # lost more than the margin
    assert held_out_verdict(-0.05, 0.05) == "held"  # exactly -margin is within it
    assert held_out_verdict(+0.10, 0.05) == "held"


def test_a_confirmed_arm_shows_train_and_held_out_side_by_side(tmp_path):
    from matrix_helpers import SCENARIO

    scenarios = {s: SCENARIO for s in ("s1", "s2", "s3")} | {h: dict(SCENARIO, split="held-out") for h in ("h1", "h2")}
    ablate = {"leave_one_out": ["echo", "big"], "confirm": ["faulty-without-echo"]}
    tools = {"baseline": {"transport": "none"}, "faulty": faulty_tool(ablate=ablate)}
    m = load_matrix(write_matrix(tmp_path, tools=tools, scenarios=scenarios))
    full = {"s1": [0.8], "s2": [0.6], "s3": [0.7], "h1": [0.9], "h2": [0.7]}
    # train: arm - full = 0, 0, 0 (the tool looked useless); held-out: -0.2, -0.1: mean -0.15 < -0.05
    no_echo = {"s1": [0.8], "s2": [0.6], "s3": [0.7], "h1": [0.7], "h2": [0.6]}
    every = frame({"faulty": full, "faulty-without-echo": no_echo, "faulty-without-big": full})
    train = every[~every["scenario"].isin(["h1", "h2"])]
    c = contribution_view(m, train, [], margin=0.05, every_trial=every)
    (row,) = c["confirmation"]
    assert (row["arm"], row["tool"], row["train_n"], row["heldout_n"]) == ("faulty-without-echo", "faulty", 3, 2)
    assert row["train_diff"] == approx(0.0) and row["heldout_diff"] == approx(-0.15)
    assert row["verdict"] == "did not hold"
    held = {r["arm"]: r["held_out"] for r in c["leave_one_out"]}
    assert held == {"faulty-without-echo": "did not hold", "faulty-without-big": "not confirmed on held-out"}
    # the train difference alone is what the leave-one-out row shows: 0 over s1-s3
    assert next(r for r in c["leave_one_out"] if r["left_out"] == "echo")["diff"] == approx(0.0)
    doc = Doc()
    add_contribution(doc, {"contribution": c, "margin": 0.05})
    md = "\n".join(doc.md)
    assert "Confirmed on held-out scenarios" in md and "did not hold" in md and "-0.150 [" in md
    assert "not confirmed on held-out" in md


def test_the_confirmation_through_aggregate_and_report(tmp_path):
    """A hand-made runs tree (tests/runs_fixture.py): git ablated without git_log, that arm confirmed
    on the held-out scenario h1, where it is judged as the baseline is (lower quality): did not hold."""
    import csv
    import json
    import shutil

    import yaml

    from runs_fixture import aggregate_and_report, build, write_trial

    arm = "git-without-git_log"
    cfg, runs = build(tmp_path, scenarios=("s1", "s2", "s3", "h1"), models=("reference",))
    held = tmp_path / "scenarios" / "h1.yaml"
    held.write_text(yaml.safe_dump(dict(yaml.safe_load(held.read_text()), split="held-out")))
    data = yaml.safe_load(cfg.read_text())
    data["tools"]["git"]["ablate"] = {"leave_one_out": ["git_log"], "confirm": [arm]}
    cfg.write_text(yaml.safe_dump(data))
    for sc in ("s1", "s2", "s3", "h1"):
        for n in (1, 2):
            write_trial(runs, "reference", arm, sc, n)
    for n in (1, 2):  # on h1 the arm's answers are judged as the baseline's
        shutil.copy(
            runs / f"reference/loop/baseline/tiny/h1/{n}/judged.json", runs / f"reference/loop/{arm}/tiny/h1/{n}"
        )
    agg, out = aggregate_and_report(tmp_path, cfg, runs)
    with open(agg / "confirmation.csv", newline="") as f:
        (row,) = csv.DictReader(f)
    assert (row["arm"], row["train_n"], row["heldout_n"], row["verdict"]) == (arm, "3", "1", "did not hold")
    assert float(row["train_diff"]) == approx(0.0) and float(row["heldout_diff"]) < -0.05
    summary = json.loads((agg / "summary.json").read_text())
    # the held-out trials count in the confirmation only: no tool row or trial row has h1
    assert {t["scenario"] for t in summary["trials"]} == {"s1", "s2", "s3"}
    report = (out / "report.md").read_text()
    assert "Confirmed on held-out scenarios" in report and "did not hold" in report
