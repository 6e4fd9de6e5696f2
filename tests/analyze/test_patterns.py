"""The pattern detectors (mcptrials.analyze.patterns): each on a hand-made transcript that shows it and
one that does not (records valid against transcript.schema.yaml); the aggregate's counts per
trial and per (model, tool), patterns.csv and the feedback table on the runs fixture, by hand;
the report's Patterns and Feedback sections and the trial page's marks, also in headless Chromium."""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from mcptrials.analyze import patterns as P

import runs_fixture as fx
from browser import chromium

PROMPT = "Where is `helper` defined?"


def call(
    step=0,
    turn=1,
    name="grep",
    args=None,
    result="src/util.py:1:def helper(x):",
    *,
    source=None,
    error=False,
    truncated=False,
    chars=None,
) -> dict:
    source = source or ("mcp" if name.startswith("mcp__") else "builtin")
    return {
        "id": f"c{step}{turn}{name}",
        "step": step,
        "turn": turn,
        "name": name,
        "tool": name.rsplit("__", 1)[-1],
        "source": source,
        "arguments": {"pattern": "helper"} if args is None else args,
        "result_text": result,
        "result_chars": len(result) if chars is None else chars,
        "truncated": truncated,
        "is_error": error,
        "error_kind": "tool_error" if error else None,
        "latency_ms": 1.0,
        "result_tokens_est": len(result) // 4,
    }


def transcript(
    calls=(), answers=("`helper` is defined at src/util.py:1.",), outcome="completed", step_outcomes=None, feedback=""
) -> dict:
    steps = [
        {
            "index": i,
            "name": f"s{i}",
            "prompt": PROMPT,
            "answer_text": a,
            "audit_text": "",
            "outcome": (step_outcomes or {}).get(i, "completed"),
            "turns": 1 + sum(c["step"] == i for c in calls),
        }
        for i, a in enumerate(answers)
    ]
    t = {
        "schema": "mcptrials/transcript/1",
        "cell": {"model": "m", "host": "loop", "tool": "srv", "repo": "r", "scenario": "sc", "trial": 1},
        "provider": "reference",
        "outcome": outcome,
        "outcome_detail": None,
        "steps": steps,
        "tool_calls": list(calls),
        "errors": {"tool_error": 0, "protocol_error": 0, "api_error": 0, "harness_error": 0},
        "error_events": [],
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 1,
            "cost_usd": None,
        },
        "wall_seconds": 1.0,
        "feedback_text": feedback,
        "messages": [],
    }
    fx.validate(t, "transcript.schema.yaml")
    return t


SEARCH = call(0, 1, "mcp__srv__search", {"q": "helper"}, "src/util.py:1: def helper(x)")
TOOLS = {"tools": [{"name": "search"}, {"name": "outline"}]}

# name -> (a transcript that shows the pattern, one that does not, the tools snapshot for both)
CASES = {
    "repeated_call": (
        transcript([SEARCH, dict(SEARCH, turn=2)]),
        transcript([SEARCH, dict(SEARCH, turn=2, arguments={"q": "helper2"})]),
        None,
    ),
    "retry_after_error": (
        transcript([dict(SEARCH, is_error=True, error_kind="tool_error"), dict(SEARCH, turn=2)]),
        transcript(
            [dict(SEARCH, is_error=True, error_kind="tool_error"), dict(SEARCH, turn=2, arguments={"q": "def helper"})]
        ),
        None,
    ),
    "large_result": (
        transcript([call(result="src/util.py:1 " + "y " * 30, truncated=True, chars=120_000)]),
        transcript([call(result="src/util.py:1 " + "y " * 30, chars=P.LARGE_RESULT_CHARS - 1)]),
        None,
    ),
    "unused_tool": (
        transcript([SEARCH]),
        transcript([SEARCH, call(0, 2, "mcp__srv__outline", {"path": "src/util.py"}, "util.py: helper")]),
        TOOLS,
    ),
    "answer_before_search": (transcript([], answers=("It is in src/util.py.",)), transcript([SEARCH]), None),
    "empty_results": (
        transcript(
            [SEARCH]
            + [
                call(0, 2 + k, "grep", {"pattern": f"p{k}"}, r)
                for k, r in enumerate(("No matches found", "", '{"results": []}'))
            ]
        ),
        transcript(
            [SEARCH]
            + [call(0, 2 + k, "grep", {"pattern": f"p{k}"}, r) for k, r in enumerate(("No matches found", "", "42"))]
        ),
        None,
    ),
    "unused_result": (
        transcript([SEARCH, call(0, 2, "read_file", {"path": "docs/notes.md"}, "Changelog: release")]),
        transcript([SEARCH, call(0, 2, "read_file", {"path": "docs/notes.md"}, "see src/util.py for helper")]),
        None,
    ),
    "limit_reached": (
        transcript([SEARCH], answers=("",), outcome="max_turns", step_outcomes={0: "max_turns"}),
        transcript([SEARCH]),
        None,
    ),
    "invalid_structured_content": (
        transcript(
            [
                SEARCH,
                call(
                    0,
                    2,
                    "mcp__srv__stats",
                    {},
                    "MCP protocol error: RuntimeError: Invalid structured content returned by tool stats: "
                    "'count' is a required property",
                    error=True,
                ),
            ]
        ),
        transcript([SEARCH, call(0, 2, "mcp__srv__stats", {}, "MCP error -32602: Unknown tool: stats", error=True)]),
        None,
    ),
    "read_only_wrote": (
        transcript(
            [
                SEARCH,
                call(0, 2, "mcp__srv__peek", {}, "README.md")
                | {"workspace_changed": {"count": 1, "paths": [".peek-cache"]}},
            ]
        ),
        transcript([SEARCH, call(0, 2, "mcp__srv__peek", {}, "README.md")]),
        None,
    ),
    # search: {search, text, repository, pattern}; grep_text: {search, text, repository, regex}: 3 of 5 shared, 60%
    "confused_tools": (
        transcript([SEARCH, call(0, 2, "mcp__srv__grep_text", {"q": "helper"}, "src/util.py:1: def helper(x)")]),
        transcript([SEARCH, call(0, 2, "mcp__srv__grep_text", {"q": "def helper"}, "src/util.py:1: def helper(x)")]),
        {
            "tools": [
                {"name": "search", "description": "Search the repository for a text pattern."},
                {"name": "grep_text", "description": "Search the repository text with a regex."},
                {"name": "outline", "description": "The outline of one module."},
            ]
        },
    ),
}


def test_every_pattern_has_a_case():
    assert set(CASES) == set(P.PATTERNS)
    assert all(p.description and callable(p.detector) for p in P.PATTERNS.values())


@pytest.mark.parametrize("name", list(CASES))
def test_detector_positive_and_negative(name):
    shows, clean, tools = CASES[name]
    found = P.PATTERNS[name].detector(shows, None, tools)
    assert found and {f["pattern"] for f in found} == {name}
    for f in found:
        assert set(f) >= {"pattern", "step", "turn", "call", "detail"} and f["detail"]
    assert P.PATTERNS[name].detector(clean, None, tools) == []
    assert name in P.counts(P.detect(shows, None, tools))
    assert name not in P.counts(P.detect(clean, None, tools))


def test_where_each_finding_points():
    f = P.repeated_call(CASES["repeated_call"][0])
    assert f == [
        {
            "pattern": "repeated_call",
            "step": 0,
            "turn": 2,
            "call": 1,
            "detail": "mcp__srv__search with the same arguments as call 0 (step 0, turn 1)",
        }
    ]
    # the error case is retry_after_error only, never also a repeated call
    assert P.counts(P.detect(CASES["retry_after_error"][0])) == {"retry_after_error": 1}
    lim = P.limit_reached(CASES["limit_reached"][0])
    assert lim == [
        {
            "pattern": "limit_reached",
            "step": 0,
            "turn": 2,
            "call": None,
            "detail": "step 0: max_turns after 2 model call(s)",
        }
    ]
    unused = P.unused_tool(CASES["unused_tool"][0], None, TOOLS)
    assert unused == [
        {
            "pattern": "unused_tool",
            "step": None,
            "turn": None,
            "call": None,
            "tools": ["outline"],
            "detail": "1 of 2 offered server tool(s) never called: outline",
        }
    ]


def test_thresholds_at_their_edges():
    at = transcript([call(result="x", chars=P.LARGE_RESULT_CHARS)])
    assert [f["call"] for f in P.large_result(at)] == [0]
    two = transcript(
        [call(0, k + 1, "grep", {"pattern": f"p{k}"}, "No matches found") for k in range(P.MANY_EMPTY_RESULTS - 1)]
    )
    assert P.empty_results(two) == []
    three = transcript(
        [call(0, k + 1, "grep", {"pattern": f"p{k}"}, "No matches found") for k in range(P.MANY_EMPTY_RESULTS)]
    )
    assert [f["call"] for f in P.empty_results(three)] == list(range(P.MANY_EMPTY_RESULTS))


@pytest.mark.parametrize(
    "text, empty",
    [
        ("", True),
        ("  \n", True),
        ("No matches found", True),
        ("No files found.", True),
        ("[]", True),
        ('{"result": []}', True),
        ('{"results": [], "pagination": {"total": 0, "has_more": false}}', True),
        ("42", False),
        ('{"count": 5}', False),
        ('["a.py"]', False),
        ('{"results": [{"file": "a.py"}], "more": []}', False),
        ("src/a.py:1: x", False),
    ],
)
def test_near_empty(text, empty):
    assert P.near_empty({"result_text": text, "is_error": False}) is empty
    assert P.near_empty({"result_text": text, "is_error": True}) is False  # an error is not an empty result


def test_unused_result_reads_content_not_format():
    # a JSON answer's keys are the server's format: only its values count as content
    js = call(
        0,
        1,
        "mcp__srv__search",
        {"q": "helper"},
        json.dumps({"matches": [{"file": "lib/core.py"}], "pagination": {"has_more": False}}),
    )
    assert P.unused_result(transcript([js], answers=("It is in lib/core.py.",))) == []
    found = P.unused_result(transcript([js], answers=("It is in src/util.py.",)))
    assert [f["call"] for f in found] == [0] and "core" in found[0]["detail"] and "pagination" not in found[0]["detail"]
    # a listing used to pick the next call is used, though the answer never quotes it
    listing = call(0, 1, "list_files", {"path": "."}, "src/util.py\nsrc/other.py")
    read = call(0, 2, "read_file", {"path": "src/other.py"}, "def helper(x): return 1")
    assert P.unused_result(transcript([listing, read], answers=("`helper` returns 1.",))) == []
    # echoing the question is no use: a result made only of the prompt's words has nothing to use
    echo = call(0, 1, "grep", {"pattern": "helper"}, "helper defined")
    assert P.unused_result(transcript([echo], answers=("No idea.",))) == []
    # the citations scored.json resolved count as the answer's words
    hit = call(0, 1, "grep", {"pattern": "helper"}, "pkg/zeta.py:3: def helper")
    scored = {"steps": [{"index": 0, "citations": {"items": [{"resolved_path": "pkg/zeta.py"}]}}]}
    t = transcript([hit], answers=("See the second module, line 3.",))
    assert [f["call"] for f in P.unused_result(t)] == [0] and P.unused_result(t, scored) == []


def test_unused_tool_only_when_the_server_ran_through():
    crashed = transcript([SEARCH], outcome="server_crashed")
    assert P.unused_tool(crashed, None, TOOLS) == []
    assert P.unused_tool(transcript([SEARCH], outcome="not_run"), None, TOOLS) == []
    assert P.unused_tool(transcript([SEARCH]), None, None) == []  # no snapshot: nothing is known to be offered
    assert [f["tools"] for f in P.unused_tool(transcript([], outcome="timed_out"), None, ["search", "x"])] == [
        ["search", "x"]
    ]


def test_answer_before_search_counts_only_steps_before_the_first_call():
    t = transcript([call(1, 1)], answers=("Plan: grep for it.", "At src/util.py:1.", "Done, as said."))
    assert [f["step"] for f in P.answer_before_search(t)] == [0]


def test_detect_orders_trial_wide_findings_first_then_by_call():
    t = transcript([SEARCH, dict(SEARCH, turn=2), dict(SEARCH, turn=3)])
    found = P.detect(t, None, TOOLS)
    assert [(f["pattern"], f["call"]) for f in found] == [
        ("unused_tool", None),
        ("repeated_call", 1),
        ("repeated_call", 2),
    ]
    assert P.counts(found) == {"repeated_call": 2, "unused_tool": 1}


# --- the aggregate and the report on the runs fixture ---------------------------------------


def _edit(runs: Path, model, tool, scenario, trial, fn) -> None:
    path = runs / model / "loop" / tool / "tiny" / scenario / str(trial) / "transcript.json"
    t = json.loads(path.read_text())
    fn(t)
    fx.validate(t, "transcript.schema.yaml")
    path.write_text(json.dumps(t))


FEEDBACK = "Feedback on the tools: `mcp__git__git_log` was slow; grep helped."


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The runs fixture, plus: a snapshot offering git_log and git_status; a repeated grep in
    reference/baseline/s1/1; feedback in three reference git trials (two alike, one after a
    line of markup, as older records kept it)."""
    tmp = tmp_path_factory.mktemp("patterns")
    cfg, runs = fx.build(tmp)
    snap = tmp / "results" / "snapshots" / "git" / "tiny"
    snap.mkdir(parents=True)
    (snap / "tools.json").write_text(
        json.dumps(
            {
                "tools": [{"name": "git_log"}, {"name": "git_status"}],
                "builtin_tools": ["read_file", "grep", "list_files"],
            }
        )
    )

    def repeat(t):
        t["tool_calls"].append(dict(copy.deepcopy(t["tool_calls"][0]), id="c1b", turn=2))

    _edit(runs, "reference", "baseline", "s1", 1, repeat)
    for sc, trial, text in (("s1", 1, FEEDBACK), ("s1", 2, FEEDBACK), ("s3", 1, "```\n\n" + FEEDBACK + " More.")):
        _edit(runs, "reference", "git", sc, trial, lambda t, text=text: t.update(feedback_text=text))
    agg, out = fx.aggregate_and_report(tmp, cfg, runs)
    return {"summary": json.loads((agg / "summary.json").read_text()), "agg": agg, "out": out}


def _row(summary, **key):
    return fx.find_row(summary["trials"], **key)


def test_each_trial_row_counts_its_patterns(built):
    s = built["summary"]
    # git trials: the grep result is cited (util), the git_log result ("commit abc", x...) never reaches the
    # answer: unused_result 1; git_status is offered and never called: unused_tool 1
    assert _row(s, model="reference", tool="git", scenario="s1", trial=1)["patterns"] == {
        "unused_tool": 1,
        "unused_result": 1,
    }
    # the crashed trial: its server did not run through, its git_log call failed, it has no answer
    assert _row(s, model="reference", tool="git", scenario="s2", trial=2)["patterns"] == {}
    assert _row(s, model="reference", tool="baseline", scenario="s1", trial=1)["patterns"] == {"repeated_call": 1}
    assert _row(s, model="reference", tool="baseline", scenario="s1", trial=2)["patterns"] == {}


def test_summary_counts_per_model_and_tool(built):
    by = {(r["model"], r["tool"]): r for r in built["summary"]["patterns"]["by_tool"]}
    git = by["sonnet", "git"]
    # 6 trials, 5 completed (s2 #2 crashed): each completed one shows unused_tool and unused_result once
    assert git["trials"] == 6 and git["never_used_tools"] == ["git_status"]
    assert git["patterns"]["unused_tool"] == {
        "trials": 5,
        "findings": 5,
        "pages": [
            f"trials/sonnet/git/{sc}/{n}.html" for sc, n in (("s1", 1), ("s1", 2), ("s2", 1), ("s3", 1), ("s3", 2))
        ],
    }
    assert git["patterns"]["unused_result"]["trials"] == 5
    assert git["patterns"]["repeated_call"] == {"trials": 0, "findings": 0, "pages": []}
    base = by["reference", "baseline"]
    assert base["patterns"]["repeated_call"] == {
        "trials": 1,
        "findings": 1,
        "pages": ["trials/reference/baseline/s1/1.html"],
    }
    assert base["never_used_tools"] == []  # no snapshot for the baseline: nothing known offered
    assert set(built["summary"]["patterns"]["definitions"]) == set(P.PATTERNS)
    found = built["summary"]["patterns"]["findings"]["trials/reference/baseline/s1/1.html"]
    assert found == [
        {
            "pattern": "repeated_call",
            "step": 0,
            "turn": 2,
            "call": 1,
            "detail": "grep with the same arguments as call 0 (step 0, turn 1)",
        }
    ]


def test_patterns_csv(built):
    rows = list(csv.DictReader(open(built["agg"] / "patterns.csv")))
    assert len(rows) == 2 * 2 * len(P.PATTERNS)  # every (model, tool, pattern), zeros included
    r = fx.find_row(rows, model="reference", tool="baseline", pattern="repeated_call")
    assert (r["trials_showing"], r["trials"], r["findings"], r["pages"]) == (
        "1",
        "6",
        "1",
        "trials/reference/baseline/s1/1.html",
    )
    assert fx.find_row(rows, model="reference", tool="git", pattern="unused_tool")["trials_showing"] == "5"
    # trials.csv carries the counts as JSON
    trials = list(csv.DictReader(open(built["agg"] / "trials.csv")))
    hit = fx.find_row(trials, model="reference", tool="baseline", scenario="s1", trial="1")
    assert json.loads(hit["patterns"]) == {"repeated_call": 1}


def test_feedback_gathered_per_tool(built):
    fb = built["summary"]["feedback"]
    assert list(fb) == ["git"]  # only reference's git trials gave any
    assert [(e["scenario"], e["trial"]) for e in fb["git"]] == [("s1", 1), ("s1", 2), ("s3", 1)]
    assert fb["git"][0]["text"] == FEEDBACK and fb["git"][0]["names"] == ["grep", "git_log"]
    assert fb["git"][2]["text"] == FEEDBACK + " More."  # the markup line before it is not feedback
    assert fb["git"][0]["page"] == "trials/reference/git/s1/1.html"


def test_report_sections(built):
    out = built["out"]
    index = (out / "index.html").read_text()
    assert 'id="patterns-table"' in index and 'id="pattern-definitions"' in index
    # the count of unused_result for reference/git links to the list of its 5 trials
    assert '<a href="#patterns-reference-git-unused_result">5 (5)</a>' in index
    block = re.search(
        r'<div class="pattern-trials" id="patterns-reference-git-unused_result">(.*?)</div>', index, re.S
    ).group(1)
    assert len(re.findall(r'<a href="trials/reference/git/s\d/\d\.html#patterns">', block)) == 5
    assert "explorer.html#model=reference&amp;tool=git&amp;patterns=unused_result" in block
    never = re.search(r'<table id="never-used-tools"[^>]*>(.*?)</table>', index, re.S).group(1)
    assert "<tr><td>reference</td><td>git</td><td>git_status</td></tr>" in never
    assert never.count("<tr>") == 1 + 2  # both models' git; the baseline offers nothing
    # one feedback table per tool; the two equal texts are one row with both trials
    table = re.search(r'<table class="feedback" id="feedback-git">(.*?)</table>', index, re.S).group(1)
    assert table.count("<tr>") == 1 + 2
    assert 'href="trials/reference/git/s1/1.html"' in table and 'href="trials/reference/git/s1/2.html"' in table
    md = (out / "report.md").read_text()
    assert "## Patterns in the transcripts" in md and "## Feedback on the tools" in md
    assert "**reference / baseline: repeated_call, 1 trial(s)**: [s1 #1](trials/reference/baseline/s1/1.html) (1)" in md


def test_trial_page_marks_where_patterns_occur(built):
    page = (built["out"] / "trials/reference/baseline/s1/1.html").read_text()
    assert '<h2 id="patterns">Patterns (1)</h2>' in page
    assert '<li><a href="#call-1">repeated_call</a> (step 0, turn 2, call 1)' in page
    assert re.search(r'<div class="call flagged" id="call-1"><p> <span class="pattern"[^>]*>repeated_call</span>', page)
    assert '<div class="call" id="call-0">' in page  # the first grep is not marked
    git = (built["out"] / "trials/reference/git/s1/1.html").read_text()
    assert "<li>unused_tool (the whole trial): 1 of 2 offered server tool(s) never called: git_status</li>" in git
    assert re.search(r'id="call-1"><p> <span class="pattern"[^>]*>unused_result</span>', git)
    clean = (built["out"] / "trials/reference/baseline/s1/2.html").read_text()
    assert "No pattern found in this trial." in clean and 'span class="pattern"' not in clean


# Run after load: for every in-page link of the patterns (the report's counts, a trial page's list)
# whether its target exists, and what the target shows.
PROBE = """<script>window.addEventListener("load", function () {
  var links = document.querySelectorAll('#patterns-table a, ul.patterns a'), bad = [], marked = 0;
  for (var a of links) {
    var t = document.getElementById(decodeURIComponent(a.hash.slice(1)));
    if (!t) bad.push(a.getAttribute("href"));
    else if (t.querySelector("span.pattern") || t.querySelectorAll("a").length) marked++;
  }
  var table = document.getElementById("patterns-table");
  document.body.setAttribute("data-links", links.length);
  document.body.setAttribute("data-bad", bad.join(","));
  document.body.setAttribute("data-marked", marked);
  document.body.setAttribute("data-rows", table ? table.tBodies[0].rows.length : -1);
  document.body.setAttribute("data-feedback", document.querySelectorAll("table.feedback").length);
  var badges = document.querySelectorAll("span.pattern");
  document.body.setAttribute("data-badge-bg", badges.length ? getComputedStyle(badges[0]).backgroundColor : "");
});</script>"""


def _probe(path: Path, tmp_path: Path) -> dict:
    probe = path.with_name("probe-" + path.name)  # beside the page, so its links stay valid
    probe.write_text(path.read_text().replace("</body>", PROBE + "</body>"))
    res = chromium(["--virtual-time-budget=5000", "--dump-dom", probe.as_uri()], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    return {k: v for k, v in re.findall(r'data-(links|bad|marked|rows|feedback|badge-bg)="([^"]*)"', res.stdout)}


def test_patterns_render_in_chromium(built, tmp_path):
    got = _probe(built["out"] / "index.html", tmp_path)
    # 4 (model, tool) rows; the non-zero counts: baseline repeated_call (reference), git unused_tool and
    # unused_result (both models): 5 links, each to a list of trial links
    assert (got["rows"], got["links"], got["bad"], got["marked"], got["feedback"]) == ("4", "5", "", "5", "1")
    page = _probe(built["out"] / "trials/reference/git/s1/1.html", tmp_path)
    # the list at the top: unused_tool (the whole trial: no link) and unused_result linking to its call
    assert (page["links"], page["bad"], page["marked"]) == ("1", "", "1")
    assert page["badge-bg"] == "rgb(255, 224, 138)"  # the badge is styled, i.e. highlighted
    link = re.search(
        r'href="(trials/reference/baseline/s1/1\.html)#patterns"', (built["out"] / "index.html").read_text()
    )
    assert (built["out"] / unquote(link.group(1))).is_file()


def test_a_summary_from_before_the_detectors_says_nothing_about_patterns():
    from mcptrials.report import patterns as report
    from mcptrials.report.render import Doc

    old = {"trials": []}  # no `patterns` key: not "none found", just not computed
    assert report.trial_findings(old, "trials/m/t/s/1.html") is None
    assert report.pattern_list(None) == "" and report.pattern_marks(None, call=0) == ""
    doc = Doc()
    report.add_patterns(doc, old)
    report.add_feedback(doc, old)
    assert doc.html == [] and doc.md == []
    new = {"patterns": {"findings": {}}}
    assert report.trial_findings(new, "trials/m/t/s/1.html") == []
    assert "No pattern found" in report.pattern_list([])


def test_summary_records_the_thresholds(built):
    assert built["summary"]["patterns"]["thresholds"]["LARGE_RESULT_CHARS"] == P.LARGE_RESULT_CHARS
    assert built["summary"]["patterns"]["thresholds"]["MANY_EMPTY_RESULTS"] == P.MANY_EMPTY_RESULTS
