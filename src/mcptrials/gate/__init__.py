"""The regression gate: two runs compared (compare: comparable, decision,
findings, tools_diff, compare_report), HEAD's server replayed on BASE's recorded
calls (replay), and the text, Markdown and JUnit files both write (output).

May import: analyze and every stage below it.
"""
