# mcptrials: tools x repos x scenarios x models x trials -> transcripts -> scores -> report.
# The rules are thin: each stage is a `mcptrials <stage>` command of the library.
from snakemake.utils import min_version

min_version("9.27")


configfile: "config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/checkout.smk"
include: "workflow/rules/install.smk"
include: "workflow/rules/index.smk"
include: "workflow/rules/snapshot.smk"
include: "workflow/rules/transcript.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/judge.smk"
include: "workflow/rules/sequential.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/worker.smk"


# Before any job of a real run (dry runs skip this, and print the same lines as warnings):
# whatever `mcptrials validate` refuses (a missing API key, a sandbox that cannot be built
# here, a command or path that does not exist, a commit a local source does not hold) or a
# run expected to cost more than `budget.max_cost_usd` stops everything, before a single
# trial is spent or a finished one touched (mcptrials.dag.preflight.refusals).
onstart:
    if REFUSALS:
        sys.exit("mcptrials: error: " + "\n".join(REFUSALS))
    start_trial_worker()  # local runs: one warm process forks the trials (workflow/rules/worker.smk)


onsuccess:
    stop_trial_worker()


onerror:
    stop_trial_worker()


rule all:
    input:
        final_outputs(),
    default_target: True
