"""Environment failures (issue 33, item 6): a server whose calls fail with the same error in
most of its trials on a repository is listed in summary.json `environment_failures` and under
"What could not run", with the error and a fix, and its headline row says so beside its verdict
(which is computed as for any tool)."""

import json

from mcptrials.analyze.environment import (
    MIN_TRIAL_SHARE,
    MIN_TRIALS,
    environment_failures,
    environment_fix,
    normalise_error,
)

import runs_fixture as fx

GO = "Go is not installed (workspace /tmp/mcptrials-{n}/gin, pid {pid}); cannot start gopls"


def record(tool, repo, trial, errors=(), missing=False):
    calls = [{"source": "mcp", "is_error": True, "result_text": e} for e in errors]
    calls.append({"source": "builtin", "is_error": True, "result_text": "no such file: x.py"})  # not a server call
    rec = {
        "key": {"model": "reference", "tool": tool, "repo": repo, "scenario": f"s{trial}", "trial": 1},
        "transcript": {"tool_calls": calls},
    }
    return rec, {"missing": missing, "page": f"trials/reference/{tool}/s{trial}/1.html"}


def failures(specs):
    recs, rows = zip(*(record(*s) for s in specs))
    return environment_failures(list(recs), list(rows))


def test_normalising_keeps_the_cause_and_drops_what_differs_between_trials():
    a = normalise_error(GO.format(n=12, pid=4711))
    assert a == normalise_error(GO.format(n=3, pid=99)) == normalise_error(GO.format(n=3, pid=99).upper())
    assert "go is not installed" in a and "<path>" in a and "<n>" in a
    assert normalise_error("Symbol 'Flask' not found") != normalise_error("Symbol 'Blueprint' not found")
    assert normalise_error("request 3f2a9c1d77 failed at https://x.org/a") == normalise_error(
        "request 0b1e55ed99 failed at https://y.org/b"
    )


def test_most_trials_of_a_repository_with_the_same_error():
    assert (MIN_TRIAL_SHARE, MIN_TRIALS) == (0.5, 2)

    def go(i):
        return [GO.format(n=i, pid=100 + i)] * 3  # three calls in a trial: one trial, three calls

    found = failures(
        [("serena", "gin", i, go(i)) for i in (1, 2)]
        + [("serena", "gin", i) for i in (3, 4)]
        + [("serena", "flask", i) for i in (1, 2)]
        + [("baseline", "gin", i, go(i)) for i in (1, 2)]
    )
    assert len(found) == 1
    f = found[0]
    assert (f["name"], f["tool"], f["repo"], f["trials_with_error"], f["trials"], f["share"], f["calls"]) == (
        "serena/gin",
        "serena",
        "gin",
        2,
        4,
        0.5,
        6,
    )
    assert f["error"] == GO.format(n=1, pid=101)  # as shown: the first wording seen most often
    assert "the server needs Go on this machine for gin" in f["fix"] and "docs/packs.md" in f["fix"]
    assert f["page"] == "trials/reference/serena/s1/1.html"


def test_not_most_trials_or_a_single_trial_or_missing_trials_are_not_environment_failures():
    go = [GO.format(n=1, pid=1)]
    assert failures([("serena", "gin", 1, go)] + [("serena", "gin", i) for i in (2, 3)]) == []  # 1 of 3
    assert failures([("serena", "gin", 1, go)]) == []  # 1 of 1
    # missing trials do not count: 2 of the 3 that count
    assert (
        len(
            failures(
                [
                    ("serena", "gin", 1, go),
                    ("serena", "gin", 2, go),
                    ("serena", "gin", 3),
                    ("serena", "gin", 4, (), True),
                    ("serena", "gin", 5, (), True),
                ]
            )
        )
        == 1
    )
    # errors that name what each question asked are not one error
    assert failures([("serena", "gin", i, [f"Symbol 'Name{i}x' not found"]) for i in (1, 2, 3)]) == []


def test_the_fix_follows_the_error():
    assert "needs rust-analyzer on this machine for axum" in environment_fix("rust-analyzer is not installed", "axum")
    assert "download" in environment_fix("Failed to download the Kotlin language server from https://x", "javalin")
    assert "docs/packs.md" in environment_fix("Something odd", "gin")


def test_named_beside_the_verdict_and_under_what_could_not_run(tmp_path):
    cfg, runs = fx.build(tmp_path, models=("reference",))
    broken = [("s1", 1), ("s1", 2), ("s3", 1), ("s3", 2)]  # 4 of git's 6 trials on `tiny`
    for n, (sc, trial) in enumerate(broken):
        p = runs / "reference" / "loop" / "git" / "tiny" / sc / str(trial) / "transcript.json"
        t = json.loads(p.read_text())
        call = next(c for c in t["tool_calls"] if c["source"] == "mcp")
        call.update(is_error=True, error_kind="tool_error", result_text=GO.format(n=n, pid=4000 + n))
        t["errors"]["tool_error"] += 1
        fx.validate(t, "transcript.schema.yaml")
        p.write_text(json.dumps(t))
    agg, out = tmp_path / "aggregate", tmp_path / "report"
    fx.aggregate(cfg, runs, agg)
    assert fx.report(cfg, runs, agg, out, tmp_path / "heldout" / "agreement.json") == 0
    summary = json.loads((agg / "summary.json").read_text())
    [env] = summary["environment_failures"]
    assert (env["tool"], env["repo"], env["trials_with_error"], env["trials"]) == ("git", "tiny", 4, 6)
    git = next(r for r in summary["tools"] if r["tool"] == "git")
    shown = GO.format(n=0, pid=4000)
    assert git["environment"] == f"environment: '{shown}' on tiny, 4/6 trials"
    md = (out / "report.md").read_text()
    headline = md[md.index("## Headline") : md.index("## Headline") + 3000]
    row = next(line for line in headline.splitlines() if line.startswith("| git |"))
    assert f"{git['verdict']} (environment: '{shown}' on tiny, 4/6 trials)" in row
    could_not = md[md.index("## What could not run") : md.index("## Headline")]
    assert shown in could_not and "the server needs Go on this machine for tiny" in could_not
    assert "summary.json `environment_failures`" in could_not


def test_only_an_error_that_says_the_machine_lacks_something_is_the_environment():
    """A deterministic agent repeats its own misuse in every trial as a missing runtime does: the
    error's words decide whether the headline calls it the environment's or a repeated error."""
    from mcptrials.analyze.environment import ENVIRONMENT, REPEATED, environment_note, error_kind

    assert error_kind("Go is not installed") == ENVIRONMENT
    assert (
        error_kind(
            "Exception: The language server manager is not initialized, indicating a problem during "
            "project initialisation."
        )
        == ENVIRONMENT
    )
    assert error_kind("Failed to download the Kotlin language server") == ENVIRONMENT
    assert error_kind("Project '/tmp/mcptrials-trial-x/workspace' not found") == REPEATED
    assert error_kind("Either language or file_path must be provided") == REPEATED
    unregistered = ["Error executing tool find_text: Project '/tmp/w{i}/workspace' not found"]
    found = failures(
        [("tree-sitter", "gin", i, [unregistered[0].format(i=i)]) for i in (1, 2)]
        + [("serena", "gin", i, [GO.format(n=i, pid=i)]) for i in (1, 2)]
    )
    assert {(f["tool"], f["kind"]) for f in found} == {("tree-sitter", REPEATED), ("serena", ENVIRONMENT)}
    assert environment_note(found, "reference", "tree-sitter").startswith("repeated error: 'Error executing tool")
    assert environment_note(found, "reference", "serena").startswith("environment: 'Go is not installed")
