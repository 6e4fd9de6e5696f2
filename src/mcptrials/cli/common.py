"""What every command shares: its `--config CONFIG` option, the matrix loaded from it, the
one error format of bad input, and the line that states the matrix's size."""

from __future__ import annotations

import sys

DEFAULT_CONFIG = "config.yaml"
CONFIG_HELP = "the config file (several joined by ':' are merged in order; default config.yaml)"


def add_config(parser, help: str = CONFIG_HELP, default: str | None = DEFAULT_CONFIG, required: bool = False) -> None:
    """The `--config CONFIG` option, the same on every command that reads a config. A command
    whose config is optional or found another way passes default=None and says so in help."""
    parser.add_argument(
        "--config", metavar="CONFIG", default=None if required else default, required=required, help=help
    )


def load_config(args):
    """The matrix of the command's --config: bad input raises ConfigError, which `main`
    prints in the CLI's one error format (`error_exit`)."""
    from mcptrials.matrix.config import load_matrix

    return load_matrix(args.config)


def error_exit(e: Exception) -> int:
    """Bad input (a ConfigError: the file, the field, the fix): one line on stderr, exit 2."""
    print(f"mcptrials: error: {e}", file=sys.stderr)
    return 2


def matrix_line(m) -> str:
    """The matrix's shape and its number of trials (`validate`, `plan`)."""
    held = {sc.id for sc in m.confirm_scenarios()}  # ablate.confirm's trials, counted apart
    cells = sum(1 for k in m.cells() if k.scenario not in held)
    more = sum(1 for k in m.cells() if k.scenario in held)
    seq = m.sequential  # in waves: min to max trials a cell, so the count is the most
    return (
        f"{len(m.models)} model(s) x {len(m.hosts)} host(s) x {len(m.tools)} tool(s) x "
        f"{len(m.run_scenarios())} scenario(s) x "
        + (f"{seq['min']} to {seq['max']} trial(s) in waves = at most " if seq else f"{m.trials} trial(s) = ")
        + f"{cells} trials"
        + (f", and {more} trial(s) confirming ablation arms on held-out scenario(s) (ablate.confirm)" if more else "")
    )
