"""A trial's identity: the one place its fields, its key and its folder are made.

A trial is one cell of the matrix (model, host, tool, repo, scenario) and its number, counted
from 1. Its records live in `<runs>/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/`
(`RUN_DIR`; the workflow's rules take their wildcards from it), and its key, the same
fields joined by `/`, names it in the budget ledger and in tables.

A NamedTuple, so it is frozen, typed and unpacks as the bare tuple it replaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from mcptrials.core.record_types import Cell

FIELDS = ("model", "host", "tool", "repo", "scenario", "trial")
RUN_DIR = "/".join("{" + f + "}" for f in FIELDS)  # under the runs folder


class TrialKey(NamedTuple):
    model: str
    host: str
    tool: str
    repo: str
    scenario: str
    trial: int

    @classmethod
    def of(cls, cell: Mapping[str, Any]) -> TrialKey:
        """From a record's `cell` (or any mapping with the six fields)."""
        return cls(cell["model"], cell["host"], cell["tool"], cell["repo"], cell["scenario"], int(cell["trial"]))

    @classmethod
    def from_dir(cls, runs: str | Path, folder: str | Path) -> TrialKey:
        """From a trial's folder under `runs` (the inverse of `dir`)."""
        parts = Path(folder).relative_to(runs).parts
        if len(parts) != len(FIELDS):
            raise ValueError(f"{folder} is not a trial folder under {runs} ({RUN_DIR})")
        model, host, tool, repo, scenario, trial = parts
        return cls(model, host, tool, repo, scenario, int(trial))

    @property
    def key(self) -> str:
        """model/host/tool/repo/scenario/trial: the ledger's and the tables' name of the trial."""
        return "/".join(str(v) for v in self)

    def cell(self) -> Cell:
        """The `cell` object every record carries."""
        return Cell(
            model=self.model, host=self.host, tool=self.tool, repo=self.repo, scenario=self.scenario, trial=self.trial
        )

    def dir(self, runs: str | Path) -> Path:
        """The trial's folder under the runs folder."""
        return Path(runs, *(str(v) for v in self))
