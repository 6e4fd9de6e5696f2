"""Ablation arms (issue 37 item 1): `ablate:` on a tool entry expanded at load into variants
of it (mcptrials.matrix.ablation): names, what each arm hides, the names read from the
recorded snapshot, and each bad value refused with the file, the field and the fix."""

from __future__ import annotations

import json
import math

import pytest
import yaml

from matrix_helpers import faulty_tool, write_matrix
from mcptrials.matrix.ablation import ablation_of, sample_orders, subsets_of
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError


def tools(ablate, **base) -> dict:
    return {"baseline": {"transport": "none"}, "faulty": faulty_tool("ok", ablate=ablate, **base)}


def test_leave_one_out_with_listed_names_makes_one_variant_per_tool(tmp_path):
    m = load_matrix(write_matrix(tmp_path, tools=tools({"leave_one_out": ["echo", "big"]})))
    assert list(m.tools) == ["baseline", "faulty", "faulty-without-echo", "faulty-without-big"]
    arm = m.specs.tools["faulty-without-echo"]
    assert arm.variant_of == "faulty" and arm.command == m.specs.tools["faulty"].command
    assert arm.overrides == {"tools": {}, "hide": ["echo"], "ablation": {"of": "faulty", "kind": "leave_one_out"}}
    assert ablation_of(m.tools["faulty-without-big"])["of"] == "faulty" and ablation_of(m.tools["faulty"]) is None
    assert m.installed_tools() == ["faulty"]  # the arms run the base's install
    # the base loses the field: adding an ablation reruns nothing of it
    plain = load_matrix(
        write_matrix(tmp_path / "plain", tools={"baseline": {"transport": "none"}, "faulty": faulty_tool("ok")})
    )
    assert "ablate" not in m.tools["faulty"] and m.tools["faulty"] == plain.tools["faulty"]


def test_names_come_from_the_recorded_snapshot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    snap = tmp_path / "results" / "snapshots" / "faulty" / "tiny" / "tools.json"
    snap.parent.mkdir(parents=True)
    snap.write_text(json.dumps({"tools": [{"name": "echo"}, {"name": "big"}, {"name": "text.fail"}]}))
    m = load_matrix(write_matrix(tmp_path / "p", tools=tools("leave_one_out")))
    assert [t for t in m.tools if t.startswith("faulty-")] == [
        "faulty-without-echo",
        "faulty-without-big",
        "faulty-without-text_fail",  # the arm's name only: the proxy hides the server's own name
    ]
    assert m.tools["faulty-without-text_fail"]["overrides"]["hide"] == ["text.fail"]


def test_without_a_snapshot_or_names_the_error_says_where_and_how(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as e:
        load_matrix(write_matrix(tmp_path / "p", tools=tools("leave_one_out")))
    msg = str(e.value)
    assert "field tools.faulty.ablate: leave_one_out needs the names" in msg
    assert "results/snapshots/faulty/tiny/tools.json, field tools" in msg
    assert (
        "`ablate: {leave_one_out: [name_a, name_b]}`" in msg
        and "snakemake -- results/snapshots/faulty/tiny/tools.json" in msg
    )


def test_all_subsets_and_sampled_orders(tmp_path):
    m = load_matrix(write_matrix(tmp_path, tools=tools({"subsets": "all", "tools": ["echo", "big", "fail"]})))
    arms = [t for t in m.tools if t.startswith("faulty-")]
    assert len(arms) == 2**3 - 1 and "faulty-without-all" in arms and "faulty-without-big-fail" in arms
    assert m.tools["faulty-without-all"]["overrides"]["hide"] == ["echo", "big", "fail"]
    assert m.tools["faulty-without-big-fail"]["overrides"]["ablation"]["kind"] == "subsets"
    names = ["a", "b", "c", "d"]
    orders = sample_orders(names, 3, 7)
    assert orders == sample_orders(names, 3, 7) and all(sorted(o) == names for o in orders)
    sets = subsets_of(names, {"sample": 3, "seed": 7})
    assert frozenset() in sets and frozenset(names) not in sets
    assert {frozenset(o[:k]) for o in orders for k in range(4)} == set(sets)
    assert len(subsets_of(names, "all")) == 2**4 - 1 and math.comb(4, 2) == sum(
        len(s) == 2 for s in subsets_of(names, "all")
    )


def test_instructions_off_is_one_arm(tmp_path):
    m = load_matrix(write_matrix(tmp_path, tools=tools({"instructions": "off"})))
    assert m.tools["faulty-without-instructions"]["overrides"] == {
        "tools": {},
        "instructions": False,
        "ablation": {"of": "faulty", "kind": "instructions"},
    }


@pytest.mark.parametrize(
    "ablate, base, match",
    [
        (
            "leave_one",
            {},
            r"field tools\.faulty\.ablate: 'leave_one' is not allowed; use leave_one_out, .*\{instructions: off\}",
        ),
        ({"subsets": "some"}, {}, r"field tools\.faulty\.ablate: .* is not allowed; use leave_one_out"),
        ({"leave_one_out": []}, {}, r"field tools\.faulty\.ablate: .* is not allowed"),
        (
            {"subsets": "all", "tools": list("abcdefg")},
            {},
            r"field tools\.faulty\.ablate\.subsets: all would run 127 arms for 7 tools .* `subsets: \{sample: 20\}`",
        ),
        (
            {"leave_one_out": ["echo"]},
            {"transport": "http", "url": "http://127.0.0.1:9/mcp", "network": True},
            r"field tools\.faulty\.ablate: .*has transport http: remove `ablate` or use transport stdio",
        ),
    ],
)
def test_bad_ablate_values_are_refused_with_the_field_and_the_fix(tmp_path, ablate, base, match):
    with pytest.raises(ConfigError, match=match):
        load_matrix(write_matrix(tmp_path, tools=tools(ablate, **base)))


def test_an_arm_name_taken_by_another_tool_is_refused(tmp_path):
    t = dict(tools({"leave_one_out": ["echo"]}), **{"faulty-without-echo": faulty_tool("ok")})
    with pytest.raises(ConfigError, match=r"field tools\.faulty\.ablate: the arm faulty-without-echo is also a tool"):
        load_matrix(write_matrix(tmp_path, tools=t))


def test_confirm_adds_the_arm_its_server_and_the_baseline_on_held_out_scenarios(tmp_path):
    from matrix_helpers import SCENARIO

    scenarios = {"t1": SCENARIO, "t2": SCENARIO, "h1": dict(SCENARIO, split="held-out")}
    ablate = {"leave_one_out": ["echo", "big"], "confirm": ["faulty-without-echo"]}
    m = load_matrix(write_matrix(tmp_path, tools=tools(ablate), scenarios=scenarios, trials=2))
    assert m.confirmed == {"faulty-without-echo": "faulty"}
    assert [s.id for s in m.run_scenarios()] == ["t1", "t2"] and [s.id for s in m.confirm_scenarios()] == ["h1"]
    held = [(k.tool, k.trial) for k in m.cells() if k.scenario == "h1"]
    # baseline, full server and the confirmed arm, 2 trials each; the other arm never on held-out
    assert held == [(t, n) for t in ("baseline", "faulty", "faulty-without-echo") for n in (1, 2)]
    assert sum(1 for _ in m.cells()) == 4 * 2 * 2 + 6
    # confirming changes no tool entry: the arm's train trials are not rerun
    plain = load_matrix(
        write_matrix(tmp_path / "p", tools=tools({"leave_one_out": ["echo", "big"]}), scenarios=scenarios)
    )
    assert m.tools == plain.tools and not plain.confirm_scenarios() and sum(1 for _ in plain.cells()) == 8
    from mcptrials.dag.planned import matrix_product

    assert matrix_product(m).endswith(
        "= 16 trials, and 6 trial(s) confirming ablation arms on held-out scenario(s) (ablate.confirm)"
    )


def test_confirm_must_name_an_arm(tmp_path):
    with pytest.raises(ConfigError, match=r"tools.faulty.ablate.confirm: echo is not an arm of tools.faulty"):
        load_matrix(write_matrix(tmp_path, tools=tools({"leave_one_out": ["echo"], "confirm": ["echo"]})))


def test_confirm_with_trials_in_waves_is_refused(tmp_path):
    cfg = write_matrix(tmp_path, tools=tools({"leave_one_out": ["echo"], "confirm": ["faulty-without-echo"]}))
    data = yaml.safe_load(cfg.read_text())
    data["trials"] = {"min": 2, "max": 6, "until": "decided"}
    cfg.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(ConfigError, match=r"field tools\.\*\.ablate\.confirm: .* field trials is in waves"):
        load_matrix(cfg)
