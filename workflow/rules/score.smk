# Deterministic graders: no model call; reruns when the scenario's grading part changes.
rule scored:
    input:
        transcript="results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
        checkout="results/checkouts/{repo}/checkout.json",
    output:
        "results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/scored.json",
    params:
        cfg=CONFIG_PATH,
        grading=lambda wc: GRADING_HASH[wc.scenario],
        scenario=lambda wc: M.scenarios[wc.scenario].path,
        commit=lambda wc: M.repos[wc.repo]["commit"],
    log:
        "results/logs/scored/{model}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials score --config {params.cfg} --transcript {input.transcript} --scenario {params.scenario}"
        " --repo-dir results/checkouts/{wildcards.repo}/tree --commit {params.commit} --out {output} > {log} 2>&1"
