rule install_tool:
    output:
        "results/tools/{tool}/install.json",
    params:
        rerun=lambda wc: RERUN["install_tool"][(wc.tool,)],
    log:
        "results/logs/install/{tool}.log",
    shell:
        "{MCPTRIALS} install-tool --config {CONFIG} --tool {wildcards.tool:q} --out {output:q} > {log:q} 2>&1"


# A host's own software (the Claude Code CLI, pinned) into .tools/_hosts/{host}/; only hosts
# that need it have this job (HOST_INSTALL), and only their trials wait for it.
rule install_host:
    output:
        "results/hosts/{host}/install.json",
    params:
        rerun=lambda wc: RERUN["install_host"][(wc.host,)],
    log:
        "results/logs/install/host-{host}.log",
    shell:
        "{MCPTRIALS} install-host --config {CONFIG} --host {wildcards.host:q} --out {output:q} > {log:q} 2>&1"
