"""What `mcptrials replay` prints: the text report, the Markdown comment for a pull request
and the JUnit file, from the result of mcptrials.gate.replay.summarise (the replay itself is
that module's)."""

from __future__ import annotations

import html
import json
import re

from mcptrials import __version__
from mcptrials.gate.replay import CLASSES, MARKDOWN_LIMIT


def _args(a) -> str:
    text = json.dumps(a, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 160 else text[:159] + "…"


def _counts(v: dict) -> str:
    return ", ".join(f"{k} {n}" for k, n in v["counts"].items() if n) or "no calls"


def _slower_than(result: dict) -> str:
    t = result["slower_than_base"]
    return f"a call that took over {t['ratio']:g} times as long as in BASE and over {t['ms']:g} ms more"


def _trials(f: dict) -> str:
    t = f["trials"]
    return "" if not t else f" ({t[0]}{' and %d more' % (len(t) - 1) if len(t) > 1 else ''})"


def text_report(result: dict) -> str:
    lines = [
        f"replay: BASE's recorded tool calls sent to HEAD's servers (no model); fails on: "
        f"{', '.join(result['fails_on'])} of calls that succeeded in BASE; slow: {_slower_than(result)}"
    ]
    for tool, v in result["tools"].items():
        lines.append(
            f"{tool}: {v['status'].upper()}: {v['calls']} call(s) of {v['trials']} trial(s) "
            f"({v['replayed']} distinct sequence(s) replayed): {_counts(v)}"
        )
        if v["did_not_start"]:
            lines.append(f"  HEAD's server did not start: {v['did_not_start'][:300]}")
        for d in v["differences"]:
            lines.append(
                f"  {d['class']}: {d['tool']} {_args(d['arguments'])} (step {d['step']}, "
                f"{d['trials'][0]}{' and %d more' % (len(d['trials']) - 1) if len(d['trials']) > 1 else ''})"
                + (f": {d['detail'][:200]}" if d["detail"] else "")
            )
            if d["diff"]:
                lines += [f"    {x}" for x in d["diff"].splitlines()]
        for s in v["slower"]:
            lines.append(
                f"  slow: {s['tool']} {_args(s['arguments'])}: {s['base_latency_ms']} ms in BASE, "
                f"{s['head_latency_ms']} ms in HEAD"
            )
        lines += [f"  surface: {f['kind']}: {f['detail'][:200]}{_trials(f)}" for f in v.get("surface") or []]
    lines.append(
        f"result: {len(result['failed'])} tool(s) fail: {', '.join(result['failed'])}"
        if result["failed"]
        else "result: no regression"
    )
    return "\n".join(lines) + "\n"


def _fence(text: str, least: int = 1) -> str:
    """Backticks longer than any run of them in `text` (at least `least`)."""
    return "`" * max(least, 1 + max((len(r) for r in re.findall(r"`+", text)), default=0))


def code_span(text: str) -> str:
    """`text` as a Markdown code span, shown as it is: no HTML escaping (a code span shows
    `&quot;` literally), and a fence longer than any run of backticks in it, padded with a
    space when it holds one (CommonMark strips the padding), so no backtick ends it early."""
    text = text.replace("\n", " ")
    fence = _fence(text)
    pad = " " if "`" in text else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown(result: dict) -> str:
    n = len(result["failed"])
    text = (
        f"### mcptrials replay: {'❌ ' + str(n) + ' tool(s) fail' if n else '✅ no regression'}\n\n"
        "BASE's recorded tool calls sent again to HEAD's servers, no model (fails on: "
        f"{', '.join(result['fails_on'])} of calls that succeeded in BASE). mcptrials {result['harness_version']}.\n\n"
        "| tool | result | calls | " + " | ".join(CLASSES) + " | slowest call (BASE → HEAD ms) |\n"
        "|---|---|---|" + "---|" * len(CLASSES) + "---|\n"
    )
    details = []
    for tool, v in result["tools"].items():
        slow = v["slowest"][0] if v["slowest"] else None
        text += (
            f"| {tool} | {'❌' if v['status'] == 'fail' else '✅'} | {v['calls']} | "
            + " | ".join(str(v["counts"][c]) for c in CLASSES)
            + (
                f" | {html.escape(slow['tool'])} {slow['base_latency_ms']} → {slow['head_latency_ms']} |"
                if slow
                else " | – |"
            )
            + "\n"
        )
        if v["differences"]:
            body = []
            for d in v["differences"][:50]:
                body.append(
                    f"- **{d['class']}** {code_span(d['tool'])} {code_span(_args(d['arguments']))} "
                    f"({html.escape(d['trials'][0])})" + (f": {html.escape(d['detail'][:200])}" if d["detail"] else "")
                )
                if d["diff"]:
                    fence = _fence(d["diff"], 3)
                    body.append(f"\n{fence}diff\n{d['diff']}\n{fence}")
            details.append(
                f"<details><summary>{tool}: {len(v['differences'])} call(s) not identical</summary>\n\n"
                + "\n".join(body)
                + "\n\n</details>\n"
            )
        if v.get("surface"):  # what is wrong with HEAD's surface (gate.surface), never a failure by itself
            details.append(
                f"<details><summary>{tool}: {len(v['surface'])} surface finding(s)</summary>\n\n"
                + "\n".join(f"- **{f['kind']}**: {html.escape(f['detail'][:200])}{_trials(f)}" for f in v["surface"])
                + "\n\n</details>\n"
            )
    text += "\n" + "\n".join(details)
    return text if len(text) <= MARKDOWN_LIMIT else text[:MARKDOWN_LIMIT] + "\n\n… (cut to fit a comment)\n"


def cannot_markdown(reasons: list[str]) -> str:
    return "### mcptrials replay: ⚠️ not replayed\n\n" + "\n".join(f"- {html.escape(r)}" for r in reasons) + "\n"


def junit(result: dict | None, reasons: list[str] | None = None) -> str:
    """One testcase per tool, failed when it fails; a BASE that cannot be replayed is one errored testcase."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="mcptrials replay")
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="mcptrials", value=__version__)
    cases = failures = errors = 0
    if reasons:
        case = ET.SubElement(suite, "testcase", classname="mcptrials.replay", name="replayable")
        ET.SubElement(case, "error", message="BASE cannot be replayed").text = "\n".join(reasons)
        cases, errors = 1, 1
    for tool, v in (result or {}).get("tools", {}).items():
        cases += 1
        case = ET.SubElement(suite, "testcase", classname="mcptrials.replay", name=tool)
        body = "\n".join(
            f"{d['class']}: {d['tool']} {_args(d['arguments'])} ({d['trials'][0]})"
            + (f"\n{d['diff']}" if d["diff"] else "")
            for d in v["differences"]
        )
        if v["status"] == "fail":
            failures += 1
            ET.SubElement(case, "failure", message=f"{v['failing']} call(s) failing: {_counts(v)}").text = body
        ET.SubElement(case, "system-out").text = f"{_counts(v)}\n{body}"
    for k, n in (("tests", cases), ("failures", failures), ("errors", errors)):
        suite.set(k, str(n))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
