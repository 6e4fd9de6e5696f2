"""The loaded matrix: the validated config and its scenarios, and what the stages ask of them
(the tools with a server, the run's scenarios and repos, the hashes of a tool and a model, the
typed specs, the trial cells). Made by mcptrials.matrix.config.load_matrix."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from mcptrials.matrix.ablation import CONFIRM
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.matrix.scenario import Scenario
from mcptrials.matrix.schema import host_drives
from mcptrials.matrix.specs import Specs
from mcptrials.matrix.tools import BASELINE, RECORDED, spec_config


@dataclass
class Matrix:
    path: Path
    base_dir: Path
    config: dict
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    # every config file it was read from, in order (main first): what a later check rereads
    sources: tuple[str, ...] = ()

    @property
    def tools(self) -> dict:
        return self.config["tools"]

    @property
    def repos(self) -> dict:
        return self.config["repos"]

    @property
    def models(self) -> dict:
        return self.config["models"]

    @property
    def hosts(self) -> dict:
        return self.config["hosts"]

    @property
    def trials(self) -> int:
        """The most trials a cell can get: `trials`, or its `max` for a run in waves."""
        t = self.config["trials"]
        return t["max"] if isinstance(t, dict) else t

    @property
    def sequential(self) -> dict | None:
        """`trials: {min, max, until}` of a run in waves (mcptrials.analyze.sequential); None for a number."""
        t = self.config["trials"]
        return t if isinstance(t, dict) else None

    def run_scenarios(self) -> list[Scenario]:
        splits = set(self.config["splits"])
        return [s for s in self.scenarios.values() if s.split in splits]

    @property
    def confirmed(self) -> dict[str, str]:
        """Ablation arms to confirm on the held-out split -> their full server (`ablate.confirm`)."""
        return self.config.get(CONFIRM) or {}

    def confirm_scenarios(self) -> list[Scenario]:
        """The held-out scenarios the confirmed arms and their full servers run on beyond `splits`
        (none without a confirmed arm, or when `splits` already runs the held-out split for all)."""
        if not self.confirmed:
            return []
        splits = set(self.config["splits"])
        return [s for s in self.scenarios.values() if s.split == "held-out" and s.split not in splits]

    def trial_scenarios(self) -> list[Scenario]:
        """Every scenario some trial runs: the run's, then the confirmation's."""
        return self.run_scenarios() + self.confirm_scenarios()

    def scenario_set_sha256(self) -> str:
        """One hash of the run's scenario files (id -> file sha256): names the scenario set."""
        return canonical_hash({s.id: s.sha256 for s in self.run_scenarios()})

    def run_repos(self) -> list[str]:
        """The repos the run's scenarios use, in config order: only these are checked out,
        snapshotted and named in the report (a pack narrowed to one repo runs one)."""
        used = {s.repo for s in self.trial_scenarios()}
        return [r for r in self.repos if r in used]

    @property
    def locked_dir(self) -> Path | None:
        """The config's held-out anchor folder (relative paths from the config's folder), or None."""
        d = self.config.get("locked")
        return None if d is None else (self.base_dir / d)

    def server_of(self, tool: str) -> str:
        """The tool whose install and index a tool uses: its own, or a variant's base's."""
        return self.tools[tool].get("variant_of") or tool

    def installed_tools(self) -> list[str]:
        """The server tools with an install (and index) job of their own: not the variants."""
        return [t for t in self.server_tools() if self.server_of(t) == t]

    def server_tools(self) -> list[str]:
        return [t for t, spec in self.tools.items() if spec["transport"] not in ("none", RECORDED)]

    def snapshot_tools(self) -> list[str]:
        """The tools with a snapshot job: all but the recorded arms (no server, nothing to list)."""
        return [t for t, spec in self.tools.items() if spec["transport"] != RECORDED]

    def tool_hash(self, tool: str) -> str:
        return canonical_hash(self.tools[tool])

    def model_hash(self, model: str) -> str:
        spec = dict(self.models[model])
        return canonical_hash({"spec": spec, "limits": self.config["limits"]})

    def repo_source(self, repo: str) -> str:
        """Where to clone from: a mirror if one is set, else the url (relative paths from the config's folder)."""
        url = self.repos[repo]["url"]
        src = self.config["mirrors"].get(url, url)
        if "://" not in src and not src.startswith("git@"):
            src = str((self.base_dir / src).resolve())
        return src

    @functools.cached_property
    def specs(self) -> Specs:
        """The typed specs of the validated config, built once."""
        return Specs.from_config(spec_config(self.config), host_drives())

    def runs_under(self, model: str, host: str) -> bool:
        """Whether the host can drive the model (claude-code speaks the Messages API only, codex and
        opencode OpenAI's APIs); a recorded model with a `host` runs under that host only (the one it
        was recorded under)."""
        only = self.models[model].get("host")
        return (only is None or only == host) and self.specs.hosts[host].drives(self.specs.models[model].provider)

    def cells(self):
        """Every trial of the run (core.identity.TrialKey), trial counted from 1; a (model, host)
        pair the host cannot drive is left out. Then the confirmation's: each confirmed arm and its
        full server (and the baseline) on the held-out scenarios (mcptrials.matrix.ablation; the aggregate keeps them
        out of every table but the confirmation's)."""
        from mcptrials.core.identity import TrialKey

        for model in self.models:
            for host in self.hosts:
                if not self.runs_under(model, host):
                    continue
                for tool in self.tools:
                    for sc in self.run_scenarios():
                        for trial in range(1, self.trials + 1):
                            yield TrialKey(model, host, tool, sc.repo, sc.id, trial)
                # the baseline too: fairness's efficiency is relative to it, on held-out as on train
                confirming = [
                    t for t in self.tools if t in self.confirmed or t in self.confirmed.values() or t == BASELINE
                ]
                for tool in confirming:
                    for sc in self.confirm_scenarios():
                        for trial in range(1, self.trials + 1):
                            yield TrialKey(model, host, tool, sc.repo, sc.id, trial)
