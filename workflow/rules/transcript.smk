# One trial: fresh workspace, fresh server, the agent loop. Faults are recorded in the
# transcript (the command exits 0), so one bad trial never stops the others.
rule transcript:
    input:
        checkout="results/checkouts/{repo}/checkout.json",
        snapshot="results/snapshots/{tool}/{repo}/tools.json",
        index=index_input if ANY_INDEX else [],
        host_install=host_install_input if ANY_HOST_INSTALL else [],
    output:
        transcript="results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
        meta="results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/run_meta.json",
    params:
        p=lambda wc: TRANSCRIPT_PARAMS[wc.model, wc.host, wc.scenario],
        index_arg=index_arg if ANY_INDEX else "",
    resources:
        api=(lambda wc: MODEL_CALLS[wc.model]) if len(set(MODEL_CALLS.values())) > 1 else max(MODEL_CALLS.values()),
    log:
        "results/logs/transcript/{model}/{host}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials run-trial --config " + CONFIG_PATH + " --model {wildcards.model} --host {wildcards.host} --tool {wildcards.tool}"
        " --scenario {wildcards.scenario} --trial {wildcards.trial} --checkout {input.checkout}"
        " --snapshot {input.snapshot} {params.index_arg} --out {output.transcript} > {log} 2>&1"
