# Deterministic graders: no model call; reruns when the scenario's grading part changes.
rule scored:
    input:
        transcript="results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
    output:
        "results/runs/{model}/{host}/{tool}/{repo}/{scenario}/{trial}/scored.json",
    params:
        p=lambda wc: SCORED_PARAMS[wc.scenario],
    log:
        "results/logs/scored/{model}/{host}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials score --config " + CONFIG_PATH + " --transcript {input.transcript} --scenario {params.p[scenario]}"
        " --repo-dir results/checkouts/{wildcards.repo}/tree --commit {params.p[commit]} --out {output} > {log} 2>&1"
