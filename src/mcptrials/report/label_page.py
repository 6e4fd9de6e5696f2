"""The page `mcptrials label` serves: one card per sampled citation occurrence (the answer's
sentence around it, the cited lines at the pinned commit with some context; the grader's strict
verdict never shown: the reader reads blind), four verdict buttons that POST to /label. Every
text from the records is put in by textContent, never as markup."""

from __future__ import annotations

import html
import json

VERDICT_BUTTONS = ("correct", "wrong line", "wrong file", "can't tell")

STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em}
.card{border:1px solid #ccc;border-radius:6px;padding:.6em 1em;margin:1em 0}
.card.done{border-color:#5a5;background:#f4fbf4}
.who{color:#555;font-size:.9em}.sentence{margin:.5em 0;white-space:pre-wrap}
mark{background:#ffe08a}pre{background:#f7f7f7;padding:.4em;overflow-x:auto;margin:.3em 0}
.hit{background:#ffe08a;display:block}button{margin-right:.5em}button.chosen{font-weight:bold;outline:2px solid #5a5}"""

SCRIPT = r"""
var data = JSON.parse(document.getElementById("data").textContent);
var done = 0;
function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function progress() { document.getElementById("progress").textContent = done + " of " + data.items.length + " labelled"; }
function mark(card, item, verdict) {
  card.classList.add("done"); card.setAttribute("data-verdict", verdict);
  card.querySelectorAll("button").forEach(function (b) { b.classList.toggle("chosen", b.textContent === verdict); });
}
function send(card, item, verdict) {
  fetch("label", {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify({id: item.id, verdict: verdict})})
    .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error); return j; }); })
    .then(function (j) { if (!card.hasAttribute("data-verdict")) done++; mark(card, item, verdict); progress();
                         document.body.setAttribute("data-saved", j.n); })
    .catch(function (e) { card.querySelector(".error").textContent = "not saved: " + e.message; });
}
data.items.forEach(function (item, i) {
  var card = el("div", "card"); card.id = "item-" + i;
  var t = item.trial;
  card.appendChild(el("div", "who", (i + 1) + ". " + t.model + " / " + t.tool + " / " + t.scenario + " / trial " + t.trial + " / step " + item.step));
  var s = el("div", "sentence"); s.appendChild(document.createTextNode(item.answer.before));
  s.appendChild(el("mark", "", item.answer.cited)); s.appendChild(document.createTextNode(item.answer.after));
  card.appendChild(s);
  card.appendChild(el("div", "who", item.file + " at " + item.commit.slice(0, 12) + ", line(s) " + item.lines.join("-")));
  var pre = el("pre");
  if (!item.code.rows.length) pre.textContent = item.code.missing || "(the file is not available at this commit)";
  item.code.rows.forEach(function (r) { pre.appendChild(el("span", r[2] ? "hit" : "", String(r[0]).padStart(5) + "  " + r[1] + (r[2] ? "" : "\n"))); });
  card.appendChild(pre);
  var buttons = el("div");
  data.verdicts.forEach(function (v) { var b = el("button", "", v); b.type = "button"; b.setAttribute("data-verdict", v);
    b.addEventListener("click", function () { send(card, item, v); }); buttons.appendChild(b); });
  card.appendChild(buttons); card.appendChild(el("div", "error", ""));
  if (item.verdict) { done++; mark(card, item, item.verdict); }
  document.getElementById("items").appendChild(card);
});
progress();
document.body.setAttribute("data-ready", "1");
"""


def label_page(items: list[dict], seed: int, per_tool: int, labels_path: str) -> str:
    """The whole page; items: the sample, each with its `answer` and `code` context."""
    data = {"items": items, "verdicts": list(VERDICT_BUTTONS)}
    blob = json.dumps(data).replace("</", "<\\/")  # no </script> can end the data block early
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcptrials label</title><style>{STYLE}</style></head>
<body><h1>Label citations</h1>
<p>{len(items)} citation(s) drawn at random, up to {per_tool} per model and tool (seed {seed}). For each, read the
sentence and the cited lines at the commit the run used, and say whether the citation is right: <b>correct</b>
(the line is where the thing the sentence names is), <b>wrong line</b> (right file, wrong place),
<b>wrong file</b>, or <b>can't tell</b>. The grader's verdict is not shown (you read blind). Each answer is saved at once
into {html.escape(labels_path)}.</p>
<p id="progress"></p><div id="items"></div>
<script type="application/json" id="data">{blob}</script>
<script>{SCRIPT}</script></body></html>
"""
