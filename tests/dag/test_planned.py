"""The plan's small parts (mcptrials.dag.planned, mcptrials.dag.rerun): which inputs changed,
in words, and the plan line's product."""

from matrix_helpers import write_matrix
from mcptrials.dag.planned import change_kind, matrix_product, rerun_reason
from mcptrials.dag.rerun import changed_inputs, trial_inputs
from mcptrials.matrix.config import load_matrix


def test_changed_inputs_counts_a_label_on_one_side_only():
    assert changed_inputs({"a": "1", "b": "2"}, {"a": "1", "b": "3", "c": "4"}) == ["b", "c"]
    assert changed_inputs({"a": "1"}, {"a": "1"}) == []


def test_each_kind_of_change_in_words():
    assert change_kind("files:tools.mine") == "server files changed"
    assert change_kind("tools.mine.args") == "tool entry changed"
    assert change_kind("scenario.steps.prompt") == "scenario changed"
    assert change_kind("repos.demo.commit") == "repository changed"
    assert change_kind("limits.max_turns") == "config changed"
    assert (
        rerun_reason(["tools.x.args", "files:tools.x", "tools.x.env"])
        == "rerun: server files changed, tool entry changed"
    )


def test_a_trials_inputs_name_what_its_jobs_depend_on(tmp_path):
    write_matrix(tmp_path)
    m = load_matrix(str(tmp_path / "config.yaml"))
    key = next(iter(m.cells()))
    got = trial_inputs(m, key)
    assert {"repos.tiny.commit", "scenario.steps.prompt", "tools.baseline.args", "prompt:system.md"} <= set(got)
    assert "scenario.steps.checks" not in got  # a grading part: scored reruns, not the trial
    assert all(len(v) == 16 for v in got.values())


def test_the_product_says_which_pairs_are_dropped(tmp_path):
    write_matrix(tmp_path, trials=2)
    m = load_matrix(str(tmp_path / "config.yaml"))
    assert matrix_product(m) == "1 model(s) x 1 host(s) x 1 tool(s) x 1 scenario(s) x 2 trial(s) = 2 trials"
    (tmp_path / "b").mkdir()
    write_matrix(
        tmp_path / "b",
        trials=2,
        extra={
            "models": {
                "reference": {"provider": "reference"},
                "claude": {"provider": "anthropic", "model": "claude-x"},
            },
            "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
        },
    )
    m2 = load_matrix(str(tmp_path / "b" / "config.yaml"))
    text = matrix_product(m2)
    n = sum(1 for _ in m2.cells())
    assert n < 8 and text.startswith("2 model(s) x 2 host(s) x 1 tool(s) x 1 scenario(s) x 2 trial(s) = 8, less ")
    assert text.endswith(f": {n} trials") and "reference under cc" in text
