"""The LLM judge, blind to the tool, against the rubric: judging a trial (judging) and
judgements made elsewhere (recorded).

May import: grade, run (its model providers), cost, prepare, matrix, core, stats.
"""
