"""Importers: other benchmarks' scenarios and runs as mcptrials scenario files and configs.

`mcptrials import sense-bench BENCH_DIR --out DIR` (`sense_bench`): the reference bench
(the public luuuc/sense repository's `bench/` folder), each scenario converted by
`sense_scenario`; `sense_verticals` its vertical runs;
`sense_board` and `sense_compare` its board, reproduced from our grading.

May import: report, gate, analyze and every stage below them.
"""
