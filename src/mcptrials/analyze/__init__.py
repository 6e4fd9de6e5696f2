"""The numbers of a run: every trial's scored and judged records into the tables and
summary.json, and the held-out lock with its gold. The formulas are in mcptrials.stats; the
tables are pandas groupings of one trial frame.

    aggregate         the stage: every table and summary.json, written (trials.csv, cells.csv, ...)
    trial_rows        the records read, one row per trial, efficiency and fairness, the trial frame
    tables            the per-group tables: cells, tools against the baseline, errors, scenarios, ...
    comparisons       the config's compare pairs and the models x hosts view
    records_summary   what comes from the records themselves: judge noise, server profile, citations
    environment       servers that ran but failed the same way in most trials of a repository
    identity          summary.json `identity`: who and what ran and graded
    feedback          the trials' patterns and the agent's feedback on the tools
    patterns          the pattern detectors: behaviours worth reading a transcript for
    lock              the held-out lock and its gold
    sequential        a run in waves: each wave's decisions (the checkpoints' records) and summary.json `sequential`
    wave_cost         what a run in waves can cost: the least, the expected (from the history) and the most

May import: judge, grade, run, providers, cost, prepare, matrix, core, stats.
"""

# The aggregate's own rules (a formula of stats it applies, a verdict rule), bumped when they
# change: the rerun table reruns the aggregate on it (dag.rerun `code:aggregate_version`) and
# summary.json records it (identity.aggregate_version), so `mcptrials compare` refuses two runs
# aggregated differently. 1: efficiency as a symmetric log-ratio to the baseline's geometric
# mean, every arm measured alike; verdicts against the practical margin (issue 33 items 1, 2).
AGGREGATE_VERSION = "1"
