"""Per-trial cost side by side with the peer, Inspect AI (issue 38).

    python bench/peer_inspect.py [--trials 96] [-j 48] [--delays 0,2] [--repeats 3]
                                 [--harness both|mcptrials|inspect] [--venv DIR]
                                 [--workspace read-only|copy]

The same tiny task in both harnesses: N trials of one tool call (`grep` for the helper in the
tiny test repo) and one answer, against the same local fake of the Messages API
(tests/fakes/messages_api.py, in this process, so its CPU is not counted). The fake's script is
conversation-aware: a request whose last message carries a tool result gets the answer, any
other the tool call, so replies do not depend on arrival order. Replies come at once
(delay 0) or after `delay` seconds.

  mcptrials  a temporary project (tests/matrix_helpers.write_matrix: the tiny repo, one
             scenario, the baseline tool, model `claude` on the fake); the checkout and tool
             snapshot are made first (not timed), then one `snakemake -j J` builds every
             trial's scored.json and judged.json (transcript, scored, judged: the warm worker
             on, as a local run has it). The scenario says `workspace: read-only` (the
             trial reads the shared checkout, nothing copied), as Inspect's task reads the
             files where they are; `--workspace copy` measures a copy per trial.
  inspect    `inspect eval` of a task with the same prompt, a `grep` tool over the same files
             and an `includes` scorer, `--max-connections J --max-samples J`, in its own
             temporary venv with inspect-ai (pinned, INSPECT) and anthropic: never a
             dependency of the project. `--venv DIR` reuses (or creates) one.

Each run is started by a small wrapper that reports its wall time and the CPU (user + system)
of the whole process tree: its RUSAGE_CHILDREN, which holds every descendant that was waited
for (Snakemake, its job shells and clients, the warm worker and its forked trials; inspect and
its children). Both runs must grade every trial (mcptrials: N scored.json and judged.json, each
answer found; inspect: N scored samples) or the bench stops.

Printed per harness and delay, medians of `--repeats` runs at N and at N/2:
  cpu/trial    CPU of the run at N / N
  marginal     (CPU at N - CPU at N/2) / (N - N/2): what one further trial costs, start-up aside
  wall         wall of the run at N
  top process  the same two figures for the top process alone: Snakemake's own share (its
               scheduling, DAG and job spawning; issue 38 item 3), or inspect's whole run
and the ratios mcptrials / inspect. Another process loading the machine slows the wall figures
more than the CPU ones; say so with the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

INSPECT = "inspect-ai==0.3.285"
MODEL = "claude-sonnet-4-6"
ANSWER = "`helper` is at `src/util.py:1`; it returns `x * 2`."
PROMPT = "Where is the function `helper` defined, and what does it return? Cite file:line."

# The wrapper: runs argv, then writes {wall, cpu, own} of its whole process tree to the file
# argv[1]; `own` is the top process's own CPU (Snakemake's, or inspect's), read from its
# /proc stat every 50 ms while it runs (so up to 50 ms short).
WRAPPER = textwrap.dedent(
    """
    import json, os, resource, subprocess, sys, time
    tick = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1] + ".err", "w"))
    own = 0.0
    while p.poll() is None:
        try:
            f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
            own = (int(f[11]) + int(f[12])) / tick
        except (OSError, IndexError):
            pass
        time.sleep(0.05)
    wall = time.monotonic() - t0
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    json.dump({"code": p.returncode, "wall": wall, "cpu": r.ru_utime + r.ru_stime, "own": own}, open(sys.argv[1], "w"))
    """
)

INSPECT_TASK = textwrap.dedent(
    '''
    import re
    from pathlib import Path

    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    REPO = Path(__file__).parent / "repo"


    @tool
    def grep():
        async def execute(pattern: str) -> str:
            """Search the repository's files for a regular expression.

            Args:
                pattern: the regular expression.
            """
            rx = re.compile(pattern)
            hits = []
            for f in sorted(REPO.rglob("*")):
                if f.is_file() and ".git" not in f.parts:
                    for i, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                        if rx.search(line):
                            hits.append(f"{f.relative_to(REPO)}:{i}:{line}")
            return "\\n".join(hits) or "no matches"

        return execute


    @task
    def find_helper(n: int = 1):
        samples = [Sample(input=PROMPT, target="src/util.py", id=k) for k in range(1, n + 1)]
        return Task(dataset=samples, solver=[use_tools(grep()), generate()], scorer=includes())
    '''
)


# ---- the arithmetic (hand-computed in tests/bench/test_peer_inspect.py) ----


def per_trial(total: float, n: int) -> float:
    """A run's figure per trial: its total over its N trials."""
    return total / n


def marginal(total_n: float, n: int, total_m: float, m: int) -> float:
    """What one further trial adds: (total at N - total at M) / (N - M), the run's fixed
    start-up cancelling out (issue 38: N=96 minus N=48)."""
    if n == m:
        raise ValueError("marginal needs two different trial counts")
    return (total_n - total_m) / (n - m)


def ratio(ours: float, peer: float) -> float:
    return ours / peer if peer else float("inf")


def summarize(runs_n: list[dict], n: int, runs_m: list[dict], m: int) -> dict:
    """Medians of the repeats at N (and at M for the marginal figure)."""
    cpu_n = statistics.median(r["cpu"] for r in runs_n)
    cpu_m = statistics.median(r["cpu"] for r in runs_m)
    own_n = statistics.median(r["own"] for r in runs_n)
    own_m = statistics.median(r["own"] for r in runs_m)
    return {
        "cpu_per_trial": per_trial(cpu_n, n),
        "marginal_cpu": marginal(cpu_n, n, cpu_m, m),
        "wall": statistics.median(r["wall"] for r in runs_n),
        "own_per_trial": per_trial(own_n, n),
        "own_marginal": marginal(own_n, n, own_m, m),
    }


# ---- the fake: one script entry, answered by what the conversation holds ----


def conversation_reply(delay: float):
    from fakes.messages_api import reply, text, tool_use

    def answer(body: dict) -> dict:
        last = (body.get("messages") or [{}])[-1]
        content = last.get("content")
        done = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
        if done:
            return reply(text(ANSWER), delay=delay or None)
        return reply(text("Searching."), tool_use("grep", {"pattern": "def helper"}), delay=delay or None)

    return answer


def measured(cmd: list[str], env: dict, cwd: Path) -> dict:
    out = Path(tempfile.mktemp(prefix="peer-run-", suffix=".json"))
    subprocess.run([sys.executable, "-c", WRAPPER, str(out), *cmd], env=env, cwd=cwd, check=True)
    res = json.loads(out.read_text())
    err = Path(f"{out}.err").read_text()
    out.unlink()
    Path(f"{out}.err").unlink()
    if res["code"] != 0:
        raise SystemExit(f"{cmd[:4]} failed ({res['code']}):\n{err[-4000:]}")
    return res


# ---- mcptrials ----


def snakemake_cmd(wd: Path, *args: str) -> list[str]:
    head = [sys.executable, "-m", "snakemake", "--directory", str(wd), "--snakefile", str(wd / "Snakefile")]
    return head + ["--configfile", str(wd / "config.yaml"), "--scheduler", "greedy", "-q", *args]


class Ours:
    def __init__(self, tmp: Path, url: str, n: int, workspace: str):
        from matrix_helpers import SCENARIO, TOOLS_ENV, write_matrix
        from workflow_helpers import copy_workflow

        self.wd = tmp / "mcptrials"
        self.wd.mkdir()
        self.workspace = workspace
        extra = {"models": {"claude": {"provider": "anthropic", "model": MODEL, "base_url": url}}}
        write_matrix(self.wd, trials=n, scenarios={"find-helper": dict(SCENARIO, workspace=workspace)}, extra=extra)
        copy_workflow(self.wd)
        self.env = {
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
            "HOME": str(self.wd),
            "ANTHROPIC_API_KEY": "sk-bench",
            **TOOLS_ENV,
            **{k: os.environ[k] for k in ("PYTHONPATH", "MCPTRIALS_NO_WORKER") if k in os.environ},
        }
        prep = snakemake_cmd(self.wd, "-j", "2", "results/snapshots/baseline/tiny/tools.json")
        subprocess.run(prep, env=self.env, check=True, capture_output=True)

    def run(self, n: int, jobs: int) -> dict:
        runs = self.wd / "results" / "runs"
        shutil.rmtree(runs, ignore_errors=True)
        dirs = [runs / f"claude/loop/baseline/tiny/find-helper/{k}" for k in range(1, n + 1)]
        targets = [str((d / f"{s}.json").relative_to(self.wd)) for d in dirs for s in ("scored", "judged")]
        log = self.wd / "results" / "logs" / "worker.log"
        log.unlink(missing_ok=True)
        res = measured(snakemake_cmd(self.wd, "-j", str(jobs), *targets), self.env, self.wd)
        if "MCPTRIALS_NO_WORKER" not in self.env:  # every per-trial job went through the warm worker
            assert log.read_text().count("exit code 0") >= 3 * n, "the trials did not go through the worker"
        for d in dirs:  # graded, every one, and the answer found, in the workspace asked for
            assert json.loads((d / "run_meta.json").read_text())["workspace"] == self.workspace, d
            scored = json.loads((d / "scored.json").read_text())
            json.loads((d / "judged.json").read_text())
            assert ANSWER in (d / "transcript.json").read_text(), f"{d}: the answer is missing"
            assert scored, f"{d}: empty scored.json"
        return res


# ---- inspect ----


def inspect_venv(path: Path | None, tmp: Path) -> Path:
    venv = path or tmp / "inspect-venv"
    if not (venv / "bin" / "inspect").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", INSPECT, "anthropic"]
        subprocess.run(pip, check=True, capture_output=True)
    return venv


class Peer:
    def __init__(self, tmp: Path, url: str, venv: Path):
        from matrix_helpers import FILES

        self.wd = tmp / "inspect"
        for rel, body in FILES.items():
            (self.wd / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.wd / "repo" / rel).write_text(body)
        (self.wd / "task.py").write_text(f"PROMPT = {PROMPT!r}\n" + INSPECT_TASK)
        self.venv = venv
        self.env = {
            "PATH": f"{venv / 'bin'}:/usr/bin:/bin",
            "HOME": str(self.wd),
            "ANTHROPIC_API_KEY": "sk-bench",
            "ANTHROPIC_BASE_URL": url,
            "INSPECT_LOG_DIR": str(self.wd / "logs"),
        }

    def run(self, n: int, jobs: int) -> dict:
        logs = self.wd / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        cmd = [str(self.venv / "bin" / "inspect"), "eval", "task.py", "-T", f"n={n}", "--model", f"anthropic/{MODEL}"]
        cmd += ["--max-connections", str(jobs), "--max-samples", str(jobs), "--display", "none"]
        cmd += ["--log-format", "json", "--log-dir", str(logs), "--max-retries", "0", "--no-log-samples"]
        res = measured(cmd, self.env, self.wd)
        (log,) = logs.glob("*.json")
        ev = json.loads(log.read_text())
        assert ev["status"] == "success", ev.get("error")
        (score,) = ev["results"]["scores"]
        scored = score["scored_samples"]
        assert scored == n, f"inspect graded {scored} of {n}"
        assert score["metrics"]["accuracy"]["value"] == 1.0, score["metrics"]
        return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=96)
    ap.add_argument("-j", "--jobs", type=int, default=48, help="trials at once")
    ap.add_argument("--delays", default="0,2", help="reply delays in seconds, comma-separated")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--harness", choices=("both", "mcptrials", "inspect"), default="both")
    ap.add_argument("--venv", type=Path, help="inspect's venv: reused if it exists, else made there")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--workspace", choices=("read-only", "copy"), default="read-only", help="mcptrials' scenario's")
    args = ap.parse_args()
    from fakes.messages_api import FakeMessagesAPI

    n, m = args.trials, args.trials // 2
    harnesses = ("mcptrials", "inspect") if args.harness == "both" else (args.harness,)
    print(
        f"{n} trials (marginal: {n} minus {m}), {args.jobs} at once, median of {args.repeats}; cores: {os.cpu_count()}"
    )
    if "mcptrials" in harnesses:
        why = " (Inspect's task copies nothing either)" if args.workspace == "read-only" else ""
        print(f"mcptrials' scenario: workspace: {args.workspace}{why}")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="mcptrials-peer-") as d:
        tmp = Path(d)
        for delay in (float(x) for x in args.delays.split(",")):
            with FakeMessagesAPI([conversation_reply(delay)], exhausted="repeat") as api:
                for h in harnesses:
                    sub = tmp / f"{h}-{delay}"
                    sub.mkdir()
                    runner = (
                        Ours(sub, api.url, n, args.workspace)
                        if h == "mcptrials"
                        else Peer(sub, api.url, inspect_venv(args.venv, tmp))
                    )
                    at_n = [runner.run(n, args.jobs) for _ in range(args.repeats)]
                    at_m = [runner.run(m, args.jobs) for _ in range(args.repeats)]
                    results[f"{h} delay={delay:g}"] = s = summarize(at_n, n, at_m, m)
                    each = ", ".join(f"{r['cpu']:.1f}/{r['wall']:.1f}" for r in at_n)
                    print(
                        f"{h:<10} delay {delay:g} s: cpu/trial {s['cpu_per_trial']:.3f} s, marginal "
                        f"{s['marginal_cpu']:.3f} s, wall {s['wall']:.1f} s; of which the top process "
                        f"({'snakemake' if h == 'mcptrials' else 'inspect'}) {s['own_per_trial']:.3f} s, marginal "
                        f"{s['own_marginal']:.3f} s  (runs at N: {each} cpu/wall s)",
                        flush=True,
                    )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if len(harnesses) == 2:
        for delay in args.delays.split(","):
            ours, peer = results[f"mcptrials delay={float(delay):g}"], results[f"inspect delay={float(delay):g}"]
            print(
                f"ratio mcptrials/inspect, delay {float(delay):g} s: cpu/trial "
                f"{ratio(ours['cpu_per_trial'], peer['cpu_per_trial']):.2f}x, marginal "
                f"{ratio(ours['marginal_cpu'], peer['marginal_cpu']):.2f}x, wall {ratio(ours['wall'], peer['wall']):.2f}x"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    os.environ.pop("MCPTRIALS_WORKER", None)
    os.environ.pop("MCPTRIALS_WORKER_TCP", None)
    main()
