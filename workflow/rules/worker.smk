# The warm trial worker (`mcptrials serve-trials`, src/mcptrials/cli/worker.py) for local runs:
# started by `onstart:` (real runs only: dry runs skip onstart), stopped by `onsuccess:` /
# `onerror:`, and by itself when this Snakemake process is gone (--watch-pid). The jobs find
# it through MCPTRIALS_WORKER, set in this process's environment, which local jobs inherit;
# the transcript rule's shell string stays the same, so existing trials are not rerun.
# Cluster jobs never see it (onstart does not start it there) and run in-process.
# MCPTRIALS_NO_WORKER=1 turns it off.
import os
import subprocess

WORKER_SOCKET = "results/.worker.sock"
WORKER = {}


def start_trial_worker():
    if not workflow.local_exec or os.environ.get("MCPTRIALS_NO_WORKER"):
        return
    import time

    os.makedirs("results/logs", exist_ok=True)
    if os.path.exists(WORKER_SOCKET):  # left by a killed run
        os.unlink(WORKER_SOCKET)
    cmd = [sys.executable, "-m", "mcptrials.cli"]  # the interpreter the jobs' `mcptrials` runs
    with open("results/logs/worker.log", "ab") as log:
        proc = subprocess.Popen(
            cmd + ["serve-trials", "--socket", WORKER_SOCKET, "--watch-pid", str(os.getpid())],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    WORKER["proc"] = proc
    # It binds before its slow imports (requests queue meanwhile): wait for the bind only,
    # so the first jobs find it. If it never comes up, jobs run in-process as without it.
    deadline = time.monotonic() + 10
    while not os.path.exists(WORKER_SOCKET) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.environ.update(MCPTRIALS_WORKER=WORKER_SOCKET)


def stop_trial_worker():
    proc = WORKER.pop("proc", None)
    if proc is None:
        return
    os.environ.pop("MCPTRIALS_WORKER", None)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
