"""Issue 25 item 5: the composition of citation scores, strict beside lenient, by form and the
ungrounded kinds, in summary.json (per model and tool), the report (a table per model) and
compare-sense-bench (per model and tool). Every figure below is worked out by hand from the counts."""

import pytest

from mcptrials.analyze.records_summary import citation_composition
from mcptrials.grade.citations.composition import ungrounded_shares
from mcptrials.report.citations import add_citation_composition
from mcptrials.report.render import Doc

COUNTS_A = {
    "total": 4,
    "grounded": 3,
    "hallucinated": 1,
    "unresolved": 0,
    "verified": 2,
    "mismatch": 1,
    "n/a": 1,
    "strict_verified": 1,
    "strict_mismatch": 1,
    "strict_na": 2,
    "gold_total": 0,
    "gold_cited": 0,
    "by_form": {
        "path:line": {
            "total": 3,
            "grounded": 2,
            "verified": 2,
            "mismatch": 0,
            "strict_verified": 1,
            "strict_mismatch": 1,
        },
        "basename": {
            "total": 1,
            "grounded": 1,
            "verified": 0,
            "mismatch": 1,
            "strict_verified": 0,
            "strict_mismatch": 0,
        },
    },
    "ungrounded": {"basename": 0, "past_eof": 1, "no_such_file": 0, "symbol_not_defined": 0, "ambiguous": 0},
}
COUNTS_B = {
    "total": 2,
    "grounded": 1,
    "hallucinated": 0,
    "unresolved": 1,
    "verified": 1,
    "mismatch": 0,
    "n/a": 1,
    "strict_verified": 1,
    "strict_mismatch": 0,
    "strict_na": 1,
    "gold_total": 0,
    "gold_cited": 0,
    "by_form": {
        "path:line": {
            "total": 2,
            "grounded": 1,
            "verified": 1,
            "mismatch": 0,
            "strict_verified": 1,
            "strict_mismatch": 0,
        }
    },
    "ungrounded": {"basename": 0, "past_eof": 0, "no_such_file": 1, "symbol_not_defined": 0, "ambiguous": 0},
}


def record(model, tool, counts, outcome="completed"):
    return {
        "key": {"model": model, "tool": tool},
        "transcript": {"outcome": outcome},
        "scored": {"citations": {"counts": counts, "rates": {}}},
    }


def test_ungrounded_shares_are_of_all_citations():
    got = ungrounded_shares({"past_eof": 1, "no_such_file": 2}, 8)
    assert got["past_eof"] == {"n": 1, "share": 0.125} and got["no_such_file"] == {"n": 2, "share": 0.25}
    assert got["basename"] == {"n": 0, "share": 0.0}
    assert ungrounded_shares({}, 0)["ambiguous"] == {"n": 0, "share": None}


def test_composition_per_model_and_tool_pools_the_trials():
    # pooled: 6 citations, 4 grounded, 3 verified / 1 mismatch, 2 strict verified / 1 strict mismatch
    rows = citation_composition(
        [
            record("m", "sense", COUNTS_A),
            record("m", "sense", COUNTS_B),
            record("m", "sense", COUNTS_A, outcome="api_failed"),
        ]
    )  # missing: left out
    (r,) = rows
    assert (r["model"], r["tool"], r["n_trials"], r["n_citations"]) == ("m", "sense", 2, 6)
    assert r["grounded_rate"] == pytest.approx(4 / 6) and r["strict_grounded_rate"] == pytest.approx(3 / 6)
    assert r["verified_rate"] == pytest.approx(3 / 4) and r["strict_verified_rate"] == pytest.approx(2 / 3)
    line, base = r["by_form"]["path:line"], r["by_form"]["basename"]
    assert line["n"] == 5 and line["share"] == pytest.approx(5 / 6) and line["grounded_rate"] == pytest.approx(3 / 5)
    assert line["verified_rate"] == 1.0 and line["strict_verified_rate"] == pytest.approx(2 / 3)
    assert (
        base["share"] == pytest.approx(1 / 6) and base["verified_rate"] == 0.0 and base["strict_verified_rate"] is None
    )
    assert r["ungrounded"]["past_eof"]["share"] == pytest.approx(1 / 6)
    assert r["ungrounded"]["no_such_file"]["n"] == 1


def test_a_trial_scored_before_the_composition_is_left_out():
    old = {k: v for k, v in COUNTS_B.items() if k not in ("by_form", "ungrounded")}
    assert citation_composition([record("m", "baseline", old)]) == []


def test_the_report_has_a_table_per_model_strict_beside_lenient_and_by_form():
    comp = citation_composition(
        [
            record("m", "sense", COUNTS_A),
            record("m", "sense", COUNTS_B),
            record("m", "baseline", COUNTS_B),
            record("n", "sense", COUNTS_A),
        ]
    )
    doc = Doc()
    add_citation_composition(doc, {"citation_composition": comp, "identity": {"models": {}}})
    md = "\n".join(doc.md)
    assert md.count("citations per tool") == 2  # one table per model: m and n
    assert "| sense | 2 | 0 | 6 | 0.667 | 0.500 | 0.750 | 0.667 | 0.000 | 0 (0.000) | 1 (0.167) | 1 (0.167) |" in md
    # path:line, sense: 5 citations, 3 grounded, 1 strict mismatch -> strict grounding 2/5
    assert "| path:line | 0.833 (n=5) | 0.600 | 0.400 | 1.000 | 0.667 | 0.000 | 1.000 (n=2) | 0.500 | 0.500 |" in md
    assert "| basename | 0.167 (n=1) | 1.000 | 1.000 | 0.000 | – | – | – | – | – | – | – | – |" in md


def test_a_trial_whose_citations_were_not_checked_is_counted_not_pooled():
    """No checkout of its commit: its citation counts are zeros that mean nothing; pooling them
    would put the trial in `trials` without a citation. It is counted apart (n_not_checked)."""
    unchecked = record(
        "m",
        "sense",
        {
            **COUNTS_B,
            **{k: 0 for k in ("total", "grounded", "unresolved", "verified", "n/a", "strict_verified", "strict_na")},
            "by_form": {},
            "ungrounded": {},
        },
    )
    unchecked["scored"]["citations_not_checked"] = "short commit abc1234 of the runs, not resolved: no mirror"
    (r,) = citation_composition([record("m", "sense", COUNTS_A), unchecked])
    assert (r["n_trials"], r["n_not_checked"], r["n_citations"]) == (1, 1, 4)
    assert citation_composition([unchecked]) == []  # nothing pooled: no row
