"""Environment failures: a server that starts but cannot do its work on this machine (a language
server that is not installed, a download the sandbox refuses) fails its calls with the same error
in trial after trial of a repository. Its trials count as the tool's (they ran, and an agent
without the tool's answers is what a user of that set-up would get), but the report names the
cause beside the verdict and under "What could not run", with the fix.

Same error: the text of a failed server call (transcript.json tool_calls, is_error, result_text)
normalised (normalise_error: paths, URLs, ids and numbers replaced, case and spacing folded), so
"rust-analyzer is not installed (/tmp/x/axum, pid 4711)" in one trial and the same sentence with
another path and pid in the next are one error.

Most trials: an error is an environment failure of (model, tool, repo) when at least
MIN_TRIAL_SHARE of that tool's trials on the repository that count (not missing) have at least one
call failing with it, and at least MIN_TRIALS of them do.
"""

from __future__ import annotations

import re

from mcptrials.core.rows import TrialRow
from mcptrials.matrix.tools import BASELINE

# At least half: "most" trials, as the issue asks. An agent's own mistakes (a file that does not
# exist, a symbol it misspelt) depend on the question, so after normalisation they rarely repeat
# in half of a repository's scenarios; a missing runtime fails every call of its kind, in every
# trial that makes one. Half, not all: a trial whose questions never reach the broken part (a
# file read, a text search) has no such call and must not hide it.
MIN_TRIAL_SHARE = 0.5
# At least two trials: one failing trial is an anecdote, not a pattern of the environment, and
# with a single trial on a repository there is no "most" to speak of.
MIN_TRIALS = 2
METHOD = (
    f"a server call's error text normalised (paths, URLs, ids and numbers replaced, case and spacing folded); "
    f"an environment failure when at least {MIN_TRIAL_SHARE:.0%} of the tool's trials on a repository that count "
    f"(and at least {MIN_TRIALS}) have a call failing with it"
)
ERROR_CHARS = 200  # of the error text shown: the first line, up to this many characters

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:[/\\][\w.@+-]+)+[/\\]?|\b[\w.@+-]+(?:[/\\][\w.@+-]+)+")
_ID = re.compile(r"\b(?=[0-9a-f-]*\d)[0-9a-f]{7,}(?:-[0-9a-f]{4,})*\b", re.IGNORECASE)
_NUMBER = re.compile(r"\b\d+(?:\.\d+)*\b")  # standalone: the 2 of `Name2` names something

# What the error says is missing, and the fix to offer (the first that matches).
_NOT_INSTALLED = re.compile(r"([\w.+-]+(?: [\w.+-]+)?) (?:is|are) not installed", re.IGNORECASE)
_MISSING_PROGRAM = re.compile(
    r"not installed|command not found|executable .* not found|no such file or directory"
    r"|not found (?:in|on) (?:the )?path|could not find .*(?:server|executable|binary)",
    re.IGNORECASE,
)
_NETWORK = re.compile(
    r"download|fetch|network|connection refused|could not resolve|name resolution|urlopen"
    r"|https?://|offline|timed? ?out.*(?:http|url)",
    re.IGNORECASE,
)
# A server that could not set itself up (a language server it could not start).
_NOT_SET_UP = re.compile(
    r"not initiali[sz]ed|failed to (?:start|initiali[sz]e)|initiali[sz]ation (?:failed|error)"
    r"|problem during (?:project )?initiali[sz]ation",
    re.IGNORECASE,
)
DOCS = "docs/packs.md (what each pack server needs to work offline)"
# What a repeated error is: one that says the machine lacks something (ENVIRONMENT), or any other
# error that fails the same call in most trials (REPEATED: an agent's systematic misuse, such as a
# deterministic agent's arguments a server rejects, repeats as much as a missing runtime does, so
# only the error's own words may call it the environment's).
ENVIRONMENT, REPEATED = "environment", "repeated error"


def error_kind(error: str) -> str:
    """ENVIRONMENT when the error says something is missing, could not be fetched or could not
    be set up on this machine; else REPEATED."""
    if any(p.search(error) for p in (_NOT_INSTALLED, _MISSING_PROGRAM, _NETWORK, _NOT_SET_UP)):
        return ENVIRONMENT
    return REPEATED


def normalise_error(text: str) -> str:
    """An error's text with what differs between trials of one cause replaced (URLs, paths, ids,
    numbers), case and spacing folded: the key that says two calls failed the same way."""
    t = _URL.sub("<url>", text or "")
    t = _PATH.sub("<path>", t)
    t = _ID.sub("<id>", t)
    t = _NUMBER.sub("<n>", t)
    return " ".join(t.lower().split())[:1000]


def shown_error(text: str) -> str:
    """The error as the report shows it: its first non-empty line, capped at ERROR_CHARS."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    return line if len(line) <= ERROR_CHARS else line[: ERROR_CHARS - 1] + "…"


def environment_fix(error: str, repo: str) -> str:
    """What to do about an environment failure, from what its error says."""
    m = _NOT_INSTALLED.search(error)
    if m:
        return (
            f"the server needs {m.group(1)} on this machine for {repo}: install it where the server's sandbox "
            f"finds it (or leave {repo} out for this tool); see {DOCS}"
        )
    if _MISSING_PROGRAM.search(error):
        return (
            f"the server needs a program this machine lacks for {repo} (the error names it): install it where "
            f"the server's sandbox finds it; see {DOCS}"
        )
    if _NETWORK.search(error):
        return (
            f"the server tried to download what it needs for {repo} and could not (no network in the sandbox): "
            f"install it beforehand; see {DOCS}"
        )
    return (
        f"every such call failed the same way on {repo}, and the error does not say the machine lacks anything: "
        f"read it on one of its trial pages (the agent's arguments, or the server's set-up); if the server needs "
        f"something this machine lacks, see {DOCS}"
    )


def server_errors(transcript: dict) -> list[str]:
    """The error texts of a trial's failed server calls (source mcp), in call order."""
    return [
        c.get("result_text") or c.get("error_kind") or "error"
        for c in transcript.get("tool_calls") or []
        if c.get("is_error") and c.get("source") == "mcp"
    ]


def environment_failures(records: list[dict], rows: list[TrialRow]) -> list[dict]:
    """summary.json `environment_failures`: per (model, tool, repo), each error that fails calls in
    most of its trials that count (MIN_TRIAL_SHARE, MIN_TRIALS): {name, model, tool, repo, error
    (as shown), error_normalised, trials_with_error, trials, share, calls, fix, page (one trial
    that shows it)}, the most widespread first. `rows` are the trial rows of the same records, in
    the same order (raw_row: `missing`, `page`)."""
    cells: dict[tuple, dict] = {}
    for rec, row in zip(records, rows):
        k = rec["key"]
        if k["tool"] == BASELINE or row.get("missing"):
            continue
        cell = cells.setdefault((k["model"], k["tool"], k["repo"]), {"trials": 0, "errors": {}})
        cell["trials"] += 1
        seen = set()
        for text in server_errors(rec["transcript"]):
            key = normalise_error(text)
            e = cell["errors"].setdefault(key, {"trials": 0, "calls": 0, "texts": {}, "page": row.get("page")})
            e["calls"] += 1
            e["texts"][shown_error(text)] = e["texts"].get(shown_error(text), 0) + 1
            if key not in seen:
                seen.add(key)
                e["trials"] += 1
    out = []
    for (model, tool, repo), cell in cells.items():
        for key, e in cell["errors"].items():
            share = e["trials"] / cell["trials"]
            if e["trials"] < MIN_TRIALS or share < MIN_TRIAL_SHARE:
                continue
            error = max(e["texts"], key=lambda t: e["texts"][t])  # its most frequent wording
            out.append(
                {
                    "name": f"{tool}/{repo}",
                    "model": model,
                    "tool": tool,
                    "repo": repo,
                    "error": error,
                    "error_normalised": key,
                    "trials_with_error": e["trials"],
                    "trials": cell["trials"],
                    "share": share,
                    "calls": e["calls"],
                    "kind": error_kind(error),
                    "fix": environment_fix(error, repo),
                    "page": e["page"],
                }
            )
    out.sort(key=lambda f: (f["model"], f["tool"], -f["share"], -f["calls"], f["repo"]))
    return out


def environment_note(failures: list[dict], model: str, tool: str) -> str | None:
    """What the headline says beside a tool's verdict: "environment: 'Go is not installed' on gin,
    12/12 trials; ..." (one error per repository, the most widespread; an error whose words do not
    say the machine lacks something is a "repeated error", not the environment's), or None."""
    mine = [f for f in failures if (f["model"], f["tool"]) == (model, tool)]
    if not mine:
        return None
    first: dict[str, dict] = {}
    for f in mine:  # sorted most widespread first
        first.setdefault(f["repo"], f)
    parts = []
    for kind in (ENVIRONMENT, REPEATED):
        of_kind = [(repo, f) for repo, f in first.items() if f.get("kind", ENVIRONMENT) == kind]
        if of_kind:
            parts.append(
                f"{kind}: "
                + "; ".join(
                    f"'{f['error']}' on {repo}, {f['trials_with_error']}/{f['trials']} trials" for repo, f in of_kind
                )
            )
    return " | ".join(parts)
