"""The rerun table (mcptrials.dag.rerun.TABLE) is the whole story of what reruns.

- every field of the config, tool and scenario schemas has a row, and no row is stale, so a
  new field cannot be added without saying what it reruns;
- editing each field changes the params of exactly the stages its row names (in-process);
- a finished project, each field edited in turn, plans exactly those jobs and everything
  downstream of them (`snakemake -n`, the real workflow);
- the Reruns page of the manual (docs/reruns.md) holds the generated table.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import pytest
import yaml

from matrix_helpers import ROOT, SCENARIO, faulty_tool, write_matrix
from mcptrials.matrix.config import load_matrix
from mcptrials.core.paths import SCHEMA_DIR
from mcptrials.dag.rerun import BY_FIELD, RULE_KEYS, SHAPE, TABLE, heldout_scenarios, markdown_table, rule_params

# --- every schema field has a row --------------------------------------------------


def _schema(name):
    return yaml.safe_load((SCHEMA_DIR / name).read_text())


def schema_fields() -> set[str]:
    """Field patterns as the table writes them, read off the schemas."""
    cfg, tool, scen = _schema("config.schema.yaml"), _schema("tool.schema.yaml"), _schema("scenario.schema.yaml")
    out = set()
    for name, sub in cfg["properties"].items():
        if name in ("tools", "repos", "models", "hosts"):
            item = tool if name == "tools" else sub["additionalProperties"]
            out |= {f"{name}.*.{p}" for p in item["properties"]}
        elif "properties" in sub:
            out |= {f"{name}.{p}" for p in sub["properties"]}
        else:
            out.add(name)
    for name, sub in scen["properties"].items():
        if name != "steps":
            out.add(f"scenario.{name}")
            continue
        for p, psub in sub["items"]["properties"].items():
            if p == "state_check":
                out |= {f"scenario.steps.state_check.{q}" for q in psub["properties"]}
            else:
                out.add(f"scenario.steps.{p}")
    return out


def test_every_schema_field_has_a_row_and_no_row_is_stale():
    table = {e.field for e in TABLE if not e.field.startswith(("prompt:", "code:", "files:"))}
    fields = schema_fields()
    assert fields - table == set(), f"fields without a row in mcptrials.dag.rerun.TABLE: {sorted(fields - table)}"
    assert table - fields == set(), f"rows for fields the schemas no longer have: {sorted(table - fields)}"
    assert {e.field for e in TABLE if e.field.startswith("prompt:")} == {"prompt:system.md", "prompt:judge.md"}


def test_required_behaviour_of_the_issue():
    """The rows the issue names: nothing costly reruns for a number that did not change."""
    assert BY_FIELD["weights.quality"].stages == ("aggregate",)
    assert BY_FIELD["pricing"].stages == ("aggregate",)
    assert BY_FIELD["judge.threshold"].stages == ("report",) and BY_FIELD["judge.strict"].stages == ("report",)
    for f in ("judge.model", "judge.provider", "judge.repeats", "prompt:judge.md"):
        assert "judged" in BY_FIELD[f].stages and "heldout" in BY_FIELD[f].stages
    assert "transcript" not in BY_FIELD["pricing"].stages and "judged" not in BY_FIELD["judge.threshold"].stages


def test_the_reruns_page_holds_the_generated_table():
    page = (ROOT / "docs" / "reruns.md").read_text()
    assert markdown_table() in page, "docs/reruns.md's table differs: paste `mcptrials reruns` into it"


# --- a small project, and one edit per field -------------------------------------------

HELD = dict(copy.deepcopy(SCENARIO), title="Held out", split="held-out")
CALLERS = dict(copy.deepcopy(SCENARIO), title="Who calls the helper")


def make_project(wd: Path, cc: bool = False) -> Path:
    """baseline + the fixture server x two training scenarios and a held-out one, reference model
    and judge; the demo's held-out anchor; with cc, also a claude-code host, a claude model and
    a recorded model."""
    extra = {"locked": "locked", "limits": {"max_turns": 5}}
    if cc:
        extra["models"] = {
            "reference": {"provider": "reference"},
            "claude": {"provider": "anthropic", "model": "claude-sonnet-4-6"},
            "rec": {
                "provider": "recorded",
                "format": "claude-code-stream-json",
                "path": "recorded/{tool}/{repo}/{scenario}/{trial}.jsonl",
            },
        }
        extra["hosts"] = {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}}
    # echo has the network, so that an edit to transport http stays one field's edit
    write_matrix(
        wd,
        tools={"baseline": {"transport": "none"}, "echo": faulty_tool("ok", network=True)},
        scenarios={"find-helper": SCENARIO, "callers": CALLERS, "held": HELD},
        extra=extra,
    )
    shutil.copytree(ROOT / "locked", wd / "locked", dirs_exist_ok=True)
    return wd


def _weights(c, a, b):
    c["weights"] = {"keyword": 0.10, "quality": 0.55, "citation": 0.15, "efficiency": 0.20}
    c["weights"][a] += 0.05
    c["weights"][b] -= 0.05


def _step(fn):
    return lambda c, s: fn(s["find-helper"]["steps"][0])


# field -> (edit of (config, scenarios by id), in the reference-only project too?)
EDITS = {
    "tools.*.transport": lambda c, s: c["tools"]["echo"].update(transport="http", url="http://127.0.0.1:{port}/mcp"),
    "tools.*.command": lambda c, s: c["tools"]["echo"].update(command="python3"),
    "tools.*.args": lambda c, s: c["tools"]["echo"]["args"].append("--quiet"),
    "tools.*.url": lambda c, s: c["tools"]["echo"].update(url="http://127.0.0.1:9/mcp"),
    "tools.*.env": lambda c, s: c["tools"]["echo"]["env"].update(EXTRA="1"),
    "tools.*.version": lambda c, s: c["tools"]["echo"].update(version="2"),
    "tools.*.startup_timeout": lambda c, s: c["tools"]["echo"].update(startup_timeout=30),
    "tools.*.install": lambda c, s: c["tools"]["echo"].update(install={"pip": ["six==1.16.0"]}),
    "tools.*.index": lambda c, s: c["tools"]["echo"].update(index={"command": "sh", "args": ["-c", "true"]}),
    "tools.*.instructions": lambda c, s: c["tools"]["echo"].update(instructions=False),
    "tools.*.call_timeout": lambda c, s: c["tools"]["echo"].update(call_timeout=5),
    "tools.*.sandbox": lambda c, s: c["tools"]["echo"].update(sandbox="none"),
    "tools.*.network": lambda c, s: c["tools"]["echo"].update(network=False),
    "tools.*.read_only": lambda c, s: c["tools"]["echo"].setdefault("read_only", []).append("README.md"),
    "tools.*.variant_of": None,  # edited on a project with a description variant: see EDITS_ON_VARIANT
    "tools.*.overrides": None,
    "sandbox": lambda c, s: c.update(sandbox="none"),
    "repos.*.url": lambda c, s: c["repos"]["tiny"].update(url="./repo"),
    "repos.*.commit": lambda c, s: c["repos"]["tiny"].update(commit="f" * 40),
    "mirrors": lambda c, s: c.update(mirrors={"repo": "repo"}),
    "scenarios": lambda c, s: c.update(scenarios=["scenarios/find-helper.yaml"]),
    "splits": lambda c, s: c.update(splits=["train", "held-out"]),
    "trials": lambda c, s: c.update(trials=2),
    "decide.alpha": lambda c, s: c.update(decide={"alpha": 0.1}),
    "decide.margin": lambda c, s: c.update(decide={"margin": 0.1}),
    "locked": lambda c, s: c.update(locked="locked2"),
    "models.*.provider": lambda c, s: c["models"]["reference"].update(provider="openai", model="gpt-5.1"),
    "models.*.model": lambda c, s: c["models"]["reference"].update(model="ref-2"),
    "models.*.base_url": lambda c, s: c["models"]["reference"].update(base_url="http://127.0.0.1:9"),
    "models.*.max_retries": lambda c, s: c["models"]["reference"].update(max_retries=1),
    "models.*.params": lambda c, s: c["models"]["reference"].update(params={"max_tokens": 100}),
    "models.*.api_key_env": lambda c, s: c["models"]["reference"].update(api_key_env="OTHER_KEY"),
    # recorded-model fields: the cc project only (see RECORDED_ONLY)
    "models.*.format": lambda c, s: c["models"]["rec"].update(format="mcptrials"),
    "models.*.path": lambda c, s: c["models"]["rec"].update(path="other/{tool}/{scenario}/{trial}.json"),
    "retries.max_attempts": lambda c, s: c.update(retries={"max_attempts": 5}),
    "limits.max_turns": lambda c, s: c["limits"].update(max_turns=6),
    "limits.max_output_tokens": lambda c, s: c["limits"].update(max_output_tokens=100),
    "limits.max_seconds": lambda c, s: c["limits"].update(max_seconds=10),
    "limits.max_result_tokens": lambda c, s: c["limits"].update(max_result_tokens=1000),
    "judge.provider": lambda c, s: c.update(judge={"provider": "anthropic", "model": "claude-haiku-4-5"}),
    "judge.model": lambda c, s: c.update(judge={"model": "another"}),
    "judge.base_url": lambda c, s: c.update(judge={"base_url": "http://127.0.0.1:9"}),
    "judge.repeats": lambda c, s: c.update(judge={"repeats": 2}),
    "judge.api_key_env": lambda c, s: c.update(judge={"api_key_env": "OTHER_KEY"}),
    "judge.threshold": lambda c, s: c.update(judge={"threshold": 0.5}),
    "judge.strict": lambda c, s: c.update(judge={"strict": True}),
    "weights.keyword": lambda c, s: _weights(c, "keyword", "quality"),
    "weights.quality": lambda c, s: _weights(c, "quality", "citation"),
    "weights.citation": lambda c, s: _weights(c, "citation", "efficiency"),
    "weights.efficiency": lambda c, s: _weights(c, "efficiency", "keyword"),
    "pricing": lambda c, s: c.update(pricing={"ref-2": {"input": 1.0, "output": 2.0}}),
    "compare": lambda c, s: c.update(compare=[["echo", "baseline"]]),
    "margin": lambda c, s: c.update(margin=0.02),
    "citation_extensions": lambda c, s: c.update(citation_extensions=[".py", ".md"]),
    "budget.max_cost_usd": lambda c, s: c.update(budget={"max_cost_usd": 1000.0}),
    "budget.input_tokens_per_call": lambda c, s: c.update(budget={"input_tokens_per_call": 100000}),
    "scenario.title": lambda c, s: s["find-helper"].update(title="Another title"),
    "scenario.description": lambda c, s: s["find-helper"].update(description="A note."),
    "scenario.repo": lambda c, s: (
        c["repos"].update(other=dict(c["repos"]["tiny"])),
        s["find-helper"].update(repo="other"),
    ),
    "scenario.split": lambda c, s: s["find-helper"].update(split="held-out"),
    "scenario.suite": lambda c, s: s["find-helper"].update(suite="regression"),
    "scenario.limits": lambda c, s: s["find-helper"].update(limits={"max_turns": 3}),
    "scenario.rubric": lambda c, s: s["find-helper"]["rubric"]["criteria"][0].update(question="Where?"),
    "scenario.one_answer": lambda c, s: s["find-helper"].update(one_answer=True),
    "scenario.workspace": lambda c, s: s["find-helper"].update(workspace="read-only"),
    "scenario.steps.name": _step(lambda st: st.update(name="find")),
    "scenario.steps.prompt": _step(lambda st: st.update(prompt="Where is `helper` defined? Cite file:line.")),
    "scenario.steps.answer_key": _step(lambda st: st.update(answer_key="Where")),
    "scenario.steps.checks": _step(lambda st: st["checks"].append({"type": "word", "value": "double"})),
    "scenario.steps.citations": _step(lambda st: st.update(citations={"gold": ["src/util.py:1-3"]})),
    "scenario.steps.exact_answer": _step(lambda st: st.update(exact_answer={"value": "src/util.py"})),
    "scenario.steps.state_check.command": _step(lambda st: st.update(state_check={"command": "true", "expect": ""})),
    "scenario.steps.state_check.expect": None,  # edited on a step that has a state check: see EDITS_ON_CHECK
    "scenario.steps.state_check.required": None,
    "scenario.steps.state_check.sql": _step(
        lambda st: st.update(
            state_check={"sql": {"database": "data/app.db", "query": "SELECT count(*) FROM t", "value": 1}}
        )
    ),
    "scenario.steps.state_check.json": _step(
        lambda st: st.update(state_check={"json": {"file": "data/graph.jsonl", "path": "$[*].name", "count": 2}})
    ),
    "scenario.steps.state_check.unchanged_except": _step(
        lambda st: st.update(state_check={"unchanged_except": {"file": "data/graph.jsonl", "allow": [{"name": "x"}]}})
    ),
    "scenario.steps.expected_tools": _step(lambda st: st.update(expected_tools=["grep"])),
    "scenario.steps.key_points": _step(lambda st: st["key_points"].append("it returns x * 2")),
    "scenario.steps.rubric": _step(lambda st: st.update(rubric=copy.deepcopy(SCENARIO["rubric"]))),
    # claude-code host fields: the cc project only (see CC_ONLY)
    "hosts.*.kind": lambda c, s: c["hosts"].update(loop={"kind": "claude-code"}),
    "hosts.*.builtin_tools": lambda c, s: c["hosts"]["cc"].update(builtin_tools=["Read"]),
    "hosts.*.bare": lambda c, s: c["hosts"]["cc"].update(bare=True),
    "hosts.*.extra_args": lambda c, s: c["hosts"]["cc"].update(extra_args=["--effort", "low"]),
    "hosts.*.version": lambda c, s: c["hosts"]["cc"].update(version="2.1.329"),
}
CHECK = {"command": "git status --short", "expect": "", "required": True}
EDITS_ON_CHECK = {  # a project whose step already has a state check
    "scenario.steps.state_check.expect": _step(lambda st: st["state_check"].update(expect="M ")),
    "scenario.steps.state_check.required": _step(lambda st: st["state_check"].update(required=False)),
}
VARIANT = {"variant_of": "echo", "overrides": {"tools": {"echo": {"description": "Say it back."}}}}
EDITS_ON_VARIANT = {  # a project with a variant of echo, and echo2, the same server under another name
    "tools.*.variant_of": lambda c, s: c["tools"]["echo-v"].update(variant_of="echo2"),
    "tools.*.overrides": lambda c, s: c["tools"]["echo-v"]["overrides"]["tools"]["echo"].update(name="say"),
}
CC_ONLY = {"hosts.*.kind", "hosts.*.builtin_tools", "hosts.*.bare", "hosts.*.extra_args", "hosts.*.version"}
RECORDED_ONLY = {"models.*.format", "models.*.path"}
LOOP_ONLY = {"scenario.workspace"}  # refused beside a claude-code host (matrix.config.check_read_only_workspaces)
PROMPTS = ("prompt:system.md", "prompt:judge.md")


def read_project(wd: Path) -> tuple[dict, dict]:
    cfg = yaml.safe_load((wd / "config.yaml").read_text())
    scen = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((wd / "scenarios").glob("*.yaml"))}
    return cfg, scen


def write_project(wd: Path, cfg: dict, scen: dict) -> None:
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    for sid, data in scen.items():
        (wd / "scenarios" / f"{sid}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def apply_edit(wd: Path, field: str, edits=None) -> None:
    cfg, scen = read_project(wd)
    (edits or EDITS)[field](cfg, scen)
    if field == "locked" and not (wd / "locked2").exists():
        shutil.copytree(wd / "locked", wd / "locked2")
    write_project(wd, cfg, scen)


def changed_params(before: dict, after: dict, new_jobs: bool = False) -> dict[str, set]:
    """rule -> the job keys whose params differ (keys on both sides), and with new_jobs the
    keys that only the edit brought (a tool's first index)."""
    return {
        rule: {
            k
            for k in after.get(rule, {})
            if (k in before[rule] and before[rule][k] != after[rule][k]) or (new_jobs and k not in before[rule])
        }
        for rule in before
    }


def applicable(m, rule: str, field: str) -> bool:
    """Whether a rule has a job the edited entity can reach in this matrix."""
    if rule == "index":
        return any(spec.get("index") for spec in m.tools.values())
    if rule == "install_host":
        return any(spec["kind"] == "claude-code" for spec in m.hosts.values())
    if rule == "heldout" and field.startswith("scenario."):
        return "find-helper" in heldout_scenarios(m)
    return True


def _check_rows_in_process(wd: Path, fields, edits) -> None:
    cfg0, scen0 = read_project(wd)
    base = rule_params(load_matrix(wd / "config.yaml"))
    for field in fields:
        apply_edit(wd, field, edits)
        m = load_matrix(wd / "config.yaml")
        after = rule_params(m)
        e = BY_FIELD[field]
        got = {rule for rule, keys in changed_params(base, after, new_jobs=e.stages != SHAPE).items() if keys}
        if e.stages == SHAPE:  # only the one-job stages that see every cell may change
            assert got <= {"aggregate", "report"}, f"{field}: a shape change altered existing params of {got}"
        else:
            want = {r for r in e.stages if applicable(m, r, field)}
            assert got == want, f"{field}: params changed for {sorted(got)}, the table says {sorted(want)}"
        write_project(wd, cfg0, scen0)
        for p in (wd / "scenarios").glob("*.yaml"):
            if p.stem not in scen0:
                p.unlink()


def test_each_edit_changes_exactly_the_params_its_row_names(tmp_path):
    wd = make_project(tmp_path, cc=True)
    # hosts.*.kind is left out here: a new kind brings its own defaults (a claude-code host's
    # version), so the edit is several fields at once; the DAG test covers it.
    fields = [f for f, fn in EDITS.items() if fn is not None and f != "hosts.*.kind" and f not in LOOP_ONLY]
    _check_rows_in_process(wd, fields, EDITS)
    _check_rows_in_process(make_project(tmp_path / "loop-only"), list(LOOP_ONLY), EDITS)
    # the state check's parts, on a step that has one
    cfg, scen = read_project(wd)
    scen["find-helper"]["steps"][0]["state_check"] = dict(CHECK)
    write_project(wd, cfg, scen)
    _check_rows_in_process(wd, list(EDITS_ON_CHECK), EDITS_ON_CHECK)
    # a description variant's own fields (the DAG side: tests/prepare/test_proxy.py)
    cfg, scen = read_project(wd)
    cfg["tools"].update({"echo2": copy.deepcopy(cfg["tools"]["echo"]), "echo-v": copy.deepcopy(VARIANT)})
    write_project(wd, cfg, scen)
    _check_rows_in_process(wd, list(EDITS_ON_VARIANT), EDITS_ON_VARIANT)


def test_a_scenario_workspace_left_at_its_default_changes_no_rerun_key(tmp_path):
    """`workspace` came after results existed: absent or `copy` (the schema's default), every
    job's params are what they were without the field; `read-only` changes the transcripts'."""
    wd = make_project(tmp_path)
    base = rule_params(load_matrix(wd / "config.yaml"))
    cfg, scen = read_project(wd)
    assert "workspace" not in scen["find-helper"]
    scen["find-helper"]["workspace"] = "copy"
    write_project(wd, cfg, scen)
    assert rule_params(load_matrix(wd / "config.yaml")) == base
    scen["find-helper"]["workspace"] = "read-only"
    write_project(wd, cfg, scen)
    changed = changed_params(base, rule_params(load_matrix(wd / "config.yaml")))
    assert {rule for rule, keys in changed.items() if keys} == {"transcript"}
    assert {k[3] for k in changed["transcript"]} == {"find-helper"}


def test_heldout_follows_only_the_rubrics_of_the_anchor_scenarios(tmp_path):
    wd = make_project(tmp_path)
    frozen = wd / "anchor" / "scenarios"
    frozen.mkdir(parents=True)
    shutil.copy(wd / "scenarios" / "held.yaml", frozen / "held.yaml")
    cfg, scen = read_project(wd)
    cfg["locked"] = "anchor"
    write_project(wd, cfg, scen)
    base = rule_params(load_matrix(wd / "config.yaml"))
    scen["held"]["rubric"]["criteria"][0]["question"] = "Where, exactly?"
    write_project(wd, cfg, scen)
    assert changed_params(base, rule_params(load_matrix(wd / "config.yaml")))["heldout"] == {()}
    scen["find-helper"]["rubric"]["criteria"][0]["question"] = "Where, exactly?"
    base = rule_params(load_matrix(wd / "config.yaml"))
    write_project(wd, cfg, scen)
    changed = changed_params(base, rule_params(load_matrix(wd / "config.yaml")))
    assert changed["heldout"] == set() and changed["judged"] == {("find-helper",)}


def test_every_rule_of_the_workflow_has_a_key():
    rules = set()
    for f in (ROOT / "workflow" / "rules").glob("*.smk"):
        rules |= set(re.findall(r"^\s*(?:rule|checkpoint) (\w+):", f.read_text(), re.M))
    assert rules == set(RULE_KEYS), f"rules without rerun keys, or keys without a rule: {rules ^ set(RULE_KEYS)}"


EDITED = {"tool": "echo", "model": "reference", "host": "cc", "repo": "tiny", "scenario": "find-helper"}


def test_an_edit_reaches_only_the_edited_entitys_jobs(tmp_path):
    """tools.echo.args changes echo's snapshots only, a model's params its trials only, ..."""
    wd = make_project(tmp_path, cc=True)
    cfg0, scen0 = read_project(wd)
    base = rule_params(load_matrix(wd / "config.yaml"))
    for field in (
        "tools.*.args",
        "models.*.params",
        "hosts.*.bare",
        "repos.*.commit",
        "scenario.steps.prompt",
        "scenario.steps.checks",
    ):
        apply_edit(wd, field)
        changed = changed_params(base, rule_params(load_matrix(wd / "config.yaml")))
        dim = field.split(".")[0].rstrip("s") if not field.startswith("scenario") else "scenario"
        for rule, keys in changed.items():
            dims = RULE_KEYS[rule]
            if dim in dims:
                assert {k[dims.index(dim)] for k in keys} <= {EDITED[dim]}, f"{field}: {rule} jobs {keys}"
        write_project(wd, cfg0, scen0)


# --- the real workflow: planned jobs per rule ------------------------------------------


def cells(m):
    return set(m.cells())


def dag(m) -> set[tuple]:
    """Every job of the workflow for matrix m, as (rule, full key)."""
    jobs = {("aggregate",), ("report",), ("status",)}
    if heldout_scenarios(m) is not None and m.locked_dir is not None:
        jobs |= {("verify_lock",), ("heldout",)}
    repos = m.run_repos()
    for r in repos:
        jobs.add(("checkout", r))
    for t, spec in m.tools.items():
        if spec["transport"] != "none":
            jobs.add(("install_tool", t))
        for r in repos:
            jobs.add(("tools_snapshot", t, r))
            if spec.get("index"):
                jobs.add(("index", t, r))
    for c in cells(m):
        for rule in ("transcript", "scored", "judged"):
            jobs.add((rule, *c))
    return jobs


def downstream(job: tuple, jobs: set) -> set:
    """The jobs that read job's output (one step)."""
    rule = job[0]
    out = set()
    for j in jobs:
        r = j[0]
        if rule == "checkout" and (
            (r in ("index", "tools_snapshot") and j[2] == job[1]) or (r == "transcript" and j[4] == job[1])
        ):
            out.add(j)
        elif rule == "install_tool" and r in ("index", "tools_snapshot") and j[1] == job[1]:
            out.add(j)
        elif rule in ("index", "tools_snapshot") and (
            (rule == "index" and r == "tools_snapshot" and j[1:] == job[1:])
            or (r == "transcript" and (j[3], j[4]) == (job[1], job[2]))
        ):
            out.add(j)
        elif rule == "transcript" and r in ("scored", "judged") and j[1:] == job[1:]:
            out.add(j)
        elif rule in ("scored", "judged") and r == "aggregate":
            out.add(j)
        elif rule in ("aggregate", "heldout") and r == "report":
            out.add(j)
        elif rule == "report" and r == "status":
            out.add(j)
        elif rule == "verify_lock" and r == "heldout":
            out.add(j)
    return out


def job_key(rule: str, job: tuple) -> tuple:
    """The rerun key (RULE_KEYS) of a full job."""
    if rule == "transcript":
        model, host, tool, _repo, scenario, _trial = job[1:]
        return (model, host, tool, scenario)
    if rule in ("scored", "judged"):
        return (job[5],)
    return tuple(job[1:])


def expected_plan(m0, m1, p0, p1) -> dict[str, int]:
    before, after = dag(m0), dag(m1)
    todo = {j for j in after if j not in before}
    for j in after & before:
        k = job_key(j[0], j)
        if p0[j[0]].get(k) != p1[j[0]].get(k):
            todo.add(j)
    if cells(m0) != cells(m1):
        todo.add(("aggregate",))  # its set of inputs changed
    frontier = set(todo)
    while frontier:
        nxt = set()
        for j in frontier:
            nxt |= downstream(j, after) - todo
        todo |= nxt
        frontier = nxt
    counts: dict[str, int] = {"all": 1} if todo else {}  # the default target reruns with anything
    for j in todo:
        counts[j[0]] = counts.get(j[0], 0) + 1
    return counts


@pytest.mark.slow
def test_a_finished_project_plans_exactly_what_the_table_says(tmp_path):
    from workflow_helpers import copy_workflow, run_snakemake

    from workflow_helpers import planned

    copy_workflow(tmp_path)
    wd = make_project(tmp_path)
    run_snakemake(wd, "-j2")
    assert planned(wd) == {}, "a finished project plans nothing"
    cfg0, scen0 = read_project(wd)
    m0 = load_matrix(wd / "config.yaml")
    p0 = rule_params(m0)
    mismatches = []
    fields = [f for f, fn in EDITS.items() if fn is not None and f not in CC_ONLY | RECORDED_ONLY]
    for field in fields:
        apply_edit(wd, field)
        m1 = load_matrix(wd / "config.yaml")
        want = expected_plan(m0, m1, p0, rule_params(m1))
        got = planned(wd)
        if got != want:
            mismatches.append(f"{field}: planned {got}, the table says {want}")
        write_project(wd, cfg0, scen0)
        for p in (wd / "scenarios").glob("*.yaml"):
            if p.stem not in scen0:
                p.unlink()
    assert not mismatches, "\n".join(mismatches)
    assert planned(wd) == {}
