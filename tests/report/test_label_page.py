"""`mcptrials label` in real Chromium on labels_fixture's finished project: the page shows the
drawn sample, a click on a verdict writes the labels file (pinned), and a rerun of the aggregate
and the report alone puts the calibration table and its warning in the report."""

import json
import os
import re
import subprocess
import sys

import pytest

import labels_fixture as lf
import runs_fixture as fx
from browser import Browser
from matrix_helpers import ROOT
from mcptrials.analyze.lock import verify_lock

WAIT = """new Promise(function (done) { (function poll() {
  if (document.body && document.body.getAttribute("%s") === "%s") done(true); else setTimeout(poll, 50); })(); })"""


@pytest.fixture
def served(tmp_path):
    p = lf.build(tmp_path)
    cmd = [sys.executable, "-m", "mcptrials.cli", "label", "--config", str(p["config"]), "--runs", str(p["runs"])]
    cmd += ["--checkouts", str(p["checkouts"]), "--per-tool", "2", "--seed", "5", "--port", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line + proc.stderr.read()
        yield p | {"url": url.group(0), "tmp": tmp_path}
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def report(p) -> str:
    _, out = fx.aggregate_and_report(p["tmp"], p["config"], p["runs"])
    return (out / "report.md").read_text()


def test_label_in_chromium_then_the_report(served, tmp_path):
    before = report(served)
    assert "no citation labels: run `mcptrials label`" in before
    browser = Browser(tmp_path / "profile")
    try:
        browser.open(served["url"])
        assert browser.js(WAIT % ("data-ready", "1"))
        # the sample: 2 per (model, tool), each with its sentence and the cited lines at the commit
        cards = browser.js("""Array.from(document.querySelectorAll(".card")).map(function (c) {
            return {who: c.querySelector(".who").textContent, mark: c.querySelector("mark").textContent,
                    hit: Array.from(c.querySelectorAll("pre .hit")).map(function (h) { return h.textContent; })}; })""")
        assert len(cards) == 4 and sum("/ baseline /" in c["who"] for c in cards) == 2
        assert all(c["mark"] == "src/util.py:1" for c in cards)
        assert all(c["hit"] in (["    1  def helper(x):"], ["    3      return x * 2"]) for c in cards), cards
        # the answer's sentence, up to its full stop (the answer's markup after it is not part of it)
        assert browser.js("document.querySelector('.sentence').textContent") == "The helper is in src/util.py:1."
        # one click on "wrong line" in the first card: saved, and the card says so
        browser.js("""document.querySelector('#item-0 button[data-verdict="wrong line"]').click()""")
        assert browser.js(WAIT % ("data-saved", "1"))
        assert browser.js("document.getElementById('item-0').getAttribute('data-verdict')") == "wrong line"
        assert browser.js("document.getElementById('progress').textContent") == "1 of 4 labelled"
        who = browser.js("document.querySelector('#item-0 .who').textContent")
    finally:
        browser.close()
    labels = json.loads((served["locked"] / "citation_labels.json").read_text())["labels"]
    assert len(labels) == 1 and labels[0]["verdict"] == "wrong line" and labels[0]["seed"] == 5
    lab = labels[0]
    assert (
        lab["span"] == lf.SPAN and lab["file"] == "src/util.py" and lab["grader_strict"] in ("verified", "undetermined")
    )
    assert f"/ {lab['trial']['tool']} / {lab['trial']['scenario']} / trial {lab['trial']['trial']}" in who
    assert verify_lock(served["locked"]) == []  # pinned by `mcptrials label`
    after = report(served)
    table = re.search(r"\| tool \| citations \| labelled .*?\n\n", after, re.S).group(0)
    row = next(r for r in table.splitlines() if r.startswith(f"| {lab['trial']['tool']} |"))
    # grader verified + reader wrong line: agreement 0; undetermined + wrong line: agreement 1
    agreement = "0.000" if lab["grader_strict"] == "verified" else "1.000"
    n = 12 if lab["trial"]["tool"] == "baseline" else 10  # labels_fixture: git's crashed trial cites nothing
    assert row.startswith(f"| {lab['trial']['tool']} | {n} | 1 | 0 | {agreement} [")
    if agreement == "0.000":
        assert "WARNING: reference / " in after and "below 0.9" in after
