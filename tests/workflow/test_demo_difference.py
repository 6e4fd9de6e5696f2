"""The demo shows a real difference between tools, through the real servers installed in
.tools/ and the reference agent (no language model), so it cannot silently regress:

- commit-history: only the git server shows the repository's history (its git_log result
  holds the checked-out commit); the built-in tools skip .git, so the baseline cannot
  answer and says so; the same agent passes with git and fails without it;
- round-money-impact: every tool finds the 8 calls, but code-index's search returns 10
  matches a page (its result says has_more), so the agent needs a second search call where
  the built-in grep gives all 13 matching lines at once.
"""

import json
import subprocess
import sys

import pytest

from matrix_helpers import ROOT
from mcptrials.prepare.checkout import checkout
from mcptrials.matrix.config import load_matrix
from mcptrials.grade.scoring import score_trial
from mcptrials.run.runner import run_trial

pytestmark = pytest.mark.slow

DEMO = load_matrix(ROOT / "config.yaml")
COMMIT = DEMO.repos["demo"]["commit"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo repository checked out at its pinned commit, and the servers installed as the
    workflow installs them (skipped when already there)."""
    tmp = tmp_path_factory.mktemp("demo")
    marks = {"git": ROOT / ".tools/git/bin/mcp-server-git", "code-index": ROOT / ".tools/code-index/bin/code-index-mcp"}
    for tool, mark in marks.items():
        if not mark.exists():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mcptrials.cli",
                    "install-tool",
                    "--config",
                    str(ROOT / "config.yaml"),
                    "--tool",
                    tool,
                    "--out",
                    str(tmp / f"{tool}.json"),
                ],
                check=True,
            )
    co = checkout("demo", DEMO.repo_source("demo"), DEMO.repos["demo"]["url"], COMMIT, tmp / "co")
    return co, tmp


def trial(demo, tool: str, scenario: str) -> tuple[dict, dict]:
    """(transcript, scored) of one real trial of the reference agent."""
    co, tmp = demo
    t, _ = run_trial(DEMO, "reference", tool, scenario, 1, co, None, None, tmp / f"{tool}-{scenario}")
    assert t["outcome"] == "completed", t["outcome_detail"]
    scored = score_trial(t, DEMO.scenarios[scenario].data, co["tree"], co["commit"], None, None)
    return t, scored


def test_only_the_git_server_answers_the_history_question(demo):
    base_t, base = trial(demo, "baseline", "commit-history")
    git_t, git = trial(demo, "git", "commit-history")
    assert git["passed"] and git["exact"] == {"steps": 1, "passed": 1}
    assert not base["passed"] and base["exact"] == {"steps": 1, "passed": 0}
    # Why, as the transcripts show it: git_log's result holds the commit, and the answer's last
    # line quotes it; none of the baseline's tool results ever held it.
    log = [c for c in git_t["tool_calls"] if c["tool"] == "git_log"]
    assert len(log) == 1 and f"Commit: {COMMIT}" in log[0]["result_text"]
    assert git_t["steps"][0]["answer_text"].splitlines()[-1] == COMMIT
    assert "acme-shop 1.4.2" in git_t["steps"][0]["answer_text"]
    assert base_t["tool_calls"] and all(COMMIT not in c["result_text"] for c in base_t["tool_calls"])
    assert "None of my tools shows the repository's history" in base_t["steps"][0]["answer_text"]


def test_code_index_needs_a_second_page_where_grep_answers_at_once(demo):
    base_t, base = trial(demo, "baseline", "round-money-impact")
    ci_t, ci = trial(demo, "code-index", "round-money-impact")
    for scored in (base, ci):
        assert scored["steps"][0]["exact"]["passed"], scored["failures"]
        assert scored["passed"], scored["failures"]

    def searches(t):
        return [
            c
            for c in t["tool_calls"]
            if c["step"] == 0
            and c["tool"] in ("grep", "search_code_advanced")
            and "round_money" in json.dumps(c["arguments"])
        ]

    greps = searches(base_t)
    assert [c["tool"] for c in greps] == ["grep"]
    assert greps[0]["result_text"].count("round_money") >= 13  # every matching line in one result
    pages = searches(ci_t)
    assert [c["tool"] for c in pages] == ["search_code_advanced"] * 2
    first = json.loads(pages[0]["result_text"])["pagination"]
    assert first["has_more"] is True and first["returned"] == 10 and first["total_matches"] == 13
    assert pages[1]["arguments"]["start_index"] == first["end_index"]
    assert json.loads(pages[1]["result_text"])["pagination"]["has_more"] is False
