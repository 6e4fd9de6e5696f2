"""Run against run: `mcptrials compare BASE_RESULTS HEAD_RESULTS`, the regression gate for CI.

Inputs are two `results/` folders (e.g. main's stored results and a pull request's), of which
only `aggregate/summary.json` (its identity and its trial rows) and `snapshots/<tool>/<repo>/tools.json`
(what `tools/list` offered) are read; nothing is rerun.

1. Comparable or refused (exit 2, every reason said): the same scenario files (ids and sha256),
   the same repository commits, and the same grading (graders.GRADER_VERSION and the per-scenario
   grading and rubric hashes as scored.json / judged.json recorded them, the judge's provider,
   model, prompt and settings, and the fairness weights). A different number would otherwise
   be read as the server's doing.
2. Paired: trials are matched by (model, host, tool, scenario); each side's trials of a scenario
   are averaged (trials are exchangeable repeats, so their index carries no pairing), and
   HEAD - BASE is paired over the scenarios both sides ran, for fairness, pass rate (share of
   trials passed), cost per trial (USD) and error rate (share of trials with any error event),
   with stats.paired_difference at GATE_LEVEL (90% two-sided; 0-1 figures on [-1, 1], the
   logit-transformed t interval, df = scenarios - 1). Missing trials are left out and counted.
3. Gate (stats.margin_test on fairness only, the headline score): a tool is a regression when
   the upper bound of its 90% interval of HEAD - BASE fairness is below -margin, i.e. the
   one-sided level-0.05 test of H0 "HEAD is at most `margin` worse" rejects it; non-inferior
   when the lower bound is above -margin; else inconclusive. Exit 1 on any regression (and, with
   --strict, on any tool not shown non-inferior), else 0. DEFAULT_MARGIN is the one default.
4. Beside the numbers, each tool's tools/list diff: tools added and removed, changed
   descriptions and changed input schemas (properties added, removed, changed; required).
"""

from __future__ import annotations

import html
import json
import sys
from pathlib import Path

from . import __version__
from .aggregate import ERROR_KINDS
from .config import ConfigError, canonical_hash

DEFAULT_MARGIN = 0.05   # fairness points (0-1 scale): the --margin default, its only definition
GATE_LEVEL = 0.90       # two-sided level of the gate's interval: a one-sided test at 0.05
TEST_NAME = ("non-inferiority of HEAD against BASE in fairness: one-sided test at alpha 0.05 via the "
             "two-sided 90% paired interval of HEAD - BASE over scenarios (logit-transformed t, df = scenarios - 1); "
             "regression when its upper bound < -margin, non-inferior when its lower bound > -margin")
MARKDOWN_LIMIT = 60000  # GitHub refuses comments over 65,536 characters
DESCRIPTION_CHARS = 160


class Refused(Exception):
    """The two runs cannot be compared; `reasons` says why, each with the fix."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


# --- reading a results folder ---------------------------------------------------------


def load_results(folder) -> dict:
    """{"folder", "summary", "snapshots": {(tool, repo): tools.json}} of a results/ folder."""
    root = Path(folder)
    path = root / "aggregate" / "summary.json"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; give a results/ folder that holds aggregate/summary.json "
                          "(run the workflow, or `mcptrials aggregate`, there first)")
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); rerun `mcptrials aggregate`") from None
    snaps = {}
    for p in sorted((root / "snapshots").glob("*/*/tools.json")):
        try:
            snaps[(p.parent.parent.name, p.parent.name)] = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}: not valid JSON ({e}); rerun its tools_snapshot job") from None
    return {"folder": str(root), "summary": summary, "snapshots": snaps}


# --- comparable or not ----------------------------------------------------------------


def _diff_keys(what: str, base: dict, head: dict) -> list[str]:
    out = []
    if set(base) - set(head):
        out.append(f"{what} only in BASE: {', '.join(sorted(set(base) - set(head)))}")
    if set(head) - set(base):
        out.append(f"{what} only in HEAD: {', '.join(sorted(set(head) - set(base)))}")
    changed = sorted(k for k in set(base) & set(head) if base[k] != head[k])
    if changed:
        out.append(f"{what} changed: {', '.join(changed)}")
    return out


def refusal_reasons(base: dict, head: dict) -> list[str]:
    """Why two summaries cannot be compared (empty: they can). Each reason names the fix."""
    bi, hi = base["identity"], head["identity"]
    reasons = []
    diffs = _diff_keys("scenarios", {k: v["sha256"] for k, v in bi["scenarios"].items()},
                       {k: v["sha256"] for k, v in hi["scenarios"].items()})
    if diffs:
        reasons.append("the scenario sets differ (" + "; ".join(diffs) + "): run both with the same pack "
                       "and splits, or refresh BASE's stored results after changing the scenarios")
    diffs = _diff_keys("repos", {k: v["commit"] for k, v in bi["repos"].items()},
                       {k: v["commit"] for k, v in hi["repos"].items()})
    if diffs:
        shown = "; ".join(diffs) + "".join(
            f" ({k}: {bi['repos'][k]['commit'][:12]} -> {hi['repos'][k]['commit'][:12]})"
            for k in sorted(set(bi["repos"]) & set(hi["repos"])) if bi["repos"][k]["commit"] != hi["repos"][k]["commit"])
        reasons.append(f"the repository commits differ ({shown}): pin the same commits in both configs")
    bg, hg = bi.get("grading"), hi.get("grading")
    if bg is None or hg is None:
        side = "BASE" if bg is None else "HEAD"
        reasons.append(f"{side} records no grader version (aggregated by an older mcptrials): rerun "
                       "`mcptrials aggregate` there")
    else:
        if bg["grader_versions"] != hg["grader_versions"]:
            reasons.append(f"the grader versions differ (BASE {', '.join(bg['grader_versions'])}, HEAD "
                           f"{', '.join(hg['grader_versions'])}): rescore BASE with the same mcptrials version")
        for part, what in (("grading_sha256", "grading (checks, citations, exact answers)"),
                           ("rubric_sha256", "rubrics")):
            changed = sorted(k for k in set(bg[part]) & set(hg[part]) if bg[part][k] != hg[part][k])
            if changed:
                reasons.append(f"the scenarios' {what} differ for {', '.join(changed)}: grade both runs with the "
                               "same scenario files")
    judge_keys = ("provider", "model", "repeats", "prompt_sha256", "settings_hash")
    bj = {k: bi["judge"].get(k) for k in judge_keys}
    hj = {k: hi["judge"].get(k) for k in judge_keys}
    if bj != hj:
        changed = [k for k in judge_keys if bj[k] != hj[k]]
        reasons.append(f"the judge differs ({', '.join(changed)}): judge both runs with the same judge settings")
    if bi["weights"] != hi["weights"]:
        reasons.append(f"the fairness weights differ (BASE {bi['weights']}, HEAD {hi['weights']}): use the same "
                       "`weights:`")
    return reasons


# --- tools/list diff -------------------------------------------------------------------------


def _props(schema) -> dict:
    return (schema or {}).get("properties") or {} if isinstance(schema, dict) else {}


def schema_change(old, new) -> str:
    """A short account of how an input schema changed: properties added, removed, changed, required."""
    po, pn = _props(old), _props(new)
    parts = []
    if set(pn) - set(po):
        parts.append("added " + ", ".join(sorted(set(pn) - set(po))))
    if set(po) - set(pn):
        parts.append("removed " + ", ".join(sorted(set(po) - set(pn))))
    changed = sorted(k for k in set(po) & set(pn) if canonical_hash(po[k]) != canonical_hash(pn[k]))
    if changed:
        parts.append("changed " + ", ".join(changed))
    ro, rn = sorted((old or {}).get("required") or []), sorted((new or {}).get("required") or [])
    if ro != rn:
        parts.append(f"required {ro} -> {rn}")
    return "; ".join(parts) or "changed (outside its properties)"


def tools_list_diff(base_snap: dict | None, head_snap: dict | None) -> dict:
    """What changed in one tool's tools/list between two snapshots (tools.json of snapshot.py):
    added and removed tool names, changed descriptions (old, new), changed input schemas, the
    server version and tools_sha256 of each side, and a server that did not start."""
    b = {t["name"]: t for t in (base_snap or {}).get("tools", [])}
    h = {t["name"]: t for t in (head_snap or {}).get("tools", [])}
    both = sorted(set(b) & set(h))
    return {
        "added": sorted(set(h) - set(b)), "removed": sorted(set(b) - set(h)),
        "descriptions": [{"tool": n, "base": b[n].get("description") or "", "head": h[n].get("description") or ""}
                         for n in both if (b[n].get("description") or "") != (h[n].get("description") or "")],
        "schemas": [{"tool": n, "change": schema_change(b[n].get("input_schema"), h[n].get("input_schema"))}
                    for n in both if canonical_hash(b[n].get("input_schema")) != canonical_hash(h[n].get("input_schema"))],
        "server_version": [(base_snap or {}).get("server_version"), (head_snap or {}).get("server_version")],
        "tools_sha256": [(base_snap or {}).get("tools_sha256"), (head_snap or {}).get("tools_sha256")],
        "error": [(base_snap or {}).get("error"), (head_snap or {}).get("error")],
        "snapshot": [base_snap is not None, head_snap is not None],
    }


# --- paired figures --------------------------------------------------------------------------


# figure -> (how one trial's value is read, the bounds of a per-scenario difference: 0-1 figures
# on [-1, 1], so their interval never leaves it; cost is unbounded, a plain paired t interval)
METRICS = {
    "fairness": (lambda r: r["fairness"], (-1, 1)),
    "pass_rate": (lambda r: None if r["passed"] is None else float(bool(r["passed"])), (-1, 1)),
    "cost_usd": (lambda r: r["cost_usd"], None),
    "error_rate": (lambda r: float(any(int(r.get(k) or 0) for k in ERROR_KINDS)), (-1, 1)),
}


def _per_scenario(rows: list[dict], metric: str) -> dict:
    read = METRICS[metric][0]
    out: dict = {}
    for r in rows:
        v = read(r)
        if v is not None:
            out.setdefault(r["scenario"], []).append(float(v))
    return {k: sum(v) / len(v) for k, v in out.items()}


def paired_figures(base_rows: list[dict], head_rows: list[dict], level: float = GATE_LEVEL) -> dict:
    """metric -> {base, head (means over the paired scenarios' means), paired_difference's dict}
    of HEAD minus BASE, for the trials that count (missing ones left out)."""
    from .stats import paired_difference

    out = {}
    for metric, (_, bounds) in METRICS.items():
        b, h = _per_scenario(base_rows, metric), _per_scenario(head_rows, metric)
        shared = sorted(set(b) & set(h))
        if not shared:
            out[metric] = None
            continue
        d = paired_difference(h, b, level=level, bounds=bounds)
        out[metric] = {"base": sum(b[k] for k in shared) / len(shared), "head": sum(h[k] for k in shared) / len(shared),
                       **d}
    return out


def _counted(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r.get("missing")]


def compare_runs(base: dict, head: dict, margin: float = DEFAULT_MARGIN, tools: list[str] | None = None,
                 strict: bool = False) -> dict:
    """The whole comparison of two loaded results folders (load_results). Raises Refused."""
    from .stats import REGRESSION, NON_INFERIOR, margin_test

    reasons = refusal_reasons(base["summary"], head["summary"])
    if reasons:
        raise Refused(reasons)
    key = lambda r: (r.get("model_name") or r["model"], r.get("host") or "loop", r["tool"])  # noqa: E731
    groups = {"base": {}, "head": {}}
    for side, res in (("base", base), ("head", head)):
        for r in res["summary"]["trials"]:
            groups[side].setdefault(key(r), []).append(r)
    wanted = set(tools) if tools else None
    if wanted:
        known = {k[2] for g in groups.values() for k in g}
        unknown = sorted(wanted - known)
        if unknown:
            raise ConfigError(f"--tool {unknown[0]}: neither run has that tool; use one of: {', '.join(sorted(known))}")
    repos = sorted(base["summary"]["identity"]["repos"])
    rows = []
    for k in dict.fromkeys(list(groups["base"]) + list(groups["head"])):
        model, host, tool = k
        if wanted and tool not in wanted:
            continue
        b_all, h_all = groups["base"].get(k, []), groups["head"].get(k, [])
        row = {"model": model, "host": host, "tool": tool,
               "n_base": len(_counted(b_all)), "n_head": len(_counted(h_all)),
               "missing_base": len(b_all) - len(_counted(b_all)), "missing_head": len(h_all) - len(_counted(h_all)),
               "tools_list": {repo: tools_list_diff(base["snapshots"].get((tool, repo)),
                                                    head["snapshots"].get((tool, repo))) for repo in repos}}
        if not b_all or not h_all:
            row.update(status="only in HEAD" if not b_all else "only in BASE", figures=None, gate=None)
        else:
            figs = paired_figures(_counted(b_all), _counted(h_all))
            row["figures"] = figs
            gate = margin_test(figs["fairness"] or {}, margin)
            row["gate"] = gate
            failed = gate["verdict"] == REGRESSION or (strict and gate["verdict"] != NON_INFERIOR)
            row["status"] = "fail" if failed else "pass"
        rows.append(row)
    bi, hi = base["summary"]["identity"], head["summary"]["identity"]
    return {"test": TEST_NAME, "margin": margin, "level": GATE_LEVEL, "strict": strict, "harness_version": __version__,
            "base": {"folder": base["folder"], "harness_versions": bi.get("harness_versions"), "started": bi.get("started")},
            "head": {"folder": head["folder"], "harness_versions": hi.get("harness_versions"), "started": hi.get("started")},
            "scenarios": sorted(bi["scenarios"]), "repos": {r: bi["repos"][r]["commit"] for r in repos},
            "rows": rows, "failed": [r for r in rows if r["status"] == "fail"]}


# --- writing it ------------------------------------------------------------------------------


def _f(v, signed=False, usd=False) -> str:
    if v is None:
        return "–"
    if usd:
        return f"{v:+.4f}" if signed else f"{v:.4f}"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _interval(d: dict | None, usd=False) -> str:
    if not d:
        return "–"
    text = f"{_f(d['base'], usd=usd)} → {_f(d['head'], usd=usd)}, Δ {_f(d['mean_diff'], True, usd)}"
    if d["lo"] is not None:
        text += f" [{_f(d['lo'], True, usd)}, {_f(d['hi'], True, usd)}]"
    return text


def _label(r: dict) -> str:
    return f"{r['tool']} ({r['model']}@{r['host']})"


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS - 1] + "…"


def diff_lines(row: dict) -> list[str]:
    """The tools/list diff of one row, as plain lines (repo-prefixed when the run has several repos)."""
    out = []
    many = len(row["tools_list"]) > 1
    for repo, d in row["tools_list"].items():
        pre = f"{repo}: " if many else ""
        for side, err in zip(("BASE", "HEAD"), d["error"]):
            if err:
                out.append(f"{pre}{side}: the server did not start: {_cut(err)}")
        if d["server_version"][0] != d["server_version"][1]:
            out.append(f"{pre}server version {d['server_version'][0]} → {d['server_version'][1]}")
        if d["added"]:
            out.append(f"{pre}added: {', '.join(d['added'])}")
        if d["removed"]:
            out.append(f"{pre}removed: {', '.join(d['removed'])}")
        for c in d["descriptions"]:
            out.append(f"{pre}description of {c['tool']}: \"{_cut(c['base'])}\" → \"{_cut(c['head'])}\"")
        for c in d["schemas"]:
            out.append(f"{pre}input schema of {c['tool']}: {c['change']}")
        if not out and not all(d["snapshot"]):
            out.append(f"{pre}no snapshot on {'BASE' if not d['snapshot'][0] else 'HEAD'}")
    return out or ["tools/list unchanged"]


def _hashes(r: dict, changed: bool) -> str:
    """'unchanged 5bf3ef2602cd' or 'changed 5bf3ef2602cd → 0d1e...': the tools_sha256 of each side
    (the hash every run_meta.json records), per repo when they differ between repos."""
    pairs = list(dict.fromkeys(tuple((h or "none")[:12] for h in d["tools_sha256"]) for d in r["tools_list"].values()))
    shown = "; ".join(b if b == h else f"{b} → {h}" for b, h in pairs)
    return f"{'changed' if changed else 'unchanged'} {shown}".strip()


def _row_line(r: dict) -> str:
    if r["figures"] is None:
        return f"{_label(r)}: {r['status']}, not compared"
    g, f = r["gate"], r["figures"]
    return (f"{_label(r)}: {r['status'].upper()} ({g['verdict']}); fairness {_interval(f['fairness'])}; "
            f"pass rate {_interval(f['pass_rate'])}; cost {_interval(f['cost_usd'], usd=True)}; "
            f"errors {_interval(f['error_rate'])}; trials {r['n_base']} → {r['n_head']}"
            + (f" (missing {r['missing_base']} → {r['missing_head']})" if r["missing_base"] or r["missing_head"] else ""))


def text_report(result: dict) -> str:
    lines = [f"test: {result['test']}; margin {result['margin']:g}" + ("; strict: inconclusive fails too"
                                                                          if result["strict"] else "")]
    for r in result["rows"]:
        lines.append(_row_line(r))
        lines += [f"  tools/list: {x}" for x in diff_lines(r)]
    n = len(result["failed"])
    lines.append(f"result: {n} regression(s): " + ", ".join(_label(r) for r in result["failed"]) if n
                 else "result: no regression")
    return "\n".join(lines) + "\n"


def markdown(result: dict) -> str:
    """A pull-request comment: verdict line, one table row per tool, the tools/list diffs folded."""
    n = len(result["failed"])
    head = (f"### mcptrials: {'❌ ' + str(n) + ' regression(s)' if n else '✅ no regression'}\n\n"
            f"Test: {result['test']}; margin **{result['margin']:g}**"
            + (" (strict: inconclusive fails too)" if result["strict"] else "") + ". "
            f"Scenarios: {len(result['scenarios'])}; repos: "
            + ", ".join(f"{k}@{v[:12]}" for k, v in result["repos"].items())
            + f". mcptrials {result['harness_version']}.\n\n")
    t = ["| tool | model@host | gate | Δ fairness [90% CI] | Δ pass rate | Δ cost / trial (USD) | Δ error rate | trials BASE → HEAD | tools/list |",
         "|---|---|---|---|---|---|---|---|---|"]
    details = []
    for r in result["rows"]:
        dl = diff_lines(r)
        changed = dl != ["tools/list unchanged"]
        if r["figures"] is None:
            t.append(f"| {r['tool']} | {r['model']}@{r['host']} | {r['status']} | – | – | – | – | "
                     f"{r['n_base']} → {r['n_head']} | {_hashes(r, changed)} |")
        else:
            f = r["figures"]
            mark = "❌" if r["status"] == "fail" else "✅"
            t.append(f"| {r['tool']} | {r['model']}@{r['host']} | {mark} {r['gate']['verdict']} | "
                     f"{_interval(f['fairness'])} | {_interval(f['pass_rate'])} | {_interval(f['cost_usd'], usd=True)} | "
                     f"{_interval(f['error_rate'])} | {r['n_base']} → {r['n_head']}"
                     + (f" (missing {r['missing_base']} → {r['missing_head']})" if r["missing_base"] or r["missing_head"] else "")
                     + f" | {_hashes(r, changed)} |")
        if changed:
            details.append(f"<details><summary>{_label(r)}: tools/list diff</summary>\n\n"
                           + "\n".join(f"- {html.escape(x, quote=False)}" for x in dl) + "\n\n</details>\n")
    text = head + "\n".join(t) + "\n\n" + "\n".join(details)
    if len(text) > MARKDOWN_LIMIT:
        text = text[:MARKDOWN_LIMIT] + "\n\n… (cut to fit a comment; run `mcptrials compare` for the rest)\n"
    return text


def refusal_markdown(reasons: list[str]) -> str:
    return ("### mcptrials: ⚠️ not compared\n\nThe two runs cannot be compared:\n\n"
            + "\n".join(f"- {r}" for r in reasons) + "\n")


def junit(result: dict | None, reasons: list[str] | None = None) -> str:
    """JUnit XML: one testcase per (tool, model@host), a failure on a regression; a refusal is one
    errored testcase `comparability`. Tools in one run only are skipped testcases."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="mcptrials compare")
    props = ET.SubElement(suite, "properties")   # what produced it
    facts = {"mcptrials": __version__}
    if result:
        facts.update(test=result["test"], margin=f"{result['margin']:g}", base=result["base"]["folder"],
                     head=result["head"]["folder"], scenarios=" ".join(result["scenarios"]),
                     repos=" ".join(f"{k}@{v}" for k, v in result["repos"].items()))
    for name, value in facts.items():
        ET.SubElement(props, "property", name=name, value=str(value))
    cases = failures = errors = skipped = 0
    if reasons:
        case = ET.SubElement(suite, "testcase", classname="mcptrials.compare", name="comparability")
        ET.SubElement(case, "error", message="the runs cannot be compared").text = "\n".join(reasons)
        cases, errors = 1, 1
    for r in (result or {}).get("rows", []):
        cases += 1
        case = ET.SubElement(suite, "testcase", classname=f"mcptrials.compare.{r['model']}@{r['host']}", name=r["tool"])
        body = _row_line(r) + "\n" + "\n".join(f"tools/list: {x}" for x in diff_lines(r))
        if r["figures"] is None:
            skipped += 1
            ET.SubElement(case, "skipped", message=r["status"])
        elif r["status"] == "fail":
            failures += 1
            g = r["gate"]
            ET.SubElement(case, "failure", message=f"{g['verdict']}: 90% interval of Δ fairness "
                          f"[{_f(g['lo'], True)}, {_f(g['hi'], True)}] against -margin {-g['margin']:g}").text = body
        ET.SubElement(case, "system-out").text = body + "\n" + (result or {}).get("test", "")
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- the command -----------------------------------------------------------------------------


def cmd_compare(args) -> int:
    if args.margin < 0:
        raise ConfigError(f"--margin {args.margin:g}: the margin must be >= 0 (fairness points, e.g. 0.05)")
    base, head = load_results(args.base), load_results(args.head)
    try:
        result = compare_runs(base, head, args.margin, args.tool, args.strict)
    except Refused as e:
        print("mcptrials compare: refused: the two runs cannot be compared:", file=sys.stderr)
        for r in e.reasons:
            print(f"  - {r}", file=sys.stderr)
        if args.markdown:
            Path(args.markdown).write_text(refusal_markdown(e.reasons))
        if args.junit:
            Path(args.junit).write_text(junit(None, e.reasons))
        return 2
    print(text_report(result), end="")
    if args.markdown:
        Path(args.markdown).write_text(markdown(result))
    if args.junit:
        Path(args.junit).write_text(junit(result))
    return 1 if result["failed"] else 0


def register(sub) -> None:
    p = sub.add_parser("compare", help="compare two results folders (BASE, HEAD) paired by model, host, tool and "
                                       "scenario; exit 1 on a regression beyond the margin, 2 when not comparable")
    p.add_argument("base", metavar="BASE_RESULTS", help="the reference results/ folder (e.g. main's stored results)")
    p.add_argument("head", metavar="HEAD_RESULTS", help="the results/ folder under test (e.g. the pull request's)")
    p.add_argument("--tool", action="append", help="compare only this tool (repeatable; default: every tool)")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN,
                   help=f"non-inferiority margin in fairness points, 0-1 (default {DEFAULT_MARGIN})")
    p.add_argument("--strict", action="store_true",
                   help="also fail a tool whose non-inferiority is not shown (inconclusive)")
    p.add_argument("--junit", help="write a JUnit XML report here (one testcase per tool)")
    p.add_argument("--markdown", help="write a pull-request comment (Markdown) here")
    p.set_defaults(func=cmd_compare)
