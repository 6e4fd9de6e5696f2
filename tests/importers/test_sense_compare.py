"""Our grading beside the reference bench's own (mcptrials.importers.sense_compare), on
records written here in both shapes: matching by (file, line) and (file, symbol), a status
both sides disagree on, a citation only one side found, and the per-tool means."""

from __future__ import annotations

from mcptrials.importers.sense_compare import _locator_key, disagreements, markdown, our_cell


def ours(text, path, lines, bucket, symbol=None, cited=None, resolved_by="exact"):
    return {
        "text": text,
        "path_as_cited": cited or path,
        "resolved_path": path,
        "lines": lines,
        "symbol": symbol,
        "bucket": bucket,
        "resolved_by": resolved_by,
        "verification": "n/a",
        "reason": "",
    }


def test_locator_keys():
    assert _locator_key("1618") == 1618 and _locator_key("1618-1630") == 1618
    assert _locator_key(":test_request_processing") == "sym:test_request_processing"
    assert _locator_key("Flask.wsgi_app") == "sym:Flask.wsgi_app" and _locator_key("") is None


def test_disagreements_match_by_line_symbol_and_cited_form():
    mine = [
        ours("src/app.py:10-12", "src/app.py", [10, 12], "grounded"),  # both grounded: no row
        ours("mod.rs:56", None, [56], "unresolved", cited="mod.rs", resolved_by=None),  # bench grounded it
        ours("src/util.py:helper", "src/util.py", [1, 3], "grounded", symbol="helper"),  # matched by symbol
        ours("line 99", "src/app.py", [99], "grounded", resolved_by="context"),
    ]  # only we found it
    theirs = [
        {"file": "src/app.py", "locator": "10", "status": "grounded"},
        {"file": "mod.rs", "locator": "56", "status": "grounded", "reason": "via axum/src/routing"},
        {"file": "src/util.py", "locator": ":helper", "status": "grounded"},
        {"file": "src/gone.py", "locator": "5", "status": "hallucinated"},
    ]  # only the bench
    rows = disagreements("t", "r", mine, theirs)
    got = {(r["file"], r["at"], r["bench_status"], r["ours_status"]) for r in rows}
    assert got == {
        ("mod.rs", 56, "grounded", "unresolved"),
        ("src/gone.py", 5, "hallucinated", None),
        ("src/app.py", 99, None, "grounded"),
    }


def test_our_cell_counts_each_citation_once_across_steps():
    item = ours("src/app.py:10", "src/app.py", [10], "grounded")
    scored = {
        "citations": {"rates": {"grounded_rate": 1.0, "verified_rate": 0.5}},
        "steps": [{"citations": {"items": [item]}}, {"citations": {"items": [dict(item)]}}],
    }
    cell = our_cell(scored)
    assert (cell["total"], cell["grounded"], cell["verified_rate"]) == (1, 1, 0.5)


def test_markdown_names_both_sides():
    result = {
        "tools": [
            {
                "tool": "t",
                "repos": 2,
                "bench_mean": 1.0,
                "bench_lo": 1.0,
                "bench_hi": 1.0,
                "ours_mean": 0.9,
                "ours_lo": 0.5,
                "ours_hi": 0.99,
                "ours_verified_mean": 0.4,
                "ours_verified_lo": 0.1,
                "ours_verified_hi": 0.8,
                "disagreements": 3,
            }
        ],
        "cells": [
            {
                "tool": "t",
                "repo": "r",
                "bench_total": 2,
                "bench_grounded": 2,
                "bench_unresolved": 0,
                "bench_hallucinated": 0,
                "ours_total": 3,
                "ours_grounded": 2,
                "ours_unresolved": 1,
                "ours_hallucinated": 0,
                "ours_verified_rate": None,
            }
        ],
    }
    md = markdown(result)
    assert "| t | 2 | 1.000 [1.000, 1.000] | 0.900 [0.500, 0.990] | 0.400 [0.100, 0.800] | 3 |" in md
    assert "| t | r | 2, 2, 0, 0 | 3, 2, 1, 0 | – |" in md


def test_markdown_and_csv_carry_the_composition_per_model_and_tool():
    from mcptrials.grade.citations.grading import pool
    from mcptrials.grade.citations.composition import view
    from mcptrials.importers.sense_compare import composition_rows

    # one cell: 4 citations, 3 grounded (1 past the end), 2 verified / 1 mismatch leniently,
    # 1 verified / 1 mismatch / 1 undetermined strictly: strict grounding (3 - 1) / 4 = 0.5,
    # undetermined 1 / (1 + 1 + 1) = 0.333
    counts = {
        "total": 4,
        "grounded": 3,
        "hallucinated": 1,
        "unresolved": 0,
        "verified": 2,
        "mismatch": 1,
        "n/a": 1,
        "strict_verified": 1,
        "strict_mismatch": 1,
        "strict_undetermined": 1,
        "strict_na": 1,
        "gold_total": 0,
        "gold_cited": 0,
        "by_form": {
            "json-fields": {
                "total": 4,
                "grounded": 3,
                "verified": 2,
                "mismatch": 1,
                "strict_verified": 1,
                "strict_mismatch": 1,
                "strict_undetermined": 1,
            }
        },
        "ungrounded": {"basename": 0, "past_eof": 1, "no_such_file": 0, "symbol_not_defined": 0, "ambiguous": 0},
    }
    comp = [{"model": "m", "tool": "t", "n_trials": 1, "n_not_checked": 2, **view(pool([{"counts": counts}]))}]
    md = markdown({"tools": [], "cells": [], "composition": comp})
    assert "### m\n" in md
    assert (
        "| t | 1 | 2 | 4 | 0.750 | 0.500 | 0.667 | 0.500 | 0.333 | 0 (0.000) | 1 (0.250) | 0 (0.000) | 0 (0.000) | 0 (0.000) |"
        in md
    )
    assert "| t | json-fields | 1.000 (4) | 0.750 | 0.500 | 0.667 | 0.500 | 0.333 |" in md
    rows = composition_rows(comp)
    assert [
        (
            r["model"],
            r["form"],
            r["trials"],
            r["not_checked"],
            r["grounded_strict"],
            r["ungrounded_past_eof"],
            r["ungrounded_past_eof_share"],
        )
        for r in rows
    ] == [("m", "all", 1, 2, 0.5, 1, 0.25), ("m", "json-fields", None, None, 0.5, None, None)]
    assert [round(r["undetermined_strict"], 3) for r in rows] == [0.333, 0.333]
