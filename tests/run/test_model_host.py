"""The model x host view: a hand-computed case of comparisons.model_host_view and its report
table, and the whole workflow with two models (anthropic, openai) and two hosts (loop,
claude-code) against the two test API servers, each a separate process."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fakes import messages_api, openai_api
from matrix_helpers import SCENARIO, TOOLS_ENV, faulty_tool, write_matrix
from mcptrials.analyze.comparisons import model_host_view
from mcptrials.analyze.trial_rows import trial_frame
from mcptrials.report.headline import add_model_host
from mcptrials.report.render import Doc


def row(tool, model, host, scenario, fairness, passed=True):
    return {
        "tool": tool,
        "model_name": model,
        "host": host,
        "scenario": scenario,
        "fairness": fairness,
        "passed": passed,
        "cost_usd": 0.01,
        "wall_seconds": 2.0,
    }


def test_model_host_view_by_hand():
    rows = [
        row("t", "A", "loop", "s1", 0.5),
        row("t", "A", "loop", "s1", 0.7, False),
        row("t", "A", "loop", "s2", 0.2),
        row("t", "A", "cc", "s1", 0.8),
        row("t", "A", "cc", "s2", 0.6),
        row("t", "B", "loop", "s1", 0.4),
        row("t", "B", "loop", "s2", 0.1),
    ]
    v = model_host_view(trial_frame(rows), ["loop", "cc"], ["A", "B"])
    cells = {(c["model"], c["host"]): c for c in v["cells"]}
    assert set(cells) == {("A", "loop"), ("A", "cc"), ("B", "loop")}  # B never ran under cc
    assert cells["A", "loop"]["fairness"] == pytest.approx(1.4 / 3)
    assert cells["A", "loop"]["pass_at_1"] == pytest.approx(2 / 3) and cells["A", "loop"]["n_trials"] == 3
    hosts, models = (
        [p for p in v["pairs"] if p["compare"] == "hosts"],
        [p for p in v["pairs"] if p["compare"] == "models"],
    )
    # A under cc minus A under loop, per-scenario means: s1 0.8 - 0.6, s2 0.6 - 0.2 -> d = (0.2, 0.4)
    # mean 0.3, sd 0.1414, se 0.1, t_{0.975, 1} = 12.706: t*se = 1.27062; on the logit scale of
    # [-1, 1]: u = 0.65, logit u = 0.619039, step 1.27062 / (2 * 0.65 * 0.35) = 2.79257,
    # lo = -1 + 2 * expit(0.619039 - 2.79257) = -1 + 2 * 0.102157 = -0.795686
    (h,) = hosts
    assert (h["fixed"], h["a"], h["b"], h["n"]) == ("A", "cc", "loop", 2)
    assert h["diff"] == pytest.approx(0.3) and h["diff_lo"] == pytest.approx(-0.795686, abs=1e-4)
    # B minus A under loop: d = (0.4 - 0.6, 0.1 - 0.2) = (-0.2, -0.1): mean -0.15, se 0.05, t*se = 0.63531;
    # u = 0.425, logit u = -0.302281, step 0.63531 / (2 * 0.425 * 0.575) = 1.29987,
    # hi = -1 + 2 * expit(-0.302281 + 1.29987) = -1 + 2 * 0.730585 = 0.461170
    (mo,) = models
    assert (mo["fixed"], mo["a"], mo["b"]) == ("loop", "B", "A")
    assert mo["diff"] == pytest.approx(-0.15) and mo["diff_hi"] == pytest.approx(0.461170, abs=1e-4)
    # one host and one model: no view
    assert (
        model_host_view(
            trial_frame([r for r in rows if r["model_name"] == "A" and r["host"] == "loop"]), ["loop"], ["A"]
        )["cells"]
        == []
    )

    doc = Doc()
    add_model_host(doc, {"model_host": v})
    md = "\n".join(doc.md)
    assert "| A | 0.467" in md and "| B | 0.250" in md and "| –" in md.split("| B |")[1].splitlines()[0]
    assert "cc − loop" in md and "+0.300" in md and "B − A" in md and "-0.150" in md


def _spawn_api(module, tmp, name, default_text):
    (tmp / f"{name}.json").write_text("[]")
    return module.spawn(
        tmp / f"{name}.json", tmp / f"{name}.jsonl", tmp / f"{name}.port", "--default-text", default_text
    )


@pytest.mark.slow
def test_two_models_two_hosts_end_to_end(tmp_path):
    from workflow_helpers import copy_workflow

    answer = (
        "`helper` is defined at `src/util.py:1` and returns `x * 2`, doubling its argument; "
        "`main` calls `helper` at `src/app.py:5`."
    )
    anthropic_proc, anthropic_url = _spawn_api(messages_api, tmp_path, "anthropic", answer)
    openai_proc, openai_url = _spawn_api(openai_api, tmp_path, "openai", answer)
    try:
        sc2 = yaml.safe_load(yaml.safe_dump(SCENARIO))
        sc2["title"] = "Who calls the helper"
        sc2["steps"][0]["prompt"] = "Which function calls `helper`? Cite file:line."
        write_matrix(
            tmp_path,
            tools={"baseline": {"transport": "none"}, "echo": faulty_tool("ok")},
            scenarios={"find-helper": SCENARIO, "callers": sc2},
            extra={
                "models": {
                    "claude": {
                        "provider": "anthropic",
                        "model": "claude-sonnet-4-6",
                        "base_url": anthropic_url,
                        "max_retries": 0,
                    },
                    "gpt": {"provider": "openai", "model": "gpt-test", "base_url": openai_url, "max_retries": 0},
                },
                "hosts": {"loop": {"kind": "loop"}, "cc": {"kind": "claude-code"}},
                "pricing": {
                    "claude-sonnet-4-6": {"input": 3.0, "output": 15.0},
                    "gpt-test": {"input": 2.0, "output": 8.0},
                },
            },
        )
        copy_workflow(tmp_path)
        env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "ANTHROPIC_API_KEY": "fake-key-e2e-0123456789",
            "OPENAI_API_KEY": "sk-openai-test-e2e-0123456789",
            **TOOLS_ENV,
        }
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "snakemake",
                "--directory",
                str(tmp_path),
                "--snakefile",
                str(tmp_path / "Snakefile"),
                "--configfile",
                str(tmp_path / "config.yaml"),
                "--scheduler",
                "greedy",
                "-j2",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        logs = "\n".join(f"--- {f}\n{f.read_text()[-800:]}" for f in (tmp_path / "results/logs").rglob("*.log"))
        assert p.returncode == 0, p.stderr[-4000:] + logs[-4000:]
    finally:
        for proc in (anthropic_proc, openai_proc):
            proc.terminate()
            proc.wait(10)
    runs = tmp_path / "results" / "runs"
    pairs = sorted({"/".join(t.relative_to(runs).parts[:2]) for t in runs.rglob("transcript.json")})
    assert pairs == ["claude/cc", "claude/loop", "gpt/loop"]  # claude-code drives anthropic models only
    rows = list(csv.DictReader(open(tmp_path / "results/aggregate/trials.csv")))
    assert len(rows) == 3 * 2 * 2 and {r["outcome"] for r in rows} == {"completed"}
    assert {r["model"] for r in rows} == {"claude@cc", "claude@loop", "gpt@loop"}
    cc = json.loads(next((runs / "claude/cc/echo").rglob("transcript.json")).read_text())
    assert cc["host"] == "cc" and cc["usage"]["host_cost_usd"] > 0
    summary = json.loads((tmp_path / "results/aggregate/summary.json").read_text())
    compared = {(p["compare"], p["tool"], p["fixed"], p["a"], p["b"]) for p in summary["model_host"]["pairs"]}
    assert ("hosts", "echo", "claude", "cc", "loop") in compared and (
        "models",
        "echo",
        "loop",
        "gpt",
        "claude",
    ) in compared
    md = (tmp_path / "results/report/report.md").read_text()
    assert "Models × hosts" in md and "cc − loop" in md and "gpt − claude" in md
    # the headline and per-scenario tables are per model@host
    assert "model claude@cc: claude-sonnet-4-6 (anthropic) under host cc" in md
    assert "model gpt@loop, scenario callers" in md
    assert 'id="model-host-echo"' in (tmp_path / "results/report/index.html").read_text()
    assert (tmp_path / "results/hosts/cc/install.json").exists()
    assert os.path.exists(json.loads((tmp_path / "results/hosts/cc/install.json").read_text())["binary"])
