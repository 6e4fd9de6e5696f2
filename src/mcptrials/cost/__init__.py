"""What a run costs and may spend: the pricing formula (pricing), the agent's working time
(work_time), the plan of a run's expected cost (plan) and the budget ledger that reserves and
settles spend (budget).

May import: prepare, matrix, core, stats.
"""
