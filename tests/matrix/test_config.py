"""Bad input fails before any job, naming the file, the field and the fix."""

import subprocess
import sys

import pytest
import yaml

from matrix_helpers import SCENARIO, faulty_tool, write_matrix
from mcptrials.matrix.config import check_api_keys, load_matrix
from mcptrials.matrix.errors import ConfigError


def edit(path, fn):
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_valid_matrix_fills_defaults(tmp_path):
    cfg = write_matrix(tmp_path, tools={"baseline": {"transport": "none"}, "echo": faulty_tool()}, trials=3)
    m = load_matrix(cfg)
    assert m.tools["echo"]["transport"] == "stdio"  # default from tool.schema.yaml
    assert m.config["limits"]["max_result_tokens"] == 25000  # default from config.schema.yaml
    assert m.scenarios["find-helper"].data["split"] == "train"
    assert len(list(m.cells())) == 2 * 1 * 3


@pytest.mark.parametrize(
    "mutate, needles",
    [
        (lambda d: d["tools"]["baseline"].update(transprt="x"), ["tools.baseline", "transprt", "allowed keys"]),
        (lambda d: d["repos"]["tiny"].update(commit=d["repos"]["tiny"]["commit"][:39]), ["repos.tiny.commit", "40"]),
        (lambda d: d.update(trials=0), ["trials"]),
        (
            lambda d: d["models"]["reference"].update(provider="gpt"),
            ["models.reference.provider", "reference, anthropic"],
        ),
        (lambda d: d["tools"].update(serena={"transport": "none"}), ["tools.serena", "unknown tool", "stdio"]),
        (lambda d: d["tools"].update(x={"transport": "stdio"}), ["tools.x.command", "command"]),
        (
            lambda d: d.update(weights={"keyword": 0.5, "quality": 0.55, "citation": 0.15, "efficiency": 0.2}),
            ["weights", "sum to 1"],
        ),
        (lambda d: d.update(scenarios="nothing/*.yaml"), ["scenarios", "matches no file"]),
        (
            lambda d: d["tools"].update(leaky=faulty_tool(env={"ANTHROPIC_API_KEY": None})),
            ["tools.leaky.env", "API key"],
        ),
        (lambda d: d["models"].update(claude={"provider": "anthropic"}), ["models.claude.model"]),
    ],
)
def test_bad_config_names_file_and_field(tmp_path, mutate, needles):
    cfg = write_matrix(tmp_path)
    edit(cfg, mutate)
    with pytest.raises(ConfigError) as e:
        load_matrix(cfg)
    msg = str(e.value)
    assert str(cfg) in msg
    for n in needles:
        assert n in msg, msg


def test_scenario_naming_unknown_repo(tmp_path):
    sc = dict(SCENARIO, repo="nope")
    cfg = write_matrix(tmp_path, scenarios={"bad": sc})
    with pytest.raises(ConfigError, match=r"bad\.yaml: field repo: 'nope' is not a repo.*use one of: tiny"):
        load_matrix(cfg)


def test_scenario_that_does_not_parse(tmp_path):
    cfg = write_matrix(tmp_path)
    (tmp_path / "scenarios" / "broken.yaml").write_text("repo: tiny\nsteps: [\n  {name: a, prompt: 'x'\n")
    with pytest.raises(ConfigError, match=r"broken\.yaml: does not parse as YAML at line \d+"):
        load_matrix(cfg)


def test_scenario_schema_error_names_step_field(tmp_path):
    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"][0]["checks"][0]["type"] = "contains"
    cfg = write_matrix(tmp_path, scenarios={"s": sc})
    with pytest.raises(
        ConfigError,
        match=r"s\.yaml: field steps\.0\.checks\.0\.type: 'contains' is not allowed; "
        r"use one of: word, phrase, regex",
    ):
        load_matrix(cfg)


def test_missing_api_key_reported(tmp_path):
    cfg = write_matrix(tmp_path)
    edit(
        cfg,
        lambda d: d["models"].update(
            claude={"provider": "anthropic", "model": "claude-sonnet-4-6", "api_key_env": "MCPTRIALS_TEST_KEY"}
        ),
    )
    m = load_matrix(cfg)
    problems = check_api_keys(m, environ={})
    assert len(problems) == 1 and "models.claude" in problems[0] and "$MCPTRIALS_TEST_KEY" in problems[0]
    assert check_api_keys(m, environ={"MCPTRIALS_TEST_KEY": "k"}) == []


def test_validate_command_exit_codes(tmp_path):
    cfg = write_matrix(tmp_path)
    ok = subprocess.run(
        [sys.executable, "-m", "mcptrials.cli", "validate", "--config", str(cfg)], capture_output=True, text=True
    )
    assert ok.returncode == 0, ok.stderr
    assert "1 model(s) x 1 host(s) x 1 tool(s) x 1 scenario(s) x 1 trial(s) = 1 trials" in ok.stdout
    edit(cfg, lambda d: d.update(trails=2))
    bad = subprocess.run(
        [sys.executable, "-m", "mcptrials.cli", "validate", "--config", str(cfg)], capture_output=True, text=True
    )
    assert bad.returncode == 2
    assert f"{cfg}: field (top level): Additional properties are not allowed ('trails' was unexpected)" in bad.stderr


def test_specs_are_typed_frozen_and_filled_from_the_schema(tmp_path):
    import dataclasses

    from mcptrials.matrix.schema import _schema
    from mcptrials.matrix.specs import JudgeSpec

    cfg = write_matrix(
        tmp_path,
        tools={"baseline": {"transport": "none"}, "echo": faulty_tool()},
        extra={
            "models": {
                "gpt": {"provider": "openai", "model": "g"},
                "c": {"provider": "anthropic", "model": "c", "params": {"max_tokens": 99}},
            },
            "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
        },
    )
    m = load_matrix(cfg)
    s = m.specs
    assert s is m.specs  # built once
    tool_defaults = {k: v["default"] for k, v in _schema("tool.schema.yaml")["properties"].items() if "default" in v}
    echo = s.tools["echo"]
    assert (echo.call_timeout, echo.startup_timeout, echo.instructions) == (
        tool_defaults["call_timeout"],
        tool_defaults["startup_timeout"],
        tool_defaults["instructions"],
    )
    assert echo.has_server and not s.tools["baseline"].has_server and echo.config == m.tools["echo"]
    # (`config` is the entry with {project} expanded: the same values when it names none)
    # the key variable's default depends on the provider, in the schema (if/then)
    assert (s.models["gpt"].api_key_env, s.models["c"].api_key_env) == ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    assert (s.models["c"].max_tokens, s.models["gpt"].max_tokens) == (99, None)
    assert s.judge == JudgeSpec("reference", None, None, "ANTHROPIC_API_KEY", 1, 0.85, False)
    assert s.limits.max_result_tokens == 25000 and s.limits.overridden({"max_turns": 3}).max_turns == 3
    assert s.hosts["cc"].builtin_tools == ("Read", "Grep", "Glob") and s.hosts["loop"].builtin_tools is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        echo.call_timeout = 1
    # what a host kind drives is schema data: claude-code drives anthropic models only
    assert {(mo, h) for mo, h, *_ in m.cells()} == {("gpt", "loop"), ("c", "loop"), ("c", "cc")}
    assert {"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} <= s.key_env_names()


def test_every_host_kind_is_one_schema_entry_one_registry_row_one_module():
    import importlib

    from mcptrials.matrix.schema import _schema, host_drives
    from mcptrials.run.hosts import HOSTS, host_for

    kinds = _schema("config.schema.yaml")["properties"]["hosts"]["additionalProperties"]["properties"]["kind"]["enum"]
    assert set(kinds) == set(HOSTS) == set(host_drives())
    for kind, row in HOSTS.items():
        host = host_for(kind)
        assert host.kind == kind and callable(host.run)
        assert callable(getattr(host, "install", None)) == row.needs_install
        assert importlib.import_module(f"mcptrials.run.hosts.{row.module}").HOST is host


@pytest.mark.parametrize(
    "kind, entry, pinned",
    [
        ("pip", "mcp-server-git==2026.10.19", True),
        ("pip", "pkg[extra]==1.0", True),
        ("pip", "x===1.0", True),
        ("pip", "code-index-mcp", False),
        ("pip", "mcp<2", False),
        ("pip", "x>=1,<2", False),
        ("pip", "/abs/dist/x-1.0-py3-none-any.whl", True),
        ("pip", "x @ https://h/x-1.0.tar.gz", True),
        ("npm", "@modelcontextprotocol/server-filesystem@2026.8.31", True),
        ("npm", "foo@1.2.3-beta.1", True),
        ("npm", "@modelcontextprotocol/server-filesystem", False),
        ("npm", "foo@^1.2.3", False),
        ("npm", "foo@latest", False),
        ("npm", "./local/pkg", False),
        ("npm", "foo-1.0.0.tgz", True),
    ],
)
def test_is_pinned(kind, entry, pinned):
    from mcptrials.matrix.tools import is_pinned

    assert is_pinned(kind, entry) is pinned


def test_validate_refuses_an_unpinned_install(tmp_path, capsys):
    from matrix_helpers import write_matrix
    from mcptrials.cli import main

    cfg = write_matrix(
        tmp_path, tools={"srv": {"install": {"pip": ["some-mcp-server==1.0", "mcp<2"]}, "command": "some-mcp-server"}}
    )
    assert main(["validate", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert "field tools.srv.install.pip[1]: 'mcp<2' is not pinned to one version" in err and "name==1.2.3" in err
    assert "pip[0]" not in err


def test_validate_compiles_every_regex_of_every_scenario(tmp_path, capsys):
    """An invalid regex check is refused when the scenario loads (validate, and the workflow's
    plan, load it), naming the file, the field, the compile error and the fix; before, it
    passed validate and failed only the paid trials' `scored` jobs, without the file."""
    from mcptrials.cli import main

    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"][0]["checks"].append({"type": "regex", "value": "round_money("})
    cfg = write_matrix(tmp_path, scenarios={"money": sc})
    assert main(["validate", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{tmp_path / 'scenarios' / 'money.yaml'}: field steps.0.checks.2.value: 'round_money(' is not a valid "
        "regular expression: missing ), unterminated subpattern at position 11; "
    ) in err, err
    assert "value: 'round_money\\('" in err and "type: phrase" in err, err  # the fix
    # the escaped pattern the fix gives loads
    sc["steps"][0]["checks"][2]["value"] = r"round_money\("
    (tmp_path / "scenarios" / "money.yaml").write_text(yaml.safe_dump(sc))
    assert load_matrix(cfg).scenarios["money"].data["steps"][0]["checks"][2]["value"] == r"round_money\("


def test_validate_parses_every_json_path_of_every_scenario(tmp_path, capsys):
    from mcptrials.cli import main

    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"][0]["state_check"] = {"json": {"file": "db.json", "path": r"$.a[?(@.name == 'O\q')]", "count": 1}}
    cfg = write_matrix(tmp_path, scenarios={"people": sc})
    assert main(["validate", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'scenarios' / 'people.yaml'}: field steps.0.state_check.json.path: " in err, err
    assert "inside quotes use only JSON escapes" in err, err  # the fix, not only json's "Invalid \escape"


@pytest.mark.parametrize(
    "exact, said",
    [
        (
            {"value": "2026-13-45", "date_format": "%Y-%m-%d"},
            "steps.0.exact_answer.value: '2026-13-45' does not parse with date_format '%Y-%m-%d' or as ISO 8601; fix one of them",
        ),
        (
            {"value": "about ten", "tolerance": 0.5},
            "steps.0.exact_answer.tolerance: the value 'about ten' is not a number; drop tolerance or give a numeric value",
        ),
    ],
)
def test_validate_refuses_an_exact_answer_that_cannot_be_compared(tmp_path, capsys, exact, said):
    """What the exact-answer grader cannot use is refused when the scenario loads, like a regex
    (before, only the `scored` jobs failed on it, after the trials were paid for)."""
    from mcptrials.cli import main

    sc = yaml.safe_load(yaml.safe_dump(SCENARIO))
    sc["steps"][0]["exact_answer"] = exact
    cfg = write_matrix(tmp_path, scenarios={"dates": sc})
    assert main(["validate", "--config", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'scenarios' / 'dates.yaml'}: field {said}" in err, err
