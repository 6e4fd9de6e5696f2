# Every trial's scores into tables (CSV): one row per trial, per cell and per (model, tool).
rule aggregate:
    input:
        scored=expand("{d}/scored.json", d=trial_dirs()),
        judged=expand("{d}/judged.json", d=trial_dirs()),
    output:
        trials="results/aggregate/trials.csv",
        cells="results/aggregate/cells.csv",
        tools="results/aggregate/tools.csv",
        summary="results/aggregate/summary.json",
    params:
        cfg=CONFIG_PATH,
    localrule: True
    log:
        "results/logs/aggregate.log",
    shell:
        "mcptrials aggregate --config {params.cfg} --runs results/runs --out-dir results/aggregate > {log} 2>&1"
