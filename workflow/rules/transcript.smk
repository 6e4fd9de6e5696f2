# One trial: fresh workspace, fresh server, the agent loop. Faults are recorded in the
# transcript (the command exits 0), so one bad trial never stops the others; a missing one
# (api_failed, harness_failed, not_run) is retried by the next invocation (mcptrials.dag.params).
rule transcript:
    input:
        checkout=CHECKOUT_FILE,
        snapshot=snapshot_input if len(SNAPSHOT_TOOLS) < len(M.tools) else SNAPSHOT_FILE,
        index=index_input if ANY_INDEX else [],
        host_install=host_install_input if ANY_HOST_INSTALL else [],
    output:
        transcript=run_file("transcript.json"),
        meta=run_file("run_meta.json"),
    params:
        p=transcript_params,  # mcptrials.dag.params: plus the attempt of a retried missing trial
    resources:
        api=(lambda wc: MODEL_CALLS[wc.model]) if len(set(MODEL_CALLS.values())) > 1 else max(MODEL_CALLS.values()),
    # (no `retries:`: a fault inside the trial is recorded and exits 0; a job that fails died,
    # killed, out of memory or with its Slurm node, and a second try can finish it)
    conda:
        "../envs/mcptrials.yaml"
    log:
        log_file("transcript"),
    shell:
        "mcptrials run-trial --config \"$MCPTRIALS_CONFIG\" --model {wildcards.model:q} --host {wildcards.host:q}"
        " --tool {wildcards.tool:q} --scenario {wildcards.scenario:q} --trial {wildcards.trial}"
        " --checkout {input.checkout:q} --snapshot {input.snapshot:q} {params.p[index]}"
        " --out {output.transcript:q} > {log:q} 2>&1"
