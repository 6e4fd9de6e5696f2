# Every trial's scores into tables (CSV): one row per trial, per cell and per (model, tool).
# Weights and pricing are its params: a change recomputes fairness and costs, nothing else.
rule aggregate:
    input:
        scored=sequential_input("scored.json") if SEQUENTIAL else trial_files(M, "scored.json"),
        judged=sequential_input("judged.json") if SEQUENTIAL else trial_files(M, "judged.json"),
        waves=sequential_input(None) if SEQUENTIAL else [],
        labels=CITATION_LABELS,  # the reader's citation labels and their lockfile, when there are any
    output:
        trials="results/aggregate/trials.csv",
        cells="results/aggregate/cells.csv",
        tools="results/aggregate/tools.csv",
        summary="results/aggregate/summary.json",
        patterns="results/aggregate/patterns.csv",
        comparisons="results/aggregate/comparisons.csv",
    params:
        rerun=RERUN["aggregate"][()],
    retries: 0  # deterministic: tables from the records (common.smk, Retries)
    localrule: True
    conda:
        "../envs/mcptrials.yaml"
    log:
        "results/logs/aggregate.log",
    shell:
        "mcptrials aggregate --config \"$MCPTRIALS_CONFIG\" --runs results/runs --out-dir results/aggregate > {log:q} 2>&1"
