"""The `mcptrials` command: one subcommand per workflow stage, each usable without Snakemake.

May import: everything; nothing imports it (the worker runs stages by their modules).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand -> the module that defines it (its `register(subparsers)` adds the parser and
# sets `func`). Only the module of the command being run is imported: a per-trial job
# should not pay for the report's imports.
COMMANDS = {
    "checkout": "prepare.checkout",
    "install-tool": "prepare.install",
    "install-host": "run.hosts",
    "index": "prepare.index",
    "snapshot": "prepare.snapshot",
    "run-trial": "run.runner",
    "score": "cli.score",
    "citations": "cli.score",
    "judge": "judge.judging",
    "verify-lock": "analyze.lock",
    "lock": "analyze.lock",
    "heldout": "analyze.lock",
    "aggregate": "analyze.aggregate",
    "report": "report.document",
    "demo-bundle": "prepare.demo_repo",
    "serve-trials": "run.worker",
    "reruns": "dag.rerun",
    "compare-sense-bench": "importers.sense_compare",
    "import": "cli.imports",
    "plan": "cli.cost",
    "pilot": "cli.cost",
    "compare": "gate.compare",
    "replay": "gate.replay",
    "status": "core.failures",
}


def cmd_validate(args) -> int:
    from mcptrials.dag.preflight import check_budget, check_paths, check_sandbox
    from mcptrials.matrix.config import check_api_keys, load_matrix
    from mcptrials.matrix.errors import ConfigError
    from mcptrials.prepare.checkout import check_commits

    m = load_matrix(args.config)
    problems = check_api_keys(m) + check_sandbox(m) + check_paths(m) + check_commits(m) + check_budget(m)
    if problems:
        raise ConfigError("\n".join(problems))
    cells = sum(1 for _ in m.cells())
    print(f"{m.path}: ok: {len(m.models)} model(s) x {len(m.hosts)} host(s) x {len(m.tools)} tool(s) x "
          f"{len(m.run_scenarios())} scenario(s) x {m.trials} trial(s) = {cells} trials")
    return 0


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcptrials", description=__doc__)
    p.set_defaults(run_argv=main)  # the entry point, for commands that run others (serve-trials)
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check a config and its scenarios without running anything")
    v.add_argument("config", nargs="?", default="config.yaml")
    v.set_defaults(func=cmd_validate)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"mcptrials.{name}").register(sub)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from mcptrials.run.delegate import delegate  # per-trial stages go to a warm worker when $MCPTRIALS_WORKER answers

    code = delegate(argv)
    if code is not None:
        return code
    from mcptrials.matrix.errors import ConfigError  # after the hand-off: a delegating client stays light
    only = argv[0] if argv and argv[0] in COMMANDS else ("validate" if argv[:1] == ["validate"] else None)
    args = build_parser(only).parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"mcptrials: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
