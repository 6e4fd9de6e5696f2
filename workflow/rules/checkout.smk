rule checkout:
    output:
        "results/checkouts/{repo}/checkout.json",
    params:
        rerun=lambda wc: RERUN["checkout"][(wc.repo,)],
    log:
        "results/logs/checkout/{repo}.log",
    shell:
        "{MCPTRIALS} checkout --config {CONFIG} --repo {wildcards.repo:q} --out {output:q} > {log:q} 2>&1"
