# tools/list of a fresh server against the checkout; per-trial rules depend on it, so a
# changed server (version, args, tool descriptions) reruns that server's trials only.
rule tools_snapshot:
    input:
        checkout=CHECKOUT_FILE,
        install=install_input,
        index=index_input,
    output:
        SNAPSHOT_FILE,
    params:
        rerun=lambda wc: RERUN["tools_snapshot"][(wc.tool, wc.repo)],
        install_arg=lambda wc, input: f"--install {shlex.quote(input.install)}" if input.install else "",
        index_arg=index_arg,
    # (no `retries:`: a server's cold start can pass its startup_timeout on a second try)
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/snapshot/{tool}/{repo}.log",
    shell:
        "mcptrials snapshot --config \"$MCPTRIALS_CONFIG\" --tool {wildcards.tool:q} --repo {wildcards.repo:q}"
        " --checkout {input.checkout:q} {params.install_arg} {params.index_arg} --out {output:q} > {log:q} 2>&1"
