"""Provider `reference`: a deterministic offline agent with NO language model.

It stands in for a model in `make demo` and the end-to-end tests. It measures the
harness's plumbing and the MCP servers' behaviour, never model quality: every record
that names it should say so.

How it works. Each reply is a pure function of (system, messages, tools, max_tokens) and
the workspace path given at construction: no randomness, no clock, no file access. The
current step is the conversation after the last user turn that holds text rather than
tool results. From that prompt it takes search terms (`backticked` names, "quoted
phrases", CamelCase, snake_case and dotted identifiers; common English words are
skipped). It ranks the offered tools by name and description: the server's search tools
first (symbol, then code search, then file-name search), the built-in `grep` last; the
server's read tools first, the built-in `read_file` last. Then, round by round (a history
question asks the history tool instead, see below):

1. search each term with the best search tool whose required arguments it can fill;
2. parse `path:line` hits from the results (grep lines, JSON results such as
   code-index's, bare paths such as filesystem's search_files); a term whose search
   errored or found nothing moves on to the next search tool;
3. read a window around the best hits (or a whole file found by name) with the best
   read tool that has not failed on that file, and keep the lines the read returned;
4. answer, citing `path:LINE` (relative to the workspace) with the code at that line,
   once every best hit has been read, nothing is left to try, or `MAX_ROUNDS` tool
   rounds are spent. Only what the tools returned is cited: a server that returns
   better hits gives a better answer, and nothing found gives an honest "not found".

Reading the question (general rules from its wording; the agent knows no scenario):

- a name given as the place to look ("inside the `pkg` package", "in the `src` folder") is a
  scope: hits outside it are dropped and it is not searched for itself; "not/nothing ...
  tests" drops test files;
- "how many" asks for a count: of call expressions (`name(`) when it says "call", else of
  uses; the definition and import lines are never counted. "what is its value" asks for the
  literal assigned where the first term is defined. When the prompt wants the value "alone
  on the last line", the answer ends with that bare value, else states it in a sentence;
- a question about commits, authors or history goes to a history tool (a server tool named
  log/history/blame, e.g. git's git_log) when one is offered, and the answer quotes the
  newest commit's id, author, date and message from its result (the one the question asks
  for alone on the last line). Without such a tool the agent says plainly that none of its
  tools shows the history: the work tree's files do not record it (the built-ins skip .git).

Reading results: a search result that says more is left (`"has_more": true` with an
`end_index`, a `next_cursor`) is asked again for its next page, when the tool takes a page
argument (`start_index`, `offset`, `cursor`); so a server that pages its results costs an
extra call where one that returns everything does not. A prompt that asks where something
is used gets every use found cited (up to USAGE_CITES), with the enclosing function.

A step whose prompt mentions the "last step", "final step" or "feedback on the tools"
also gets a "Feedback on the tools:" paragraph (which tools helped, which failed).

Usage: the token counts are ESTIMATES (characters / 4) of the request and of the reply,
made so records are not all zero; no model ran and no tokens were billed.

The package, by concern (each module imports only the ones above it):

    question    reading the prompt: search terms, file names, scopes, what it asks for
    tools       what each offered tool is for (its role) and the order tools are tried in
    arguments   filling a tool's arguments from its input schema (term, file window, page)
    results     reading tool results: search hits, read lines, failures, next pages
    step        the conversation split into steps, and what one step's calls found
    ranking     the lines to cite per term, scored
    planning    choosing the next tool calls
    answer      composing the answer text, its citations and the feedback on the tools
    provider    ReferenceProvider: the reply, cut to max_tokens, with estimated usage

`ReferenceProvider` (from provider) is the package's entry point.
"""

from mcptrials.providers.reference.provider import ReferenceProvider

__all__ = ["ReferenceProvider"]
