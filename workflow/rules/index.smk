# Only for tools that declare `index:`: run once per repo, reused by every trial of that repo.
rule index:
    input:
        checkout="results/checkouts/{repo}/checkout.json",
        install="results/tools/{tool}/install.json",
    output:
        "results/index/{tool}/{repo}/index.json",
    params:
        cfg=CONFIG_PATH,
        index=lambda wc: INDEX_HASH[wc.tool],
    log:
        "results/logs/index/{tool}/{repo}.log",
    shell:
        "mcptrials index --config {params.cfg} --tool {wildcards.tool} --checkout {input.checkout} --out results/index/{wildcards.tool}/{wildcards.repo} > {log} 2>&1"
