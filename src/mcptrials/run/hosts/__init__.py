"""Hosts: what wraps the model and runs the agent loop of a trial.

A host is one module that defines `HOST`, an object with the `Host` interface below, and
one row of `HOSTS`; the config schema's host `kind` enum names it and says (`x-drives`)
which providers it can drive. Host modules are imported only when a trial or an install
needs them: `HOSTS` itself is data (the workflow reads `needs_install` at parse time).

- `loop` (hosts/loop.py): the harness's own agent loop, any provider.
- `claude-code` (hosts/claude_code.py): the Claude Code CLI, run non-interactively; it
  speaks the Messages API, so it drives `anthropic` models only, and it is installed by
  the workflow (`mcptrials install-host`) into .tools/_hosts/<host>/.
- `codex` (hosts/codex.py): the Codex CLI (`codex exec --json`), the same way; it speaks the
  OpenAI Responses API, so it drives `openai` models only.
- `opencode` (hosts/opencode.py): the Opencode CLI (`opencode run --format json`), the same
  way, with an OpenAI-compatible provider (Chat Completions): `openai` models only.
- hosts/cli.py: the CLI hosts' skeleton (docs/hosts.md, "Adding a host"), with hosts/install.py
  (the npm install) and hosts/process.py (one run of a CLI, its stream read as it comes).

Hosts use the public API of mcptrials.run.trial (the shared core) and mcptrials.prepare.servers.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast


class Host(Protocol):
    """What a host module's HOST offers. What it can drive is data of the config schema
    (HostSpec.drives), so config checks the matrix without importing host code."""

    kind: str

    def run(self, ctx) -> tuple[str, str | None]:
        """Run every step of the trial (a mcptrials.run.trial.TrialContext), filling ctx.rec;
        return (outcome, detail). May raise TrialAbort; ConfigError for bad input."""


class Installable(Host, Protocol):
    """The HOST of a kind with needs_install (a CLI host)."""

    def install(self, host: str, spec, log) -> dict:
        """Install the host's software; the record written to results/hosts/<host>/install.json."""


@dataclass(frozen=True)
class HostKind:
    module: str  # hosts/<module>.py, which defines HOST
    needs_install: bool  # an install_host job runs before its trials


# The one table of host kinds. Adding a host: one module and one row (plus its kind in
# the config schema, with its settings and what it drives).
HOSTS: dict[str, HostKind] = {
    "loop": HostKind(module="loop", needs_install=False),
    "claude-code": HostKind(module="claude_code", needs_install=True),
    "codex": HostKind(module="codex", needs_install=True),
    "opencode": HostKind(module="opencode", needs_install=True),
}


def host_for(kind: str) -> Host:
    """The host of a kind, its module imported now."""
    return importlib.import_module(f"{__name__}.{HOSTS[kind].module}").HOST


def needs_install(kind: str) -> bool:
    return HOSTS[kind].needs_install


# --- the install-host command ------------------------------------------------------


def install_host_record(m, host: str, out: Path, log=sys.stderr) -> dict:
    """Install a config host's software (a CLI host; the loop needs none) with the API keys
    forgotten first, and write its install record to `out`."""
    from mcptrials.matrix.errors import ConfigError
    from mcptrials.core.records import write_json

    if host not in m.hosts:
        raise ConfigError(f"{m.path}: field hosts: no host {host!r}; use one of: {', '.join(sorted(m.hosts))}")
    spec = m.specs.hosts[host]
    if needs_install(spec.kind):
        from mcptrials.prepare.install import drop_keys

        drop_keys(m)
        rec = cast(Installable, host_for(spec.kind)).install(host, spec, log)
    else:
        rec = {"host": host, "kind": spec.kind, "env_dir": None, "resolved": {}, "seconds": 0.0}
    write_json(Path(out), rec)
    return rec
