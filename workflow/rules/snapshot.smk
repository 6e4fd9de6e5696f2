# tools/list of a fresh server against the checkout; per-trial rules depend on it, so a
# changed server (version, args, tool descriptions) reruns that server's trials only.
rule tools_snapshot:
    input:
        checkout="results/checkouts/{repo}/checkout.json",
        install=install_input,
        index=index_input,
    output:
        "results/snapshots/{tool}/{repo}/tools.json",
    params:
        cfg=CONFIG_PATH,
        spec=lambda wc: TOOL_HASH[wc.tool],
        install_arg=lambda wc, input: f"--install {input.install}" if input.install else "",
        index_arg=index_arg,
    log:
        "results/logs/snapshot/{tool}/{repo}.log",
    shell:
        "mcptrials snapshot --config {params.cfg} --tool {wildcards.tool} --repo {wildcards.repo}"
        " --checkout {input.checkout} {params.install_arg} {params.index_arg} --out {output} > {log} 2>&1"
