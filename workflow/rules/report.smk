# The held-out anchor of this config (`locked:`); without one, neither check is planned and
# the report says "no held-out anchor for this run".
if HAS_ANCHOR:

    # Any missing, modified or unlisted file under the anchor fails this rule, and the report needs it.
    rule verify_lock:
        input:
            LOCKED_FILES,
        output:
            "results/heldout/lock_verified.json",
        params:
            rerun=RERUN["verify_lock"][()],
            locked=lambda wc: LOCKED,
        retries: 0  # deterministic: the same files hash the same (common.smk, Retries)
        localrule: True
        conda:
            "../envs/mcptrials.yaml"
        log:
            "results/logs/verify_lock.log",
        shell:
            "mcptrials verify-lock --locked {params.locked:q} --out {output:q} 2> {log:q}"

    # Re-judge the frozen held-out transcripts with the current rubric, prompt and judge.
    rule heldout:
        input:
            verified="results/heldout/lock_verified.json",
        output:
            "results/heldout/agreement.json",
        params:
            rerun=RERUN["heldout"][()],
        retries: JUDGE_RETRIES  # re-judges: a model judge's API can pass on a second try
        localrule: True
        conda:
            "../envs/mcptrials.yaml"
        log:
            "results/logs/heldout.log",
        shell:
            "mcptrials heldout --config \"$MCPTRIALS_CONFIG\" --out {output:q} > {log:q} 2>&1"


# The report takes the lockfile and every locked file too: drift keeps an old report stale.
rule report:
    input:
        aggregate=rules.aggregate.output,
        heldout="results/heldout/agreement.json" if HAS_ANCHOR else [],
        locked=LOCKED_FILES,
    output:
        html="results/report/index.html",
        md="results/report/report.md",
    params:
        rerun=RERUN["report"][()],
        heldout_arg="--heldout results/heldout/agreement.json" if HAS_ANCHOR else "",
    retries: 0  # deterministic: the report of the same tables
    localrule: True
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/report.log",
    shell:
        "mcptrials report --config \"$MCPTRIALS_CONFIG\" --aggregate results/aggregate {params.heldout_arg}"
        " --runs results/runs --out-dir results/report > {log:q} 2>&1"


# The last job: a checkout, install or server start that failed is missing data in the report,
# and this job then fails the run (one line per failure on the console), so CI sees it.
rule status:
    input:
        rules.report.output,
    output:
        "results/status.json",
    params:
        rerun=RERUN["status"][()],
    retries: 0  # deterministic: it fails because a stage failed, and says so once
    localrule: True
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/status.log",
    shell:
        # on the console too (tee), so a failed run says why where it is read; pipefail keeps the exit
        "mcptrials status --results results --out {output:q} 2>&1 | tee {log:q}"
