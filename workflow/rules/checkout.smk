rule checkout:
    output:
        CHECKOUT_FILE,
    params:
        rerun=lambda wc: RERUN["checkout"][(wc.repo,)],
        # a failed checkout is missing data (mcptrials.core.failures): the next invocation tries it again
        attempt=lambda wc: dag_attempt(CHECKOUT_FILE.format(repo=wc.repo)),
    # (no `retries:`: the profile's restart-times retry a flaky clone or fetch)
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/checkout/{repo}.log",
    shell:
        "mcptrials checkout --config \"$MCPTRIALS_CONFIG\" --repo {wildcards.repo:q} --out {output:q}"
        " --attempt {params.attempt} > {log:q} 2>&1"
