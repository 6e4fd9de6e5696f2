# Deterministic graders: no model call; reruns when the scenario's grading part changes.
rule scored:
    input:
        transcript=run_file("transcript.json"),
    output:
        run_file("scored.json"),
    params:
        p=lambda wc: SCORED_P[wc.scenario],
    retries: 0  # deterministic: the same transcript and scenario grade the same way
    conda:
        "../envs/mcptrials.yaml"
    log:
        log_file("scored"),
    shell:
        "mcptrials score --config \"$MCPTRIALS_CONFIG\" --transcript {input.transcript:q} --scenario {params.p[scenario]:q}"
        " --repo-dir results/checkouts/{wildcards.repo:q}/tree --commit {params.p[commit]} --out {output:q} > {log:q} 2>&1"
