"""How a comparison reads (`mcptrials compare`): the console text, the pull-request comment
(Markdown, the tools/list diffs folded) and the JUnit XML (one testcase per tool)."""

from __future__ import annotations

import html

from mcptrials import __version__
from mcptrials.gate.tools_diff import cut
from mcptrials.core.keys import FAIRNESS

MARKDOWN_LIMIT = 60000  # GitHub refuses comments over 65,536 characters


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


def diff_lines(row: dict) -> list[str]:
    """The tools/list diff of one row, as plain lines (repo-prefixed when the run has several repos)."""
    out = []
    many = len(row["tools_list"]) > 1
    for repo, d in row["tools_list"].items():
        pre = f"{repo}: " if many else ""
        for side, err in zip(("BASE", "HEAD"), d["error"]):
            if err:
                out.append(f"{pre}{side}: the server did not start: {cut(err)}")
        if d["server_version"][0] != d["server_version"][1]:
            out.append(f"{pre}server version {d['server_version'][0]} → {d['server_version'][1]}")
        if d["added"]:
            out.append(f"{pre}added: {', '.join(d['added'])}")
        if d["removed"]:
            out.append(f"{pre}removed: {', '.join(d['removed'])}")
        for c in d["descriptions"]:
            out.append(f'{pre}description of {c["tool"]}: "{cut(c["base"])}" → "{cut(c["head"])}"')
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


def _verdict(r: dict) -> str:
    """'regression', 'inconclusive: about 9 scenarios ... would make it conclusive', ..."""
    g = r["gate"]
    extra = f"; {g['to_decide']['note']}" if g.get("to_decide") else ""
    return g["verdict"] + extra


def _row_line(r: dict) -> str:
    f = r["figures"]
    return (
        f"{_label(r)}: {r['status'].upper()} ({_verdict(r)}); fairness {_interval(f[FAIRNESS])}; "
        f"pass rate {_interval(f['pass_rate'])}; cost {_interval(f['cost_usd'], usd=True)}; "
        f"errors {_interval(f['error_rate'])}; trials {r['n_base']} → {r['n_head']}"
        + (f" (missing {r['missing_base']} → {r['missing_head']})" if r["missing_base"] or r["missing_head"] else "")
    )


def _mode(result: dict) -> str:
    return ("; strict: inconclusive fails too" if result["strict"] else "") + (
        "; lenient: a probable regression passes" if result["lenient"] else ""
    )


def _margin_from(result: dict) -> str:
    return f" (from {result['margin_from']})" if result.get("margin_from") else ""


def text_report(result: dict) -> str:
    lines = [
        f"test: {result['test']}; margin {result['margin']:g}{_margin_from(result)}; error rise {result['error_rise']:g}"
        + _mode(result),
        f"rule: {result['rule']}",
    ]
    if not result.get("config_checked"):
        lines.append("note: HEAD's results were not checked against its config (--no-config-check)")
    for r in result["rows"]:
        lines += [f"{_label(r)}: FINDING {x['kind']}: {x['message']}" for x in r["findings"]]
        lines.append(_row_line(r))
        lines += [f"  tools/list: {x}" for x in diff_lines(r)]
    n = len(result["failed"])
    lines.append(
        f"result: {n} regression(s): " + ", ".join(_label(r) for r in result["failed"])
        if n
        else "result: no regression"
    )
    return "\n".join(lines) + "\n"


def markdown(result: dict) -> str:
    """A pull-request comment: verdict line, the findings, one table row per tool, the tools/list diffs folded."""
    n = len(result["failed"])
    head = f"### mcptrials: {'❌ ' + str(n) + ' regression(s)' if n else '✅ no regression'}\n\n"
    found = [
        f"- ❌ **{html.escape(_label(r), quote=False)}**: {x['kind']}: {html.escape(x['message'], quote=False)}"
        for r in result["rows"]
        for x in r["findings"]
    ]
    if found:
        head += "Deterministic failures (regressions whatever the interval):\n\n" + "\n".join(found) + "\n\n"
    head += (
        f"Test: {result['test']}; margin **{result['margin']:g}**{_margin_from(result)}" + _mode(result) + ". "
        f"Rule: {result['rule']}. "
        f"Scenarios: {len(result['scenarios'])}; repos: "
        + ", ".join(f"{k}@{v[:12]}" for k, v in result["repos"].items())
        + f". mcptrials {result['harness_version']}.\n\n"
    )
    t = [
        "| tool | model@host | gate | Δ fairness [90% CI] | Δ pass rate | Δ cost / trial (USD) | Δ error rate | trials BASE → HEAD | tools/list |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    details = []
    for r in result["rows"]:
        dl = diff_lines(r)
        changed = dl != ["tools/list unchanged"]
        f = r["figures"]
        mark = "❌" if r["status"] == "fail" else "✅"
        t.append(
            f"| {r['tool']} | {r['model']}@{r['host']} | {mark} {html.escape(_verdict(r), quote=False)} | "
            f"{_interval(f[FAIRNESS])} | {_interval(f['pass_rate'])} | {_interval(f['cost_usd'], usd=True)} | "
            f"{_interval(f['error_rate'])} | {r['n_base']} → {r['n_head']}"
            + (
                f" (missing {r['missing_base']} → {r['missing_head']})"
                if r["missing_base"] or r["missing_head"]
                else ""
            )
            + f" | {_hashes(r, changed)} |"
        )
        if changed:
            details.append(
                f"<details><summary>{_label(r)}: tools/list diff</summary>\n\n"
                + "\n".join(f"- {html.escape(x, quote=False)}" for x in dl)
                + "\n\n</details>\n"
            )
    text = head + "\n".join(t) + "\n\n" + "\n".join(details)
    if len(text) > MARKDOWN_LIMIT:
        text = text[:MARKDOWN_LIMIT] + "\n\n… (cut to fit a comment; run `mcptrials compare` for the rest)\n"
    return text


def refusal_markdown(reasons: list[str]) -> str:
    return (
        "### mcptrials: ⚠️ not compared\n\nThe two runs cannot be compared:\n\n"
        + "\n".join(f"- {r}" for r in reasons)
        + "\n"
    )


def junit(result: dict | None, reasons: list[str] | None = None) -> str:
    """JUnit XML: one testcase per (tool, model@host), a failure on a regression; a refusal is one
    errored testcase `comparability`; a finding fails its tool's testcase, named first."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="mcptrials compare")
    props = ET.SubElement(suite, "properties")  # what produced it
    facts = {"mcptrials": __version__}
    if result:
        facts.update(
            test=result["test"],
            margin=f"{result['margin']:g}",
            base=result["base"]["folder"],
            head=result["head"]["folder"],
            scenarios=" ".join(result["scenarios"]),
            repos=" ".join(f"{k}@{v}" for k, v in result["repos"].items()),
        )
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
        body = "\n".join(
            [f"FINDING {x['kind']}: {x['message']}" for x in r["findings"]]
            + [_row_line(r)]
            + [f"tools/list: {x}" for x in diff_lines(r)]
        )
        if r["status"] == "fail":
            failures += 1
            g = r["gate"]
            if r["findings"]:
                message = f"{r['findings'][0]['kind']}: {r['findings'][0]['message']}"
            else:
                message = (
                    f"{g['verdict']}: 90% interval of Δ fairness [{_f(g['lo'], True)}, {_f(g['hi'], True)}], "
                    f"Δ {_f((r['figures'][FAIRNESS] or {}).get('mean_diff'), True)}, against -margin {-g['margin']:g}"
                )
            ET.SubElement(case, "failure", message=message).text = body
        ET.SubElement(case, "system-out").text = body + "\n" + (result or {}).get("test", "")
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
