# Config validation and the matrix, through the library (the same checks as `mcptrials validate`).
import os
import sys

from mcptrials.config import ConfigError, canonical_hash, check_api_keys, file_sha256, load_matrix
from mcptrials.paths import PROMPT_DIR

# Every --configfile, joined by os.pathsep: the stages merge them as Snakemake does (the
# first is the main config, e.g. configs/code-intel.yaml; later ones add to it, e.g. a
# machine-local mirrors file). The DAG reads the same files as the stages, not Snakemake's
# `config`, which would also hold the Snakefile's default config.yaml.
CONFIG_PATH = os.pathsep.join(str(f) for f in workflow.overwrite_configfiles) or "config.yaml"
try:
    M = load_matrix(CONFIG_PATH)
except ConfigError as e:
    sys.exit(f"mcptrials: error: {e}")

# Content hashes, computed once at parse time: params that rerun exactly what changed.
TASK_HASH = {s: canonical_hash(sc.task_part()) for s, sc in M.scenarios.items()}
GRADING_HASH = {s: canonical_hash(sc.grading_part()) for s, sc in M.scenarios.items()}
RUBRIC_HASH = {s: canonical_hash(sc.rubric_part()) for s, sc in M.scenarios.items()}
TOOL_HASH = {t: M.tool_hash(t) for t in M.tools}
INSTALL_HASH = {t: canonical_hash(spec.get("install") or {}) for t, spec in M.tools.items()}
INDEX_HASH = {t: canonical_hash(spec.get("index")) for t, spec in M.tools.items()}
MODEL_HASH = {m: M.model_hash(m) for m in M.models}
JUDGE_HASH = canonical_hash(M.config["judge"])
MODEL_CALLS = {m: 0 if spec["provider"] == "reference" else 1 for m, spec in M.models.items()}
SYSTEM_PROMPT_HASH = file_sha256(PROMPT_DIR / "system.md")
JUDGE_PROMPT_HASH = file_sha256(PROMPT_DIR / "judge.md")
ANY_INDEX = any(spec.get("index") for spec in M.tools.values())

# One params dict per rule and wildcard value: each input function or params lambda costs
# Snakemake ~0.2 ms a job at DAG time, so per-trial rules get a single lookup each. A
# changed value (a hash) reruns exactly the jobs it belongs to.
SCORED_PARAMS = {
    s: {"grading": GRADING_HASH[s], "scenario": str(sc.path), "commit": M.repos[sc.repo]["commit"]}
    for s, sc in M.scenarios.items()
}
JUDGED_PARAMS = {
    s: {"rubric": RUBRIC_HASH[s], "scenario": str(sc.path), "judge": JUDGE_HASH, "prompt": JUDGE_PROMPT_HASH}
    for s, sc in M.scenarios.items()
}
# A host's settings rerun its trials; the loop has none, so its params stay as they were.
TRANSCRIPT_PARAMS = {
    (m, h, s): {"task": TASK_HASH[s], "model": MODEL_HASH[m], "system_prompt": SYSTEM_PROMPT_HASH,
                **({} if M.hosts[h]["kind"] == "loop" else {"host": canonical_hash(M.hosts[h])})}
    for m in M.models
    for h in M.hosts
    for s in M.scenarios
}
# Hosts with software to install (claude-code): their trials wait for results/hosts/{host}/install.json.
from mcptrials.hosts import needs_install

HOST_INSTALL = {h: f"results/hosts/{h}/install.json" if needs_install(spec["kind"]) else [] for h, spec in M.hosts.items()}
HOST_INSTALL_HASH = {h: canonical_hash(spec.get("version")) for h, spec in M.hosts.items()}
ANY_HOST_INSTALL = any(HOST_INSTALL.values())


wildcard_constraints:
    model="[^/]+",
    host="[^/]+",
    tool="[^/]+",
    repo="[^/]+",
    scenario="[^/]+",
    trial="[0-9]+",


def trial_dirs():
    return [
        f"results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}"
        for model, host, tool, repo, scenario, trial in M.cells()
    ]


def install_input(wc):
    if M.tools[wc.tool]["transport"] == "none":
        return []
    return f"results/tools/{wc.tool}/install.json"


def host_install_input(wc):
    return HOST_INSTALL[wc.host]


def index_input(wc):
    if M.tools[wc.tool].get("index"):
        return f"results/index/{wc.tool}/{wc.repo}/index.json"
    return []


def index_arg(wc, input):
    return f"--index {Path(input.index).parent}" if input.get("index") else ""


def final_outputs():
    return [
        "results/report/index.html",
        "results/report/report.md",
    ]


# The plan, printed once by the main process (`-n -q` hides the job table, not this).
if workflow.is_main_process:
    n_sc = len(M.run_scenarios())
    print(
        f"mcptrials plan: {len(M.models)} model(s) x {len(M.hosts)} host(s) x {len(M.tools)} tool(s) x "
        f"{n_sc} scenario(s) x {M.trials} trial(s) = {sum(1 for _ in M.cells())} trials "
        f"(transcript, scored, judged each), {len(M.repos)} repo checkout(s), "
        f"{len(M.server_tools())} server install(s) and {len(M.tools) * len(M.repos)} tool snapshot(s), "
        "then aggregate, held-out check and report",
        file=sys.stderr,
    )
