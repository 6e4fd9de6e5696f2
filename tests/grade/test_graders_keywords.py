"""Keyword checks: coverage formula, match kinds, evidence."""

import pytest

from matrix_helpers import filled_step as filled
from mcptrials.matrix.errors import ConfigError
from mcptrials.grade import keywords
from mcptrials.grade.keywords import coverage, pool


def match_check(check, answer, where="check"):
    return keywords.match_check(filled(checks=[check])["checks"][0], answer, where)


def grade_keywords(checks, answer, where="checks"):
    return keywords.grade_keywords(filled(checks=checks)["checks"], answer, where)


ANSWER = "The Router dispatches\n  requests   to handlers. See `Blueprint.register` (C++ style)."


def test_coverage_hand_case():
    # 2 required (1 hit) + 2 bonus (1 hit): (1 + 0.5) / (2 + 0.5 * 2) = 0.5
    checks = [
        {"type": "word", "value": "router"},
        {"type": "word", "value": "absent"},
        {"type": "word", "value": "handlers", "required": False},
        {"type": "word", "value": "nowhere", "required": False},
    ]
    r = grade_keywords(checks, ANSWER)
    assert r["coverage"] == pytest.approx(0.5)
    assert (r["required_hits"], r["required_total"], r["bonus_hits"], r["bonus_total"]) == (1, 2, 1, 2)
    assert r["required_passed"] is False
    assert coverage([]) is None
    assert grade_keywords([], ANSWER)["required_passed"] is True


def test_word_is_whole_word():
    assert match_check({"type": "word", "value": "route"}, ANSWER)["hit"] is False  # only in "Router"
    assert match_check({"type": "word", "value": "C++"}, ANSWER)["hit"] is True
    assert match_check({"type": "word", "value": "blueprint.register"}, ANSWER)["hit"] is True


def test_phrase_normalises_whitespace_and_case():
    r = match_check({"type": "phrase", "value": "dispatches requests to"}, ANSWER)
    assert r["hit"] and r["matched"] == "dispatches requests to"
    assert "Router" in r["snippet"]
    assert match_check({"type": "phrase", "value": "spatch"}, ANSWER)["hit"] is True  # substring
    assert match_check({"type": "phrase", "value": "router", "case_sensitive": True}, ANSWER)["hit"] is False
    assert match_check({"type": "phrase", "value": "Router", "case_sensitive": True}, ANSWER)["hit"] is True


def test_regex():
    r = match_check({"type": "regex", "value": r"blueprint\.\w+"}, ANSWER)
    assert r["hit"] and r["matched"] == "Blueprint.register"
    assert match_check({"type": "regex", "value": r"^\s+requests", "case_sensitive": True}, ANSWER)["hit"]
    with pytest.raises(ConfigError, match=r"steps.0.checks.0.value: .*not a valid regular expression"):
        grade_keywords([{"type": "regex", "value": "("}], ANSWER, "steps.0.checks")


def test_trial_pool_uses_the_same_formula():
    s1 = grade_keywords([{"type": "word", "value": "router"}], ANSWER)
    s2 = grade_keywords(
        [{"type": "word", "value": "x"}, {"type": "word", "value": "handlers", "required": False}], ANSWER
    )
    # (1 + 0 + 0.5) / (1 + 1 + 0.5) = 0.6
    assert pool([s1, s2]) == {"coverage": pytest.approx(0.6), "required_passed": False}
