"""mcptrials: a reproducible, incremental benchmark harness for MCP servers.

The packages are the pipeline's stages, bottom to top; a module imports its own package and
the floors below it, never one above (tests/workflow/test_import_graph.py checks it):

    core, stats    records and their types, paths, outcomes, identity; the statistics formulas
    matrix         config.yaml and scenarios, loaded and typed
    prepare        checkout -> install -> index -> tools snapshot; servers, sandbox, built-in tools
    cost           pricing, working time, the cost plan, the budget
    providers      the model providers (anthropic, openai) and the reference agent: the trial and the judge use them
    run            the trial: its core, its job, the hosts, the key proxy, recorded runs
    grade          the deterministic graders (scored.json); grade.citations, the citation grader, a subpackage
    judge          the LLM judge (judged.json)
    analyze        aggregate (summary.json, tables), the transcripts' patterns and the held-out lock
    gate           compare and replay: the regression gate
    report         the report, the trial explorer, the plots
    importers      the reference bench's scenarios and runs
    dag            what the Snakemake rules ask: rerun keys, file paths, preflight checks
    cli            the `mcptrials` command, and the warm trial worker it runs (worker) with its client (delegate)
"""

__version__ = "0.1.0"
