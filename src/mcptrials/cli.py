"""The `mcptrials` command: one subcommand per workflow stage, each usable without Snakemake."""

from __future__ import annotations

import argparse
import sys

import importlib

from .config import ConfigError

# Modules that add their own subcommands: each has `register(subparsers)`, whose
# parsers set `func` to a function taking the parsed args and returning an exit code.
SUBCOMMAND_MODULES = [
    "checkout",
    "install",
    "index",
    "snapshot",
    "runner",
    "judge",
    "lock",
    "graders.cli",
    "demo_repo",
]


def cmd_validate(args) -> int:
    from .config import check_api_keys, load_matrix

    m = load_matrix(args.config)
    problems = check_api_keys(m)
    if problems:
        raise ConfigError("\n".join(problems))
    cells = sum(1 for _ in m.cells())
    print(f"{m.path}: ok: {len(m.models)} model(s) x {len(m.tools)} tool(s) x "
          f"{len(m.run_scenarios())} scenario(s) x {m.trials} trial(s) = {cells} trials")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mcptrials", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    v = sub.add_parser("validate", help="check a config and its scenarios without running anything")
    v.add_argument("config", nargs="?", default="config.yaml")
    v.set_defaults(func=cmd_validate)
    for name in SUBCOMMAND_MODULES:
        importlib.import_module(f"mcptrials.{name}").register(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"mcptrials: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
