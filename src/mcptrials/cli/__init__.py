"""The `mcptrials` command: one subcommand per workflow stage, each usable without Snakemake.

Each subcommand's module here (cli/<name>.py) is a thin layer: it parses the arguments, loads
the matrix (cli.common: the one `--config CONFIG`), calls the stage's library function, prints
and returns the exit code. The work itself is in the stage packages below. Beside them, the
warm trial worker (worker: `mcptrials serve-trials`), what it imports before forking (preload) and
its client (delegate): the worker runs commands, so it sits here, on the top floor, and preloads
their modules by name.

May import: everything; nothing imports it (the worker runs commands through `main`, which the
command that starts it hands it).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand -> the module here that defines it (its `register(subparsers)` adds the parser and
# sets `func`). Only the module of the command being run is imported: a per-trial job
# should not pay for the report's imports.
COMMANDS = {
    "validate": "cli.validate",
    "checkout": "cli.checkout",
    "install-tool": "cli.install",
    "install-host": "cli.install",
    "index": "cli.index",
    "snapshot": "cli.snapshot",
    "run-trial": "cli.run_trial",
    "score": "cli.score",
    "citations": "cli.score",
    "judge": "cli.judge",
    "verify-lock": "cli.lock",
    "lock": "cli.lock",
    "heldout": "cli.lock",
    "decide": "cli.decide",
    "aggregate": "cli.aggregate",
    "report": "cli.report",
    "label": "cli.label",
    "demo-bundle": "cli.demo_bundle",
    "serve-trials": "cli.serve_trials",
    "reruns": "cli.reruns",
    "compare-sense-bench": "cli.sense_compare",
    "import": "cli.imports",
    "plan": "cli.cost",
    "pilot": "cli.cost",
    "compare": "cli.compare",
    "replay": "cli.replay",
    "status": "cli.status",
}


# Parsers built ahead of use, by command: the warm worker's (`warm_parsers`, before it forks), so
# each child parses its request without building its command's parser again (~2 ms a job).
_PARSERS: dict[str, argparse.ArgumentParser] = {}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcptrials", description=__doc__.split("\n\n")[0])
    # the entry point and its parsers' warm-up, for commands that run others (serve-trials)
    p.set_defaults(run_argv=main, warm_parsers=warm_parsers)
    sub = p.add_subparsers(dest="command", required=True)
    modules = [COMMANDS[only]] if only in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for name in modules:
        importlib.import_module(f"mcptrials.{name}").register(sub)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from mcptrials.cli.delegate import delegate  # per-trial stages go to a warm worker when $MCPTRIALS_WORKER answers

    code = delegate(argv)
    if code is not None:
        return code
    from mcptrials.cli.common import error_exit
    from mcptrials.matrix.errors import ConfigError  # after the hand-off: a delegating client stays light

    command = argv[0] if argv else None
    parser = _PARSERS.get(command or "") or build_parser(command)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        return error_exit(e)


def warm_parsers(commands) -> None:
    """Build the parsers of `commands` now, for every later `main` of this process (and of its
    forked children) to reuse: argparse's parsing leaves a parser as it was."""
    for command in commands:
        _PARSERS[command] = build_parser(command)


if __name__ == "__main__":
    sys.exit(main())
