# One trial: fresh workspace, fresh server, the agent loop. Faults are recorded in the
# transcript (the command exits 0), so one bad trial never stops the others.
rule transcript:
    input:
        checkout="results/checkouts/{repo}/checkout.json",
        snapshot="results/snapshots/{tool}/{repo}/tools.json",
        index=index_input,
        system_prompt="prompts/system.md",
    output:
        transcript="results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
        meta="results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/run_meta.json",
    params:
        cfg=CONFIG_PATH,
        task=lambda wc: TASK_HASH[wc.scenario],
        model=lambda wc: MODEL_HASH[wc.model],
        index_arg=index_arg,
    resources:
        api=lambda wc: MODEL_CALLS[wc.model],
    log:
        "results/logs/transcript/{model}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials run-trial --config {params.cfg} --model {wildcards.model} --tool {wildcards.tool}"
        " --scenario {wildcards.scenario} --trial {wildcards.trial} --checkout {input.checkout}"
        " --snapshot {input.snapshot} {params.index_arg} --out {output.transcript} > {log} 2>&1"
