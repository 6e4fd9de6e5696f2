"""The numbers of a run: every trial's scored and judged records into the tables and
summary.json (aggregate), and the held-out lock with its gold (lock). The formulas are in
mcptrials.stats.

May import: judge, grade, run, cost, prepare, matrix, core, stats.
"""
