"""The demo's scenarios under hosts `codex` and `opencode` (the real CLIs) through the whole
workflow: the config validates, plans (`snakemake -n`) and runs against a fake OpenAI API in
a separate process (tests/fakes/responses_api.py, which answers the Responses API for Codex
and Chat Completions for Opencode at one base URL), each trial sandboxed; the report
compares the model under the two hosts."""

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fakes import responses_api
from matrix_helpers import ROOT
from workflow_helpers import copy_workflow, snakemake_cmd

pytestmark = pytest.mark.slow

KEY = "sk-openai-test-cli-hosts-0123456789"
# the demo's servers' launchers name their venv by its real path (.tools may be a link)
TOOLS = str((ROOT / ".tools").resolve())
ANSWER = (
    "The entry point is `acme_shop/cli.py:40`; `CheckoutService.checkout` in `acme_shop/checkout.py` "
    "reserves stock first, then charges the card."
)


def config(api_url: str) -> dict:
    demo = yaml.safe_load((ROOT / "config.yaml").read_text())
    demo["tools"] = {k: demo["tools"][k] for k in ("baseline", "git")}
    demo["repos"]["demo"]["url"] = str(ROOT / demo["repos"]["demo"]["url"])
    demo["scenarios"] = str(ROOT / "scenarios" / "*.yaml")
    demo.update(
        locked=None,
        trials=1,
        models={"gpt": {"provider": "openai", "model": "gpt-test", "base_url": api_url, "max_retries": 0}},
        hosts={"codex": {"kind": "codex"}, "opencode": {"kind": "opencode"}},
    )
    demo["pricing"] = {"gpt-test": {"input": 1.25, "output": 10.0, "cache_read": 0.125}}
    return demo


@pytest.mark.timeout(1800)  # beyond its own 1,500 s snakemake time-out (pyproject: 900 s a test)
def test_codex_and_opencode_run_the_demo_scenarios(tmp_path):
    (tmp_path / "script.json").write_text("[]")
    proc, url = responses_api.spawn(
        tmp_path / "script.json", tmp_path / "api.jsonl", tmp_path / "api.port", "--default-text", ANSWER
    )
    certs = {k: os.environ[k] for k in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE") if k in os.environ}  # for npm
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "OPENAI_API_KEY": KEY,
        "MCPTRIALS_TOOLS_DIR": TOOLS,
        **certs,
    }
    try:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config(url), sort_keys=False))
        copy_workflow(tmp_path)
        v = subprocess.run(
            [sys.executable, "-m", "mcptrials.cli", "validate", "--config", str(tmp_path / "config.yaml")],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert v.returncode == 0, v.stdout + v.stderr
        plan = subprocess.run(snakemake_cmd(tmp_path, "-n"), capture_output=True, text=True, env=env)
        said = plan.stdout + plan.stderr
        assert plan.returncode == 0, said[-3000:]
        assert "1 model(s) x 2 host(s) x 2 tool(s) x 4 scenario(s) x 1 trial(s) = 16 trials" in said
        assert "rule install_host" in said and "results/hosts/codex/install.json" in said
        p = subprocess.run(snakemake_cmd(tmp_path, "-j2"), capture_output=True, text=True, env=env, timeout=1500)
        logs = "\n".join(f"--- {f}\n{f.read_text()[-800:]}" for f in (tmp_path / "results/logs").rglob("*.log"))
        assert p.returncode == 0, p.stderr[-4000:] + logs[-4000:]
    finally:
        proc.terminate()
        proc.wait(10)
    runs = tmp_path / "results" / "runs"
    pairs = sorted({"/".join(t.relative_to(runs).parts[:2]) for t in runs.rglob("transcript.json")})
    assert pairs == ["gpt/codex", "gpt/opencode"]
    rows = list(csv.DictReader(open(tmp_path / "results/aggregate/trials.csv")))
    from mcptrials.matrix.config import load_matrix

    scenarios = {s.id for s in load_matrix(tmp_path / "config.yaml").run_scenarios()}
    assert {r["scenario"] for r in rows} == scenarios
    assert len(rows) == len(scenarios) * 2 * 2 and {r["outcome"] for r in rows} == {"completed"}, [
        (r["model"], r["tool"], r["scenario"], r["outcome"]) for r in rows if r["outcome"] != "completed"
    ]
    assert {r["model"] for r in rows} == {"gpt@codex", "gpt@opencode"}
    for host in ("codex", "opencode"):
        t = json.loads(next((runs / "gpt" / host / "git").rglob("transcript.json")).read_text())
        meta = json.loads(next((runs / "gpt" / host / "git").rglob("run_meta.json")).read_text())
        assert t["host"] == host and meta["host_kind"] == host and meta["host_version"]
        assert meta["sandbox"]["mechanism"] == "bubblewrap" and t["usage"]["api_calls"] >= 1
        assert t["steps"][-1]["answer_text"].startswith("The entry point")
        install = json.loads((tmp_path / f"results/hosts/{host}/install.json").read_text())
        assert install["kind"] == host and os.path.exists(install["binary"])
    summary = json.loads((tmp_path / "results/aggregate/summary.json").read_text())
    compared = {(p["compare"], p["tool"], p["fixed"], p["a"], p["b"]) for p in summary["model_host"]["pairs"]}
    assert ("hosts", "git", "gpt", "opencode", "codex") in compared
    md = (tmp_path / "results/report/report.md").read_text()
    assert "Models × hosts" in md and "opencode − codex" in md
    # every model call reached the fake with the real key, added by the proxy (none from the CLIs)
    reqs = [json.loads(x) for x in (tmp_path / "api.jsonl").read_text().splitlines()]
    import hashlib

    assert reqs and {r["auth_sha256"] for r in reqs} == {hashlib.sha256(KEY.encode()).hexdigest()}
    assert {r["path"] for r in reqs} == {"/v1/responses", "/v1/chat/completions"}
