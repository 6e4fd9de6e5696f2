"""The citation grader (issues 4, 25, 34): the code locations an answer cites, resolved and
checked against the repository at the pinned commit.

Modules, in the order a citation passes through them:
    extract      the forms written in the text (`path:N`, `path#LN`, `path:Symbol`...)
    lines        line lists (`path:1,5`) and line-only references (`line 12`, `:64`, JSON "line")
    structure    the answer's shapes: JSON objects, list items, table rows, code spans
    context      the answer's context: sentences, backticked names, resolution of a path
    grounding    resolution to a file of the commit and the buckets (grounded, hallucinated...)
    subjects     the subject of a citation: the name the answer says is at the place
    symbols      definitions from tree-sitter grammars
    strict       the strict verdict (verified, mismatch, undetermined) at a cited line
    evidence     what else the answer names around a citation, for a confirmed mismatch (rule 4)
    weak         names a reader may have meant when no scope gives a subject: they only verify
    verify       the lenient and the strict verification of a grounded line citation
    composition  the composition by form: strict beside lenient, the ungrounded kinds
    grading      the entry point: one answer's citations (grade_citations), counts, pooling

May import: grade.gittree (the repository at the pinned commit) and the floors below grade
(run, providers, cost, prepare, matrix, core, stats); nothing else of grade.
"""
