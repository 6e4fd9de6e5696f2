"""What the Snakemake workflow asks the library: the rerun table and each job's rerun keys
(rerun), the per-trial rules' params lookups (params), the files and wildcards the rules
name (targets) and the checks before any job (preflight).

May import: every stage (it sits above them all, below the command layer).
"""
