"""`mcptrials reruns`: the table of what each config field or scenario part reruns
(mcptrials.dag.rerun), as Markdown."""

from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("reruns", help="print the table of what each config field or scenario part reruns")
    p.set_defaults(func=cmd_reruns)


def cmd_reruns(args) -> int:
    from mcptrials.dag.rerun import markdown_table

    print(markdown_table(), end="")
    return 0
