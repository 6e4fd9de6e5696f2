"""The document builder: a table and a document written once and rendered twice, Markdown and
self-contained HTML (inline CSS, images as base64)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from mcptrials.report.formats import esc


@dataclass
class Cell:
    text: str
    href: str | None = None
    cls: str | None = None


@dataclass
class Table:
    headers: list[str]
    rows: list[list] = field(default_factory=list)
    caption: str | None = None
    cls: str | None = None

    def add(self, *cells) -> None:
        self.rows.append([c if isinstance(c, Cell) else Cell("" if c is None else str(c)) for c in cells])


def md_table(t: Table) -> str:
    def cell(c: Cell) -> str:
        text = c.text.replace("|", "\\|").replace("\n", " ")
        return f"[{text}]({c.href})" if c.href else text

    out = []
    if t.caption:
        out += [t.caption, ""]
    out.append("| " + " | ".join(h.replace("|", "\\|") for h in t.headers) + " |")
    out.append("|" + "---|" * len(t.headers))
    out += ["| " + " | ".join(cell(c) for c in r) + " |" for r in t.rows]
    return "\n".join(out) + "\n"


def html_table(t: Table, table_id: str | None = None) -> str:
    def cell(c: Cell) -> str:
        inner = f'<a href="{esc(c.href)}">{esc(c.text)}</a>' if c.href else esc(c.text)
        cls = f' class="{esc(c.cls)}"' if c.cls else ""
        return f"<td{cls}>{inner}</td>"

    attrs = (f' id="{esc(table_id)}"' if table_id else "") + (f' class="{esc(t.cls)}"' if t.cls else "")
    out = [f"<table{attrs}>"]
    if t.caption:
        out.append(f"<caption>{esc(t.caption)}</caption>")
    if any(t.headers):
        out.append("<thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in t.headers) + "</tr></thead>")
    out.append("<tbody>")
    out += ["<tr>" + "".join(cell(c) for c in r) + "</tr>" for r in t.rows]
    out.append("</tbody></table>")
    return "\n".join(out)


class Doc:
    """A report written once and rendered twice: Markdown and HTML."""

    def __init__(self):
        self.md: list[str] = []
        self.html: list[str] = []

    def h(self, level: int, text: str, anchor: str | None = None) -> None:
        self.md.append("#" * level + " " + text + "\n")
        a = f' id="{esc(anchor)}"' if anchor else ""
        self.html.append(f"<h{level}{a}>{esc(text)}</h{level}>")

    def p(self, text: str, cls: str | None = None) -> None:
        self.md.append(("> **" + text + "**" if cls == "warning" else text) + "\n")
        c = f' class="{esc(cls)}"' if cls else ""
        self.html.append(f"<p{c}>{esc(text)}</p>")

    def folded(self, summary: str, text: str) -> None:
        """A paragraph a newcomer may skip (the method): folded in HTML, labelled in Markdown."""
        self.md.append(f"*{summary}:* {text}\n")
        self.html.append(
            f'<details class="method"><summary>{esc(summary)}</summary><p class="note">{esc(text)}</p></details>'
        )

    def table(self, t: Table, table_id: str | None = None) -> None:
        self.md.append(md_table(t))
        self.html.append(html_table(t, table_id))

    def image(self, name: str, png: bytes | None, alt: str) -> str | None:
        if png is None:
            return None
        self.md.append(f"![{alt}](plots/{name}.png)\n")
        data = base64.b64encode(png).decode("ascii")
        self.html.append(
            f'<figure><img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(alt)}</figcaption></figure>"
        )
        return name


CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222;line-height:1.4}
h1{border-bottom:2px solid #333}h2{border-bottom:1px solid #ccc;margin-top:2em}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.9em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f0f0f0}caption{text-align:left;font-style:italic;padding:4px 0;color:#555}
td.pass{background:#e3f6e3}td.fail{background:#fbe3e3}td.noise{color:#777}td.better{background:#e3f6e3}td.worse{background:#fbe3e3}
p.warning{background:#fff3cd;border:1px solid #e0b400;padding:8px;font-weight:bold}
p.note{color:#555}details.method summary{color:#555;cursor:pointer}
img.plot{max-width:100%;border:1px solid #ddd}figure{margin:1em 0}figcaption{color:#555;font-size:0.9em}
pre{background:#f7f7f7;border:1px solid #ddd;padding:6px;white-space:pre-wrap;word-break:break-word;max-height:40em;overflow:auto}
details summary{cursor:pointer;color:#0645ad}
.kv th{width:16em}
a{color:#0645ad}
span.pattern{background:#ffe08a;border:1px solid #e0b400;border-radius:3px;padding:0 4px;font-size:0.8em;font-weight:normal}
div.call.flagged{border-left:4px solid #e0b400;padding-left:6px}td.flagged{background:#fff3cd}
"""


def page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n"
    )
