"""The workflow as files: `snakemake --lint` is clean, the rules' software is named, and a
config without a held-out anchor of its own plans no held-out check (dry runs, no jobs)."""

from __future__ import annotations

import re
import subprocess
import sys

import yaml

from matrix_helpers import ROOT

# (this checkout's library, not whichever the interpreter has installed)
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(ROOT / "src")}


def snakemake(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", *args], cwd=ROOT, capture_output=True, text=True, env=ENV, timeout=300
    )


def test_lint_is_clean():
    p = snakemake("--lint")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Lints for" not in p.stdout + p.stderr


def test_a_target_outside_the_matrix_fails_at_once_naming_it():
    """The wildcards are the matrix's values (mcptrials.dag.targets.wildcards): a mistyped tool
    or scenario matches no rule, so Snakemake names the target, not a lookup's KeyError."""
    for target in (
        "results/runs/reference/loop/NOPE/demo/limits-and-alerts/1/scored.json",
        "results/runs/reference/loop/git/demo/limits-and-alert/1/judged.json",
    ):
        p = snakemake("-n", target)
        out = p.stdout + p.stderr
        assert p.returncode != 0, out[-3000:]
        assert f"No rule to produce {target}" in out, out[-3000:]
        assert "Traceback" not in out and "KeyError" not in out, out[-3000:]


def test_every_rule_names_the_conda_env_and_it_installs_the_project():
    env = yaml.safe_load((ROOT / "workflow/envs/mcptrials.yaml").read_text())
    assert "python=3.11" in env["dependencies"]
    deploy = (ROOT / "workflow/envs/mcptrials.post-deploy.sh").read_text()
    assert re.search(r"pip install .* \.$", deploy, re.M), (
        "the post-deploy script installs the project (pyproject pins)"
    )
    for f in (ROOT / "workflow/rules").glob("*.smk"):
        text = f.read_text()
        assert text.count("conda:") == len(re.findall(r"^\s*(?:rule|checkpoint) \w+:", text, re.M)), f.name


def test_the_pack_plans_no_held_out_check_and_says_so():
    """configs/code-intel.yaml names no `locked:` folder: the demo's agreement is not its anchor."""
    p = snakemake("--configfile", "configs/code-intel.yaml", "-n")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    stats = out.split("Job stats:")[-1]
    assert "verify_lock" not in stats and "heldout" not in stats, stats[:600]
    plan = next(line for line in out.splitlines() if line.startswith("mcptrials plan:"))
    assert "no held-out anchor" in plan


def test_the_demo_plans_its_own_held_out_check():
    p = snakemake("-n", "results/report/index.html", "--forceall")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert re.search(r"^heldout\s+1$", out, re.M) and re.search(r"^verify_lock\s+1$", out, re.M)
    plan = next(line for line in out.splitlines() if line.startswith("mcptrials plan:"))
    assert "held-out check (locked)" in plan


def test_a_pack_narrowed_to_one_repo_counts_what_it_runs(tmp_path):
    """The plan line and the DAG agree: one repo's scenarios -> one checkout, one snapshot per tool."""
    narrow = tmp_path / "flask-only.yaml"
    narrow.write_text(f"scenarios: {ROOT / 'packs/code-intel/scenarios'}/flask-*.yaml\n")
    p = snakemake("--configfile", "configs/code-intel.yaml", str(narrow), "-n")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    n_tools = len(yaml.safe_load((ROOT / "configs/code-intel.yaml").read_text())["tools"])
    plan = next(line for line in out.splitlines() if line.startswith("mcptrials plan:"))
    assert "1 repo checkout(s)" in plan and f"{n_tools} tool snapshot(s)" in plan, plan
    assert re.search(r"^checkout\s+1$", out, re.M) and re.search(rf"^tools_snapshot\s+{n_tools}$", out, re.M)


def test_every_stage_log_is_rewritten_by_each_run():
    """A stage's log holds its last run only (`> {log}`, never `>> {log}`): a log, or a record's
    stderr tail, that showed an older run's error would mislead (issue 27). `| tee {log}` (the
    status job, shown on the console too) rewrites it as well; `tee -a` would not."""
    uses = 0
    for f in (ROOT / "workflow/rules").glob("*.smk"):
        text = f.read_text()
        redirects = re.findall(r"(>>?|tee(?: -a)?)\s*\{log", text)
        assert len(redirects) == text.count("{log") and not {">>", "tee -a"} & set(redirects), f.name
        uses += len(redirects)
    assert uses >= 10  # every stage has its log


# Whether the profiles' restart-times (2) may rerun a failed job: only what can pass on a second
# try keeps them (None); a deterministic failure runs once ("0"); the judge rules retry only a
# judge that calls a model API (common.smk, Retries). A new rule must take a side here.
RETRIES = {
    "checkout": None,
    "install_tool": None,
    "install_host": None,
    "index": None,
    "tools_snapshot": None,
    "transcript": None,
    "scored": "0",
    "judged": "JUDGE_RETRIES",
    "aggregate": "0",
    "verify_lock": "0",
    "heldout": "JUDGE_RETRIES",
    "report": "0",
    "status": "0",
}


def test_only_what_can_pass_on_a_second_try_is_retried():
    found = {}
    for f in (ROOT / "workflow/rules").glob("*.smk"):
        blocks = re.split(r"^\s*rule (\w+):\n", f.read_text(), flags=re.M)
        for name, body in zip(blocks[1::2], blocks[2::2]):
            m = re.search(r"^\s+retries: (\S+)", body, re.M)
            found[name] = m.group(1) if m else None
    assert found == RETRIES
