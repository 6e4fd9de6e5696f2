"""The command layer's shared helper (mcptrials.cli.common): one `--config CONFIG` with one
default, one error for bad input, and every command that reads a config naming it that way.
Which commands read a config is read off the parser: the function each subcommand runs."""

from __future__ import annotations

import argparse
import inspect
import subprocess
import sys

import pytest

from mcptrials.cli import COMMANDS, build_parser, main
from mcptrials.cli.common import DEFAULT_CONFIG, add_config, error_exit, load_config
from mcptrials.matrix.errors import ConfigError


def subcommands(parser: argparse.ArgumentParser, prefix: str = ""):
    """(name, parser) of every leaf subcommand, nested ones (`import sense-bench`) included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found = list(subcommands(sub, f"{prefix}{name} "))
                yield from found or [(f"{prefix}{name}", sub)]


def reads_config(sub: argparse.ArgumentParser) -> bool:
    """Whether the function the subcommand runs reads its config (args.config, or the shared
    loader of it)."""
    source = inspect.getsource(sub.get_default("func"))
    return "args.config" in source or "load_config(args)" in source


def config_actions(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in sub._actions if a.dest == "config" or "config" in (a.metavar or "").lower()]


def test_the_default_is_config_yaml_in_one_place():
    p = argparse.ArgumentParser()
    add_config(p)
    assert p.parse_args([]).config == DEFAULT_CONFIG == "config.yaml"
    assert p.parse_args(["--config", "a.yaml:b.yaml"]).config == "a.yaml:b.yaml"
    args = build_parser("aggregate").parse_args(["aggregate"])
    assert args.config == DEFAULT_CONFIG


def test_a_required_or_optional_config_is_still_named_config():
    p = argparse.ArgumentParser()
    add_config(p, required=True, help="the imported config")
    with pytest.raises(SystemExit):
        p.parse_args([])
    assert p.parse_args(["--config", "c.yaml"]).config == "c.yaml"
    q = argparse.ArgumentParser()
    add_config(q, default=None, help="optional")
    assert q.parse_args([]).config is None


def test_a_missing_config_file_is_one_clear_error_naming_the_file(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match=f"{missing}: config file not found"):
        load_config(argparse.Namespace(config=str(missing)))
    assert main(["validate", "--config", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"mcptrials: error: {missing}: config file not found; check the path\n"


def test_the_default_config_missing_names_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["plan"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcptrials: error: ") and str(tmp_path / "config.yaml") in err and err.count("\n") == 1


def test_error_exit_is_the_one_format(capsys):
    assert error_exit(ConfigError("x.yaml: field models: missing; add one")) == 2
    assert capsys.readouterr().err == "mcptrials: error: x.yaml: field models: missing; add one\n"


def test_every_command_that_reads_a_config_names_it_dash_dash_config():
    readers = set()
    for command in COMMANDS:
        for name, sub in subcommands(build_parser(command)):
            if not name.startswith(command):
                continue
            actions = config_actions(sub)
            assert all(a.option_strings for a in actions), f"{name}: takes its config as a positional"
            if reads_config(sub):
                readers.add(name)
                assert [(a.option_strings, a.metavar) for a in actions] == [(["--config"], "CONFIG")], name
            else:
                assert not actions, f"{name}: has --config but never reads it"
    assert {"validate", "plan", "pilot", "run-trial", "report"} <= readers  # the detection sees the readers


def test_the_old_positional_config_is_refused(capsys):
    with pytest.raises(SystemExit):
        build_parser("validate").parse_args(["validate", "config.yaml"])
    assert "unrecognized arguments: config.yaml" in capsys.readouterr().err


def test_only_the_command_run_is_imported():
    code = (
        "import sys; from mcptrials.cli import build_parser; build_parser('run-trial'); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('mcptrials.'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    cli = [m for m in loaded if m.startswith("mcptrials.cli")]
    assert cli == ["mcptrials.cli", "mcptrials.cli.common", "mcptrials.cli.run_trial"]
    assert not [m for m in loaded if m.startswith(("mcptrials.report", "mcptrials.analyze"))]


def test_the_worker_preloads_the_modules_of_the_commands_it_runs():
    """The worker (cli.worker, handed `main` by the command that starts it) preloads by name the
    cli modules of the per-trial commands that delegate to it; every name it lists exists."""
    import importlib.util
    import re

    from mcptrials.cli import preload

    names = set(re.findall(r'"(mcptrials(?:\.[a-z_]+)*)"', inspect.getsource(preload.preload)))
    assert all(importlib.util.find_spec(n) for n in names), names
    assert {*(f"mcptrials.{COMMANDS[c]}" for c in ("run-trial", "score", "judge"))} <= names


def test_the_worker_imports_an_sdk_only_for_a_config_that_uses_it():
    """`sdks_for`: a model SDK for each provider among the models and the judge, the MCP client
    for a tool with a server or a host that is not the built-in loop; none for the reference
    model with built-in tools."""
    from mcptrials.cli.preload import sdks_for

    def config(models=("reference",), judge="reference", transports=("none",), kinds=("loop",)):
        return {
            "models": {f"m{i}": {"provider": p} for i, p in enumerate(models)},
            "judge": {"provider": judge},
            "tools": {f"t{i}": {"transport": t} for i, t in enumerate(transports)},
            "hosts": {f"h{i}": {"kind": k} for i, k in enumerate(kinds)},
        }

    assert sdks_for(config()) == set()
    assert sdks_for(config(models=("reference", "recorded"), transports=("none", "recorded"))) == set()
    assert sdks_for(config(models=("anthropic", "reference"))) == {"anthropic"}
    assert sdks_for(config(judge="openai")) == {"openai"}
    assert sdks_for(config(models=("openai",), judge="anthropic")) == {"anthropic", "openai"}
    assert sdks_for(config(transports=("none", "stdio"))) == {"mcp"}
    assert sdks_for(config(transports=("http",))) == {"mcp"}
    assert sdks_for(config(kinds=("loop", "claude-code"))) == {"mcp"}


def test_the_worker_preloads_no_sdk_before_a_request_asks_for_one():
    """The worker's first preloads leave the SDKs out (each costs 0.7-2.2 s of CPU to import);
    `preload_sdks` imports the ones named, once."""
    code = (
        "import sys; from mcptrials.cli import preload; preload.preload(); "
        "print(sorted(m for m in ('anthropic', 'openai', 'mcp') if m in sys.modules)); "
        "print(preload.preload_sdks({'mcp'}), preload.preload_sdks({'mcp'}), 'mcp' in sys.modules, 'anthropic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "['mcp', 'mcp.client.stdio'] [] True False"]


def test_main_parses_with_the_parsers_warmed_ahead(monkeypatch, capsys):
    """`warm_parsers` (the worker's, before forking): `main` then parses those commands with the
    parsers built ahead, and a parser used twice parses as a fresh one does; any other command
    is built on demand."""
    import mcptrials.cli as cli

    monkeypatch.delenv("MCPTRIALS_WORKER", raising=False)
    monkeypatch.setattr(cli, "_PARSERS", {})
    cli.warm_parsers(["judge"])
    argv = ["judge", "--config", "c.yaml", "--transcript", "t.json", "--scenario", "s.yaml", "--out", "o.json"]
    fresh = vars(cli.build_parser("judge").parse_args(argv))
    assert vars(cli._PARSERS["judge"].parse_args(argv)) == vars(cli._PARSERS["judge"].parse_args(argv)) == fresh

    def built_again(only=None):
        raise AssertionError(f"parser of {only} built again")

    monkeypatch.setattr(cli, "build_parser", built_again)
    with pytest.raises(SystemExit) as e:
        cli.main([*argv, "--no-such-flag"])
    assert e.value.code == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    with pytest.raises(AssertionError, match="parser of score built again"):
        cli.main(["score", "--out", "o.json"])
