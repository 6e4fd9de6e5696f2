rule install_tool:
    output:
        TOOL_INSTALL_FILE,
    params:
        rerun=lambda wc: RERUN["install_tool"][(wc.tool,)],
        # a failed install is missing data (mcptrials.core.failures): the next invocation tries it again
        attempt=lambda wc: dag_attempt(TOOL_INSTALL_FILE.format(tool=wc.tool)),
    # (no `retries:`: the profile's restart-times retry a package index or download hiccup)
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/install/{tool}.log",
    shell:
        "mcptrials install-tool --config \"$MCPTRIALS_CONFIG\" --tool {wildcards.tool:q} --out {output:q}"
        " --attempt {params.attempt} > {log:q} 2>&1"


# A host's own software (the Claude Code CLI, pinned) into .tools/_hosts/{host}/; only hosts
# that need it have this job (HOST_INSTALL), and only their trials wait for it.
rule install_host:
    output:
        HOST_INSTALL_FILE,
    params:
        rerun=lambda wc: RERUN["install_host"][(wc.host,)],
    # (no `retries:`: the profile's restart-times retry a download hiccup)
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/install/host-{host}.log",
    shell:
        "mcptrials install-host --config \"$MCPTRIALS_CONFIG\" --host {wildcards.host:q} --out {output:q} > {log:q} 2>&1"
