"""The files the rules name (mcptrials.dag.targets) are the trial folder of core.identity."""

import re

from mcptrials.core.identity import FIELDS, TrialKey
from mcptrials.dag.targets import RUNS, WILDCARDS, log_file, run_file, trial_files, wildcards
from mcptrials.matrix.config import load_matrix

from matrix_helpers import ROOT


def test_a_pattern_filled_with_a_key_is_that_trials_file():
    k = TrialKey("m", "loop", "baseline", "flask", "s1", 2)
    assert (
        run_file("scored.json").format(**k.cell())
        == f"{k.dir(RUNS)}/scored.json"
        == "results/runs/m/loop/baseline/flask/s1/2/scored.json"
    )
    assert log_file("judged").format(**k.cell()) == "results/logs/judged/m/loop/baseline/flask/s1/2.log"


def test_every_field_has_a_wildcard_pattern_that_matches_its_value():
    k = TrialKey("m", "loop", "baseline", "flask", "s1", 2)
    assert set(WILDCARDS) == set(FIELDS)
    assert all(re.fullmatch(WILDCARDS[f], str(v)) for f, v in k.cell().items())
    assert not re.fullmatch(WILDCARDS["trial"], "x") and not re.fullmatch(WILDCARDS["tool"], "a/b")


def test_the_workflows_wildcards_are_the_matrix_values_and_nothing_else():
    m = load_matrix(ROOT / "config.yaml")
    w = wildcards(m)
    assert set(w) == set(FIELDS)
    for k in m.cells():
        assert all(re.fullmatch(w[f], str(v)) for f, v in k.cell().items()), k
    for f, wrong in [
        ("tool", "NOPE"),
        ("tool", "gi"),
        ("tool", "git/x"),
        ("scenario", "limits-and-alert"),
        ("model", "referenc"),
        ("host", "loops"),
        ("repo", "demo2"),
        ("trial", str(m.trials + 1)),
        ("trial", "0"),
    ]:
        assert not re.fullmatch(w[f], wrong), (f, wrong)
    # regex-escaped: a dot in a name is a dot, not any character
    m.tools["v1.2"] = m.tools["git"]
    assert re.fullmatch(wildcards(m)["tool"], "v1.2") and not re.fullmatch(wildcards(m)["tool"], "v1x2")


def test_the_targets_are_every_cell_of_the_matrix_in_order():
    m = load_matrix(ROOT / "config.yaml")
    keys = list(m.cells())
    assert trial_files(m, "judged.json") == [f"{k.dir(RUNS)}/judged.json" for k in keys] and len(keys) > 1


def test_the_records_before_a_trial_are_named_once():
    from mcptrials.dag.targets import CHECKOUT_FILE, HOST_INSTALL_FILE, INDEX_FILE, SNAPSHOT_FILE, TOOL_INSTALL_FILE

    assert CHECKOUT_FILE.format(repo="flask") == "results/checkouts/flask/checkout.json"
    assert TOOL_INSTALL_FILE.format(tool="git") == "results/tools/git/install.json"
    assert HOST_INSTALL_FILE.format(host="cc") == "results/hosts/cc/install.json"
    assert INDEX_FILE.format(tool="idx", repo="flask") == "results/index/idx/flask/index.json"
    assert SNAPSHOT_FILE.format(tool="git", repo="flask") == "results/snapshots/git/flask/tools.json"
    rules = "".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    assert not re.search(r'"results/(runs|checkouts|tools|hosts|index|snapshots)/', rules), (
        "a rule spells a record's path: ask mcptrials.dag.targets"
    )
