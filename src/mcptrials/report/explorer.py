"""The trial explorer: results/report/explorer.html, one self-contained page (inline CSS and
vanilla JS, no external asset, no network) listing every trial of summary.json with its tool,
model, host, scenario, outcome, scores, patterns, cost and time; filters, sorting on any
column, a search over the answer text, and a link to each trial's page.

The data is embedded as JSON in a <script type="application/json"> tag, as one array per trial
(the column names are given once), and the page renders from it in the browser: the rows that
match the filters are computed on arrays in memory, and only the first ROWS_PER_PAGE of them
are put in the DOM ("show more" adds as many again), so 10,000 trials stay fast
(bench/explorer_speed.py measures it).

Answer text comes from the trials' transcript.json (the steps' answer_text), read at report
time: the report already reads every transcript for the trial pages, and keeping the text out
of the aggregate keeps summary.json and trials.csv small for every other reader. Each trial's
text is cut at ANSWER_CAP characters, and the page says so.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.report.formats import href
from mcptrials.core.keys import (
    CITATION_GROUNDING,
    EXACT_PASSED,
    EXACT_STEPS,
    FAIRNESS,
    KEYWORD_COVERAGE,
    MISSING_REASON,
    MODEL_NAME,
    STATE_PASSED,
    STATE_STEPS,
)
from mcptrials.core.rows import Summary, TrialRow

EXPLORER = "explorer.html"  # beside index.html in the report folder
ANSWER_CAP = 2000  # characters of answer text embedded per trial: about 20 MB for 10,000 trials
ROWS_PER_PAGE = 200  # rows put in the DOM at once
STEP_SEPARATOR = "\n\n"

# (key, header, kind): the order of each trial's array in the embedded data. kind says how the
# page shows and sorts it: text, int, frac (0-1, 3 decimals), ratio ([passed, of] or null),
# usd, sec, patterns ({name: count} or null), link (the trial number, linking to `page`).
COLUMNS = (
    ("tool", "tool", "text"),
    ("model", "model", "text"),
    ("host", "host", "text"),
    ("scenario", "scenario", "text"),
    ("trial", "trial", "link"),
    ("result", "result", "text"),
    ("outcome", "outcome", "text"),
    (FAIRNESS, "fairness", "frac"),
    ("quality", "quality", "frac"),
    (KEYWORD_COVERAGE, "keyword coverage", "frac"),
    (CITATION_GROUNDING, "citation grounding", "frac"),
    ("exact", "exact passes", "ratio"),
    ("state", "state passes", "ratio"),
    ("patterns", "patterns", "patterns"),
    ("cost_usd", "cost", "usd"),
    ("wall_seconds", "time", "sec"),
    ("answer", "answer", "answer"),
)
# carried per trial but not a column of their own
EXTRA = ("page", "why", "answer_cut")
FILTERS = (
    ("tool", "tool"),
    ("model", "model"),
    ("host", "host"),
    ("scenario", "scenario"),
    ("result", "result"),
    ("outcome", "outcome"),
    ("patterns", "pattern"),
)


def result_of(row: TrialRow) -> str:
    """pass, fail or missing (an infrastructure outcome: neither a pass nor a fail)."""
    return "missing" if row.get("missing") else "pass" if row.get("passed") else "fail"


def ratio(passed, steps):
    """[passed, steps], or None when the scenario has no such check."""
    return [passed, steps] if steps else None


def answer_text(transcript: dict | None) -> str:
    """The prose the graders scored: every step's answer_text, in step order."""
    if not transcript:
        return ""
    steps = sorted(transcript.get("steps") or [], key=lambda s: s.get("index", 0))
    return STEP_SEPARATOR.join(s["answer_text"] for s in steps if s.get("answer_text"))


def read_answers(trials: list[TrialRow], runs) -> dict[str, str | None]:
    """{trial page: full answer text} from each trial's transcript.json under runs (None when
    the file is gone: the row then says so instead of showing an empty answer)."""
    from mcptrials.core.identity import TrialKey

    out: dict[str, str | None] = {}
    for r in trials:
        p = (
            TrialKey(r[MODEL_NAME], r["host"], r["tool"], r["repo"], r["scenario"], int(r["trial"])).dir(runs)
            / "transcript.json"
        )
        if not p.is_file():
            out[r["page"]] = None
            continue
        try:
            out[r["page"]] = answer_text(json.loads(p.read_text()))
        except json.JSONDecodeError as e:
            raise ConfigError(
                f"{p}: not valid JSON ({e}); delete it and rerun its stage (snakemake rebuilds it)"
            ) from None
    return out


def explorer_row(r: TrialRow, answer: str | None, cap: int = ANSWER_CAP) -> list:
    """One trial as the array the page reads (COLUMNS, then EXTRA)."""
    text = "(no transcript.json)" if answer is None else answer
    values = {
        **{
            k: r.get(k)
            for k in (
                "tool",
                MODEL_NAME,
                "host",
                "scenario",
                "trial",
                "outcome",
                FAIRNESS,
                "quality",
                KEYWORD_COVERAGE,
                CITATION_GROUNDING,
                "cost_usd",
                "wall_seconds",
            )
        },
        "model": r.get(MODEL_NAME) or r.get("model"),
        "result": result_of(r),
        "exact": ratio(r.get(EXACT_PASSED), r.get(EXACT_STEPS)),
        "state": ratio(r.get(STATE_PASSED), r.get(STATE_STEPS)),
        "patterns": r.get("patterns"),  # absent until the pattern detectors ran: an empty cell
        "answer": text[:cap],
        "page": href(r["page"]),
        "why": r.get(MISSING_REASON) if r.get("missing") else None,
        "answer_cut": len(text) if len(text) > cap else None,
    }
    return [values[k] for k, _, _ in COLUMNS] + [values[k] for k in EXTRA]


def explorer_data(summary: Summary, answers: dict[str, str | None], cap: int = ANSWER_CAP) -> dict:
    """Everything the page embeds: columns, one array per trial, filters, and what produced it."""
    trials = summary["trials"]
    ident = summary.get("identity") or {}
    rows = [explorer_row(r, answers.get(r["page"]), cap) for r in trials]
    patterns = sorted({name for r in trials for name, n in (r.get("patterns") or {}).items() if n})
    return {
        "schema": "mcptrials/explorer/1",
        "columns": [{"key": k, "label": label, "kind": kind} for k, label, kind in COLUMNS],
        "extra": list(EXTRA),
        "rows": rows,
        "filters": [{"key": k, "label": label} for k, label in FILTERS],
        "patterns": patterns,
        "answer_cap": cap,
        "answers_cut": sum(1 for row in rows if row[len(COLUMNS) + EXTRA.index("answer_cut")] is not None),
        "rows_per_page": ROWS_PER_PAGE,
        "produced_by": {
            "harness_versions": ident.get("harness_versions") or [],
            "scenario_set_sha256": ident.get("scenario_set_sha256"),
            "models": {n: m.get("label") for n, m in (ident.get("models") or {}).items()},
            "summary_schema": summary.get("schema"),
        },
    }


def script_json(data) -> str:
    """JSON safe inside a <script> element: '<', '>' and '&' as \\u escapes, so an answer
    holding '</script>' or '<!--' cannot end or change the element (JSON.parse reads them back)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1em;color:#222;line-height:1.35}
h1{font-size:1.4em;margin:0.2em 0 0.4em}
p.note{color:#555;margin:0.3em 0}
#controls{display:flex;flex-wrap:wrap;gap:0.4em 1em;align-items:end;margin:0.6em 0}
#controls label{display:flex;flex-direction:column;font-size:0.8em;color:#555}
#controls input[type=search]{min-width:18em}
table{border-collapse:collapse;font-size:0.85em;width:100%}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f0f0f0;cursor:pointer;user-select:none;position:sticky;top:0}
th.asc::after{content:" \\25B2"}th.desc::after{content:" \\25BC"}
td.num{text-align:right;white-space:nowrap}
td.pass{background:#e3f6e3}td.fail{background:#fbe3e3}td.missing{background:#eee;color:#555}
td.patterns{font-size:0.9em;max-width:10em}
td.answer{min-width:16em;max-width:26em;font-size:0.95em;overflow-wrap:anywhere}
td.answer pre{white-space:pre-wrap;word-break:break-word;margin:0.3em 0 0;max-height:30em;overflow:auto}
mark{background:#ffe066}
#more{margin:0.8em 0;padding:0.3em 1em}
a{color:#0645ad}
"""

# The page's behaviour. Data never goes through innerHTML: every text is set with textContent.
JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("explorer-data").textContent);
  var cols = data.columns, rows = data.rows, C = {};
  cols.forEach(function (c, i) { C[c.key] = i; });
  data.extra.forEach(function (k, i) { C[k] = cols.length + i; });
  var kindOf = {}; cols.forEach(function (c) { kindOf[c.key] = c.kind; });
  var order = rows.map(function (_, i) { return i; });   // all rows, in the current sort order
  var view = order, shown = 0, lower = null, needle = "";
  var sortKey = null, sortDir = 1;
  var tbody = document.getElementById("rows"), count = document.getElementById("count");
  var more = document.getElementById("more"), search = document.getElementById("search");
  var selects = {};

  function patternTotal(p) {
    if (!p) return null;
    var n = 0; for (var k in p) n += p[k]; return n;
  }
  function sortValue(r, key) {
    var v = r[C[key]], kind = kindOf[key];
    if (v === null || v === undefined) return null;
    if (kind === "ratio") return v[0] / v[1];
    if (kind === "patterns") return patternTotal(v);
    if (kind === "answer") return v.toLowerCase();
    return v;
  }
  function fmt(v, kind) {
    if (v === null || v === undefined) return kind === "patterns" ? "" : "\u2013";
    switch (kind) {
      case "frac": return v.toFixed(3);
      case "usd": return "$" + v.toFixed(4);
      case "sec": return v.toFixed(1) + " s";
      case "ratio": return v[0] + "/" + v[1];
      case "patterns":
        var parts = [];
        Object.keys(v).sort().forEach(function (k) { if (v[k]) parts.push(k + " " + v[k]); });
        return parts.length ? parts.join(", ") : "none";
      default: return String(v);
    }
  }
  function filterValues(key) {
    var seen = {};
    if (key === "patterns") { data.patterns.forEach(function (p) { seen[p] = 1; }); }
    else rows.forEach(function (r) { var v = r[C[key]]; if (v !== null && v !== undefined) seen[v] = 1; });
    return Object.keys(seen).sort();
  }
  function matches(r, i) {
    for (var key in selects) {
      var want = selects[key].value;
      if (!want) continue;
      if (key === "patterns") { var p = r[C.patterns]; if (!p || !p[want]) return false; }
      else if (String(r[C[key]]) !== want) return false;
    }
    if (needle) {
      if (lower === null) lower = rows.map(function (r) { return r[C.answer].toLowerCase(); });
      return lower[i].indexOf(needle) >= 0;
    }
    return true;
  }

  function answerCell(td, r) {
    var text = r[C.answer], at = needle ? text.toLowerCase().indexOf(needle) : -1;
    var start = at < 0 ? 0 : Math.max(0, at - 60), end = at < 0 ? 140 : at + needle.length + 80;
    var d = document.createElement("details"), s = document.createElement("summary");
    if (start > 0) s.appendChild(document.createTextNode("\u2026"));
    if (at >= 0) {
      s.appendChild(document.createTextNode(text.slice(start, at)));
      var m = document.createElement("mark"); m.textContent = text.slice(at, at + needle.length);
      s.appendChild(m);
      s.appendChild(document.createTextNode(text.slice(at + needle.length, end)));
    } else s.appendChild(document.createTextNode(text.slice(0, end)));
    if (end < text.length) s.appendChild(document.createTextNode("\u2026"));
    d.appendChild(s);
    d.addEventListener("toggle", function () {   // the full text only when opened
      if (d.open && d.children.length === 1) {
        var pre = document.createElement("pre");
        pre.textContent = text + (r[C.answer_cut] ? "\n[cut at " + data.answer_cap + " of " + r[C.answer_cut] + " characters]" : "");
        d.appendChild(pre);
      }
    });
    td.appendChild(d);
  }
  function rowElement(r) {
    var tr = document.createElement("tr");
    cols.forEach(function (c) {
      var td = document.createElement("td"), v = r[C[c.key]];
      if (c.kind === "link") {
        var a = document.createElement("a"); a.href = r[C.page]; a.className = "trial-link";
        a.textContent = "#" + v; td.appendChild(a);
      } else if (c.kind === "answer") { td.className = "answer"; answerCell(td, r); }
      else {
        td.textContent = c.key === "result" && r[C.why] ? "missing: " + r[C.why] : fmt(v, c.kind);
        if (c.kind !== "text") td.className = c.kind === "patterns" ? "patterns" : "num";
        if (c.key === "result") td.className = r[C.result];
      }
      td.setAttribute("data-col", c.key);
      tr.appendChild(td);
    });
    return tr;
  }
  function renderMore() {
    var end = Math.min(view.length, shown + data.rows_per_page), frag = document.createDocumentFragment();
    for (var i = shown; i < end; i++) frag.appendChild(rowElement(rows[view[i]]));
    tbody.appendChild(frag);
    shown = end;
    count.textContent = "showing " + shown.toLocaleString("en") + " of " + view.length.toLocaleString("en")
      + " matching trial(s); " + rows.length.toLocaleString("en") + " in all";
    more.hidden = shown >= view.length;
  }
  function refresh() {
    view = order.filter(function (i) { return matches(rows[i], i); });
    tbody.textContent = ""; shown = 0;
    renderMore();
    var h = new URLSearchParams();
    for (var key in selects) if (selects[key].value) h.set(key, selects[key].value);
    if (needle) h.set("q", search.value);
    if (sortKey) h.set("sort", (sortDir < 0 ? "-" : "") + sortKey);
    var hash = h.toString() ? "#" + h.toString() : "";
    if (hash !== location.hash) {   // the address keeps the view, to share or reload it
      try { history.replaceState(null, "", hash || location.pathname + location.search); } catch (e) { /* file: may refuse */ }
    }
  }
  function sortBy(key, dir) {
    sortKey = key; sortDir = dir;
    var vals = rows.map(function (r) { return sortValue(r, key); });
    order = rows.map(function (_, i) { return i; });
    order.sort(function (a, b) {
      var x = vals[a], y = vals[b];
      if (x === null) return y === null ? a - b : 1;   // empty values last, either way
      if (y === null) return -1;
      return x < y ? -dir : x > y ? dir : a - b;
    });
    document.querySelectorAll("th").forEach(function (th) {
      th.className = th.getAttribute("data-key") === key ? (dir > 0 ? "asc" : "desc") : "";
    });
  }

  var head = document.getElementById("head");
  cols.forEach(function (c) {
    var th = document.createElement("th"); th.textContent = c.label; th.setAttribute("data-key", c.key);
    th.title = "sort by " + c.label;
    th.addEventListener("click", function () { sortBy(c.key, sortKey === c.key ? -sortDir : 1); refresh(); });
    head.appendChild(th);
  });
  var controls = document.getElementById("filters");
  data.filters.forEach(function (f) {
    var values = filterValues(f.key);
    var label = document.createElement("label"), sel = document.createElement("select");
    label.textContent = f.label; sel.id = "filter-" + f.key;
    var any = document.createElement("option"); any.value = ""; any.textContent = "(any)"; sel.appendChild(any);
    values.forEach(function (v) { var o = document.createElement("option"); o.value = v; o.textContent = v; sel.appendChild(o); });
    sel.addEventListener("change", refresh);
    label.appendChild(sel); controls.appendChild(label);
    selects[f.key] = sel;
  });
  search.addEventListener("input", function () { needle = search.value.trim().toLowerCase(); refresh(); });
  more.addEventListener("click", renderMore);

  // A link may carry filters, the search and the sort: explorer.html#tool=git&patterns=repeat&q=text&sort=-fairness
  var start = new URLSearchParams(location.hash.slice(1));
  start.forEach(function (v, k) {
    if (selects[k]) selects[k].value = v;
    else if (k === "q") { search.value = v; needle = v.trim().toLowerCase(); }
    else if (k === "sort") { var d = v[0] === "-" ? -1 : 1, key = v.replace(/^-/, ""); if (C[key] !== undefined) sortBy(key, d); }
  });
  refresh();
  document.body.setAttribute("data-ready", "1");
})();
"""


def explorer_html(data: dict) -> str:
    """The page: the embedded data, the controls and the script; no external asset."""
    p = data["produced_by"]
    made = (
        f"{len(data['rows']):,} trial(s) from summary.json; harness "
        f"{', '.join(p['harness_versions']) or 'unrecorded'}; scenario set sha256 "
        f"{(p['scenario_set_sha256'] or 'unrecorded')[:12]}; models: "
        + ("; ".join(f"{n} = {label}" for n, label in p["models"].items()) or "–")
        + "."
    )
    cap = (
        f"Answer text: every step's answer, embedded up to {data['answer_cap']:,} characters per trial "
        f"({data['answers_cut']:,} trial(s) cut); the search looks at those characters only, case-insensitive. "
        "A missing trial (an infrastructure failure) has no score: it is neither a pass nor a fail. "
        "Click a header to sort; a trial's number opens its page."
    )
    esc = html.escape
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>mcptrials trial explorer</title><style>{CSS}</style></head><body>\n"
        '<p><a href="index.html">back to the report</a></p><h1>Trial explorer</h1>\n'
        f'<p class="note" id="produced-by">{esc(made)}</p><p class="note" id="answer-cap">{esc(cap)}</p>\n'
        '<div id="controls"><span id="filters" style="display:contents"></span>'
        '<label>search answers<input type="search" id="search" placeholder="text in the answers"></label></div>\n'
        '<p class="note" id="count"></p>\n'
        '<table id="trials"><thead><tr id="head"></tr></thead><tbody id="rows"></tbody></table>\n'
        '<button id="more" type="button" hidden>show more</button>\n'
        f'<script type="application/json" id="explorer-data">{script_json(data)}</script>\n'
        f"<script>{JS}</script>\n</body></html>\n"
    )


def write_explorer(summary: Summary, runs, out_dir) -> Path:
    """Write out_dir/explorer.html for every trial of summary.json, answers read under runs."""
    path = Path(out_dir) / EXPLORER
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(explorer_html(explorer_data(summary, read_answers(summary["trials"], runs))))
    return path
