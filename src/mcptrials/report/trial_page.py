"""One page per trial, trials/<model>/<tool>/<scenario>/<trial>.html: the trial's summary, the
server's last words when it crashed, its patterns and errors, then step by step the prompt, the
answer, the tool calls, the state check, the graders' evidence and the judge, from the trial's
records under results/runs. Everything from a transcript or a record is HTML-escaped."""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.report.formats import error_counts, esc, f3, fnum, fsec, fusd, model_text
from mcptrials.report.patterns import pattern_list, pattern_marks, trial_findings
from mcptrials.report.render import Cell, Table, html_table, page
from mcptrials.core.keys import (
    CITATION_GROUNDING,
    FAIRNESS,
    GROUNDED_RATE,
    KEYWORD_COVERAGE,
    MISSING_REASON,
    MODEL_NAME,
    TOKENS_CACHE_READ,
    TOKENS_CACHE_WRITE,
    TOKENS_INPUT_UNCACHED,
    TOKENS_OUTPUT,
    VERIFIED_RATE,
)
from mcptrials.core.rows import Summary, TrialRow

FOLD_CHARS = 600  # longer texts are folded into <details>
STDERR_LINES = 15  # of a crashed server's stderr on its trial page
RECORDS = ("transcript", "scored", "judged", "run_meta")


def _pre(text, fold_label: str | None = None) -> str:
    """Escaped preformatted text; folded into <details> when fold_label is given and it is long."""
    text = "" if text is None else str(text)
    block = f"<pre>{esc(text)}</pre>"
    if fold_label and len(text) > FOLD_CHARS:
        label = fold_label
        return f"<details><summary>{esc(label)} ({len(text):,} characters)</summary>{block}</details>"
    return block


def _json(v) -> str:
    return json.dumps(v, indent=1, ensure_ascii=False, default=str)


def _state_parts(state: dict | None) -> str:
    """A step's state check, part by part: what was read, whether it passed, and why (the
    changes outside the expected ones named)."""
    if not state or not state.get("parts"):
        return ""
    t = Table(["part", "result", "why", "unexpected changes"])
    for p in state["parts"]:
        t.add(
            p["kind"],
            Cell("passed" if p["passed"] else "failed", cls="pass" if p["passed"] else "fail"),
            p["reason"],
            "; ".join(p.get("unexpected") or []) or "–",
        )
    return html_table(t, "state-parts")


def _expected_tools_line(scored: dict, index: int) -> str:
    """Expected tools against the tools called, with precision and recall: reported, never scored."""
    row = next((r for r in (scored.get("adoption") or {}).get("expected_tools") or [] if r.get("index") == index), None)
    if row is None:
        return ""
    return (
        f'<p class="note">expected tools (reported, never scored): {esc(", ".join(row["expected"]) or "none")}; '
        f"called: {esc(', '.join(row['called']) or 'none')}; precision {esc(f3(row.get('precision')))}, "
        f"recall {esc(f3(row.get('recall')))}"
        + (f"; unexpected: {esc(', '.join(row['unexpected']))}" if row.get("unexpected") else "")
        + "</p>"
    )


def write_trial_page(row: TrialRow, runs, out: Path, summary: Summary) -> Path:
    """The page of one trial row of summary.json, at out/<row's page>; returns its path."""
    t, sc, j, meta = _read_records(runs, row)
    path = out / row["page"]
    path.parent.mkdir(parents=True, exist_ok=True)
    up = "../" * (row["page"].count("/"))
    title = f"{row['model']} / {row['tool']} / {row['scenario']} / trial {row['trial']}"
    b = [f'<p><a href="{up}index.html">back to the report</a></p>', f"<h1>{esc(title)}</h1>"]
    b.append(html_table(_summary_table(row, t, sc, meta, summary), "trial-summary"))
    if row["outcome"] == "server_crashed" and meta.get("server_stderr_tail"):
        # "Connection closed" says only that the server went; its own last words say why
        b.append(
            '<h2 id="server-stderr">The server\'s last stderr lines</h2>'
            + _pre("\n".join(meta["server_stderr_tail"].splitlines()[-STDERR_LINES:]))
        )
    found = trial_findings(summary, row["page"])  # mcptrials.analyze.patterns, marked below where they occur
    b.append(pattern_list(found))
    missing = bool(row.get("missing"))
    if missing:  # an infrastructure failure: its records may hold grades, none of which counts
        b.append(
            f'<p class="warning" id="missing">This trial is missing: {esc(row.get(MISSING_REASON))}'
            + (f" ({esc(t.get('outcome_detail'))})" if t.get("outcome_detail") else "")
            + ". An infrastructure failure, not the tool's: it was not graded (no grader result, judge score "
            "or fairness is shown or counted); the next snakemake invocation retries it. What it recorded "
            "before it stopped follows.</p>"
        )
    b += _error_events(t)
    b += _steps(t, {} if missing else sc, {} if missing else j, found)
    if t.get("feedback_text"):
        b.append("<h2>The agent's feedback on its tools</h2>" + _pre(t["feedback_text"]))
    if meta:
        b.append("<h2>Run metadata</h2>" + _pre(_json(meta), "run_meta.json"))
    path.write_text(page(title, "\n".join(b)))
    return path


def _read_records(runs, row: TrialRow) -> tuple[dict, dict, dict, dict]:
    """The trial's transcript, scored, judged and run_meta records; {} for each one not written."""
    from mcptrials.core.identity import TrialKey

    d = TrialKey(row[MODEL_NAME], row["host"], row["tool"], row["repo"], row["scenario"], int(row["trial"])).dir(runs)
    transcript, scored, judged, meta = (
        (json.loads(p.read_text()) if p.is_file() else None) or {} for p in (d / f"{name}.json" for name in RECORDS)
    )
    return transcript, scored, judged, meta


def _summary_table(row: TrialRow, t: dict, sc: dict, meta: dict, summary: Summary) -> Table:
    """The trial at a glance: what ran, its verdict, fairness term by term, cost, tokens, calls."""
    missing = bool(row.get("missing"))
    verdict = "MISSING" if missing else "PASS" if row["passed"] else "FAIL"
    kv = Table(["", ""], cls="kv")
    kv.add("model", model_text(summary, row["model"]))
    kv.add("tool", f"{row['tool']} {meta.get('server_name') or ''} {meta.get('server_version') or ''}".strip())
    kv.add("repo", f"{row['repo']} @ {meta.get('commit') or sc.get('repo_commit') or '–'}")
    kv.add("outcome", f"{row['outcome']}" + (f": {t.get('outcome_detail')}" if t.get("outcome_detail") else ""))
    kv.add(
        "result",
        Cell(
            verdict
            + (
                f": {row[MISSING_REASON]} (an infrastructure failure, not scored; attempt {row.get('attempts', 1)})"
                if missing
                else ""
            ),
            cls="noise" if missing else "pass" if row["passed"] else "fail",
        ),
    )
    if missing:  # not graded: no failures, fairness, adoption or citations to show
        kv.add("fairness", "– missing: not scored, left out of every mean")
        kv.add("cost / time", f"{fusd(row['cost_usd'])}, {fsec(row['wall_seconds'])} wall")
        kv.add("errors", ", ".join(f"{k} {n}" for k, n in error_counts(row)))
        return kv
    if sc.get("failures"):
        kv.add("why not passed", "; ".join(sc["failures"]))
    w = summary["identity"]["weights"]
    kv.add(
        "fairness",
        f"{f3(row[FAIRNESS])} = {w['keyword']:.2f}×keyword {f3(row[KEYWORD_COVERAGE])} + "
        f"{w['quality']:.2f}×quality {f3(row['quality'])} + {w['citation']:.2f}×grounding "
        f"{f3(row[CITATION_GROUNDING])} + {w['efficiency']:.2f}×efficiency {f3(row['efficiency'])}"
        + (
            ""
            if row["completed"]
            else " — missing: not scored, left out of every mean"
            if missing
            else " — scored 0: the trial did not complete"
        ),
    )
    kv.add(
        "adoption",
        f"{f3(row['adoption'])} (fluency {f3(row['tool_fluency'])}, discoverability {f3(row['discoverability'])})",
    )
    kv.add(
        "cost / time",
        f"{fusd(row['cost_usd'])}, {fsec(row['wall_seconds'])} wall, of which "
        f"{fsec(row.get('work_seconds'))} the agent's work (what efficiency compares) and "
        f"{fsec(row.get('server_startup_seconds'))} server start-up (the rest: sandbox, "
        "tools/list, shutdown)",
    )
    kv.add(
        "tokens",
        f"input {row[TOKENS_INPUT_UNCACHED]}, cache write {row[TOKENS_CACHE_WRITE]}, cache read "
        f"{row[TOKENS_CACHE_READ]}, output {row[TOKENS_OUTPUT]}",
    )
    kv.add("tool calls", f"{row['tool_calls']} ({row['tool_calls_mcp']} server, {row['tool_calls_builtin']} built-in)")
    kv.add("errors", ", ".join(f"{k} {n}" for k, n in error_counts(row)))
    kv.add(
        "citations",
        f"{row['citations']} ({row['grounded']} grounded, {row['hallucinated']} hallucinated, "
        f"{row['unresolved']} unresolved; verified {f3(row.get(VERIFIED_RATE))})",
    )
    return kv


def _error_events(t: dict) -> list[str]:
    """The transcript's error events, one table; nothing when there were none."""
    if not t.get("error_events"):
        return []
    et = Table(["kind", "step", "message", "code"])
    for e in t["error_events"]:
        et.add(e.get("kind"), e.get("step"), e.get("message"), e.get("code"))
    return ["<h2>Errors</h2>", html_table(et)]


def _steps(t: dict, sc: dict, j: dict, found: list[dict] | None) -> list[str]:
    """Every step any record names, in order: a step the transcript lacks is said to be missing."""
    sc_steps = {s["index"]: s for s in sc.get("steps", [])}
    j_steps = {s["index"]: s for s in j.get("steps", [])}
    t_steps = {s["index"]: s for s in t.get("steps", [])}
    calls = t.get("tool_calls", [])
    b = []
    for i in sorted(set(sc_steps) | set(j_steps) | set(t_steps)):
        b += _step(i, t_steps.get(i, {}), sc_steps.get(i, {}), j_steps.get(i, {}), calls, sc, found)
    return b


def _step(i: int, ts: dict, ss: dict, js: dict, calls: list[dict], sc: dict, found: list[dict] | None) -> list[str]:
    """One step: its prompt, answer and tool calls (transcript), state check, graders and judge."""
    name = ts.get("name") or ss.get("name") or js.get("name") or str(i)
    b = [f'<h2 id="step-{i}">Step {i}: {esc(name)}{pattern_marks(found, step=i)}</h2>']
    if not ts:
        b.append('<p class="warning">The transcript has no such step: the trial stopped before it.</p>')
    b.append("<h3>Prompt</h3>" + _pre(ts.get("prompt")))
    b.append(
        f'<h3>Answer</h3><p class="note">outcome {esc(ts.get("outcome"))}, {esc(ts.get("turns"))} model '
        f"call(s), {esc(fsec(ts.get('wall_seconds')))}</p>" + _pre(ts.get("answer_text"))
    )
    b += _tool_calls(i, calls, found)
    if ts.get("state_check"):
        b.append("<h3>State check</h3>" + _state_parts(ss.get("state")) + _pre(_json(ts["state_check"]), "found"))
    b.append(_expected_tools_line(sc, i))
    if ss:
        b += _grader_evidence(ss)
    if js:
        b.append("<h3>Judge</h3>" + html_table(_judge_table(js)))
    return b


def _tool_calls(i: int, calls: list[dict], found: list[dict] | None) -> list[str]:
    """The step's tool calls, each with its arguments and result, marked where a pattern occurs."""
    step_calls = [c for c in calls if c.get("step") == i]
    if not step_calls:
        return []
    b = [f"<h3>Tool calls ({len(step_calls)})</h3>"]
    for c in step_calls:
        status = (
            "no result (the step ended first)"
            if c.get("answered") is False
            else f"error ({c.get('error_kind') or 'is_error'})"
            if c.get("is_error")
            else "ok"
        )
        n = next(k for k, x in enumerate(calls) if x is c)  # its index in tool_calls: the findings' `call`
        marks = pattern_marks(found, call=n)
        b.append(
            f'<div class="call{" flagged" if marks else ""}" id="call-{n}"><p>{marks + " " if marks else ""}'
            f"<b>{esc(c.get('name'))}</b> [{esc(c.get('source'))}] turn "
            f"{esc(c.get('turn'))}, {esc(fnum(c.get('latency_ms'), ' ms'))}, {esc(status)}, "
            f"{esc(c.get('result_chars'))} chars{' (truncated)' if c.get('truncated') else ''}</p>"
            f"{_pre(_json(c.get('arguments')), 'arguments')}{_pre(c.get('result_text'), 'result')}</div>"
        )
    return b


def _grader_evidence(ss: dict) -> list[str]:
    """What the graders saw in one step: keyword checks, citations, gold locations, exact answer
    and state check, and the failures."""
    b = ["<h3>Grader evidence</h3>"]
    kw = ss.get("keywords") or {}
    if kw.get("checks"):
        kt = Table(
            ["check", "value", "required", "hit", "matched", "snippet"],
            caption=f"keyword coverage {f3(kw.get('coverage'))}",
        )
        for c in kw["checks"]:
            kt.add(
                c["type"],
                c["value"],
                "yes" if c["required"] else "bonus",
                Cell("hit" if c["hit"] else "miss", cls="pass" if c["hit"] else "fail"),
                c.get("matched") or "",
                c.get("snippet") or "",
            )
        b.append(html_table(kt))
    b += _citation_tables(ss.get("citations") or {})
    for label, key in (("exact answer", "exact"), ("state check", "state")):
        if ss.get(key):
            b.append(
                f"<p><b>{label}</b>: " + ("passed" if ss[key]["passed"] else "failed") + "</p>" + _pre(_json(ss[key]))
            )
    if ss.get("failures"):
        b.append("<ul>" + "".join(f"<li>{esc(f)}</li>" for f in ss["failures"]) + "</ul>")
    return b


def _citation_tables(cit: dict) -> list[str]:
    """A step's citations with their buckets, and the gold locations with whether one cited them."""
    b = []
    if cit.get("items"):
        ctab = Table(
            ["citation", "resolved", "bucket", "verification", "reason"],
            caption=f"citations: grounded rate {f3((cit.get('rates') or {}).get(GROUNDED_RATE))}, "
            f"verified {f3((cit.get('rates') or {}).get(VERIFIED_RATE))}",
        )
        for c in cit["items"]:
            ctab.add(
                c.get("text"),
                c.get("resolved_path") or "–",
                Cell(c["bucket"], cls="pass" if c["bucket"] == "grounded" else "fail"),
                c.get("verification"),
                c.get("reason"),
            )
        b.append(html_table(ctab))
    if cit.get("gold"):
        gt = Table(["gold location", "cited", "by"])
        for g in cit["gold"]:
            gt.add(
                g["location"],
                Cell("yes" if g["cited"] else "no", cls="pass" if g["cited"] else "fail"),
                g.get("by") or "",
            )
        b.append(html_table(gt))
    return b


def _judge_table(js: dict) -> Table:
    """The judge on one step: each criterion's scores per repeat, mean and rationales."""
    jt = Table(
        ["criterion", "weight", "scores (per repeat)", "mean", "rationale"],
        caption=f"judge: step quality {f3(js.get('quality_mean'))}"
        + (" (empty answer: 0 without a judge call)" if js.get("empty") else ""),
    )
    for c in js.get("criteria", []):
        jt.add(
            c["name"],
            c["weight"],
            ", ".join(f3(x) for x in c["scores"]),
            f3(c["mean"]),
            " | ".join(f"repeat {n}: {r}" for n, r in enumerate(c.get("rationales", []), 1)),
        )
    return jt
