"""Deterministic graders: they turn one transcript into scored.json without calling a model.

Each grader reads only `steps[i].answer_text` (the prose a developer gets), never the
tool calls or the audit text. Modules: keywords, citations (the citation grader, its own
subpackage: see citations/__init__.py), gittree (the repository read from git objects at the
pinned commit), exact, state, usage (efficiency figures and adoption), gold_recall,
answer_map and scoring (one trial's record). This package imports no pandas, scipy or matplotlib.

May import: run, providers, cost, prepare, matrix, core, stats.
"""

GRADER_VERSION = "9"  # 2: citations from the answer's context, spans, structured verification, tree-sitter symbols; 3: efficiency figures split server start-up from the agent's working time; 4: state checks in parts (command, sql, json, unchanged_except), each with what it found; 5: every citation form, a subject per citation, strict verification beside the lenient one, composition by form (issue 25); 6: a word naming the cited file is no subject, names and lines listed in two orders checked as a group, a line-only reference moves to the file defining its subject, a descriptive JSON member takes no name from its siblings, a name deep in the description after a citation is not its subject, nor the next conjunct's; an unresolved bare file name has the basename form; JSON keys by kind, array items of refs, path segments, hyphenated words and headings the file never names are no subjects; 7: exact answers read as the task asks (a bare value from the last or `Answer:` line, a `label`led one after its label, several different values ambiguous), cited symlinks followed to their targets, definitions of every language in tree-sitter-language-pack (Kotlin, PHP, C#, Swift, Scala added) and `undetermined` where no grammar can decide; 8: a definition's header (blank, comment, decorator, attribute lines above it) is inside it, a strict `mismatch` needs positive evidence (else `undetermined`), the key owning a JSON object names it (issue 34); 9: one lexicon (Ruby's `include`, `extend`, `prepend`, `require`, `attr_*` and prose's `and`, `or`, `not`, `is`, `the`, `a`, `an` are no identifier of the lenient check; a JSON `module` member names one) (issue 34 item 7)
