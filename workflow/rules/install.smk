rule install_tool:
    output:
        "results/tools/{tool}/install.json",
    params:
        cfg=CONFIG_PATH,
        install=lambda wc: INSTALL_HASH[wc.tool],
    log:
        "results/logs/install/{tool}.log",
    shell:
        "mcptrials install-tool --config {params.cfg} --tool {wildcards.tool} --out {output} > {log} 2>&1"
