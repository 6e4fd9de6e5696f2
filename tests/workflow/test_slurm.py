"""The demo workflow on a real single-node Slurm, through `--profile profiles/slurm`.

The test installs Debian's slurm-wlm and munge when missing (needs root), writes
/etc/slurm/slurm.conf for one node on 127.0.0.1, starts munged, slurmctld and slurmd in the
background and stops them by their pids afterwards, also when the test fails. Run it with
`make test-slurm` (`pytest -m slurm`); `make test` leaves it out.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

from matrix_helpers import ROOT, TOOLS_ENV

pytestmark = pytest.mark.slurm

SLURM_CONF = Path("/etc/slurm/slurm.conf")
MUNGE_KEY = Path("/etc/munge/munge.key")
# Left at /etc/slurm/slurm.conf after the test when there was none before (see its text).
NO_CLUSTER_CONF = """\
# Written by mcptrials' tests/workflow/test_slurm.py, which installed Slurm here: no cluster is
# configured on this machine. Without SlurmctldHost every Slurm command fails at once,
# instead of searching the network for a controller for up to a minute (the Slurm executor
# plugin runs `scontrol show config` when Snakemake loads it: each snakemake start would
# wait 10 s).
ClusterName=none
"""
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# the demo's filesystem server, installed as the workflow installs it (see test_real_servers)
FILESYSTEM_BIN = ROOT / ".tools/filesystem/node_modules/.bin/mcp-server-filesystem"
TRIAL_STAGES = ("transcript", "scored", "judged")


def _run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def _install_slurm() -> None:
    """Debian's slurm-wlm and munge, once per machine (apt-get update first: a fresh
    machine has no package lists)."""
    if all(shutil.which(b, path=SYSTEM_PATH) for b in ("slurmctld", "slurmd", "munged", "sbatch")):
        return
    if os.geteuid() != 0:
        pytest.fail("the Slurm test installs slurm-wlm and munge with apt-get: run it as root")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(["apt-get", "update", "-qq"], env=env)
    _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "slurm-wlm", "munge"], env=env)


def _ensure_munge_key() -> None:
    if MUNGE_KEY.exists():
        return
    MUNGE_KEY.parent.mkdir(parents=True, exist_ok=True)
    MUNGE_KEY.write_bytes(os.urandom(1024))
    shutil.chown(MUNGE_KEY, "munge", "munge")
    MUNGE_KEY.chmod(0o400)
    shutil.chown(MUNGE_KEY.parent, "munge", "munge")
    MUNGE_KEY.parent.chmod(0o700)


def _slurm_conf(node: str, d: Path, munge_socket: Path) -> str:
    free = _run(["free", "-m"]).stdout.splitlines()[1].split()
    memory = int(free[1]) - 1024  # leave 1 GB to the daemons and the Snakemake process
    return "\n".join(
        [
            "ClusterName=mcptrials",
            f"SlurmctldHost={node}(127.0.0.1)",
            "SlurmUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={munge_socket}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core_Memory",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            # finished jobs stay visible to squeue/scontrol for an hour: the plugin's status
            # checks (squeue, no slurmdbd) and this test's checks both read them
            "MinJobAge=3600",
            f"StateSaveLocation={d}/state",
            f"SlurmdSpoolDir={d}/spool",
            f"SlurmctldPidFile={d}/slurmctld.pid",
            f"SlurmdPidFile={d}/slurmd.pid",
            f"SlurmctldLogFile={d}/slurmctld.log",
            f"SlurmdLogFile={d}/slurmd.log",
            f"NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory={memory} State=UNKNOWN",
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _tail(path: Path, n: int = 2000) -> str:
    return f"--- {path}\n{path.read_text(errors='replace')[-n:]}" if path.exists() else f"--- {path}: missing"


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM, then SIGKILL after 10 s; newest first (slurmd, slurmctld, munged)."""
    for p in reversed(procs):
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=10)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


@pytest.fixture(scope="module")
def slurm(request):
    """A single-node Slurm on 127.0.0.1; yields its run directory (logs, state)."""
    # only when asked for by name: a plain `pytest` (or `-m "not slow"`) never starts Slurm
    markexpr = request.config.option.markexpr or ""
    if "slurm" not in markexpr or "not slurm" in markexpr:
        pytest.skip("starts a real Slurm as root: run it with `make test-slurm` (pytest -m slurm)")
    # one Slurm test per machine at a time: they share /etc/slurm/slurm.conf and the ports
    lock = open(Path(tempfile.gettempdir()) / "mcptrials-slurm.lock", "w")
    request.addfinalizer(lock.close)
    fcntl.flock(lock, fcntl.LOCK_EX)
    for port in (6817, 6818):
        assert _port_free(port), (
            f"port {port} is taken: a Slurm daemon this test did not start is running; stop it first"
        )
    t0 = time.monotonic()
    _install_slurm()
    installed = time.monotonic()
    _ensure_munge_key()
    node = socket.gethostname().split(".")[0]
    d = Path(tempfile.mkdtemp(prefix="mcptrials-slurm-"))
    d.chmod(0o755)  # munged runs as user munge and must reach its socket under d
    (d / "munge").mkdir()
    shutil.chown(d / "munge", "munge", "munge")
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    old_conf = SLURM_CONF.read_bytes() if SLURM_CONF.exists() else None
    if old_conf and b"ClusterName=mcptrials\n" in old_conf:
        old_conf = None  # left by a run of this test that was killed: its cluster is gone
    SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
    SLURM_CONF.write_text(_slurm_conf(node, d, d / "munge" / "munge.socket"))

    procs: list[subprocess.Popen] = []
    logs = [d / "munged.out", d / "slurmctld.out", d / "slurmd.out"]

    def start(cmd, log):
        with open(log, "w") as out:
            procs.append(
                subprocess.Popen(
                    cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env={"PATH": SYSTEM_PATH}
                )
            )

    try:
        m = d / "munge"
        start(
            [
                "setpriv",
                "--reuid=munge",
                "--regid=munge",
                "--init-groups",
                "munged",
                "--foreground",
                f"--socket={m}/munge.socket",
                f"--pid-file={m}/munged.pid",
                f"--seed-file={m}/munge.seed",
                f"--log-file={m}/munged.log",
            ],
            logs[0],
        )
        deadline = time.monotonic() + 30
        while not (m / "munge.socket").exists():
            assert procs[0].poll() is None and time.monotonic() < deadline, (
                "munged did not start\n" + _tail(logs[0]) + _tail(m / "munged.log")
            )
            time.sleep(0.1)
        start(["slurmctld", "-D"], logs[1])
        start(["slurmd", "-D"], logs[2])
        deadline = time.monotonic() + 60
        state = ""
        while state != "idle":
            dead = [p.args[0] for p in procs if p.poll() is not None]
            assert not dead and time.monotonic() < deadline, (
                f"Slurm did not come up (dead: {dead}, sinfo: {state!r})\n"
                + "\n".join(_tail(f) for f in [*logs, d / "slurmctld.log", d / "slurmd.log"])
            )
            time.sleep(0.5)
            state = subprocess.run(
                ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, env={"PATH": SYSTEM_PATH}
            ).stdout.strip()
        print(f"\nslurm: installed in {installed - t0:.1f} s, up in {time.monotonic() - installed:.1f} s")
        yield d
    finally:
        # our cluster's own jobs (its state is fresh), then the daemons by pid
        if procs and procs[-1].poll() is None:
            ids = subprocess.run(
                ["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env={"PATH": SYSTEM_PATH}
            ).stdout.split()
            if ids:
                subprocess.run(["scancel", *ids], env={"PATH": SYSTEM_PATH})
        _stop(procs)
        SLURM_CONF.write_bytes(old_conf if old_conf is not None else NO_CLUSTER_CONF.encode())
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def filesystem_server(tmp_path_factory):
    """The demo's filesystem server in .tools/, installed by the workflow's own command."""
    if not FILESYSTEM_BIN.exists():
        out = tmp_path_factory.mktemp("install")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "mcptrials.cli",
                "install-tool",
                "--config",
                str(ROOT / "config.yaml"),
                "--tool",
                "filesystem",
                "--out",
                str(out / "filesystem.json"),
            ],
            check=True,
        )
    return FILESYSTEM_BIN


def make_project(wd: Path) -> dict:
    """A small copy of the demo: baseline and the real filesystem server x one training
    scenario x 2 trials with the reference model and judge. Returns the config."""
    shutil.copy(ROOT / "Snakefile", wd / "Snakefile")
    for sub in ("workflow", "locked"):
        shutil.copytree(ROOT / sub, wd / sub)
    (wd / "scenarios").mkdir()
    for sc in ("checkout-flow", "discount-selection"):  # one to run, the held-out one
        shutil.copy(ROOT / "scenarios" / f"{sc}.yaml", wd / "scenarios")
    (wd / "demo").mkdir()
    shutil.copy(ROOT / "demo" / "shop.bundle", wd / "demo")
    demo = yaml.safe_load((ROOT / "config.yaml").read_text())
    # no `install:`: the command resolves to the copy already in .tools/filesystem, and the
    # install job (a Slurm job too) leaves that shared copy alone
    fs = {k: v for k, v in demo["tools"]["filesystem"].items() if k != "install"}
    cfg = {**demo, "tools": {"baseline": demo["tools"]["baseline"], "filesystem": fs}, "trials": 2}
    (wd / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return cfg


def slurm_job_outputs(log_dir: Path) -> dict[str, set[str]]:
    """Slurm job id -> the outputs of the rules that job ran, read from the Slurm logs
    (`.snakemake/slurm_logs/**/<jobid>.log`, written by Slurm itself)."""
    jobs: dict[str, set[str]] = {}
    for log in log_dir.rglob("*.log"):
        outs = jobs.setdefault(log.stem, set())
        for m in re.finditer(r"^\s+output: (.+)$", log.read_text(errors="replace"), re.M):
            outs.update(p.strip() for p in m.group(1).split(","))
    return jobs


def scontrol_job(job_id: str) -> dict[str, str]:
    out = _run(["scontrol", "-o", "show", "job", job_id], env={"PATH": SYSTEM_PATH}).stdout
    return dict(f.split("=", 1) for f in out.split() if "=" in f)


@pytest.mark.timeout(1800)  # installing Slurm (apt-get) and then up to 600 s of the workflow (pyproject: 900 s a test)
def test_demo_matrix_on_slurm(slurm, filesystem_server, tmp_path):
    cfg = make_project(tmp_path)
    env = {"PATH": f"{Path(sys.executable).parent}:{SYSTEM_PATH}", "HOME": str(tmp_path), **TOOLS_ENV}
    t0 = time.monotonic()
    p = subprocess.run(
        [
            "timeout",
            "-k",
            "10",
            "600",
            sys.executable,
            "-m",
            "snakemake",
            "--profile",
            str(ROOT / "profiles/slurm"),
            "--slurm-keep-successful-logs",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t0
    print(f"slurm: workflow took {wall:.1f} s")
    diag = "\n".join(
        [
            p.stdout[-3000:],
            p.stderr[-6000:],
            *(_tail(f) for f in sorted((tmp_path / "results/logs").rglob("*.log"))[:20]),
            *(_tail(f, 1500) for f in sorted((tmp_path / ".snakemake/slurm_logs").rglob("*.log"))[:6]),
            _tail(slurm / "slurmctld.log"),
            _tail(slurm / "slurmd.log"),
        ]
    )
    assert p.returncode == 0, f"snakemake --profile profiles/slurm exited {p.returncode}\n{diag}"

    # the report is built
    assert (tmp_path / "results/report/index.html").stat().st_size > 1000
    md = (tmp_path / "results/report/report.md").read_text()
    for tool in cfg["tools"]:  # a headline row per tool, 2 trials each, none failed, none missing
        assert re.search(rf"^\| {tool} \|.*\| 2 \(0 failed; 0 missing\) \|$", md, re.M), md[:3000]
    # and every trial ran sandboxed, inside its Slurm job (the real filesystem server included)
    metas = [json.loads(f.read_text()) for f in (tmp_path / "results/runs").rglob("run_meta.json")]
    assert metas and {m["sandbox"]["mechanism"] for m in metas} == {"bubblewrap"}
    assert all(m["sandbox"]["network"] is False for m in metas)

    # every stage of every trial ran inside a Slurm job that Slurm itself reports as
    # completed, run from this project: read from the Slurm logs (written by Slurm) and
    # `scontrol show job` (finished jobs stay listed for MinJobAge). A failed attempt that a
    # restart redid (restart-times) is allowed, it just proves nothing.
    trials = [f"results/runs/reference/loop/{tool}/demo/checkout-flow/{t}" for tool in cfg["tools"] for t in (1, 2)]
    logged = slurm_job_outputs(tmp_path / ".snakemake/slurm_logs")
    jobs, infos = {}, {}
    for job, outs in logged.items():
        info = infos[job] = scontrol_job(job)
        assert info["WorkDir"] == str(tmp_path), info
        if info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0":
            jobs[job] = outs
        else:
            print(f"slurm: job {job} {info['JobState']} (retried)")
    where = {out: job for job, outs in jobs.items() for out in outs}
    for d in trials:
        for stage in TRIAL_STAGES:
            assert f"{d}/{stage}.json" in where, f"{d}/{stage}.json ran outside Slurm\n{diag}"
    # a transcript is a Slurm job of its own; grading is grouped (the profile's "grade"
    # group, 20 jobs a submission): the 8 scored/judged jobs of 4 trials are 1 submission
    transcript_jobs = [where[f"{d}/transcript.json"] for d in trials]
    assert len(set(transcript_jobs)) == len(trials), transcript_jobs
    assert all(jobs[j] == {f"{d}/transcript.json", f"{d}/run_meta.json"} for j, d in zip(transcript_jobs, trials))
    grade_jobs = {where[f"{d}/{stage}.json"] for d in trials for stage in ("scored", "judged")}
    assert len(grade_jobs) == 1 and not grade_jobs & set(transcript_jobs), grade_jobs
    # the profile's resources reached Slurm: a transcript asks for 1 CPU, 2000 MB, 60 min; the
    # grading group (its jobs run one after another) for 1 CPU, 500 MB and the sum of its
    # jobs' runtimes, 4 x 2 + 4 x 5 = 28 min
    for j in transcript_jobs:
        assert (infos[j]["NumCPUs"], infos[j]["MinMemoryNode"], infos[j]["TimeLimit"]) == ("1", "2000M", "01:00:00")
    grade = infos[grade_jobs.pop()]
    assert (grade["NumCPUs"], grade["MinMemoryNode"], grade["TimeLimit"]) == ("1", "500M", "00:28:00"), grade
    # the setup stages were Slurm jobs too; the local rules never were
    for out in ("results/checkouts/demo/checkout.json", "results/snapshots/filesystem/demo/tools.json"):
        assert out in where, out
    for out in ("results/aggregate/summary.json", "results/report/index.html", "results/heldout/agreement.json"):
        assert out not in where, f"{out} is a local rule but ran as Slurm job {where.get(out)}"
