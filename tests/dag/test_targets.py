"""The files the rules name (mcptrials.dag.targets) are the trial folder of core.identity."""

import re

from mcptrials.core.identity import FIELDS, TrialKey
from mcptrials.dag.targets import RUNS, WILDCARDS, log_file, run_file, trial_files
from mcptrials.matrix.config import load_matrix

from matrix_helpers import ROOT


def test_a_pattern_filled_with_a_key_is_that_trials_file():
    k = TrialKey("m", "loop", "baseline", "flask", "s1", 2)
    assert run_file("scored.json").format(**k.cell()) == f"{k.dir(RUNS)}/scored.json" \
        == "results/runs/m/loop/baseline/flask/s1/2/scored.json"
    assert log_file("judged").format(**k.cell()) == "results/logs/judged/m/loop/baseline/flask/s1/2.log"


def test_every_field_has_a_wildcard_pattern_that_matches_its_value():
    k = TrialKey("m", "loop", "baseline", "flask", "s1", 2)
    assert set(WILDCARDS) == set(FIELDS)
    assert all(re.fullmatch(WILDCARDS[f], str(v)) for f, v in k.cell().items())
    assert not re.fullmatch(WILDCARDS["trial"], "x") and not re.fullmatch(WILDCARDS["tool"], "a/b")


def test_the_targets_are_every_cell_of_the_matrix_in_order():
    m = load_matrix(ROOT / "config.yaml")
    keys = list(m.cells())
    assert trial_files(m, "judged.json") == [f"{k.dir(RUNS)}/judged.json" for k in keys] and len(keys) > 1
