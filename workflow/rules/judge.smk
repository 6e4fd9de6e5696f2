# The judge: reruns when the rubric part of the scenario, the judge prompt or the judge
# settings change; never reruns an agent.
rule judged:
    input:
        transcript="results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/transcript.json",
        prompt="prompts/judge.md",
    output:
        "results/runs/{model}/{tool}/{repo}/{scenario}/{trial}/judged.json",
    params:
        cfg=CONFIG_PATH,
        rubric=lambda wc: RUBRIC_HASH[wc.scenario],
        judge=JUDGE_HASH,
        scenario=lambda wc: M.scenarios[wc.scenario].path,
    resources:
        api=0 if M.config["judge"]["provider"] == "reference" else 1,
    log:
        "results/logs/judged/{model}/{tool}/{repo}/{scenario}/{trial}.log",
    shell:
        "mcptrials judge --config {params.cfg} --transcript {input.transcript} --scenario {params.scenario}"
        " --out {output} > {log} 2>&1"
