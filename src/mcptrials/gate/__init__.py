"""The regression gate: two runs compared (compare), HEAD's server replayed on BASE's recorded
calls (replay), and the text, Markdown and JUnit files both write (output).

May import: analyze and every stage below it.
"""
