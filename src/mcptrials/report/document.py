"""The report: results/report/report.md and a self-contained index.html (inline CSS, plots as
base64 PNG, no network), plus one page per trial under trials/<model>/<tool>/<scenario>/<trial>.html.

Inputs are files only: results/aggregate/summary.json (mcptrials.analyze.aggregate), the held-out
agreement (results/heldout/agreement.json) and lock state (lock_verified.json beside it), and
the trial records under results/runs for the trial pages. Everything that comes from a
transcript or a record is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from mcptrials.matrix.config import BASELINE, ConfigError
from mcptrials.report.explorer import EXPLORER, write_explorer

FOLD_CHARS = 600  # longer texts are folded into <details>
NOISE_TEXT = ("within noise: the 95% interval contains 0, or the difference is smaller than the judge's "
              "spread; such tools are not ranked")


# --- formatting ----------------------------------------------------------------------


def f3(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def fp(v) -> str:
    if v is None:
        return "–"
    return f"{v:.3f}" if v >= 0.001 else f"{v:.1e}"


def fci(mean, lo, hi) -> str:
    if mean is None:
        return "–"
    return f3(mean) if lo is None else f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def fsigned_ci(mean, lo, hi) -> str:
    if mean is None:
        return "–"
    return f"{mean:+.3f}" if lo is None else f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def fmissing(n_used, row: dict) -> str:
    """'' for a cell that lost no trial, else 'n=3 of 4, 1 missing: api_failed' (the missing
    trials are infrastructure failures, left out of the interval beside which this stands)."""
    gone = row.get("n_missing") or 0
    if not gone:
        return ""
    reasons = ", ".join(f"{why}" + (f" {c}" if int(c) != gone else "")
                        for why, _, c in (part.rpartition("=") for part in row["missing_reasons"].split(";")))
    return f"n={n_used} of {n_used + gone}, {gone} missing: {reasons}"


def fci_missing(mean, lo, hi, n_used, row: dict) -> str:
    """The interval, and beside it what the cell lost (fmissing)."""
    lost = fmissing(n_used, row)
    return fci(mean, lo, hi) + (f" ({lost})" if lost else "")


def with_n(v, n) -> str:
    """A rate beside its denominator: "0.750 (n=8)"; "– (n=0)" when there is nothing to measure."""
    return f3(v) if n is None else f"{f3(v)} (n={n})"


def fusd(v) -> str:
    return "–" if v is None else f"${v:.4f}"


def fsec(v) -> str:
    """Seconds; under 1 s with three decimals, so the reference agent's milliseconds show."""
    return "–" if v is None else f"{v:.3f} s" if abs(v) < 1 else f"{v:.1f} s"


def fnum(v, unit="") -> str:
    if v is None:
        return "–"
    return (f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}") + unit


def esc(v) -> str:
    return html.escape("" if v is None else str(v), quote=True)


# --- a table both renderers understand -------------------------------------------------


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


def _state_parts(state: dict | None) -> str:
    """A step's state check, part by part: what was read, whether it passed, and why (the
    changes outside the expected ones named)."""
    if not state or not state.get("parts"):
        return ""
    t = Table(["part", "result", "why", "unexpected changes"])
    for p in state["parts"]:
        t.add(p["kind"], Cell("passed" if p["passed"] else "failed", cls="pass" if p["passed"] else "fail"),
              p["reason"], "; ".join(p.get("unexpected") or []) or "–")
    return html_table(t, "state-parts")


def _expected_tools_line(scored: dict, index: int) -> str:
    """Expected tools against the tools called, with precision and recall: reported, never scored."""
    row = next((r for r in (scored.get("adoption") or {}).get("expected_tools") or [] if r.get("index") == index), None)
    if row is None:
        return ""
    return (f"<p class=\"note\">expected tools (reported, never scored): {esc(', '.join(row['expected']) or 'none')}; "
            f"called: {esc(', '.join(row['called']) or 'none')}; precision {esc(f3(row.get('precision')))}, "
            f"recall {esc(f3(row.get('recall')))}"
            + (f"; unexpected: {esc(', '.join(row['unexpected']))}" if row.get("unexpected") else "") + "</p>")


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
        self.html.append(f"<details class=\"method\"><summary>{esc(summary)}</summary><p class=\"note\">{esc(text)}</p>"
                         "</details>")

    def table(self, t: Table, table_id: str | None = None) -> None:
        self.md.append(md_table(t))
        self.html.append(html_table(t, table_id))

    def image(self, name: str, png: bytes | None, alt: str) -> str | None:
        if png is None:
            return None
        self.md.append(f"![{alt}](plots/{name}.png)\n")
        data = base64.b64encode(png).decode("ascii")
        self.html.append(f'<figure><img class="plot" alt="{esc(alt)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{esc(alt)}</figcaption></figure>")
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
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


def href(rel: str) -> str:
    """A relative link with each path part percent-encoded."""
    return "/".join(quote(p) for p in rel.split("/"))


# --- inputs ------------------------------------------------------------------------------


def read_optional(path) -> dict | None:
    if path is None:
        return None
    p = Path(path)
    if not p.is_file():
        return None
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{p}: not valid JSON ({e}); delete it and rerun its stage") from None


def load_summary(aggregate_dir) -> dict:
    path = Path(aggregate_dir) / "summary.json"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; run `mcptrials aggregate --out-dir {aggregate_dir}` first")
    return json.loads(path.read_text())


NO_ANCHOR = "no held-out anchor for this run"
STRICT_FIX = ("fix the rubric or prompt, or re-grade gold and re-anchor with `mcptrials lock --reason ...`")


def heldout_state(agreement: dict | None, lock: dict | None, threshold: float, strict: bool,
                  lockfile_sha256: str | None = None, judge_provider: str | None = None) -> dict:
    """What the report says about the held-out check, judged against the config's judge.threshold.

    agreement: results/heldout/agreement.json, or None when it was not computed. With an anchor
    (`anchor` "locked"; the first shape, without `anchor`, is read the same way) the verdict is
    passes = rho is not None and rho >= threshold, computed here: judge.threshold reruns only
    the report. Without one (`anchor` null) there is nothing to check: the report says so with
    the agreement's reason, and judge.strict does not fail the run. lockfile_sha256: the sha256 of
    this config's lockfile; an agreement computed on another lockfile is flagged. judge_provider
    "reference": the warning says, in the same line, that the judge is the deterministic stand-in.
    Returns {line, lock_line, warnings, notes, anchored, passes, refuse}; `refuse` is the
    message `mcptrials report` exits with when judge.strict is true and the check fails.
    """
    warnings, notes, refuse = [], [], None
    anchored = agreement is not None and agreement.get("anchor", "locked") is not None
    passes = None
    if agreement is None:
        line = "not computed (no agreement file): the judge has not been checked against gold"
        warnings.append("The held-out agreement was not computed: the judge is unchecked against gold (run `mcptrials heldout`).")
        if strict:
            refuse = ("the held-out agreement was not computed (no agreement file) and judge.strict is true: "
                      "run the held-out check (`mcptrials heldout`) before the report")
    elif not anchored:
        reason = agreement.get("reason") or NO_ANCHOR
        line = reason if reason.startswith(NO_ANCHOR) else f"{NO_ANCHOR}: {reason}"
        notes.append(f"{line[0].upper()}{line[1:]}. The judge's quality scores are not checked against gold for "
                     "this config; judge.strict does not fail a run without an anchor.")
    else:
        rho, n = agreement.get("rho"), agreement.get("n")
        passes = rho is not None and rho >= threshold
        ci = "" if agreement.get("lo") is None else f", 95% interval [{agreement['lo']:.2f}, {agreement['hi']:.2f}]"
        where = f" of the anchor {agreement['anchor']}" if isinstance(agreement.get("anchor"), str) else ""
        line = (f"Spearman rho {f3(rho)} (n={n}{ci}) against gold{where}; judge.threshold {threshold}: "
                + ("passes" if passes else "BELOW the threshold" if rho is not None else "undefined"))
        if not passes:
            what = (f"rho = {f3(rho)} (n={n}) is below judge.threshold {threshold}" if rho is not None
                    else f"rho is undefined (n={n}: too few items, or constant scores)")
            if judge_provider == "reference":
                warnings.append(f"Held-out judge agreement {what}. This run's judge is the deterministic reference judge "
                                "(key points and gold citations, no language model): the figure says how far that "
                                "stand-in is from hand grading; with a model judge the same warning would mean its "
                                "quality scores may not be trusted.")
            else:
                warnings.append(f"Held-out judge agreement {what}: the judge's quality scores may not be trusted.")
            if strict:
                agrees = (f"the judge agrees with gold at rho {f3(rho)}, n={n}, below judge.threshold {threshold}"
                          if rho is not None else f"the judge's agreement with gold is undefined (rho none, n={n})")
                refuse = f"{agrees}, and judge.strict is true: {STRICT_FIX}"
    if anchored and lockfile_sha256 and agreement.get("lockfile_sha256") not in (None, lockfile_sha256):
        warnings.append("The held-out agreement was computed on another lockfile than this config's anchor: "
                        "rerun `mcptrials heldout` for this config.")
    if not anchored and agreement is not None:
        lock_line = "nothing to verify (no held-out anchor)"
    elif lock is None:
        lock_line = "not verified (no lock_verified.json): the held-out set may have drifted"
        warnings.append("The held-out lock was not verified (run `mcptrials verify-lock`).")
    else:
        lock_line = f"verified: {len(lock.get('files', {}))} file(s) match the lockfile (sha256 {str(lock.get('lockfile_sha256'))[:12]})"
        if agreement and agreement.get("lockfile_sha256") and agreement["lockfile_sha256"] != lock.get("lockfile_sha256"):
            lock_line += "; but the agreement was computed on a different lockfile"
            warnings.append("The held-out agreement was computed on a different lockfile than the one verified: rerun `mcptrials heldout`.")
    return {"line": line, "lock_line": lock_line, "warnings": warnings, "notes": notes, "anchored": anchored,
            "passes": passes, "refuse": refuse}


def missing_anchor(m) -> str | None:
    """Why the config has no held-out anchor (its `locked:` is null, or names a folder without
    files), or None when it has one. Without an anchor the report reads no agreement file: one
    left in results/heldout by another config must never be quoted for this one."""
    if m.locked_dir is None:
        return f"{NO_ANCHOR}: the config names no `locked:` folder"
    if not m.locked_dir.is_dir() or not any(p.is_file() for p in m.locked_dir.rglob("*")):
        return f"{NO_ANCHOR}: its `locked:` folder {m.config['locked']} holds no locked files"
    return None


class StrictHeldout(Exception):
    """judge.strict is true and the held-out check failed: no report is written."""


# --- the main report ------------------------------------------------------------------------


def sandbox_line(ident: dict) -> str:
    """How the processes under test ran, per tool; an unsandboxed one is flagged."""
    parts, flagged = [], []
    for name, tl in ident["tools"].items():
        seen = tl.get("sandbox") or ["unrecorded"]
        parts.append(f"{name}: {', '.join(seen)}")
        if "none" in seen:
            flagged.append(name)
    line = f"config sandbox: {ident.get('sandbox', 'unrecorded')}; " + "; ".join(parts)
    if flagged or ident.get("sandbox") == "none":
        line += (f" — WARNING: {', '.join(flagged) or 'the state checks'} ran unsandboxed (sandbox: none): "
                 "a server could read the answer key and the API key")
    return line


def recorded_tool_line(name: str, tl: dict) -> str:
    """A recorded arm in the identity table: what it is known from, and every recording's sha256."""
    recs = tl.get("recordings") or {}
    shas = ", ".join(f"{k} {(v or 'missing')[:12]}" for k, v in recs.items()) or "none"
    names = tl.get("tools_list") or []
    listed = ("tools/list unknown (no recording lists its tools)" if tl.get("tools_list_from") in ([], ["unknown"])
              else f"tools/list from {' and '.join(tl['tools_list_from'])}: {', '.join(names) or 'no MCP tools'}")
    return (f"recorded runs of {name} (source: {tl.get('source') or 'not given'}; no server here); {listed}; "
            f"{len(recs)} recording(s), sha256: {shas}")


def _identity(doc: Doc, s: dict, held: dict) -> None:
    ident = s["identity"]
    doc.h(2, "The run", "identity")
    t = Table(["", ""], cls="kv")
    for name, mdl in ident["models"].items():
        t.add("model " + name, mdl["label"])
    t.add("hosts", ", ".join(ident["hosts"]) or "–")
    t.add("harness", ", ".join(ident["harness_versions"]) or "–")
    for name, tl in ident["tools"].items():
        if tl["transport"] == "none":
            desc = "no server: the harness's read_file / grep / list_files only"
        elif tl["transport"] == "recorded":
            desc = recorded_tool_line(name, tl)
        else:
            server = " ".join(tl["server_name"]) or "(server name not reported)"
            ver = ", ".join(tl["server_version"]) or "?"
            desc = f"{server} {ver} (configured version {tl['version_label'] or '–'}, {tl['transport']})"
            if tl.get("variant_of"):
                desc += (f"; description variant of {tl['variant_of']} (its server behind the mcptrials proxy, "
                         f"overrides sha256 {', '.join(h[:12] for h in tl.get('overrides_sha256', [])) or '–'})")
            if len(tl["tools_sha256"]) > 1:
                desc += f"; WARNING: {len(tl['tools_sha256'])} different tool lists seen"
        t.add("tool " + name, desc)
    t.add("sandbox", sandbox_line(ident))
    for name, rp in ident["repos"].items():
        seen = "" if rp["commits_seen"] in ([], [rp["commit"]]) else f" (records show {', '.join(rp['commits_seen'])})"
        t.add("repo " + name, f"{rp['url']} @ {rp['commit']}{seen}")
    t.add("scenarios", f"{len(ident['scenarios'])} ({', '.join(ident['scenarios'])}); splits {', '.join(ident['splits'])}")
    t.add("scenario set sha256", ident["scenario_set_sha256"])
    t.add("trials per cell", ident["trials"])
    j = ident["judge"]
    temp = "n/a" if j["provider"] == "reference" else ", ".join(j["temperature"]) or "–"
    t.add("judge", f"{j['label']}, {j['repeats']} repeat(s), temperature {temp}, "
                   f"prompt sha256 {', '.join(p[:12] for p in j['prompt_sha256']) or '–'}")
    w = ident["weights"]
    t.add("fairness", " + ".join(f"{w[k]:.2f} {k}" for k in ("keyword", "quality", "citation", "efficiency") if k in w))
    costs = ident["costs"]
    t.add("costs", f"{costs['method']} (pricing sha256 {costs['pricing_sha256'][:12]}; priced: "
                   f"{', '.join(costs['priced_models']) or 'none'})")
    t.add("intervals", s["methods"]["interval"])
    t.add("held-out agreement", held["line"])
    t.add("held-out lock", held["lock_line"])
    if ident.get("started"):
        t.add("time", f"{ident['started']} to {ident['ended']}")
    doc.table(t, "identity-table")


def model_labels(s: dict) -> list[str]:
    """The units the tables compare: model names, or model@host when the run has several hosts
    (aggregate.model_label), in matrix order."""
    return list(dict.fromkeys(r["model"] for r in s["tools"])) or list(s["identity"]["models"])


def model_text(s: dict, label: str) -> str:
    name, _, host = label.partition("@")  # model names cannot hold '@' (config schema)
    text = s["identity"]["models"].get(name, {}).get("label", name)
    return f"{text} under host {host}" if host else text


def _failed_stages(doc: Doc, s: dict) -> None:
    """What could not run, and how to fix it: first, since every figure below lacks those trials."""
    failed = s.get("failed_stages") or []
    if not failed:
        return
    lost = [r for r in s["trials"] if r.get("missing_reason") in ("not_run: checkout failed", "not_run: install failed")]
    doc.h(2, "What could not run", "failed-stages")
    doc.p(f"{len(failed)} stage(s) failed; {len(lost)} trial(s) could not run because of them and are missing "
          "(neither a pass nor a fail nor a 0, left out of every figure below). The run exits non-zero after "
          "this report; fix each and run snakemake again: only the trials they held back run.", "warning")
    t = Table(["stage", "of", "error", "fix", "log"], caption="failed stages (results/status.json)")
    for f in failed:
        t.add(f["stage"], f["name"], f["error"], f["fix"], f["log"])
    doc.table(t, "failed-stages-table")


def _headline(doc: Doc, s: dict) -> None:
    ident = s["identity"]
    doc.h(2, "Headline: does the server make the answers better than no server?", "headline")
    # The answer first; how it is computed folded below the tables.
    method = ("Fairness = " + " + ".join(f"{v:.2f} × {k}" for k, v in ident["weights"].items())
              + " (0-1). Difference = paired over scenarios against the baseline of the same model; p-values "
              "Holm-adjusted across the tools of a model. " + NOISE_TEXT + ". Rank: only the tools better than the "
              "baseline, 1 = the largest difference; a worse tool has none. Intervals: " + s["methods"]["interval"]
              + ". Costs: " + s["methods"]["costs"] + ". Efficiency: " + s["methods"].get("efficiency", "cost and wall "
              "time against the baseline") + ". Time / trial is the wall time, split into the agent's work and the "
              "server's start-up.")
    k = ident["trials"]
    for model in model_labels(s):
        mdl = {"label": model_text(s, model)}
        rows = [r for r in s["tools"] if r["model"] == model]
        t = Table(["tool", "fairness [95% CI]", "Δ vs baseline [95% CI]", "Holm p (t)", "Holm p (Wilcoxon)",
                   "verdict", "rank", "pass@1", f"pass@{k}", f"pass^{k}", "cost / trial", "time / trial",
                   "work / trial", "start-up / trial", "trials"],
                  caption=f"model {model}: {mdl['label']}", cls="headline")
        for r in rows:
            vcls = {"better": "better", "worse": "worse", "within noise": "noise", "did not start": "worse"}.get(r["verdict"])
            t.add(r["tool"], fci_missing(r["fairness"], r["fairness_lo"], r["fairness_hi"], r["n_trials"], r),
                  Cell(fsigned_ci(r["diff"], r["diff_lo"], r["diff_hi"]), cls=vcls),
                  fp(r["holm_t_p"]), fp(r["holm_wilcoxon_p"]), Cell(r["verdict"] or "–", cls=vcls),
                  "–" if r["rank"] is None else r["rank"], f3(r["pass_at_1"]), f3(r["pass_at_k"]),
                  f3(r["pass_hat_k"]), fusd(r["cost_per_trial"]), fsec(r["wall_per_trial"]),
                  fsec(r.get("work_per_trial")), fsec(r.get("startup_per_trial")),
                  f"{r['n_trials']} ({r['failed_outcomes']} failed; {r.get('n_missing', 0)} missing)")
        doc.table(t, f"headline-{model}")
        lost = [r for r in rows if r.get("n_missing")]
        if lost:
            doc.p(f"Missing trials (model {model}): " + "; ".join(f"{r['tool']} {fmissing(r['n_trials'], r)}" for r in lost)
                  + ". A missing trial (api_failed, harness_failed, not_run) is an infrastructure failure, not the "
                    "tool's: it is neither a pass nor a fail nor a 0, and is left out of every figure here.", "note")
        comp = Table(["tool", "judge quality", "keyword coverage", "citation grounding (n citations)",
                      "citations verified", "efficiency (what it measured, when not cost and time)", "tokens / trial"],
                     caption=f"model {model}: the components of fairness (means over trials); citations verified "
                             "= verified / (verified + mismatch), beside grounding, not part of fairness")
        for r in rows:
            comp.add(r["tool"], f3(r["quality"]), f3(r["keyword_coverage"]), with_n(r["citation_grounding"], r.get("citations")),
                     f3(r.get("verified_rate")),
                     f3(r["efficiency"]) + (f" ({r['efficiency_basis']})" if r.get("efficiency_basis") not in
                                            (None, "cost and time") else ""),
                     fnum(r["tokens_per_trial"]))
        doc.table(comp)
    for pw in s["power"]:
        doc.p(f"Power ({pw['model']}): {pw['text']}.")
    doc.folded("How these figures are computed", method)


def _gold_recall(doc: Doc, s: dict) -> None:
    """Scenario gold rows (scenario `gold:`): cited and mention recall per tool, and per row group."""
    view = s.get("gold_recall") or []
    if not view:
        return
    doc.h(2, "Gold recall: the must-find rows, overall and per group", "gold-recall")
    doc.p("Cited recall = share of a scenario's gold rows the answer pins to a line; mention recall = named at all "
          "(graders/gold_recall.py, the reference bench's rule). Means over the trials that count; a group's mean "
          "over the trials whose scenario has rows in it (n beside it).", "note")
    for model in dict.fromkeys(v["model"] for v in view):
        rows = [v for v in view if v["model"] == model]
        groups = sorted({g for v in rows for g in v["groups"]})
        t = Table(["tool", "trials", "cited recall", "mention recall"] + [f"cited: {g}" for g in groups],
                  caption=f"model {model}")
        for v in rows:
            t.add(v["tool"], v["n"], f3(v["cited_recall"]), f3(v["mention_recall"]),
                  *[(f"{f3(v['groups'][g]['mean'])} (n={v['groups'][g]['n']})" if g in v["groups"] else "–")
                    for g in groups])
        doc.table(t, f"gold-recall-{model}")


def _model_host(doc: Doc, s: dict) -> None:
    """The model x host view: fairness per (model, host) for each tool, and paired differences."""
    v = s.get("model_host") or {}
    if not v.get("cells"):
        return
    doc.h(2, "Models × hosts: the same tools and scenarios side by side", "model-host")
    doc.p("Each cell: fairness [95% CI] over that pair's trials, pass@1, and the trial count; – = the host "
          "cannot drive that model (claude-code needs provider anthropic, codex and opencode provider "
          "openai). Differences are paired over the "
          "scenarios both sides ran: hosts against the first host of the config for the same model, models "
          "against the first model for the same host.", "note")
    cells = {(c["tool"], c["model"], c["host"]): c for c in v["cells"]}
    for tool in dict.fromkeys(c["tool"] for c in v["cells"]):
        t = Table(["model"] + v["hosts"], caption=f"tool {tool}: fairness by model and host", cls="model-host")
        for model in v["models"]:
            row = [model]
            for host in v["hosts"]:
                c = cells.get((tool, model, host))
                row.append("–" if c is None else f"{fci(c['fairness'], c['fairness_lo'], c['fairness_hi'])}; "
                           f"pass@1 {f3(c['pass_at_1'])}; {fusd(c['cost_per_trial'])}; "
                           + (fmissing(c["n_trials"], c) or f"n={c['n_trials']}"))
            t.add(*row)
        doc.table(t, f"model-host-{tool}")
    if v["pairs"]:
        t = Table(["tool", "comparing", "for", "a − b", "Δ fairness [95% CI]", "p (t)", "p (Wilcoxon)", "scenarios"],
                  caption="paired differences (a minus b)")
        for p in v["pairs"]:
            t.add(p["tool"], p["compare"], p["fixed"], f"{p['a']} − {p['b']}",
                  fsigned_ci(p["diff"], p["diff_lo"], p["diff_hi"]), fp(p["t_p"]), fp(p["wilcoxon_p"]), p["n"])
        doc.table(t, "model-host-pairs")


def _comparisons(doc: Doc, s: dict) -> None:
    """The config's `compare:` pairs: A minus B, paired over scenarios, Holm across the pairs of a model."""
    rows = s.get("comparisons") or []
    if not rows:
        return
    doc.h(2, "Tools compared with each other (the config's `compare:`)", "comparisons")
    doc.p("Δ = fairness of A minus B, paired over the scenarios both ran (per-scenario means), the same "
          "statistics as against the baseline; p-values Holm-adjusted across the configured pairs of a model. "
          "better / worse: A against B; " + NOISE_TEXT + ". Missing trials are left out and counted.", "note")
    t = Table(["model", "A − B", "fairness A", "fairness B", "Δ fairness [95% CI]", "Holm p (t)", "Holm p (Wilcoxon)",
               "verdict", "scenarios", "trials A (missing)", "trials B (missing)"], cls="comparisons")
    for r in rows:
        vcls = {"better": "better", "worse": "worse", "within noise": "noise"}.get(r["verdict"])
        t.add(r["model"], f"{r['a']} − {r['b']}", f3(r["fairness_a"]), f3(r["fairness_b"]),
              Cell(fsigned_ci(r["diff"], r["diff_lo"], r["diff_hi"]), cls=vcls), fp(r["holm_t_p"]),
              fp(r["holm_wilcoxon_p"]), Cell(r["verdict"], cls=vcls), r["n_scenarios"],
              f"{r['n_trials_a']} ({r['n_missing_a']})", f"{r['n_trials_b']} ({r['n_missing_b']})")
    doc.table(t, "comparisons")


def _adoption(doc: Doc, s: dict) -> None:
    doc.h(2, "Adoption (reported apart, never part of fairness)", "adoption")
    from mcptrials.stats import ADOPTION_WEIGHTS as w   # the weights live in stats only

    doc.p(f"adoption = {w['fluency']:.2f} tool fluency (server calls / (server calls + built-in searches)) + "
          f"{w['discoverability']:.2f} discoverability (a server tool called within the first model calls).", "note")
    t = Table(["model", "tool", "adoption [95% CI]", "tool fluency", "discoverability",
               "expected tools: precision", "recall"])
    for r in s["tools"]:
        if r["tool"] == BASELINE:
            continue
        t.add(r["model"], r["tool"], fci(r["adoption"], r["adoption_lo"], r["adoption_hi"]), f3(r["tool_fluency"]),
              f3(r["discoverability"]), f3(r.get("expected_tools_precision")), f3(r.get("expected_tools_recall")))
    doc.table(t, "adoption-table")
    doc.p("Expected tools (the scenarios' expected_tools against the tools each step called; reported, never "
          "scored): precision = expected tools called / distinct tools called, recall = expected tools called / "
          "expected tools, each the mean over steps, then over trials; a step that expects no tool makes any "
          "call unexpected.", "note")


FORM_ORDER = ("path:line", "path:range", "path:list", "path:symbol", "test-id", "basename", "absolute",
              "line-in-context", "json-fields")


def _citation_composition(doc: Doc, s: dict) -> None:
    """Per model: strict beside lenient grounding and verification per tool, the ungrounded
    decomposed, and the composition by form (summary.json citation_composition)."""
    comp = s.get("citation_composition") or []
    if not comp:
        return
    from mcptrials.grade.composition import UNGROUNDED_KINDS

    doc.h(2, "Citations: strict beside lenient, by form", "citation-composition")
    doc.p("Per tool, the trials' citations pooled. grounded (lenient) = grounded / all citations; grounded "
          "(strict) = (grounded - strict mismatch) / all citations, the citation part of fairness; verified "
          "(lenient) = verified / (verified + mismatch) with the +/-5-line window; verified (strict) = the cited "
          "line is inside the definition of the citation's subject or names it (graders.strict). Ungrounded: "
          "each kind's share of all citations. By form: a form's share of the citations, and its own rates: "
          "a grader lenient with one form is lenient with whichever arm writes it.", "note")
    for model in dict.fromkeys(r["model"] for r in comp):
        rows = [r for r in comp if r["model"] == model]
        doc.h(3, f"{model_text(s, model)}: citations per tool", html_id("citations", model))
        t = Table(["tool", "trials", "citations", "grounded (lenient)", "grounded (strict)", "verified (lenient)",
                   "verified (strict)", *(f"ungrounded: {k.replace('_', ' ')}" for k in UNGROUNDED_KINDS)])
        for r in rows:
            t.add(r["tool"], r["n_trials"], r["n_citations"], f3(r["grounded_rate"]), f3(r["strict_grounded_rate"]),
                  f3(r["verified_rate"]), f3(r["strict_verified_rate"]),
                  *(f"{r['ungrounded'][k]['n']} ({f3(r['ungrounded'][k]['share'])})" for k in UNGROUNDED_KINDS))
        doc.table(t, html_id("citations-table", model))
        forms = [f for f in FORM_ORDER if any(f in r["by_form"] for r in rows)]
        forms += sorted({f for r in rows for f in r["by_form"]} - set(forms))
        t = Table(["form", *(f"{r['tool']}: {h}" for r in rows for h in ("share", "grounded", "verified (lenient)",
                                                                        "verified (strict)"))])
        for form in forms:
            cells = []
            for r in rows:
                f = r["by_form"].get(form)
                cells += ([f"{f3(f['share'])} (n={f['n']})", f3(f["grounded_rate"]), f3(f["verified_rate"]),
                           f3(f["strict_verified_rate"])] if f else ["–"] * 4)
            t.add(form, *cells)
        doc.table(t, html_id("citation-forms-table", model))


def _plots(doc: Doc, s: dict, plot_dir: Path) -> list[str]:
    from mcptrials.report import plots

    doc.h(2, "Plots", "plots")
    noise = s["judge_noise"]["fairness_noise"]
    made = []
    # missing trials are not scores: plotted nowhere (a tool whose trials are all missing has no bar)
    tools = [r for r in s["tools"] if r["fairness"] is not None]
    trials = [r for r in s["trials"] if not r.get("missing")]
    for name, png, alt in (
        ("fairness", plots.fairness_by_tool(tools), "Fairness by tool with 95% intervals"),
        ("forest", plots.forest(tools, noise), "Paired differences against the baseline (forest plot)"),
        ("cost_quality", plots.cost_vs_quality(trials), "Cost against judge quality"),
        ("grounding", plots.grounding_buckets(trials), "Citation grounding buckets"),
        ("pass_hat_k", plots.pass_hat_k_curve(s["pass_hat_curve"]), "pass^k against k"),
    ):
        if png is None:
            continue
        plot_dir.mkdir(parents=True, exist_ok=True)
        (plot_dir / f"{name}.png").write_bytes(png)
        made.append(doc.image(name, png, alt))
    return made


def never_passed_text(s: dict) -> str:
    """What a scenario no trial passes points to. With real models, most often a defect in the
    task or its grader (the seed method); when only the reference agent (no language model) ran,
    it may just be a task that needs reasoning, so the text says both."""
    if all(mdl["provider"] == "reference" for mdl in s["identity"]["models"].values()):
        return ("no trial passes — only the reference agent (no language model) ran: the task may need "
                "reasoning it cannot do; with a real model this would point to a defect in the task or its grader")
    return "no trial passes — likely a defect in the task or its grader"


def _scenarios(doc: Doc, s: dict) -> None:
    doc.h(2, "Scenarios", "scenarios")
    t = Table(["scenario", "title", "suite", "repo", "steps", "passes", "flag"])
    for sc in s["scenarios"]:
        flag = {"saturated": "saturated: every tool passes every trial — ready for the regression suite",
                "never_passed": never_passed_text(s)}.get(sc["flag"], "")
        gone = sc.get("n_missing") or 0
        t.add(sc["scenario"], sc["title"] or "", sc["suite"], sc["repo"], sc["steps"],
              f"{sc['passes']}/{sc['trials']}" + (f" ({gone} missing)" if gone else ""),
              Cell(flag, cls="pass" if sc["flag"] == "saturated" else "fail" if sc["flag"] else None))
    doc.table(t, "scenario-flags")
    for model in model_labels(s):
        for sc in s["scenarios"]:
            cells = [c for c in s["cells"] if c["model"] == model and c["scenario"] == sc["scenario"]]
            if not cells:
                continue
            k = max(c["k"] for c in cells)
            n_trials = max(c["n"] for c in cells)
            t = Table(["tool", "fairness [95% CI]", "quality", "keyword", "grounding", "efficiency", "adoption",
                       "passes", f"pass^{k}", "cost", "time", "work", "start-up", "errors"]
                      + [f"trial {i}" for i in range(1, n_trials + 1)],
                      caption=f"model {model}, scenario {sc['scenario']}")
            for c in cells:
                trials = [r for r in s["trials"] if (r["model"], r["tool"], r["scenario"]) == (model, c["tool"], sc["scenario"])]
                links = [Cell(f"#{r['trial']} missing ({r['missing_reason']})", href=href(r["page"]), cls="noise")
                         if r.get("missing") else
                         Cell(f"#{r['trial']} {'pass' if r['passed'] else 'fail'}"
                              + ("" if r["outcome"] == "completed" else f" ({r['outcome']})"),
                              href=href(r["page"]), cls="pass" if r["passed"] else "fail") for r in trials]
                links += [Cell("")] * (n_trials - len(links))
                t.add(c["tool"], fci_missing(c["fairness"], c["fairness_lo"], c["fairness_hi"], c["n"], c), f3(c["quality"]),
                      f3(c["keyword_coverage"]), f3(c["citation_grounding"]), f3(c["efficiency"]), f3(c["adoption"]),
                      f"{c['passes']}/{c['n']}" + (f" ({c['n_missing']} missing)" if c.get("n_missing") else ""),
                      f3(c["pass_hat_k"]), fusd(c["cost_usd"]), fsec(c["wall_seconds"]),
                      fsec(c.get("work_seconds")), fsec(c.get("server_startup_seconds")),
                      sum(c[e] for e in ("tool_error", "protocol_error", "api_error", "harness_error")), *links)
            doc.table(t, f"scenario-{model}-{sc['scenario']}")


def _errors(doc: Doc, s: dict) -> None:
    doc.h(2, "Errors per tool", "errors")
    doc.p("tool_error: the server answered with isError; protocol_error: MCP/JSON-RPC failures (time-outs, "
          "closed connections, bad replies); api_error: the model API; harness_error: a fault of the harness.", "note")
    t = Table(["model", "tool", "trials", "missing", "tool_error", "protocol_error", "api_error", "harness_error",
               "trials with errors", "outcomes"])
    for e in s["errors"]:
        t.add(e["model"], e["tool"], e["trials"], e.get("n_missing", 0), e["tool_error"], e["protocol_error"], e["api_error"],
              e["harness_error"], e["trials_with_errors"], ", ".join(f"{k} {v}" for k, v in e["outcomes"].items()))
    doc.table(t, "errors-table")


def _profile(doc: Doc, s: dict) -> None:
    doc.h(2, "Server profile per tool", "profile")
    t = Table(["tool", "server", "tool definitions, tokens per request", "start-up (median / max)", "calls",
               "latency p50", "latency p95", "result chars (mean / p95 / max)", "truncated", "peak memory"])
    methods, builtin = set(), None
    for p in s["server_profile"]:
        server = " ".join(p["server_name"] + p["server_version"]) or ("built-in tools" if p["tool"] == BASELINE else "–")
        d = p.get("definition_tokens") or {}
        methods.update(d.get("methods") or [])
        builtin = d.get("builtin_tokens") if d.get("builtin_tokens") is not None else builtin
        t.add(p["tool"], server, definition_cell(d), f"{fsec(p['startup_median_s'])} / {fsec(p['startup_max_s'])}",
              f"{p['calls']} {p['calls_measured']}", fnum(p["latency_p50_ms"], " ms"), fnum(p["latency_p95_ms"], " ms"),
              f"{fnum(p['result_chars_mean'])} / {fnum(p['result_chars_p95'])} / {fnum(p['result_chars_max'])}",
              p["truncated_results"], "–" if p["peak_rss_kb_max"] is None else f"{p['peak_rss_kb_max'] / 1024:.1f} MiB")
    doc.table(t, "profile-table")
    if methods:
        doc.p("Tool definitions: the input tokens the server's tool definitions add to every request of the loop "
              "(each turn of a trial pays them again, as cache reads once cached), from the tools snapshot, by "
              + "; ".join(sorted(methods)) + ("" if builtin is None else
                                              f". The built-in tools (read_file, grep, list_files), sent in every trial "
                                              f"including the baseline's, add {builtin:,} more") + ".",
              "note")


def definition_cell(d: dict) -> str:
    """A tool's definition tokens: one figure, or the range over its repos, and its tool count."""
    if d.get("tokens") is None:
        return "–"
    n = f"{d['tokens']:,}" if d["tokens_min"] == d["tokens"] else f"{d['tokens_min']:,}–{d['tokens']:,}"
    counts = {r.get("definition_tools") for r in d["per_repo"].values()} - {None}
    return n + (f" ({max(counts)} tools)" if counts and max(counts) else "")


def _spread_row(t: Table, name: str, sp: dict | None) -> None:
    if sp is None:
        t.add(name, "–", "–", "–", "–", "–")
        return
    t.add(name, sp["n_items"], f"{sp['min_repeats']}-{sp['max_repeats']}" if sp["min_repeats"] != sp["max_repeats"]
          else sp["min_repeats"], f3(sp["mean_sd"]), f3(sp["max_range"]), f3(sp.get("icc")))


def _judge(doc: Doc, s: dict) -> None:
    jn = s["judge_noise"]
    doc.h(2, "Judge noise", "judge-noise")
    if jn["note"]:
        doc.p(jn["note"], "note")
    else:
        doc.p(f"The judge's spread in fairness units is {f3(jn['fairness_noise'])} (quality weight × mean SD of "
              "repeated scenario judgements): smaller differences are not ranked.", "note")
    t = Table(["item", "items", "repeats", "mean SD", "max range", "ICC(1,1)"], caption="per criterion, overall")
    _spread_row(t, "scenario quality (all trials)", jn["overall"]["scenario"])
    _spread_row(t, "step quality (all steps)", jn["overall"]["step"])
    for name, sp in jn["overall"]["criteria"].items():
        _spread_row(t, f"criterion {name}", sp)
    doc.table(t, "judge-criteria")
    t = Table(["item", "items", "repeats", "mean SD", "max range", "ICC(1,1)"], caption="per scenario and step")
    for sc, v in jn["by_scenario"].items():
        _spread_row(t, f"{sc}", v["scenario"])
        for step, sp in v["steps"].items():
            _spread_row(t, f"{sc} / {step}", sp)
    doc.table(t, "judge-scenarios")


def _heldout(doc: Doc, agreement: dict | None, held: dict) -> None:
    doc.h(2, "Held-out judge agreement", "heldout")
    doc.p(held["line"])
    if held["anchored"] and agreement.get("method"):
        doc.p("Method: " + agreement["method"], "note")
    doc.p("Lock: " + held["lock_line"])
    if held["anchored"] and agreement.get("items"):
        t = Table(["item", "scenario", "gold", "judged"])
        for it in agreement["items"]:
            t.add(it["id"], it["scenario"], f3(it["gold"]), f3(it["judged"]))
        doc.table(t, "heldout-items")


# --- patterns and the agent's feedback on the tools (aggregate.pattern_summary, feedback_table) --


PATTERN_LIST_MAX = 50  # trial links listed per (model, tool, pattern) in the report; all are in the explorer


def html_id(*parts) -> str:
    """An element id from names (model, tool, pattern): letters, digits, - and _ kept, the rest _."""
    return "-".join("".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(p)) for p in parts)


def explorer_filter(**filters) -> str:
    """A link to the trial explorer with its filters set (explorer.html#tool=git&patterns=...)."""
    from urllib.parse import urlencode

    return f"{EXPLORER}#{urlencode(filters)}"


def _pattern_table(p: dict, names: list[str], links: bool) -> Table:
    t = Table(["model", "tool", "trials"] + names, cls="patterns",
              caption="trials showing each pattern (findings in brackets)")
    for row in p["by_tool"]:
        cells = []
        for name in names:
            c = row["patterns"][name]
            anchor = "#" + html_id("patterns", row["model"], row["tool"], name) if links and c["trials"] else None
            cells.append(Cell(f"{c['trials']} ({c['findings']})" if c["trials"] else "0", href=anchor,
                              cls="flagged" if c["trials"] else None))
        t.add(row["model"], row["tool"], row["trials"], *cells)
    return t


def _patterns(doc: Doc, s: dict) -> None:
    """Counts per tool of each pattern (mcptrials.grade.patterns), each linked to the trials that show it."""
    p = s.get("patterns")
    if not p:
        return
    names = list(p["definitions"])
    doc.h(2, "Patterns in the transcripts", "patterns")
    doc.p("Behaviours worth reading a transcript for, found in every trial by mcptrials.grade.patterns; they are never "
          "part of a score. A count is the trials of that model and tool showing the pattern (its findings in "
          "brackets) and links to them; each trial page marks where the pattern occurs.", "note")
    defs = Table(["pattern", "what it means"], cls="pattern-definitions")
    for name, text in p["definitions"].items():
        defs.add(name, text)
    doc.table(defs, "pattern-definitions")
    doc.md.append(md_table(_pattern_table(p, names, links=False)))
    doc.html.append(html_table(_pattern_table(p, names, links=True), "patterns-table"))
    never = Table(["model", "tool", "server tools no trial called"], cls="never-used",
                  caption="server tools offered in every trial that ran through and called in none")
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
            model, _, host = row["model"].partition("@")   # a label model@host when the run has several hosts
            more = explorer_filter(model=model, **({"host": host} if host else {}), tool=row["tool"], patterns=name)
            shown = c["pages"][:PATTERN_LIST_MAX]
            rest = len(c["pages"]) - len(shown)
            items = [(trials[pg]["scenario"], trials[pg]["trial"], trials[pg]["patterns"].get(name, 0), pg)
                     for pg in shown if pg in trials]
            doc.md.append(f"**{title}**: " + ", ".join(f"[{sc} #{n}]({href(pg)}) ({k})" for sc, n, k, pg in items)
                          + (f", and {rest} more in the [explorer]({more})" if rest else "") + "\n")
            doc.html.append(
                f'<div class="pattern-trials" id="{esc(html_id("patterns", row["model"], row["tool"], name))}">'
                f"<p><b>{esc(title)}</b> (<a href=\"{esc(more)}\">in the explorer</a>)</p><ul>"
                + "".join(f'<li><a href="{esc(href(pg))}#patterns">{esc(sc)} trial {esc(n)}</a>: {esc(k)} finding(s)</li>'
                          for sc, n, k, pg in items)
                + (f"<li>and {rest} more: <a href=\"{esc(more)}\">all in the explorer</a></li>" if rest else "")
                + "</ul></div>")


def _feedback(doc: Doc, s: dict) -> None:
    """The agent's closing feedback on its tools, one table per tool; identical texts grouped."""
    fb = s.get("feedback")
    if fb is None:
        return
    doc.h(2, "Feedback on the tools", "feedback")
    if not fb:
        doc.p("No trial ended with feedback on its tools.", "note")
        return
    doc.p("The agent's closing 'Feedback on the tools' paragraph (the last step asks for it; it is kept out of the "
          "answer and never scored), gathered per tool; identical texts are one row with all their trials.", "note")
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
            md.add(text, named, ", ".join(f"[{it['model']} {it['scenario']} #{it['trial']}]({href(it['page'])})"
                                          for it in its))
            links = ", ".join(f'<a href="{esc(href(it["page"]))}">{esc(it["model"])} {esc(it["scenario"])} '
                              f'#{esc(it["trial"])}</a>' for it in its)
            rows_html.append(f"<tr><td>{esc(text)}</td><td>{esc(named)}</td><td>{links}</td></tr>")
        doc.md.append(md_table(md))
        doc.html.append(f'<table class="feedback" id="{esc(html_id("feedback", tool))}"><caption>{esc(caption)}'
                        "</caption><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in headers)
                        + "</tr></thead><tbody>" + "".join(rows_html) + "</tbody></table>")


def finding_anchor(f: dict) -> str | None:
    """Where a finding is on the trial page: its call, else its step; None for the whole trial."""
    if f.get("call") is not None:
        return f"call-{f['call']}"
    return None if f.get("step") is None else f"step-{f['step']}"


def trial_findings(summary: dict, page_rel: str) -> list[dict] | None:
    """The trial's findings (summary.json patterns.findings), or None for a summary made before the
    pattern detectors (nothing is then said about patterns, rather than 'none found')."""
    if "patterns" not in summary:
        return None
    return summary["patterns"]["findings"].get(page_rel) or []


def pattern_marks(found: list[dict] | None, **where) -> str:
    """Badges for the findings at one place (call=n, or step=i with no call)."""
    if not found:
        return ""
    hits = [f for f in found if all(f.get(k) == v for k, v in where.items())
            and ("call" in where or f.get("call") is None)]
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


def _explorer_link(doc: Doc, s: dict) -> None:
    """The way to the trial explorer (mcptrials.report.explorer), near the top of the report."""
    text = f"every trial ({len(s['trials']):,}) in one table: filter, sort, search the answers, open a trial"
    doc.md.append(f"[Trial explorer]({EXPLORER}): {text}\n")
    doc.html.append(f'<p id="explorer-link"><a href="{esc(EXPLORER)}">Trial explorer</a>: {esc(text)}</p>')


def build_report(summary: dict, agreement: dict | None, lock: dict | None, runs, out_dir,
                 judge_cfg: dict, current_set_sha256: str | None = None, lockfile_sha256: str | None = None) -> dict:
    """Write report.md, index.html, plots/*.png and the trial pages under out_dir.
    judge_cfg is the config's `judge:` (threshold and strict: the held-out verdict is made here).
    Raises StrictHeldout, before writing anything, when judge.strict is true and the check fails.
    Returns {"html", "md", "pages"} paths."""
    held = heldout_state(agreement, lock, judge_cfg["threshold"], judge_cfg["strict"], lockfile_sha256,
                         summary["identity"]["judge"].get("provider"))
    if held["refuse"]:
        raise StrictHeldout(held["refuse"])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    ident = summary["identity"]
    doc = Doc()
    doc.h(1, "mcptrials report")
    doc.p("Models: " + "; ".join(f"{n} = {m['label']}" for n, m in ident["models"].items())
          + f". Judge: {ident['judge']['label']}.")
    warnings = list(held["warnings"])
    if current_set_sha256 and current_set_sha256 != ident["scenario_set_sha256"]:
        warnings.append("The aggregate was built from a different scenario set than the config's current one: "
                        "rerun `mcptrials aggregate`.")
    for w in warnings:
        doc.p("WARNING: " + w, "warning")
    for n in held["notes"] + summary["notes"]:
        doc.p("Note: " + n, "note")
    _failed_stages(doc, summary)
    _explorer_link(doc, summary)
    _headline(doc, summary)
    _gold_recall(doc, summary)
    _comparisons(doc, summary)
    _model_host(doc, summary)
    _identity(doc, summary, held)
    _adoption(doc, summary)
    _citation_composition(doc, summary)
    _plots(doc, summary, out / "plots")
    _scenarios(doc, summary)
    _errors(doc, summary)
    _patterns(doc, summary)
    _feedback(doc, summary)
    _profile(doc, summary)
    _judge(doc, summary)
    _heldout(doc, agreement, held)

    md_path, html_path = out / "report.md", out / "index.html"
    md_path.write_text("\n".join(doc.md))
    html_path.write_text(page("mcptrials report", "\n".join(doc.html)))
    pages = [write_trial_page(r, runs, out, summary) for r in summary["trials"]]
    explorer = write_explorer(summary, runs, out)
    return {"html": html_path, "md": md_path, "pages": pages, "explorer": explorer}


# --- one page per trial ------------------------------------------------------------------------


STDERR_LINES = 15   # of a crashed server's stderr on its trial page


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


def write_trial_page(row: dict, runs, out: Path, summary: dict) -> Path:
    from mcptrials.analyze.aggregate import trial_dir

    d = trial_dir(runs, row["model_name"], row["host"], row["tool"], row["repo"], row["scenario"], row["trial"])
    recs = {}
    for name in ("transcript", "scored", "judged", "run_meta"):
        p = d / f"{name}.json"
        recs[name] = json.loads(p.read_text()) if p.is_file() else None
    path = out / row["page"]
    path.parent.mkdir(parents=True, exist_ok=True)
    up = "../" * (row["page"].count("/"))
    title = f"{row['model']} / {row['tool']} / {row['scenario']} / trial {row['trial']}"
    b = [f'<p><a href="{up}index.html">back to the report</a></p>', f"<h1>{esc(title)}</h1>"]
    t, sc, j, meta = recs["transcript"] or {}, recs["scored"] or {}, recs["judged"] or {}, recs["run_meta"] or {}
    model_label = model_text(summary, row["model"])

    missing = bool(row.get("missing"))
    verdict = "MISSING" if missing else "PASS" if row["passed"] else "FAIL"
    kv = Table(["", ""], cls="kv")
    kv.add("model", model_label)
    kv.add("tool", f"{row['tool']} {meta.get('server_name') or ''} {meta.get('server_version') or ''}".strip())
    kv.add("repo", f"{row['repo']} @ {meta.get('commit') or sc.get('repo_commit') or '–'}")
    kv.add("outcome", f"{row['outcome']}" + (f": {t.get('outcome_detail')}" if t.get("outcome_detail") else ""))
    kv.add("result", Cell(verdict + (f": {row['missing_reason']} (an infrastructure failure, not scored; attempt "
                                     f"{row.get('attempts', 1)})" if missing else ""),
                          cls="noise" if missing else "pass" if row["passed"] else "fail"))
    if sc.get("failures"):
        kv.add("why not passed", "; ".join(sc["failures"]))
    w = summary["identity"]["weights"]
    kv.add("fairness", f"{f3(row['fairness'])} = {w['keyword']:.2f}×keyword {f3(row['keyword_coverage'])} + "
                       f"{w['quality']:.2f}×quality {f3(row['quality'])} + {w['citation']:.2f}×grounding "
                       f"{f3(row['citation_grounding'])} + {w['efficiency']:.2f}×efficiency {f3(row['efficiency'])}"
                       + ("" if row["completed"] else " — missing: not scored, left out of every mean" if missing
                          else " — scored 0: the trial did not complete"))
    kv.add("adoption", f"{f3(row['adoption'])} (fluency {f3(row['tool_fluency'])}, discoverability "
                       f"{f3(row['discoverability'])})")
    kv.add("cost / time", f"{fusd(row['cost_usd'])}, {fsec(row['wall_seconds'])} wall, of which "
                          f"{fsec(row.get('work_seconds'))} the agent's work (what efficiency compares) and "
                          f"{fsec(row.get('server_startup_seconds'))} server start-up (the rest: sandbox, "
                          "tools/list, shutdown)")
    kv.add("tokens", f"input {row['tokens_input_uncached']}, cache write {row['tokens_cache_write']}, cache read "
                     f"{row['tokens_cache_read']}, output {row['tokens_output']}")
    kv.add("tool calls", f"{row['tool_calls']} ({row['tool_calls_mcp']} server, {row['tool_calls_builtin']} built-in)")
    kv.add("errors", ", ".join(f"{k} {row[k]}" for k in ("tool_error", "protocol_error", "api_error", "harness_error")))
    kv.add("citations", f"{row['citations']} ({row['grounded']} grounded, {row['hallucinated']} hallucinated, "
                        f"{row['unresolved']} unresolved; verified {f3(row.get('verified_rate'))})")
    b.append(html_table(kv, "trial-summary"))
    if row["outcome"] == "server_crashed" and meta.get("server_stderr_tail"):
        # "Connection closed" says only that the server went; its own last words say why
        b.append('<h2 id="server-stderr">The server\'s last stderr lines</h2>'
                 + _pre("\n".join(meta["server_stderr_tail"].splitlines()[-STDERR_LINES:])))
    found = trial_findings(summary, row["page"])  # mcptrials.grade.patterns, marked below where they occur
    b.append(pattern_list(found))

    if t.get("error_events"):
        et = Table(["kind", "step", "message", "code"])
        for e in t["error_events"]:
            et.add(e.get("kind"), e.get("step"), e.get("message"), e.get("code"))
        b += ["<h2>Errors</h2>", html_table(et)]

    sc_steps = {s["index"]: s for s in sc.get("steps", [])}
    j_steps = {s["index"]: s for s in j.get("steps", [])}
    calls = t.get("tool_calls", [])
    indices = sorted(set(sc_steps) | set(j_steps) | {s["index"] for s in t.get("steps", [])})
    t_steps = {s["index"]: s for s in t.get("steps", [])}
    for i in indices:
        ts, ss, js = t_steps.get(i, {}), sc_steps.get(i, {}), j_steps.get(i, {})
        name = ts.get("name") or ss.get("name") or js.get("name") or str(i)
        b.append(f"<h2 id=\"step-{i}\">Step {i}: {esc(name)}{pattern_marks(found, step=i)}</h2>")
        if not ts:
            b.append("<p class=\"warning\">The transcript has no such step: the trial stopped before it.</p>")
        b.append("<h3>Prompt</h3>" + _pre(ts.get("prompt")))
        b.append(f"<h3>Answer</h3><p class=\"note\">outcome {esc(ts.get('outcome'))}, {esc(ts.get('turns'))} model "
                 f"call(s), {esc(fsec(ts.get('wall_seconds')))}</p>" + _pre(ts.get("answer_text")))
        step_calls = [c for c in calls if c.get("step") == i]
        if step_calls:
            b.append(f"<h3>Tool calls ({len(step_calls)})</h3>")
            ct = []
            for c in step_calls:
                status = f"error ({c.get('error_kind') or 'is_error'})" if c.get("is_error") else "ok"
                n = next(k for k, x in enumerate(calls) if x is c)   # its index in tool_calls: the findings' `call`
                marks = pattern_marks(found, call=n)
                ct.append(f"<div class=\"call{' flagged' if marks else ''}\" id=\"call-{n}\"><p>{marks + ' ' if marks else ''}"
                          f"<b>{esc(c.get('name'))}</b> [{esc(c.get('source'))}] turn "
                          f"{esc(c.get('turn'))}, {esc(fnum(c.get('latency_ms'), ' ms'))}, {esc(status)}, "
                          f"{esc(c.get('result_chars'))} chars{' (truncated)' if c.get('truncated') else ''}</p>"
                          f"{_pre(_json(c.get('arguments')), 'arguments')}{_pre(c.get('result_text'), 'result')}</div>")
            b += ct
        if ts.get("state_check"):
            b.append("<h3>State check</h3>" + _state_parts(ss.get("state")) + _pre(_json(ts["state_check"]), "found"))
        b.append(_expected_tools_line(sc, i))
        if ss:
            b.append("<h3>Grader evidence</h3>")
            kw = ss.get("keywords") or {}
            if kw.get("checks"):
                kt = Table(["check", "value", "required", "hit", "matched", "snippet"],
                           caption=f"keyword coverage {f3(kw.get('coverage'))}")
                for c in kw["checks"]:
                    kt.add(c["type"], c["value"], "yes" if c["required"] else "bonus",
                           Cell("hit" if c["hit"] else "miss", cls="pass" if c["hit"] else "fail"),
                           c.get("matched") or "", c.get("snippet") or "")
                b.append(html_table(kt))
            cit = ss.get("citations") or {}
            if cit.get("items"):
                ctab = Table(["citation", "resolved", "bucket", "verification", "reason"],
                             caption=f"citations: grounded rate {f3((cit.get('rates') or {}).get('grounded_rate'))}, "
                                     f"verified {f3((cit.get('rates') or {}).get('verified_rate'))}")
                for c in cit["items"]:
                    ctab.add(c.get("text"), c.get("resolved_path") or "–",
                             Cell(c["bucket"], cls="pass" if c["bucket"] == "grounded" else "fail"),
                             c.get("verification"), c.get("reason"))
                b.append(html_table(ctab))
            if cit.get("gold"):
                gt = Table(["gold location", "cited", "by"])
                for g in cit["gold"]:
                    gt.add(g["location"], Cell("yes" if g["cited"] else "no", cls="pass" if g["cited"] else "fail"),
                           g.get("by") or "")
                b.append(html_table(gt))
            for label, key in (("exact answer", "exact"), ("state check", "state")):
                if ss.get(key):
                    b.append(f"<p><b>{label}</b>: " + ("passed" if ss[key]["passed"] else "failed") + "</p>"
                             + _pre(_json(ss[key])))
            if ss.get("failures"):
                b.append("<ul>" + "".join(f"<li>{esc(f)}</li>" for f in ss["failures"]) + "</ul>")
        if js:
            jt = Table(["criterion", "weight", "scores (per repeat)", "mean", "rationale"],
                       caption=f"judge: step quality {f3(js.get('quality_mean'))}"
                               + (" (empty answer: 0 without a judge call)" if js.get("empty") else ""))
            for c in js.get("criteria", []):
                jt.add(c["name"], c["weight"], ", ".join(f3(x) for x in c["scores"]), f3(c["mean"]),
                       " | ".join(f"repeat {n}: {r}" for n, r in enumerate(c.get("rationales", []), 1)))
            b.append("<h3>Judge</h3>" + html_table(jt))
    if t.get("feedback_text"):
        b.append("<h2>The agent's feedback on its tools</h2>" + _pre(t["feedback_text"]))
    if meta:
        b.append("<h2>Run metadata</h2>" + _pre(_json(meta), "run_meta.json"))
    path.write_text(page(title, "\n".join(b)))
    return path


# --- the workflow's report job -----------------------------------------------------------


def report_job(m, aggregate_dir, heldout, lock, runs, out_dir) -> dict:
    """The report of a config's run: its aggregate (summary.json under `aggregate_dir`), the
    held-out agreement (`heldout`, optional) and the verified lock (`lock`, default beside
    `heldout`), or the reason the config has no anchor. Raises StrictHeldout (nothing
    written) when judge.strict is true and the held-out check fails."""
    import dataclasses

    summary = load_summary(aggregate_dir)
    reason = missing_anchor(m)
    lockfile_sha256 = None
    if reason:   # the same shape the held-out stage writes when its held-out scenarios have no frozen transcripts
        agreement, lock = {"anchor": None, "reason": reason, "n": 0, "rho": None}, None
    else:
        from mcptrials.matrix.config import file_sha256
        from mcptrials.analyze.lock import LOCKFILE

        lockfile = m.locked_dir / LOCKFILE
        lockfile_sha256 = file_sha256(lockfile) if lockfile.is_file() else None
        agreement = read_optional(heldout)
        lock = read_optional(lock or (Path(heldout).parent / "lock_verified.json" if heldout else None))
    current = m.scenario_set_sha256()  # differs from the aggregate's when the aggregate is stale
    return build_report(summary, agreement, lock, runs, out_dir, dataclasses.asdict(m.specs.judge), current,
                        lockfile_sha256)
