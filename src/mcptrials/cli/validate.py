"""`mcptrials validate --config CONFIG`: check a config, its scenarios and what they name
(API keys, the sandbox, paths, pinned commits, the budget) without running anything."""

from __future__ import annotations

from mcptrials.cli.common import add_config, load_config, matrix_line


def register(sub) -> None:
    p = sub.add_parser("validate", help="check a config and its scenarios without running anything")
    add_config(p)
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    from mcptrials.dag.preflight import refusals
    from mcptrials.matrix.errors import ConfigError

    m = load_config(args)
    problems = refusals(m)
    if problems:
        raise ConfigError("\n".join(problems))
    print(f"{m.path}: ok: {matrix_line(m)}")
    if m.sequential:
        from mcptrials.analyze.wave_cost import wave_cost_line

        print(f"{m.path}: {wave_cost_line(m)}")
    return 0
