"""The LLM judge, blind to the tool, against the rubric: judging a trial (judging), with
the reference judge (reference), the model judge (model_judge) and its prompt and reply
(prompt), the masking of the tool's names (blinding), the judge's noise over many records
(variance), and judgements made elsewhere (recorded).

May import: grade, run (where a recorded run's judgement is), providers (the model judge's
clients), cost, prepare, matrix, core, stats.
"""
