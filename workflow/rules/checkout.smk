rule checkout:
    output:
        "results/checkouts/{repo}/checkout.json",
    params:
        rerun=lambda wc: RERUN["checkout"][(wc.repo,)],
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/checkout/{repo}.log",
    shell:
        "mcptrials checkout --config \"$MCPTRIALS_CONFIG\" --repo {wildcards.repo:q} --out {output:q} > {log:q} 2>&1"
