# Only for tools that declare `index:`: run once per repo, reused by every trial of that repo.
rule index:
    input:
        checkout=CHECKOUT_FILE,
        install=TOOL_INSTALL_FILE,
    output:
        INDEX_FILE,
    params:
        rerun=lambda wc: RERUN["index"][(wc.tool, wc.repo)],
    # (no `retries:`: the tool's own indexer can fail for time or memory, or lose its Slurm node)
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/index/{tool}/{repo}.log",
    shell:
        "mcptrials index --config \"$MCPTRIALS_CONFIG\" --tool {wildcards.tool:q} --checkout {input.checkout:q}"
        " --install {input.install:q}"
        " --out results/index/{wildcards.tool:q}/{wildcards.repo:q} > {log:q} 2>&1"
