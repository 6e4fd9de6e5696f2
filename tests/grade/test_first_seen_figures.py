"""bench/first_seen_citations.py's figures, computed by hand on made-up rows (no mirrors needed)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from mcptrials.stats.intervals import bounded_mean_ci

SCRIPT = Path(__file__).parents[2] / "bench" / "first_seen_citations.py"
spec = importlib.util.spec_from_file_location("first_seen_citations", SCRIPT)
fsc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fsc)


def row(arm, verdict, found=True, strict="verified", agrees=True, form="path", answer="a"):
    return {
        "answer": answer,
        "arm": arm,
        "form": form,
        "verdict": verdict,
        "found": found,
        "strict": strict,
        "agrees": agrees,
    }


def clustered(hits, answers):
    """stats' clustered interval (hand-tested in tests/stats) as the bench prints it."""
    ci = bounded_mean_ci([float(h) for h in hits], answers)
    return f"[{ci['lo']:.3f}, {ci['hi']:.3f}]"


def test_figures_by_hand():
    rows = [
        row("baseline", "correct", answer="a1"),  # verified, agrees
        row("baseline", "correct", strict="mismatch", agrees=False, answer="a1"),  # a correct line called mismatch
        row("baseline", "wrong line", strict="mismatch", answer="a2"),  # caught
        row("sense", "correct", form="line-only", found=False, strict=None, agrees=False, answer="a3"),  # not extracted
        row("sense", "correct", form="line-only", answer="a3"),
        row("sense", "wrong line", strict="verified", agrees=False, answer="a4"),  # missed
    ]
    f = fsc.figures(rows)
    assert f["labels"] == "6"
    assert f["extraction recall"] == "5/6 = 0.833"
    assert f["  line-only"] == "1/2 = 0.500"
    # each with its interval clustered by answer: agreement over four answers, a1 and a3 each one of two
    assert f["agreement"] == "3/6 = 0.500 " + clustered([1, 0, 1, 0, 1, 0], ["a1", "a1", "a2", "a3", "a3", "a4"])
    # two strict mismatches, one of them on a wrong line
    assert f["mismatch precision"] == "1/2 = 0.500 " + clustered([0, 1], ["a1", "a2"])
    assert f["wrong lines caught"] == "1/2 = 0.500 " + clustered([1, 0], ["a2", "a4"])
    assert f["correct called mismatch, baseline"] == "1/2 = 0.500"
    assert f["correct called mismatch, sense"] == "0/2 = 0.000"
    assert f["agreement, baseline"] == "2/3 = 0.667" and f["agreement, sense"] == "1/3 = 0.333"
    assert f["strict undetermined"] == "0/6 = 0.000"
    assert f["strict on 'correct' labels"] == "2 verified, 1 mismatch, 1 not extracted"
    # within each verdict: correct 2 of 4 agree (rows 1 and 5), wrong line 1 of 2
    assert f["  agreement on 'correct'"] == "2/4 = 0.500" and f["  agreement on 'wrong line'"] == "1/2 = 0.500"


def test_a_share_has_an_interval_only_over_two_answers_or_more():
    one_answer = [row("baseline", "correct", answer="a1"), row("baseline", "correct", agrees=False, answer="a1")]
    assert fsc.with_interval(one_answer, lambda r: r["agrees"]) == "1/2 = 0.500"  # one cluster: no spread
    assert fsc.with_interval([], lambda r: r["agrees"]) == "-"
    # the same hits over two answers: an interval
    two = [row("baseline", "correct", answer="a1"), row("baseline", "correct", agrees=False, answer="a2")]
    assert fsc.with_interval(two, lambda r: r["agrees"]) == "1/2 = 0.500 " + clustered([1, 0], ["a1", "a2"])


def test_a_label_is_found_by_an_overlapping_occurrence_of_a_line_citation():
    items = [
        {"lines": None, "spans": [[0, 10]], "by_occurrence": [{"span": [0, 10], "strict": "n/a"}]},
        {"lines": [64], "spans": [[20, 23]], "by_occurrence": [{"span": [20, 23], "strict": "verified"}]},
    ]
    assert fsc.found({"span": [5, 8]}, items) == (None, None)  # only a citation without lines there
    item, occ = fsc.found({"span": [18, 21]}, items)  # the label starts before the grader's span
    assert item is items[1] and occ["strict"] == "verified"
    assert fsc.found({"span": [23, 30]}, items) == (None, None)  # touching is not overlapping


def test_the_arm_is_read_from_the_bench_path():
    assert fsc.arm_of("bench/verticals/go/results/glm-5.2_cloud/sense/consul/run-1/transcript.json") == "sense"
    aside = "bench/verticals/go/results/kimi-for-coding_k3/_partial-cap-interrupted-20260723/baseline/dolt/run-1/t.json"
    assert fsc.arm_of(aside) == "baseline"
