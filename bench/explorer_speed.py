"""The trial explorer at scale: build explorer.html for N synthetic trials and time it in
headless Chromium.

    python bench/explorer_speed.py [--trials 10000] [--runs 3]

Makes N trial rows as summary.json holds them (5 tools x 2 models x 50 scenarios x N/500
trials; 2% missing, patterns on the server tools' rows) and a transcript.json per trial whose
answer is 1,000 to 2,000 characters of words (plus ~6 KB of messages, so reading them costs
what a small real transcript costs). Then:
  build       mcptrials.report.explorer.write_explorer: reading the N transcripts, writing the page
  page size   of explorer.html, and its embedded data
and, per run of headless Chromium (a new browser each; medians printed), from a probe script
appended to the page that records performance.now() values into the DOM, read by --dump-dom:
  first render   navigation start to the first rows in the DOM and laid out (HTML parse,
                 JSON.parse of the data, the first 200 rows)
  filter         select tool = one of five, until the table is laid out again
  search 1st     a word in ~1% of the answers (the first search also lowercases every answer)
  search again   another word, in ~10% of the answers
  sort           click the fairness header
No --virtual-time-budget: it would make performance.now() virtual.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
from mcptrials.report.explorer import write_explorer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
TOOLS = ("baseline", "git", "filesystem", "search", "code-intel")
MODELS = ("reference", "sonnet")
RARE, COMMON = "quasarfix", "refactor"  # in ~1% and ~10% of the answers
WORDS = (
    "the function",
    "is defined in",
    "src/app/models.py:42",
    "calls",
    "returns",
    "a list of",
    "orders",
    "because",
    "the test",
    "covers",
    "and the",
    "handler",
    "raises",
    "ValueError",
    "when",
    "empty",
    "config",
    "module",
    "imports",
    "line",
    "see",
    "also",
    "class",
    "Cart",
    "total",
    "discount",
)

PROBE = r"""<script>
(function () {
  var rows = document.getElementById("rows");
  function laidOut() { return rows.offsetHeight + document.body.offsetHeight; }   // forces layout
  laidOut();
  var t = {first_render: performance.now(), rows_first: rows.children.length};
  function time(name, act) { var t0 = performance.now(); act(); laidOut(); t[name] = performance.now() - t0; }
  var tool = document.getElementById("filter-tool"), search = document.getElementById("search");
  time("filter", function () { tool.value = "git"; tool.dispatchEvent(new Event("change")); });
  t.filter_count = document.getElementById("count").textContent;
  tool.value = ""; tool.dispatchEvent(new Event("change"));
  time("search_first", function () { search.value = "RARE"; search.dispatchEvent(new Event("input")); });
  t.search_count = document.getElementById("count").textContent;
  time("search_again", function () { search.value = "COMMON"; search.dispatchEvent(new Event("input")); });
  t.search_again_count = document.getElementById("count").textContent;
  search.value = ""; search.dispatchEvent(new Event("input"));
  time("sort", function () { document.querySelector('th[data-key="fairness"]').click(); });
  var pre = document.createElement("pre"); pre.id = "bench"; pre.textContent = JSON.stringify(t);
  document.body.appendChild(pre);
})();
</script>""".replace("RARE", RARE).replace("COMMON", COMMON)


def answer(rng: random.Random, i: int) -> str:
    size = rng.randint(1000, 2000)
    parts, n = [], 0
    if i % 100 == 7:
        parts.append(RARE)
    if i % 10 == 3:
        parts.append(COMMON)
    while n < size:
        w = rng.choice(WORDS)
        parts.append(w)
        n += len(w) + 1
    return " ".join(parts)[:size]


def synthetic(runs: Path, n: int) -> dict:
    """summary.json's `trials` and `identity` for n trials, and their transcripts under runs."""
    rng = random.Random(18)
    per_cell = max(1, n // (len(TOOLS) * len(MODELS) * 50))
    rows, i = [], 0
    filler = [{"role": "user", "content": "x" * 3000}, {"role": "assistant", "content": "y" * 3000}]
    for model in MODELS:
        for tool in TOOLS:
            for s in range(50):
                for trial in range(1, per_cell + 1):
                    scenario = f"scenario-{s:02d}"
                    missing = rng.random() < 0.02
                    passed = not missing and rng.random() < 0.55
                    score = None if missing else round(rng.random(), 4)
                    row = {
                        "model": model,
                        "model_name": model,
                        "host": "loop",
                        "tool": tool,
                        "repo": "demo",
                        "scenario": scenario,
                        "trial": trial,
                        "outcome": "api_failed" if missing else rng.choice(["completed"] * 9 + ["max_turns"]),
                        "passed": passed,
                        "missing": missing,
                        "missing_reason": "api_failed" if missing else None,
                        "fairness": score,
                        "quality": score,
                        "keyword_coverage": score,
                        "citation_grounding": score,
                        "exact_passed": int(passed),
                        "exact_steps": 1,
                        "state_passed": 0,
                        "state_steps": 0,
                        "cost_usd": None if model == "reference" else round(rng.random() / 10, 5),
                        "wall_seconds": round(rng.uniform(5, 120), 2),
                        "page": f"trials/{model}/{tool}/{scenario}/{trial}.html",
                    }
                    if tool != "baseline":
                        row["patterns"] = {"repeated_call": rng.randint(0, 3), "empty_results": rng.randint(0, 2)}
                    d = runs / model / "loop" / tool / "demo" / scenario / str(trial)
                    d.mkdir(parents=True, exist_ok=True)
                    (d / "transcript.json").write_text(
                        json.dumps({"steps": [{"index": 0, "answer_text": answer(rng, i)}], "messages": filler})
                    )
                    rows.append(row)
                    i += 1
    ident = {
        "harness_versions": ["bench"],
        "scenario_set_sha256": "0" * 64,
        "models": {m: {"label": m} for m in MODELS},
    }
    return {"schema": "mcptrials/summary/1", "identity": ident, "trials": rows}


def chromium(page: Path, profile: Path) -> dict:
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--window-size=1400,900",
        "--dump-dom",
        page.as_uri(),
    ]
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    wall = time.monotonic() - t0
    m = re.search(r'<pre id="bench">(.*?)</pre>', res.stdout, re.S)
    if res.returncode != 0 or not m:
        sys.exit(f"chromium failed ({res.returncode}): {res.stderr[-2000:]}")
    out = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    out["process_wall"] = wall
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3, help="browser runs (medians are printed)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcptrials-explorer-") as d:
        tmp = Path(d)
        t0 = time.monotonic()
        summary = synthetic(tmp / "runs", args.trials)
        made = time.monotonic() - t0
        t0 = time.monotonic()
        page = write_explorer(summary, tmp / "runs", tmp / "report")
        build = time.monotonic() - t0
        text = page.read_text()
        data = text.split('id="explorer-data">', 1)[1].split("</script>", 1)[0]
        probe = page.with_name("probe.html")
        probe.write_text(text.replace("</body>", PROBE + "</body>"))
        runs = [chromium(probe, tmp / f"profile{i}") for i in range(args.runs)]

    med = {
        k: statistics.median(r[k] for r in runs)
        for k in ("first_render", "filter", "search_first", "search_again", "sort", "process_wall")
    }
    r0 = runs[0]
    print(f"{len(summary['trials']):,} trials (synthetic rows and transcripts made in {made:.1f} s)")
    print(f"build (read {len(summary['trials']):,} transcripts, write the page): {build:.2f} s")
    print(
        f"page size: {page_mb(len(text.encode())):.1f} MB, of which embedded data {page_mb(len(data.encode())):.1f} MB"
    )
    print(f"rows in the DOM after the first render: {r0['rows_first']}")
    print(
        f"headless Chromium, median of {len(runs)} runs (each: "
        + ", ".join(f"{r['first_render']:.0f}" for r in runs)
        + " ms first render):"
    )
    print("| measure | ms |\n|---|---|")
    print(f"| first render (navigation start to rows laid out) | {med['first_render']:.0f} |")
    print(f"| filter tool = git ({r0['filter_count']}) | {med['filter']:.0f} |")
    print(f"| first search, '{RARE}' ({r0['search_count']}) | {med['search_first']:.0f} |")
    print(f"| search again, '{COMMON}' ({r0['search_again_count']}) | {med['search_again']:.0f} |")
    print(f"| sort by fairness | {med['sort']:.0f} |")
    print(f"| whole chromium process (start to DOM dump) | {med['process_wall'] * 1000:.0f} |")


def page_mb(n: int) -> float:
    return n / 1e6


if __name__ == "__main__":
    main()
