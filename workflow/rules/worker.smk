# The warm trial worker (`mcptrials serve-trials`, src/mcptrials/cli/worker.py) for local runs:
# started by `onstart:` (real runs only: dry runs skip onstart), stopped by `onsuccess:` /
# `onerror:`, and by itself when this Snakemake process is gone (--watch-pid). The jobs find
# it through MCPTRIALS_WORKER (its socket, for `mcptrials` run by hand in a job) and
# MCPTRIALS_WORKER_TCP (its port file, for the shell prefix's `mcptrials` function), set in
# this process's environment, which local jobs inherit;
# the transcript rule's shell string stays the same, so existing trials are not rerun.
# Cluster jobs never see it (onstart does not start it there) and run in-process.
# MCPTRIALS_NO_WORKER=1 turns it off.
import os
import subprocess

WORKER_SOCKET = "results/.worker.sock"
WORKER_TCP = "results/.worker.tcp"  # "PORT TOKEN", mode 0600: written by the worker, removed on its way out
WORKER = {}


def start_trial_worker():
    if not workflow.local_exec or os.environ.get("MCPTRIALS_NO_WORKER"):
        return
    import time

    os.makedirs("results/logs", exist_ok=True)
    for stale in (WORKER_SOCKET, WORKER_TCP):  # left by a killed run
        if os.path.exists(stale):
            os.unlink(stale)
    cmd = [sys.executable, "-m", "mcptrials.cli"]  # the interpreter the jobs' `mcptrials` runs
    with open("results/logs/worker.log", "ab") as log:
        proc = subprocess.Popen(
            cmd + ["serve-trials", "--socket", WORKER_SOCKET, "--tcp-file", WORKER_TCP, "--watch-pid", str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    WORKER["proc"] = proc
    # It binds before its slow imports (requests queue meanwhile): wait for the bind only,
    # so the first jobs find it. If it never comes up, jobs run in-process as without it.
    deadline = time.monotonic() + 10
    while not os.path.exists(WORKER_SOCKET) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.environ.update(MCPTRIALS_WORKER=WORKER_SOCKET, MCPTRIALS_WORKER_TCP=WORKER_TCP)


def stop_trial_worker():
    proc = WORKER.pop("proc", None)
    if proc is None:
        return
    os.environ.pop("MCPTRIALS_WORKER", None)
    os.environ.pop("MCPTRIALS_WORKER_TCP", None)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
