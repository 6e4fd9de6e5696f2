"""The per-trial rules' params, looked up once per job: built here from the matrix, read by
workflow/rules/common.smk.

Each per-trial rule (transcript, scored, judged) has one params lookup: the rerun hash of
its job (mcptrials.dag.rerun.rule_params) plus what its command needs, with project-relative
paths. A lookup is a dict access (each lambda costs Snakemake ~0.2 ms a job at DAG time), so
`transcript_params` and `judged_params` are the plainest function the run's tables allow:

- a recorded model's trials (provider recorded) carry the sha256 of their own recording, a
  recorded judge's trials that of their own judgement (`recorded_trials`, `recorded_judgements`);
- a missing trial (api_failed, harness_failed, not_run: mcptrials.core.outcomes) is retried by
  the next invocation: `mcptrials run-trial` keeps each missing attempt under
  <trial>/attempts/ and its count in attempts/attempts.json; one glob finds those files, and
  such a trial's params carry its next attempt number (an unchanged one once it completed or
  used up retries.max_attempts), so exactly the missing trials, and what reads them, rerun.
  Every other trial keeps the params it always had.

The trial's --index argument is a value of its lookup, never a param that comes and goes with
whether any tool has an index (that would rerun every trial).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mcptrials.core.outcomes import retry_attempts
from mcptrials.dag.rerun import recorded_judgements, recorded_trials
from mcptrials.dag.targets import RUNS
from mcptrials.matrix.matrix import Matrix


def project_path(f: str) -> str:
    """A path as the jobs should see it: relative to the project (the working directory) when
    inside it, so a project copied elsewhere plans nothing new."""
    rel = os.path.relpath(os.path.abspath(f), os.getcwd())
    return f if rel.startswith("..") else rel


def config_path(configfiles: Iterable) -> str:
    """Every --configfile, joined by os.pathsep (config.yaml when none): the stages merge them as
    Snakemake does (the first is the main config; later ones add to it, e.g. a machine-local
    mirrors file)."""
    return os.pathsep.join(project_path(str(f)) for f in configfiles) or "config.yaml"


@dataclass
class RuleTables:
    """The per-trial rules' lookups. Keys: `scored` and `judged` by scenario; `transcript` by
    (model, host, tool, scenario); the recorded ones by (model, host, tool, scenario, trial);
    `transcript_retry` by (model, host, tool, repo, scenario, trial); trials as text."""

    scored: dict
    judged: dict
    judged_recorded: dict
    transcript: dict
    transcript_recorded: dict
    transcript_retry: dict
    retried: list = field(default_factory=list)  # the missing trials this run retries

    def transcript_params(self) -> Callable:
        """The transcript rule's params function: the plainest the tables allow."""
        p, rec, retry = self.transcript, self.transcript_recorded, self.transcript_retry
        if retry:

            def transcript_params(wc):
                return (
                    retry.get((wc.model, wc.host, wc.tool, wc.repo, wc.scenario, wc.trial))
                    or rec.get((wc.model, wc.host, wc.tool, wc.scenario, wc.trial))
                    or p[wc.model, wc.host, wc.tool, wc.scenario]
                )
        elif rec:

            def transcript_params(wc):
                return (
                    rec.get((wc.model, wc.host, wc.tool, wc.scenario, wc.trial))
                    or p[wc.model, wc.host, wc.tool, wc.scenario]
                )
        else:

            def transcript_params(wc):
                return p[wc.model, wc.host, wc.tool, wc.scenario]

        return transcript_params

    def judged_params(self) -> Callable:
        """The judged rule's params function (per trial only with a recorded judge)."""
        p, rec = self.judged, self.judged_recorded
        if rec:

            def judged_params(wc):
                return rec[wc.model, wc.host, wc.tool, wc.scenario, wc.trial]
        else:

            def judged_params(wc):
                return p[wc.scenario]

        return judged_params


def rule_tables(m: Matrix, rerun: dict, runs: str = RUNS) -> RuleTables:
    """The lookups of the per-trial rules of matrix `m`, given its rerun keys (`rule_params(m)`)
    and the runs folder (where missing trials' attempts are found)."""
    scenario_file = {sc.id: project_path(str(sc.path)) for sc in m.trial_scenarios()}
    scored = {
        sc.id: {
            "rerun": rerun["scored"][(sc.id,)],
            "scenario": scenario_file[sc.id],
            "commit": m.repos[sc.repo]["commit"],
        }
        for sc in m.trial_scenarios()
    }
    judged = {s: {"rerun": rerun["judged"][(s,)], "scenario": f} for s, f in scenario_file.items()}
    judged_rec = {k: dict(judged[k[3]], judgement=sha) for k, sha in recorded_judgements(m).items()}
    transcript = {
        (mo, h, t, s): {
            "rerun": v,
            "index": (
                f"--index results/index/{shlex.quote(m.server_of(t))}/{shlex.quote(m.scenarios[s].repo)}"
                if m.tools[t].get("index")
                else ""
            ),
        }
        for (mo, h, t, s), v in rerun["transcript"].items()
    }
    transcript_rec = {k: dict(transcript[k[:4]], recording=sha) for k, sha in recorded_trials(m).items()}
    retried: list = []
    attempts = retry_attempts(runs, m.config["retries"]["max_attempts"], retried)
    transcript_retry = {
        (mo, h, t, r, s, n): dict(transcript[mo, h, t, s], attempt=a)
        for (mo, h, t, r, s, n), a in attempts.items()
        if (mo, h, t, s) in transcript
    }
    retried = [k for k in retried if k[:3] + k[4:5] in transcript]
    return RuleTables(scored, judged, judged_rec, transcript, transcript_rec, transcript_retry, retried)
