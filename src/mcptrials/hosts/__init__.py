"""Hosts: what wraps the model and runs the agent loop.

- `loop`: the harness's own agent loop (mcptrials.runner.Trial), any provider.
- `claude-code`: the Claude Code CLI, run non-interactively (mcptrials.hosts.claude_code);
  it speaks the Messages API, so it drives `anthropic` models only, and it is installed
  by the workflow (`mcptrials install-host`) into .tools/_hosts/<host>/.

Light on purpose: config.py imports this module to know which (model, host) pairs exist.
"""

from __future__ import annotations

import sys
from pathlib import Path

# host kind -> the providers it can drive (None: all of them)
HOST_PROVIDERS: dict[str, set[str] | None] = {"loop": None, "claude-code": {"anthropic"}}
# host kinds that need an install step before their trials
NEEDS_INSTALL = {"claude-code"}


def host_supports(kind: str, provider: str) -> bool:
    allowed = HOST_PROVIDERS.get(kind)
    return allowed is None or provider in allowed


def needs_install(kind: str) -> bool:
    return kind in NEEDS_INSTALL


def host_env_dir(host: str) -> Path:
    """Where a host's own software lives. `_hosts` cannot clash with a tool's folder:
    tool names start with a letter or digit."""
    from ..servers import TOOLS_DIR

    return TOOLS_DIR / "_hosts" / host


# --- the install-host command ------------------------------------------------------


def register(sub) -> None:
    p = sub.add_parser("install-host", help="install a host's software (the Claude Code CLI) into .tools/_hosts/<host>/")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--host", required=True)
    p.add_argument("--out", required=True, help="results/hosts/<host>/install.json")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from ..config import ConfigError, load_matrix
    from ..records import write_json

    m = load_matrix(args.config)
    if args.host not in m.hosts:
        raise ConfigError(f"{m.path}: field hosts: no host {args.host!r}; use one of: {', '.join(sorted(m.hosts))}")
    spec = m.hosts[args.host]
    if spec["kind"] == "claude-code":
        from .claude_code import install

        rec = install(args.host, spec, sys.stderr)
    else:
        rec = {"host": args.host, "kind": spec["kind"], "env_dir": None, "resolved": {}, "seconds": 0.0}
    write_json(Path(args.out), rec)
    print(f"{args.host}: {rec['kind']} {rec.get('version') or ''} {'(reused)' if rec.get('reused') else ''}".rstrip())
    return 0
