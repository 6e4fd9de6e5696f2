"""The report, from the files analyze wrote: results/report/index.html and report.md, a page per
trial, and the trial explorer.

- document: reads the inputs (summary.json, the held-out agreement and lock) and puts the main
  page together from its sections, then writes the trial pages and the explorer
- render: the document builder: Table and Doc, written once, rendered as Markdown and HTML
- formats: how one value is written (numbers, intervals, money, seconds, escaping, links, labels)
- heldout: the held-out verdict against judge.threshold, the anchor, and its section
- headline: the top of the main page: what could not run, the headline tables per model, gold
  recall, the configured comparisons, models × hosts
- identity: "The run" section: what ran and with which settings
- sequential: a run in waves: where each tool stopped, why, and what was not spent
- citations: citation composition, strict beside lenient, by form
- details: adoption, scenarios, errors, server profile, judge noise
- patterns: the patterns and feedback sections, and the pattern marks of a trial page
- figures: where the figures go (each plot written to plots/ and placed in the document)
- plots: the figures themselves (matplotlib, PNG bytes)
- trial_page: one page per trial, step by step, from the trial's records
- explorer: the trial explorer, every trial in one filterable table

May import: gate, analyze and every stage below it.
"""
