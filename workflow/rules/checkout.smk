rule checkout:
    output:
        "results/checkouts/{repo}/checkout.json",
    params:
        rerun=lambda wc: RERUN["checkout"][(wc.repo,)],
        # a failed checkout is missing data (mcptrials.core.failures): the next invocation tries it again
        attempt=lambda wc: dag_attempt(f"results/checkouts/{wc.repo}/checkout.json"),
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/checkout/{repo}.log",
    shell:
        "mcptrials checkout --config \"$MCPTRIALS_CONFIG\" --repo {wildcards.repo:q} --out {output:q}"
        " --attempt {params.attempt} > {log:q} 2>&1"
