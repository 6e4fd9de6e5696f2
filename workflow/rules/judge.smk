# The judge: reruns when the rubric part of the scenario, the judge prompt or the judge
# settings change (never its threshold); never reruns an agent.
rule judged:
    input:
        transcript=run_file("transcript.json"),
    output:
        run_file("judged.json"),
    params:
        p=judged_params,  # mcptrials.dag.params: by scenario, per trial with a recorded judge
    retries: JUDGE_RETRIES  # a model judge's API can pass on a second try; the reference judge cannot
    resources:
        api=0 if M.specs.judge.provider in ("reference", "recorded") else 1,
    conda:
        "../envs/mcptrials.yaml"
    log:
        log_file("judged"),
    shell:
        "mcptrials judge --config \"$MCPTRIALS_CONFIG\" --transcript {input.transcript:q} --scenario {params.p[scenario]:q}"
        " --out {output:q} > {log:q} 2>&1"
