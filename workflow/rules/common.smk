# Config validation, the matrix and every rerun key, through the library (the same checks
# as `mcptrials validate`). What reruns when something changes is decided in one place,
# mcptrials.dag.rerun.TABLE: the rules below only look their params up in RERUN.
import os
from pathlib import Path
import shlex
import sys

from mcptrials.matrix.config import check_api_keys, load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.dag.preflight import check_sandbox
from mcptrials.dag.rerun import heldout_scenarios, recorded_judgements, recorded_trials, rule_params
from mcptrials.dag.targets import (CHECKOUT_FILE, HOST_INSTALL_FILE, INDEX_FILE, RUNS, SNAPSHOT_FILE, TOOL_INSTALL_FILE,
                                   WILDCARDS, log_file, run_file, trial_files)


def _project_path(f):
    """A --configfile as the jobs should see it: relative to the project (the working
    directory) when inside it, so a project copied elsewhere plans nothing new."""
    rel = os.path.relpath(os.path.abspath(f), os.getcwd())
    return f if rel.startswith("..") else rel


# Every --configfile, joined by os.pathsep: the stages merge them as Snakemake does (the
# first is the main config, e.g. configs/code-intel.yaml; later ones add to it, e.g. a
# machine-local mirrors file). The DAG reads the same files as the stages, not Snakemake's
# `config`, which would also hold the Snakefile's default config.yaml.
CONFIG_PATH = os.pathsep.join(_project_path(str(f)) for f in workflow.overwrite_configfiles) or "config.yaml"
try:
    M = load_matrix(CONFIG_PATH)
except ConfigError as e:
    sys.exit(f"mcptrials: error: {e}")

# Every shell command runs the library as `mcptrials`, a shell function for the interpreter
# that runs Snakemake (not whatever PATH holds: `.venv/bin/snakemake` works without
# activating the venv), with the config in $MCPTRIALS_CONFIG. Both live in the shell prefix,
# not in the rules: a rule's code (its shell string) is then the same in any folder and on
# any machine, and a moved project reruns nothing. Every path in a command is quoted.
PYTHON = shlex.quote(sys.executable)
# (the prefix is formatted like a command: its own braces are doubled, twice in an f-string)
shell.prefix(
    "set -euo pipefail; "
    f'mcptrials() {{{{ {PYTHON} -m mcptrials.cli "$@"; }}}}; '
    f"export MCPTRIALS_CONFIG={shlex.quote(CONFIG_PATH)}; "
)

# rule -> job key -> a hash of everything that rule's job depends on (mcptrials.dag.rerun).
RERUN = rule_params(M)
# Per-trial rules get one params lookup each (each lambda costs Snakemake ~0.2 ms a job at
# DAG time): the rerun hash plus what the command needs, with project-relative paths.
SCENARIO_FILE = {sc.id: _project_path(str(sc.path)) for sc in M.run_scenarios()}
SCORED_P = {sc.id: {"rerun": RERUN["scored"][(sc.id,)], "scenario": SCENARIO_FILE[sc.id],
                    "commit": M.repos[sc.repo]["commit"]} for sc in M.run_scenarios()}
JUDGED_P = {s: {"rerun": RERUN["judged"][(s,)], "scenario": f} for s, f in SCENARIO_FILE.items()}
# judge provider recorded: each judged job also carries the sha256 of its own recorded judgement
JUDGED_REC_P = {k: dict(JUDGED_P[k[3]], judgement=sha) for k, sha in recorded_judgements(M).items()}


def judged_params(wc):
    if JUDGED_REC_P:
        return JUDGED_REC_P[wc.model, wc.host, wc.tool, wc.scenario, wc.trial]
    return JUDGED_P[wc.scenario]
# The trial's --index argument is a value of its lookup, never a param that comes and goes
# with whether any tool has an index (that would rerun every trial).
TRANSCRIPT_P = {
    (m, h, t, s): {"rerun": v, "index": (f"--index results/index/{shlex.quote(M.server_of(t))}/"
                                         f"{shlex.quote(M.scenarios[s].repo)}" if M.tools[t].get("index") else "")}
    for (m, h, t, s), v in RERUN["transcript"].items()
}
# A recorded arm (transport recorded) has no snapshot: its trials read none (--snapshot '').
SNAPSHOT_TOOLS = set(M.snapshot_tools())
# A recorded model's trials: one lookup per trial, carrying the sha256 of its own recording.
TRANSCRIPT_REC_P = {k: dict(TRANSCRIPT_P[k[:4]], recording=sha) for k, sha in recorded_trials(M).items()}
ANY_INDEX = any(spec.get("index") for spec in M.tools.values())
# Missing trials (api_failed, harness_failed, not_run: mcptrials.core.outcomes) are retried by the
# next invocation: `mcptrials run-trial` keeps each missing attempt under <trial>/attempts/ and
# its count in attempts/attempts.json; one glob finds those files, and such a trial's params
# carry its next attempt number (an unchanged one once it completed or used up
# retries.max_attempts), so exactly the missing trials, and what reads them, rerun. Every other
# trial keeps its one lookup in TRANSCRIPT_P and the params it always had.
from mcptrials.core.outcomes import retry_attempts
from mcptrials.core.failures import dag_attempt

RETRIED = []
RETRY_ATTEMPT = retry_attempts(RUNS, M.config["retries"]["max_attempts"], RETRIED)
TRANSCRIPT_RETRY_P = {
    (m, h, t, r, s, n): dict(TRANSCRIPT_P[m, h, t, s], attempt=a)
    for (m, h, t, r, s, n), a in RETRY_ATTEMPT.items()
    if (m, h, t, s) in TRANSCRIPT_P
}
if TRANSCRIPT_RETRY_P:
    def transcript_params(wc):
        return (TRANSCRIPT_RETRY_P.get((wc.model, wc.host, wc.tool, wc.repo, wc.scenario, wc.trial))
                or TRANSCRIPT_REC_P.get((wc.model, wc.host, wc.tool, wc.scenario, wc.trial))
                or TRANSCRIPT_P[wc.model, wc.host, wc.tool, wc.scenario])
elif TRANSCRIPT_REC_P:
    def transcript_params(wc):
        return (TRANSCRIPT_REC_P.get((wc.model, wc.host, wc.tool, wc.scenario, wc.trial))
                or TRANSCRIPT_P[wc.model, wc.host, wc.tool, wc.scenario])
else:
    def transcript_params(wc):
        return TRANSCRIPT_P[wc.model, wc.host, wc.tool, wc.scenario]
RETRIED = [k for k in RETRIED if k[:3] + k[4:5] in TRANSCRIPT_P]
if RETRIED and workflow.is_main_process:
    print(f"mcptrials retry: {len(RETRIED)} missing trial(s) (api_failed, harness_failed, not_run) are retried, "
          f"up to retries.max_attempts = {M.config['retries']['max_attempts']}", file=sys.stderr)
# Retries. The profiles' `restart-times: 2` reruns a failed job twice: right for what can pass
# on a second try (a clone, a package index, a server's cold start, a model API). A rule whose
# failure is deterministic (the same inputs fail the same way: grading, the tables, the report,
# the lock check, `status`) sets `retries: 0`, so it fails once and prints its error once.
# The judge rules retry only a judge that calls a model API (None: the profile's restart-times).
JUDGE_RETRIES = 0 if M.specs.judge.provider in ("reference", "recorded") else None
# Which models call an API (the `api` resource): not the reference agent, not recorded runs.
MODEL_CALLS = {m: 0 if spec["provider"] in ("reference", "recorded") else 1 for m, spec in M.models.items()}

# The config's held-out anchor (`locked:`): its files are inputs of the check and the report.
LOCKED = os.path.relpath(M.locked_dir, os.getcwd()) if M.locked_dir is not None else None
LOCKED_FILES = sorted(str(p) for p in Path(LOCKED).rglob("*") if p.is_file()) if LOCKED else []
HAS_ANCHOR = bool(LOCKED_FILES)
HELDOUT_SCENARIOS = heldout_scenarios(M)

# Hosts with software to install (claude-code): their trials wait for results/hosts/{host}/install.json.
from mcptrials.run.hosts import needs_install

HOST_INSTALL = {h: HOST_INSTALL_FILE.format(host=h) if needs_install(spec["kind"]) else [] for h, spec in M.hosts.items()}
ANY_HOST_INSTALL = any(HOST_INSTALL.values())


# The trial folder's wildcards, its records' paths and the per-trial targets come from the
# library (mcptrials.dag.targets: run_file, log_file, trial_files; the records of the stages
# before a trial: CHECKOUT_FILE, TOOL_INSTALL_FILE, ...), never spelled here.
wildcard_constraints:
    **WILDCARDS,


# A description variant (variant_of) runs its base's install and index: no jobs of its own.
def install_input(wc):
    if M.tools[wc.tool]["transport"] in ("none", "recorded"):
        return []
    return TOOL_INSTALL_FILE.format(tool=M.server_of(wc.tool))


def host_install_input(wc):
    return HOST_INSTALL[wc.host]


def snapshot_input(wc):
    return SNAPSHOT_FILE.format(tool=wc.tool, repo=wc.repo) if wc.tool in SNAPSHOT_TOOLS else []


def index_input(wc):
    if M.tools[wc.tool].get("index"):
        return INDEX_FILE.format(tool=M.server_of(wc.tool), repo=wc.repo)
    return []


def index_arg(wc, input):
    return f"--index {shlex.quote(str(Path(input.index).parent))}" if input.get("index") else ""


def final_outputs():
    return [
        "results/report/index.html",
        "results/report/report.md",
        "results/status.json",   # report.smk: fails the run, after the report, when a stage failed
    ]


# The plan, printed once by the main process (`-n -q` hides the job table, not this). It
# counts what the selected scenarios use, as the DAG does, and ends with the expected cost
# (mcptrials.cost.plan: measured usage of earlier trials, else the upper bound).
PLAN, REFUSALS = None, []
if workflow.is_main_process:
    from mcptrials.cost.plan import plan_line
    from mcptrials.dag.planned import matrix_product
    from mcptrials.dag.preflight import refusals, run_plan

    PLAN = run_plan(M)  # every trial this run will run, new and rerun, with why (mcptrials.dag.planned)
    n_repos = len(M.run_repos())
    print(
        f"mcptrials plan: {matrix_product(M)} (transcript, scored, judged each), {n_repos} repo checkout(s), "
        f"{len(M.installed_tools())} server install(s) and {len(SNAPSHOT_TOOLS) * n_repos} tool snapshot(s), "
        "then aggregate, "
        + (f"the held-out check ({LOCKED})" if HAS_ANCHOR else "no held-out anchor")
        + " and report; "
        + plan_line(PLAN),
        file=sys.stderr,
    )
    # What the real run's onstart refuses on (the Snakefile), printed here too: a dry run
    # (`snakemake -n`, which has no onstart) shows every refusal before anyone pays.
    REFUSALS = refusals(M, plan=PLAN)
    for line in REFUSALS:
        print(f"mcptrials: warning: a real run refuses to start: {line}", file=sys.stderr)
