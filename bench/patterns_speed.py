"""The pattern detectors at scale: what mcptrials.analyze.patterns adds to the aggregate and the report.

    python bench/patterns_speed.py [--trials 10000] [--calls 20] [--runs 3]

Makes N synthetic transcripts shaped like the demo's (3 steps, --calls tool calls each: a
mix of built-in and server calls with 200 to 6,000-character code-like results, some repeated,
some empty, one large every 50 trials; answers citing some of the results) and a tools
snapshot of 14 server tools (the filesystem server's count). Then, medians of --runs:
  detect        patterns.detect over every transcript (what aggregate() adds per trial)
  summary       feedback.pattern_summary over the trial frame (counts per model and tool, pages)
  report        report.add_patterns and add_feedback into a Doc (the index's two sections)
and the sizes: summary.json `patterns` (with every trial's findings), and the HTML of the two
report sections.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from mcptrials.analyze.feedback import pattern_summary  # noqa: E402
from mcptrials.analyze.trial_rows import trial_frame  # noqa: E402
from mcptrials.report import patterns as report  # noqa: E402
from mcptrials.report.render import Doc  # noqa: E402
from mcptrials.analyze.patterns import counts, detect  # noqa: E402

TOOLS = {
    "tools": [
        {"name": n}
        for n in (
            "read_file",
            "read_text_file",
            "read_media_file",
            "read_multiple_files",
            "write_file",
            "edit_file",
            "create_directory",
            "list_directory",
            "list_directory_with_sizes",
            "directory_tree",
            "move_file",
            "search_files",
            "get_file_info",
            "list_allowed_directories",
        )
    ]
}
WORDS = (
    "round_money",
    "subtotal",
    "discount",
    "pricing",
    "Decimal",
    "quantize",
    "checkout",
    "cart",
    "lines",
    "tax",
    "shipping",
    "catalog",
    "orders",
    "models",
    "services",
    "utils",
    "alert",
    "threshold",
)


def code_text(rng: random.Random, chars: int) -> str:
    out, n = [], 0
    while n < chars:
        line = f"acme_shop/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py:{rng.randint(1, 400)}: " + " ".join(
            rng.choice(WORDS) for _ in range(8)
        )
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)


def make_transcript(rng: random.Random, i: int, n_calls: int) -> dict:
    calls = []
    for k in range(n_calls):
        step, turn = k * 3 // n_calls, k % 5 + 1
        if k and rng.random() < 0.15:  # a repeat of an earlier call
            calls.append(dict(rng.choice(calls), step=step, turn=turn, id=f"c{k}"))
            continue
        mcp = rng.random() < 0.6
        name = rng.choice(("search_files", "read_text_file")) if mcp else rng.choice(("grep", "read_file"))
        empty = rng.random() < 0.1
        size = 30_000 if i % 50 == 0 and k == 0 else rng.randint(200, 6000)
        text = "No matches found" if empty else code_text(rng, size)
        calls.append(
            {
                "id": f"c{k}",
                "step": step,
                "turn": turn,
                "name": f"mcp__filesystem__{name}" if mcp else name,
                "tool": name,
                "source": "mcp" if mcp else "builtin",
                "arguments": {"pattern": rng.choice(WORDS), "k": k},
                "result_text": text,
                "result_chars": len(text),
                "truncated": False,
                "is_error": rng.random() < 0.03,
                "error_kind": None,
                "latency_ms": 5.0,
                "result_tokens_est": len(text) // 4,
            }
        )
    steps = []
    for s in range(3):
        cited = [c["result_text"].split("\n", 1)[0][:60] for c in calls if c["step"] == s][:3]
        steps.append(
            {
                "index": s,
                "name": f"s{s}",
                "prompt": f"Where is `{WORDS[s]}` used?",
                "answer_text": "Here is what I found:\n" + "\n".join(f"- {x}" for x in cited),
                "audit_text": "",
                "outcome": "completed",
                "turns": 5,
            }
        )
    return {
        "outcome": "completed",
        "steps": steps,
        "tool_calls": calls,
        "feedback_text": f"Feedback on the tools: `mcp__filesystem__search_files` helped ({i % 7} of 7 call(s)).",
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rng = random.Random(18)
    ts = [make_transcript(rng, i, a.calls) for i in range(a.trials)]
    rows = [
        {
            "model": f"m{i % 2}",
            "tool": ("filesystem", "git", "code-index", "baseline", "other")[i % 5],
            "scenario": f"sc{i % 50}",
            "trial": i // 100 + 1,
            "repo": "demo",
            "outcome": "completed",
            "page": f"trials/m{i % 2}/t{i % 5}/sc{i % 50}/{i}.html",
        }
        for i in range(a.trials)
    ]
    times = {"detect": [], "summary": [], "report": []}
    for _ in range(a.runs):
        t0 = time.perf_counter()
        found = [detect(t, None, TOOLS) for t in ts]
        times["detect"].append(time.perf_counter() - t0)
        for r, f in zip(rows, found):
            r["patterns"] = counts(f)
        t0 = time.perf_counter()
        summary = {
            "trials": rows,
            "patterns": pattern_summary(trial_frame(rows), found),
            "feedback": {
                "filesystem": [
                    {
                        "model": r["model"],
                        "scenario": r["scenario"],
                        "trial": r["trial"],
                        "outcome": "completed",
                        "page": r["page"],
                        "text": t["feedback_text"],
                        "names": ["search_files"],
                    }
                    for r, t in zip(rows, ts)
                ]
            },
        }
        times["summary"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        doc = Doc()
        report.add_patterns(doc, summary)
        report.add_feedback(doc, summary)
        times["report"].append(time.perf_counter() - t0)
    n_found = sum(len(f) for f in found)
    size = len(json.dumps(summary["patterns"]))
    html = len("\n".join(doc.html))
    print(
        f"{a.trials:,} trials x {a.calls} calls; {n_found:,} findings "
        f"({', '.join(f'{k} {v}' for k, v in counts([x for f in found for x in f]).items())})"
    )
    for k, v in times.items():
        med = statistics.median(v)
        print(
            f"{k:8s} median {med:.2f} s ({med / a.trials * 1e6:.0f} us per trial), runs {', '.join(f'{x:.2f}' for x in v)}"
        )
    print(
        f"summary.json patterns: {size / 1e6:.1f} MB ({size / a.trials:.0f} bytes per trial); "
        f"report sections: {html / 1e6:.2f} MB of HTML"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
