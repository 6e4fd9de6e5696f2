# The workflow's definitions, all asked of the library: the matrix (the same checks as
# `mcptrials validate`), every rerun key (mcptrials.dag.rerun.TABLE decides what reruns: the
# rules only look their params up), the per-trial rules' lookups (mcptrials.dag.params), the
# files and wildcards (mcptrials.dag.targets) and the plan (mcptrials.dag.preflight).
import os
from pathlib import Path
import shlex
import sys

from mcptrials.analyze.lock import LABEL_FILES
from mcptrials.cli.delegate import shell_function
from mcptrials.core.failures import dag_attempt
from mcptrials.dag.params import config_path, rule_tables
from mcptrials.dag.rerun import rule_params
from mcptrials.dag.targets import (CHECKOUT_FILE, HOST_INSTALL_FILE, INDEX_FILE, SNAPSHOT_FILE, TOOL_INSTALL_FILE,
                                   log_file, run_file, trial_files, wildcards)
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.run.hosts import needs_install

# The DAG reads the same files as the stages (every --configfile, project-relative), not
# Snakemake's `config`, which would also hold the Snakefile's default config.yaml.
CONFIG_PATH = config_path(workflow.overwrite_configfiles)
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
# With the warm worker on ($MCPTRIALS_WORKER_TCP, workflow/rules/worker.smk), the per-trial
# stages go to it from bash itself (mcptrials.cli.delegate.shell_function: no client process
# a job); its exit code 75 (nothing ran) falls back in-process. Snakemake formats the prefix
# once: the function's own braces are doubled.
shell.prefix(
    "set -euo pipefail; "
    + shell_function(PYTHON).replace("{", "{{").replace("}", "}}")
    + f"export MCPTRIALS_CONFIG={shlex.quote(CONFIG_PATH)}; "
)

# Each wildcard is an alternation of the matrix's values: a target with a mistyped model,
# host, tool, repo, scenario or trial matches no rule, and Snakemake names it at once.
wildcard_constraints:
    **wildcards(M),


# A run in waves (trials: {min, max, until: decided}): workflow/rules/sequential.smk.
SEQUENTIAL = M.sequential is not None

# rule -> job key -> a hash of everything that rule's job depends on (mcptrials.dag.rerun).
RERUN = rule_params(M)
# The per-trial rules' one lookup each (mcptrials.dag.params): the rerun hash plus what the
# command needs; a recorded model's or judge's trial also its recording's sha256, a retried
# missing trial its next attempt number.
TABLES = rule_tables(M, RERUN)
SCORED_P = TABLES.scored
transcript_params = TABLES.transcript_params()
judged_params = TABLES.judged_params()
if TABLES.retried and workflow.is_main_process:
    print(f"mcptrials retry: {len(TABLES.retried)} missing trial(s) (api_failed, harness_failed, not_run) are retried, "
          f"up to retries.max_attempts = {M.config['retries']['max_attempts']}", file=sys.stderr)

# A recorded arm (transport recorded) has no snapshot: its trials read none (--snapshot '').
SNAPSHOT_TOOLS = set(M.snapshot_tools())
ANY_INDEX = any(spec.get("index") for spec in M.tools.values())
# Hosts with software to install (claude-code): their trials wait for results/hosts/{host}/install.json.
HOST_INSTALL = {h: HOST_INSTALL_FILE.format(host=h) if needs_install(spec["kind"]) else [] for h, spec in M.hosts.items()}
ANY_HOST_INSTALL = any(HOST_INSTALL.values())
# Which models call an API (the `api` resource): not the reference agent, not recorded runs.
MODEL_CALLS = {m: 0 if spec["provider"] in ("reference", "recorded") else 1 for m, spec in M.models.items()}

# Retries. The profiles' `restart-times: 2` reruns a failed job twice: right for what can pass
# on a second try (a clone, a package index, a server's cold start, a model API). A rule whose
# failure is deterministic (the same inputs fail the same way: grading, the tables, the report,
# the lock check, `status`) sets `retries: 0`, so it fails once and prints its error once.
# The judge rules retry only a judge that calls a model API (None: the profile's restart-times).
JUDGE_RETRIES = 0 if M.specs.judge.provider in ("reference", "recorded") else None

# The config's held-out anchor (`locked:`): its files are inputs of the check and the report.
LOCKED = os.path.relpath(M.locked_dir, os.getcwd()) if M.locked_dir is not None else None
# The reader's citation labels (`mcptrials label`) live there too, pinned by their own lockfile:
# inputs of the aggregate (hence the report) only, so labelling never reruns the held-out check.
LOCKED_FILES = (
    sorted(str(p) for p in Path(LOCKED).rglob("*") if p.is_file() and p.relative_to(LOCKED).as_posix() not in LABEL_FILES)
    if LOCKED
    else []
)
HAS_ANCHOR = bool(LOCKED_FILES)
CITATION_LABELS = [str(Path(LOCKED) / f) for f in LABEL_FILES if (Path(LOCKED) / f).is_file()] if LOCKED else []


# The rules' input functions. A description variant (variant_of) runs its base's install and
# index: no jobs of its own.
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


# The plan, printed once by the main process (`-n -q` hides the job table, not this): what the
# selected scenarios use, as the DAG does, and the expected cost (mcptrials.cost.plan: measured
# usage of earlier trials, else the upper bound). Then what the real run's onstart refuses on
# (the Snakefile), printed here too: a dry run (`snakemake -n`, which has no onstart) shows
# every refusal before anyone pays.
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
        + plan_line(PLAN, waves=SEQUENTIAL),
        file=sys.stderr,
    )
    if SEQUENTIAL:  # the waves planned so far, the most that may follow, and what the run can cost
        from mcptrials.analyze.wave_cost import wave_cost_line
        from mcptrials.dag.waves import waves_line

        print(f"mcptrials {waves_line(M)}; {wave_cost_line(M)}", file=sys.stderr)
    REFUSALS = refusals(M, plan=PLAN)
    for line in REFUSALS:
        print(f"mcptrials: warning: a real run refuses to start: {line}", file=sys.stderr)
