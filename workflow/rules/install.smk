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


# A host's own software (the Claude Code CLI, pinned) into .tools/_hosts/{host}/; only hosts
# that need it have this job (HOST_INSTALL), and only their trials wait for it.
rule install_host:
    output:
        "results/hosts/{host}/install.json",
    params:
        cfg=CONFIG_PATH,
        spec=lambda wc: HOST_INSTALL_HASH[wc.host],
    log:
        "results/logs/install/host-{host}.log",
    shell:
        "mcptrials install-host --config {params.cfg} --host {wildcards.host} --out {output} > {log} 2>&1"
