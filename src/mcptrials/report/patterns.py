"""Patterns and the agent's feedback in the report (summary.json patterns and feedback,
from mcptrials.analyze.patterns via the aggregate): the main page's two sections, and the marks a
trial page puts where a pattern occurs."""

from __future__ import annotations

from mcptrials.report.explorer import EXPLORER
from mcptrials.report.formats import esc, href, html_id
from mcptrials.report.render import Cell, Doc, Table, html_table, md_table
from mcptrials.core.keys import PAGES
from mcptrials.core.rows import Summary


PATTERN_LIST_MAX = 50  # trial links listed per (model, tool, pattern) in the report; all are in the explorer


def explorer_filter(**filters) -> str:
    """A link to the trial explorer with its filters set (explorer.html#tool=git&patterns=...)."""
    from urllib.parse import urlencode

    return f"{EXPLORER}#{urlencode(filters)}"


def _pattern_table(p: dict, names: list[str], links: bool) -> Table:
    t = Table(
        ["model", "tool", "trials"] + names,
        cls="patterns",
        caption="trials showing each pattern (findings in brackets)",
    )
    for row in p["by_tool"]:
        cells = []
        for name in names:
            c = row["patterns"][name]
            anchor = "#" + html_id("patterns", row["model"], row["tool"], name) if links and c["trials"] else None
            cells.append(
                Cell(
                    f"{c['trials']} ({c['findings']})" if c["trials"] else "0",
                    href=anchor,
                    cls="flagged" if c["trials"] else None,
                )
            )
        t.add(row["model"], row["tool"], row["trials"], *cells)
    return t


def add_patterns(doc: Doc, s: Summary) -> None:
    """Counts per tool of each pattern (mcptrials.analyze.patterns), each linked to the trials that show it."""
    p = s.get("patterns")
    if not p:
        return
    names = list(p["definitions"])
    doc.h(2, "Patterns in the transcripts", "patterns")
    doc.p(
        "Behaviours worth reading a transcript for, found in every trial by mcptrials.analyze.patterns; they are never "
        "part of a score. A count is the trials of that model and tool showing the pattern (its findings in "
        "brackets) and links to them; each trial page marks where the pattern occurs.",
        "note",
    )
    defs = Table(["pattern", "what it means"], cls="pattern-definitions")
    for name, text in p["definitions"].items():
        defs.add(name, text)
    doc.table(defs, "pattern-definitions")
    doc.md.append(md_table(_pattern_table(p, names, links=False)))
    doc.html.append(html_table(_pattern_table(p, names, links=True), "patterns-table"))
    never = Table(
        ["model", "tool", "server tools no trial called"],
        cls="never-used",
        caption="server tools offered in every trial that ran through and called in none",
    )
    for row in p["by_tool"]:
        if row["never_used_tools"]:
            never.add(row["model"], row["tool"], ", ".join(row["never_used_tools"]))
    if never.rows:
        doc.table(never, "never-used-tools")
    trials = {r["page"]: r for r in s["trials"]}
    for row in p["by_tool"]:
        for name in names:
            c = row["patterns"][name]
            if not c["trials"]:
                continue
            title = f"{row['model']} / {row['tool']}: {name}, {c['trials']} trial(s)"
            model, _, host = row["model"].partition("@")  # a label model@host when the run has several hosts
            more = explorer_filter(model=model, **({"host": host} if host else {}), tool=row["tool"], patterns=name)
            shown = c[PAGES][:PATTERN_LIST_MAX]
            rest = len(c[PAGES]) - len(shown)
            items = [
                (trials[pg]["scenario"], trials[pg]["trial"], trials[pg]["patterns"].get(name, 0), pg)
                for pg in shown
                if pg in trials
            ]
            doc.md.append(
                f"**{title}**: "
                + ", ".join(f"[{sc} #{n}]({href(pg)}) ({k})" for sc, n, k, pg in items)
                + (f", and {rest} more in the [explorer]({more})" if rest else "")
                + "\n"
            )
            doc.html.append(
                f'<div class="pattern-trials" id="{esc(html_id("patterns", row["model"], row["tool"], name))}">'
                f'<p><b>{esc(title)}</b> (<a href="{esc(more)}">in the explorer</a>)</p><ul>'
                + "".join(
                    f'<li><a href="{esc(href(pg))}#patterns">{esc(sc)} trial {esc(n)}</a>: {esc(k)} finding(s)</li>'
                    for sc, n, k, pg in items
                )
                + (f'<li>and {rest} more: <a href="{esc(more)}">all in the explorer</a></li>' if rest else "")
                + "</ul></div>"
            )


def add_feedback(doc: Doc, s: Summary) -> None:
    """The agent's closing feedback on its tools, one table per tool; identical texts grouped."""
    fb = s.get("feedback")
    if fb is None:
        return
    doc.h(2, "Feedback on the tools", "feedback")
    if not fb:
        doc.p("No trial ended with feedback on its tools.", "note")
        return
    doc.p(
        "The agent's closing 'Feedback on the tools' paragraph (the last step asks for it; it is kept out of the "
        "answer and never scored), gathered per tool; identical texts are one row with all their trials.",
        "note",
    )
    for tool, items in fb.items():
        groups: dict = {}
        for it in items:
            groups.setdefault(it["text"], []).append(it)
        headers = ["feedback", "tools named", "trials"]
        caption = f"tool {tool}: {len(items)} trial(s) with feedback, {len(groups)} different text(s)"
        md = Table(headers, caption=caption)
        rows_html = []
        for text, its in groups.items():
            named = ", ".join(dict.fromkeys(n for it in its for n in it["names"])) or "–"
            md.add(
                text,
                named,
                ", ".join(f"[{it['model']} {it['scenario']} #{it['trial']}]({href(it['page'])})" for it in its),
            )
            links = ", ".join(
                f'<a href="{esc(href(it["page"]))}">{esc(it["model"])} {esc(it["scenario"])} #{esc(it["trial"])}</a>'
                for it in its
            )
            rows_html.append(f"<tr><td>{esc(text)}</td><td>{esc(named)}</td><td>{links}</td></tr>")
        doc.md.append(md_table(md))
        doc.html.append(
            f'<table class="feedback" id="{esc(html_id("feedback", tool))}"><caption>{esc(caption)}'
            "</caption><thead><tr>"
            + "".join(f"<th>{esc(h)}</th>" for h in headers)
            + "</tr></thead><tbody>"
            + "".join(rows_html)
            + "</tbody></table>"
        )


def finding_anchor(f: dict) -> str | None:
    """Where a finding is on the trial page: its call, else its step; None for the whole trial."""
    if f.get("call") is not None:
        return f"call-{f['call']}"
    return None if f.get("step") is None else f"step-{f['step']}"


def trial_findings(summary: Summary, page_rel: str) -> list[dict] | None:
    """The trial's findings (summary.json patterns.findings), or None for a summary made before the
    pattern detectors (nothing is then said about patterns, rather than 'none found')."""
    if "patterns" not in summary:
        return None
    return summary["patterns"]["findings"].get(page_rel) or []


def pattern_marks(found: list[dict] | None, **where) -> str:
    """Badges for the findings at one place (call=n, or step=i with no call)."""
    if not found:
        return ""
    hits = [
        f for f in found if all(f.get(k) == v for k, v in where.items()) and ("call" in where or f.get("call") is None)
    ]
    return "".join(f' <span class="pattern" title="{esc(f["detail"])}">{esc(f["pattern"])}</span>' for f in hits)


def pattern_list(found: list[dict] | None) -> str:
    """The trial page's list of its patterns, each linked to where it occurs."""
    if found is None:
        return ""
    if not found:
        return '<h2 id="patterns">Patterns</h2><p class="note">No pattern found in this trial.</p>'
    items = []
    for f in found:
        a = finding_anchor(f)
        where = ", ".join(f"{k} {f[k]}" for k in ("step", "turn", "call") if f.get(k) is not None) or "the whole trial"
        label = f'<a href="#{esc(a)}">{esc(f["pattern"])}</a>' if a else esc(f["pattern"])
        items.append(f"<li>{label} ({esc(where)}): {esc(f['detail'])}</li>")
    return f'<h2 id="patterns">Patterns ({len(found)})</h2><ul class="patterns">' + "".join(items) + "</ul>"
