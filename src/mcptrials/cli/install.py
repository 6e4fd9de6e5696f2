"""`mcptrials install-tool` (a tool's server into .tools/<tool>/, mcptrials.prepare.install) and
`mcptrials install-host` (a CLI host into .tools/_hosts/<host>/, mcptrials.run.hosts)."""

from __future__ import annotations

import sys

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("install-tool", help="install a tool's server into .tools/<tool>/")
    add_config(p)
    p.add_argument("--tool", required=True)
    p.add_argument("--out", required=True, help="results/tools/<tool>/install.json")
    p.add_argument("--attempt", type=int, default=0, help="the workflow's retry count (mcptrials.core.failures)")
    p.set_defaults(func=cmd_install_tool)

    h = sub.add_parser(
        "install-host",
        help="install a host's software (a CLI: Claude Code, Codex, Opencode) into .tools/_hosts/<host>/",
    )
    add_config(h)
    h.add_argument("--host", required=True)
    h.add_argument("--out", required=True, help="results/hosts/<host>/install.json")
    h.set_defaults(func=cmd_install_host)


def cmd_install_tool(args) -> int:
    from mcptrials.core.failures import failure
    from mcptrials.prepare.install import install_tool_record

    rec = install_tool_record(load_config(args), args.tool, args.out, args.attempt, sys.stderr)
    if failure(rec):
        print(f"mcptrials install-tool: {args.tool}: {rec['error']}", file=sys.stderr)
    return 0


def cmd_install_host(args) -> int:
    from mcptrials.run.hosts import install_host_record

    rec = install_host_record(load_config(args), args.host, args.out, sys.stderr)
    print(f"{args.host}: {rec['kind']} {rec.get('version') or ''} {'(reused)' if rec.get('reused') else ''}".rstrip())
    return 0
