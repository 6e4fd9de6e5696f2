"""The report: the document and its sections (document), the trial explorer (explorer) and the
figures (plots), from the files analyze wrote.

May import: gate, analyze and every stage below it.
"""
