"""mcptrials replay's rules by hand: what legitimately varies (normalise), what counts as found
nothing (is_empty), the trial folder in the arguments (base_root, rebase), and the classes."""

from __future__ import annotations

import pytest

from mcptrials.gate.replay import (
    CHANGED,
    IDENTICAL,
    NOT_STARTED,
    NOW_EMPTY,
    NOW_ERROR,
    TOOL_GONE,
    base_root,
    classify,
    is_empty,
    normalise,
    rebase,
    summarise,
)

ROOT_B = "/tmp/mcptrials-trial-ab12cd_3"
ROOT_H = "/tmp/pytest/mcptrials-trial-zz99yy00"


def test_normalise_forgives_key_order_layout_folders_and_times_only():
    a = '{"b": 1, "a": [1, 2]}'
    b = '{\n  "a": [1, 2],\n  "b": 1\n}'
    assert normalise(a) == normalise(b) == '{"a": [1, 2], "b": 1}'
    assert normalise(f"{ROOT_B}/workspace/x.py") == normalise(f"{ROOT_H}/workspace/x.py") == "{trial}/workspace/x.py"
    assert (
        normalise("indexed at 2026-12-01T13:02:54.661+00:00")
        == normalise("indexed at 2026-12-02 08:00")
        == "indexed at {time}"
    )
    assert normalise("x.py:12") != normalise("x.py:13")  # anything else is a change
    assert normalise('{"a": 1}') != normalise('{"a": 2}')


@pytest.mark.parametrize(
    "text, empty",
    [
        ("", True),
        ("   \n", True),
        ("No matches found", True),
        ("no results", True),
        ("0 matches found in 3 files", True),
        ("Nothing found.", True),
        ('{"result": []}', True),
        ('{"results": [], "pagination": {"total": 0}}', True),
        ("[]", True),
        ("null", True),
        ('{"data": {"items": []}}', True),
        ("src/a.py:1: def f():", False),
        ('{"results": [{"file": "a.py"}]}', False),
        ('{"count": 0}', False),
        ("No matches found for `x`, but did you mean:\n- y\n- z", False),  # says more than that
    ],
)
def test_is_empty(text, empty):
    assert is_empty(text) is empty


def test_the_trial_folder_is_found_and_replaced_in_the_arguments():
    t = {
        "tool_calls": [
            {"arguments": {"q": "x"}, "result_text": "none"},
            {"arguments": {"path": f"{ROOT_B}/workspace/src"}, "result_text": ""},
        ]
    }
    assert base_root(t) == ROOT_B
    assert base_root({"tool_calls": [{"arguments": {"q": "x"}, "result_text": "x"}]}) is None
    args = {"path": f"{ROOT_B}/workspace/a", "paths": [f"{ROOT_B}/workspace/b"], "n": 3}
    assert rebase(args, ROOT_B, ROOT_H) == {"path": f"{ROOT_H}/workspace/a", "paths": [f"{ROOT_H}/workspace/b"], "n": 3}
    assert rebase(args, None, ROOT_H) == args


@pytest.mark.parametrize(
    "text, says",
    [
        ("Error: not found", True),
        ("Database error: no such table: t", True),
        ("error executing tool", True),
        ("Traceback (most recent call last):", True),
        ("ValueError exception raised", False),
        ("src/errors.py:1: x", False),
        ("No error here", False),
        ("", False),
    ],
)
def test_says_error(text, says):
    from mcptrials.gate.replay import says_error

    assert says_error(text) is says


def call(text, is_error=False):
    return {"result_text": text, "is_error": is_error}


@pytest.mark.parametrize(
    "base, head, cls",
    [
        (call("a.py:1"), {"text": "a.py:1"}, IDENTICAL),
        (call(f"{ROOT_B}/workspace/a.py"), {"text": f"{ROOT_H}/workspace/a.py"}, IDENTICAL),
        (call("a.py:1"), {"text": "a.py:2"}, CHANGED),
        (call("a.py:1"), {"text": "No matches found"}, NOW_EMPTY),
        (call("No matches found"), {"text": "No matches found"}, IDENTICAL),  # found nothing before too
        (call("No matches found"), {"text": "a.py:1"}, CHANGED),
        (call("a.py:1"), {"text": "boom", "is_error": True}, NOW_ERROR),
        (call("a.py:1"), {"text": "", "error": "McpError: timed out"}, NOW_ERROR),
        (call("a.py:1"), {"text": "Database error: no such table: t"}, NOW_ERROR),  # said in text, no isError
        (call("Error: x"), {"text": "Error: y"}, CHANGED),  # it said so in BASE too
        (call("a.py:1"), {"text": "errors.py:3: def f():"}, CHANGED),  # a file named errors.py is no error
        (call("bad", True), {"text": "bad", "is_error": True}, IDENTICAL),  # failed in BASE too, same text
        (call("bad", True), {"text": "worse", "is_error": True}, CHANGED),
        (call("bad", True), {"text": "a.py:1"}, CHANGED),  # now a result
        (call("a.py:1"), {"class": TOOL_GONE}, TOOL_GONE),
        (call("a.py:1"), {"class": NOT_STARTED}, NOT_STARTED),
    ],
)
def test_classify(base, head, cls):
    assert classify(base, head, (ROOT_B, ROOT_H)) == cls


def rep(*classes, base_ok=True):
    return {
        "calls": [
            {
                "step": 0,
                "tool": "t",
                "arguments": {},
                "base_ok": base_ok,
                "class": c,
                "base_latency_ms": 1,
                "head_latency_ms": 2,
                "base_text": "a",
                "head_text": "b",
                "detail": None,
            }
            for c in classes
        ],
        "error": None,
        "server_version": "1",
        "roots": (),
    }


def test_summarise_counts_every_trial_a_replay_stands_for_and_fails_on_the_failing_classes():
    group = [{"path": "m/loop/t/r/s/1"}, {"path": "m/loop/t/r/s/2"}]
    res = summarise({"t": [(group, rep(IDENTICAL, CHANGED))]}, strict=False)
    v = res["tools"]["t"]
    assert (v["trials"], v["calls"], v["counts"][IDENTICAL], v["counts"][CHANGED]) == (2, 4, 2, 2)
    assert res["failed"] == [] and v["differences"][0]["trials"] == ["m/loop/t/r/s/1", "m/loop/t/r/s/2"]
    assert summarise({"t": [(group, rep(IDENTICAL, CHANGED))]}, strict=True)["failed"] == ["t"]
    assert summarise({"t": [(group, rep(NOW_EMPTY))]}, strict=False)["tools"]["t"]["failing"] == 2
    # a call that failed in BASE already fails nobody
    assert summarise({"t": [(group, rep(NOW_ERROR, base_ok=False))]}, strict=False)["failed"] == []


def timed(*latencies):
    """A replay whose calls took (BASE ms, HEAD ms) each, all identical."""
    return {
        "calls": [
            {
                "step": i,
                "tool": f"t{i}",
                "arguments": {"i": i},
                "base_ok": True,
                "class": IDENTICAL,
                "base_latency_ms": b,
                "head_latency_ms": h,
                "base_text": "a",
                "head_text": "a",
                "detail": None,
            }
            for i, (b, h) in enumerate(latencies)
        ],
        "error": None,
        "server_version": "1",
        "roots": (),
    }


def test_only_calls_slower_than_in_base_beyond_the_threshold_are_listed_as_slow():
    from mcptrials.gate.replay_output import text_report

    group = [{"path": "m/loop/t/r/s/1"}]
    # faster (the case), a little slower (noise), much slower, no BASE latency (an older BASE)
    res = summarise({"t": [(group, timed((13.34, 9.07), (10.0, 14.0), (12.0, 312.5), (None, 50.0)))]}, strict=False)
    slow = [line for line in text_report(res).splitlines() if line.strip().startswith("slow:")]
    assert slow == ['  slow: t2 {"i": 2}: 12.0 ms in BASE, 312.5 ms in HEAD']
    assert [s["tool"] for s in res["tools"]["t"]["slower"]] == ["t2"]
    # the slowest calls by HEAD's latency stay in the result, faster or not
    assert [s["tool"] for s in res["tools"]["t"]["slowest"]][:2] == ["t2", "t3"]


def test_the_markdown_shows_arguments_in_code_spans_as_they_are_and_a_backtick_cannot_break_them():
    from mcptrials.gate.replay_output import markdown

    group = [{"path": "m/loop/t/r/s/1"}]
    r = rep(CHANGED)
    r["calls"][0].update(arguments={"name": "<a & b>"}, base_text="```py\nx")
    r["calls"].append(dict(r["calls"][0], tool="t", arguments={"q": "a`b``c"}))
    md = markdown(summarise({"t": [(group, r)]}, strict=False))
    assert '`{"name": "<a & b>"}`' in md and "&quot;" not in md and "&lt;" not in md
    # a run of two backticks inside: a fence of three, padded, so the span holds the whole text
    assert '``` {"q": "a`b``c"} ```' in md
    # a diff that holds a fence line is fenced by a longer one, its text as it is
    assert "\n````diff\n" in md and "-```py" in md


def test_without_config_a_tool_head_lacks_names_the_config_base_was_run_with(tmp_path, monkeypatch, capsys):
    """HEAD's default config.yaml lacks the tool, but BASE was run with another config that its
    summary.json records: the refusal says to pass that one, not to add the tool back."""
    import json

    from matrix_helpers import write_matrix
    from mcptrials.cli import main

    head = tmp_path / "head"
    cfg = write_matrix(head)  # config.yaml: the baseline only
    (head / "configs").mkdir()
    (head / "configs" / "mine.yaml").write_text(cfg.read_text())  # the config BASE was run with
    base = tmp_path / "base" / "results"
    trial = base / "runs" / "reference" / "loop" / "mine" / "tiny" / "find-helper" / "1"
    trial.mkdir(parents=True)
    (trial / "transcript.json").write_text(
        json.dumps(
            {
                "cell": {
                    "model": "reference",
                    "host": "loop",
                    "tool": "mine",
                    "repo": "tiny",
                    "scenario": "find-helper",
                    "trial": 1,
                },
                "tool_calls": [
                    {"source": "mcp", "tool": "search", "arguments": {"q": "helper"}, "result_text": "a.py:1"}
                ],
            }
        )
    )
    (base / "aggregate").mkdir()
    (base / "aggregate" / "summary.json").write_text(
        json.dumps({"identity": {"config": "configs/mine.yaml", "config_files": ["configs/mine.yaml"]}})
    )
    monkeypatch.chdir(head)
    monkeypatch.delenv("MCPTRIALS_CONFIG", raising=False)
    assert main(["replay", str(base)]) == 2
    err = capsys.readouterr().err
    assert "HEAD's config has no tool 'mine'" in err
    assert "BASE was run with configs/mine.yaml" in err and "pass --config configs/mine.yaml" in err
    assert str(base / "aggregate" / "summary.json") in err  # where that is recorded
    # given --config, the user chose it: the message stays as it was
    assert main(["replay", str(base), "--config", "config.yaml"]) == 2
    err = capsys.readouterr().err
    assert "add it back" in err and "BASE was run with" not in err


def test_surface_findings_name_the_trials_that_show_them():
    from mcptrials.gate.replay_output import text_report
    from mcptrials.gate.surface import CONFUSED, INVALID_STRUCTURED, NEVER_CALLED, OVER_CAP, surface_findings

    tools = [
        {"name": "search", "description": "Search the repository for a text pattern."},
        {"name": "grep_text", "description": "Search the repository text with a regex."},
        {"name": "stats", "description": "Count the files."},
        {"name": "outline", "description": "The outline of one module."},
    ]

    def c(tool, args, **extra):
        return {"tool": tool, "arguments": args, "detail": None, "head_over_cap": False, "class": IDENTICAL} | extra

    calls = [
        c("search", {"q": "x"}, head_over_cap=True),
        c("grep_text", {"q": "x"}),
        c(
            "stats",
            {},
            detail="RuntimeError: Invalid structured content returned by tool stats: 'many' is not of type 'integer'",
        ),
    ]
    items = [([{"path": "runs/m/loop/srv/r/s/1"}, {"path": "runs/m/loop/srv/r/s/2"}], {"tools": tools, "calls": calls})]
    got = [(f["kind"], f["tool"], len(f["trials"])) for f in surface_findings(items)]
    # HEAD's whole result of 60,000 characters (15,000 tokens): over opencode's 12,800 only
    from mcptrials.analyze.result_limits import host_limits

    sized = [
        (
            [{"path": "runs/m/loop/srv/r/s/1"}],
            {"tools": tools, "calls": [c("search", {}, head_chars=60_000)], "limits": host_limits(25_000)},
        )
    ]
    (over,) = [f for f in surface_findings(sized) if f["kind"] == OVER_CAP]
    assert over["detail"] == "search {}: about 15,000 tokens, over opencode's 12,800"
    assert got == [
        (OVER_CAP, "search", 2),
        (CONFUSED, "grep_text", 2),
        (INVALID_STRUCTURED, "stats", 2),
        (NEVER_CALLED, "outline", 0),
    ]
    rep = {
        "tools": {
            "srv": {
                "status": "pass",
                "calls": 3,
                "trials": 2,
                "replayed": 1,
                "counts": {k: 0 for k in (IDENTICAL,)},
                "did_not_start": None,
                "differences": [],
                "slower": [],
                "surface": surface_findings(items),
            }
        },
        "fails_on": [],
        "failed": [],
        "slower_than_base": {"ratio": 1.5, "ms": 20.0},
    }
    text = text_report(rep)
    assert "surface: confused tools: grep_text right after search with the same arguments" in text
    assert "(runs/m/loop/srv/r/s/1 and 1 more)" in text
