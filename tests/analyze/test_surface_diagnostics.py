"""What the recorded calls say about a server's surface (issue 37 item 5, in part): tools offered
and never called in any trial (the server profile), and near-duplicate descriptions (the
confused_tools pattern's pairs), by hand."""

from mcptrials.analyze.patterns import CONFUSABLE_OVERLAP, confusable_pairs
from mcptrials.analyze.records_summary import server_profile


def rec(tool, calls):
    return {
        "key": {"tool": tool},
        "run_meta": {},
        "transcript": {
            "tool_calls": [
                {"tool": c, "source": "mcp", "latency_ms": 1.0, "result_chars": 10, "truncated": False} for c in calls
            ]
        },
    }


def test_never_called_is_what_the_snapshot_offered_and_no_trial_called():
    prof = server_profile(
        [rec("srv", ["search"]), rec("srv", ["search", "read"])],
        offered={"srv": ["search", "read", "outline", "stats"]},
    )
    assert prof[0]["never_called"] == ["outline", "stats"]
    assert server_profile([rec("srv", [])])[0]["never_called"] is None  # no snapshot: unknown, not "none"


def test_confusable_pairs_by_their_shared_words():
    tools = [
        # distinctive words (4+ letters, not stopwords): {search, repository, text, pattern}
        {"name": "search", "description": "Search the repository for a text pattern."},
        # {search, repository, text, regex}: shares 3 of the 5 words of both, 0.6 >= 0.5
        {"name": "grep_text", "description": "Search the repository text with a regex."},
        # {outline, module}: shares none
        {"name": "outline", "description": "The outline of one module."},
    ]
    assert CONFUSABLE_OVERLAP == 0.5
    assert confusable_pairs({"tools": tools}) == {frozenset({"search", "grep_text"}): 0.6}
    assert confusable_pairs([{"name": "a", "description": ""}, {"name": "b", "description": ""}]) == {}
