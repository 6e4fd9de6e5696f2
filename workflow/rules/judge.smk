# The judge: reruns when the rubric part of the scenario, the judge prompt or the judge
# settings change (never its threshold); never reruns an agent.
rule judged:
    input:
        transcript="results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
    output:
        "results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/judged.json",
    params:
        p=judged_params,  # common.smk: JUDGED_P, per trial with a recorded judge
    resources:
        api=0 if M.config["judge"]["provider"] in ("reference", "recorded") else 1,
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/judged/{model}/{host}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials judge --config \"$MCPTRIALS_CONFIG\" --transcript {input.transcript:q} --scenario {params.p[scenario]:q}"
        " --out {output:q} > {log:q} 2>&1"
