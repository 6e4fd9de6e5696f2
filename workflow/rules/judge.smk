# The judge: reruns when the rubric part of the scenario, the judge prompt (its hash) or
# the judge settings change; never reruns an agent.
rule judged:
    input:
        transcript="results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
    output:
        "results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/judged.json",
    params:
        p=lambda wc: JUDGED_PARAMS[wc.scenario],
    resources:
        api=0 if M.config["judge"]["provider"] == "reference" else 1,
    log:
        "results/logs/judged/{model}/{host}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials judge --config " + CONFIG_PATH + " --transcript {input.transcript} --scenario {params.p[scenario]}"
        " --out {output} > {log} 2>&1"
