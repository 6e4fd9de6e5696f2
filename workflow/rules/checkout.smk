rule checkout:
    output:
        "results/checkouts/{repo}/checkout.json",
    params:
        cfg=CONFIG_PATH,
        commit=lambda wc: M.repos[wc.repo]["commit"],
        source=lambda wc: M.repos[wc.repo]["url"],
    log:
        "results/logs/checkout/{repo}.log",
    shell:
        "mcptrials checkout --config {params.cfg} --repo {wildcards.repo} --out {output} > {log} 2>&1"
