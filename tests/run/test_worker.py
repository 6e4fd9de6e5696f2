"""The warm trial worker (`mcptrials serve-trials`): a trial through it is the same trial,
it serves requests concurrently, `run-trial` falls back when no worker answers, and a child
that dies is a failed job, not a hung one. Real processes throughout: the worker, the
`mcptrials run-trial` clients, the test MCP server and the test Messages-API server."""

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes.messages_api import FakeMessagesAPI, reply, text, tool_use
from matrix_helpers import faulty_tool, write_matrix

KEY = "fake-key-worker-test-0123456789"
PATH = f"{Path(sys.executable).parent}:/usr/bin:/bin"
# PYTHONPATH passed on when set: the worker and its clients then run the library these tests import
LIBRARY = {k: os.environ[k] for k in ("PYTHONPATH",) if os.environ.get(k)}


def agent(body):
    """A scripted model: call the server's echo tool once, then answer."""
    last = body["messages"][-1]["content"]
    if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
        return reply(text("`helper` is at `src/util.py:1`."))
    echo = [t["name"] for t in body.get("tools", []) if t["name"].startswith("mcp__") and t["name"].endswith("__echo")]
    if echo:
        return reply(text("Looking."), tool_use(echo[0], {"text": "hi"}))
    return reply(text("`helper` is at `src/util.py:1`."))


@pytest.fixture(scope="module")
def api():
    with FakeMessagesAPI([agent], exhausted="repeat") as server:
        yield server


@pytest.fixture(scope="module")
def project(tmp_path_factory, api):
    """A tiny matrix, its checkout, and a running worker (stopped at the end)."""
    tmp = tmp_path_factory.mktemp("wk")
    dump = tmp / "server_env.json"
    write_matrix(
        tmp,
        tools={
            "baseline": {"transport": "none"},
            "echo": faulty_tool("ok"),
            "slow": faulty_tool("slow", env={"FAULT_MODE": "slow", "FAULT_SLOW_SECONDS": "3"}),
            "env": faulty_tool("ok", env={"FAULT_ENV_DUMP": str(dump)}, sandbox="none"),
        },
        extra={
            "models": {
                "reference": {"provider": "reference"},
                "claude": {
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-6",
                    "base_url": api.url,
                    "max_retries": 0,
                },
            }
        },
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "mcptrials.cli",
            "checkout",
            "--config",
            str(tmp / "config.yaml"),
            "--repo",
            "tiny",
            "--out",
            str(tmp / "co" / "checkout.json"),
        ],
        check=True,
        capture_output=True,
    )
    sock, tcp = tmp / "w.sock", tmp / "w.tcp"
    log = open(tmp / "worker.log", "w")
    worker = subprocess.Popen(
        [sys.executable, "-m", "mcptrials.cli", "serve-trials", "--socket", str(sock), "--tcp-file", str(tcp)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={"PATH": PATH, "HOME": str(tmp), **LIBRARY},
    )
    deadline = time.monotonic() + 30
    while not sock.exists():
        assert worker.poll() is None and time.monotonic() < deadline, (tmp / "worker.log").read_text()
        time.sleep(0.05)
    yield {"dir": tmp, "sock": sock, "tcp": tcp, "worker": worker, "dump": dump}
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=20) == 0
    assert not sock.exists()  # the worker removes its socket on the way out


def run_trial_cmd(p, tool, trial, model="reference", config=None):
    out = p["dir"] / "runs" / model / tool / str(trial) / "transcript.json"
    return [
        sys.executable,
        "-m",
        "mcptrials.cli",
        "run-trial",
        "--config",
        str(config or p["dir"] / "config.yaml"),
        "--model",
        model,
        "--tool",
        tool,
        "--scenario",
        "find-helper",
        "--trial",
        str(trial),
        "--checkout",
        str(p["dir"] / "co" / "checkout.json"),
        "--out",
        str(out),
    ], out


def env(worker=None):
    e = {"PATH": PATH, "HOME": "/tmp", "ANTHROPIC_API_KEY": KEY, **LIBRARY}
    if worker:
        e["MCPTRIALS_WORKER"] = str(worker)
    return e


def children_of(pid: int) -> list[int]:
    kids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(d.name))
    return kids


def served(p, out: Path) -> bool:
    """Did the worker fork a child for the command writing `out`? (its log names each one)"""
    return f"--out {out}\n" in (p["dir"] / "worker.log").read_text()


def essence(t: dict) -> dict:
    """What a trial did, without times and ids."""
    return {
        "outcome": t["outcome"],
        "answers": [s["answer_text"] for s in t["steps"]],
        "calls": [(c["name"], c["arguments"], c["result_text"], c["is_error"]) for c in t["tool_calls"]],
        "usage": {k: v for k, v in t["usage"].items()},
    }


# (over ~10 s each but one: `make test-fast` keeps the reference agent's echo trial)
@pytest.mark.parametrize(
    "model,tool",
    [
        pytest.param("reference", "baseline", marks=pytest.mark.slow),
        ("reference", "echo"),
        pytest.param("claude", "echo", marks=pytest.mark.slow),
    ],
)
def test_trial_through_worker_equals_in_process(project, model, tool):
    cmd_w, out_w = run_trial_cmd(project, tool, 1, model=model)
    cmd_i, out_i = run_trial_cmd(project, tool, 2, model=model)
    pw = subprocess.run(cmd_w, capture_output=True, text=True, env=env(project["sock"]), timeout=120)
    pi = subprocess.run(cmd_i, capture_output=True, text=True, env=env(), timeout=120)
    assert pw.returncode == 0 == pi.returncode, pw.stderr + pi.stderr
    # the child wrote to the client's own stdout (the job's log)
    assert pw.stdout.startswith(f"{model}/loop/{tool}/find-helper/1: completed")
    tw, ti = json.loads(out_w.read_text()), json.loads(out_i.read_text())
    assert tw["outcome"] == "completed" and essence(tw) == essence(ti)
    assert (out_w.parent / "run_meta.json").exists()
    assert served(project, out_w) and not served(project, out_i)
    if model == "claude":
        assert any(c["source"] == "mcp" for c in tw["tool_calls"])


def test_worker_keeps_keys_from_server_and_records(project, api):
    cmd, out = run_trial_cmd(project, "env", 1, model="claude")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env(project["sock"]), timeout=120)
    assert p.returncode == 0, p.stderr
    t = json.loads(out.read_text())
    assert t["outcome"] == "completed" and t["tool_calls"][0]["source"] == "mcp"
    dumped = json.loads(project["dump"].read_text())
    assert "ANTHROPIC_API_KEY" not in dumped and KEY not in json.dumps(dumped)
    assert KEY not in out.read_text() and KEY not in (out.parent / "run_meta.json").read_text()
    assert api.message_requests()[-1]["auth_present"]  # the key from the client's env reached the API


def test_worker_serves_requests_concurrently(project):
    procs = []
    for k in (1, 2, 3):
        cmd, out = run_trial_cmd(project, "slow", k, model="claude")
        procs.append(
            (
                subprocess.Popen(
                    cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(project["sock"])
                ),
                out,
            )
        )
    for proc, _ in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    metas = [json.loads((out.parent / "run_meta.json").read_text()) for _, out in procs]
    assert all(served(project, out) for _, out in procs)
    # each trial spends 3 s in a slow tool call: run one after another, they could not overlap
    assert max(m["started_at"] for m in metas) < min(m["ended_at"] for m in metas)


def test_no_worker_falls_back_in_process(project, tmp_path):
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))  # a socket file nobody listens on, as a killed worker leaves
    s.close()
    for target in (tmp_path / "missing.sock", stale):
        cmd, out = run_trial_cmd(project, "baseline", 7)
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(target), timeout=120)
        assert p.returncode == 0, p.stderr
        assert json.loads(out.read_text())["outcome"] == "completed"
        assert not served(project, out)
        out.unlink()


def test_bad_input_gives_the_same_exit_code_and_message(project, tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("tools: {}\n")
    cmd, _ = run_trial_cmd(project, "baseline", 1, config=bad)
    pw = subprocess.run(cmd, capture_output=True, text=True, env=env(project["sock"]), timeout=60)
    pi = subprocess.run(cmd, capture_output=True, text=True, env=env(), timeout=60)
    assert pw.returncode == pi.returncode == 2
    assert pw.stderr == pi.stderr and "config.yaml" in pw.stderr
    # argparse's own errors, raised in the child, reach the client unchanged
    aw = subprocess.run(cmd[:4] + ["--bogus"], capture_output=True, text=True, env=env(project["sock"]))
    ai = subprocess.run(cmd[:4] + ["--bogus"], capture_output=True, text=True, env=env())
    assert aw.returncode == ai.returncode == 2 and aw.stderr == ai.stderr and "required" in aw.stderr


def test_crashing_child_is_a_failed_job(project):
    cmd, out = run_trial_cmd(project, "slow", 9, model="claude")
    client = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(project["sock"]))
    deadline = time.monotonic() + 60
    while not (kids := children_of(project["worker"].pid)):
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    os.kill(kids[0], signal.SIGKILL)
    _, err = client.communicate(timeout=30)  # answered, not hung
    assert client.returncode == 128 + signal.SIGKILL
    assert "killed by signal 9" in err
    assert not out.exists()
    assert project["worker"].poll() is None  # the worker itself goes on


def assert_killed_job_stops_its_trial(project, client: subprocess.Popen, out: Path) -> None:
    """Kill a job's process once the worker has forked its trial (as Snakemake kills a job): the
    trial's child must end, and never write its records."""
    deadline = time.monotonic() + 60
    while not (kids := children_of(project["worker"].pid)):
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    client.kill()
    client.wait()
    deadline = time.monotonic() + 15
    while Path(f"/proc/{kids[0]}").exists() and kids[0] in children_of(project["worker"].pid):
        assert time.monotonic() < deadline, "the trial of a gone job is still running"
        time.sleep(0.05)
    time.sleep(3.5)  # past the slow call: a surviving trial would have written its records
    assert not out.exists()


def test_client_gone_stops_its_trial(project):
    cmd, out = run_trial_cmd(project, "slow", 10, model="claude")
    client = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env(project["sock"]))
    assert_killed_job_stops_its_trial(project, client, out)


def test_score_and_judge_through_worker_equal_in_process(project):
    cmd, out = run_trial_cmd(project, "baseline", 11)
    assert subprocess.run(cmd, capture_output=True, env=env()).returncode == 0
    co = json.loads((project["dir"] / "co" / "checkout.json").read_text())
    scenario = str(project["dir"] / "scenarios" / "find-helper.yaml")
    stages = {"score": ["--repo-dir", co["tree"], "--commit", co["commit"]], "judge": []}
    for stage, extra in stages.items():
        records = []
        for name, e in (("worker", env(project["sock"])), ("local", env())):
            dest = out.parent / f"{stage}-{name}.json"
            p = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "mcptrials.cli",
                    stage,
                    "--config",
                    str(project["dir"] / "config.yaml"),
                    "--transcript",
                    str(out),
                    "--scenario",
                    scenario,
                    *extra,
                    "--out",
                    str(dest),
                ],
                capture_output=True,
                text=True,
                env=e,
                timeout=60,
            )
            assert p.returncode == 0, p.stderr
            records.append(json.loads(dest.read_text()))
        assert records[0] == records[1], stage
        assert served(project, out.parent / f"{stage}-worker.json")
        assert not served(project, out.parent / f"{stage}-local.json")


# The workflow's client: delegate.py run as a bare script (workflow/rules/common.smk's `mcptrials`).
DELEGATE_SCRIPT = Path(__file__).resolve().parents[2] / "src" / "mcptrials" / "cli" / "delegate.py"


def test_the_bare_script_client_delegates_and_says_when_nothing_ran(project, tmp_path):
    from mcptrials.cli.delegate import NOT_DELEGATED

    cmd, out = run_trial_cmd(project, "echo", 5)
    script = [sys.executable, "-S", "-I", str(DELEGATE_SCRIPT), *cmd[3:]]  # no site-packages, no mcptrials
    p = subprocess.run(script, capture_output=True, text=True, env=env(project["sock"]), timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("reference/loop/echo/find-helper/5: completed")  # the child wrote to its stdout
    assert json.loads(out.read_text())["outcome"] == "completed" and served(project, out)
    # no worker answering, or a command the worker does not run: nothing ran, the shell runs it in-process
    for argv, sock in ((cmd[3:], tmp_path / "missing.sock"), (["validate"], project["sock"])):
        p = subprocess.run([sys.executable, "-S", "-I", str(DELEGATE_SCRIPT), *argv], env=env(sock), timeout=60)
        assert p.returncode == NOT_DELEGATED


def test_the_client_writes_and_reads_the_protocol_as_json_does():
    from mcptrials.cli.delegate import decode_reply, encode_request

    env_ = {"A": 'q"b\\s\nt\t\x01é', "B": ""}
    body = encode_request(["run-trial", "a b"], "/w", env_)
    assert (
        body
        == b'{"argv": ["run-trial", "a b"], "cwd": "/w", "env": {"A": "q\\"b\\\\s\\u000at\\u0009\\u0001\xc3\xa9", "B": ""}}'
    )
    assert json.loads(body) == {"argv": ["run-trial", "a b"], "cwd": "/w", "env": env_}
    odd = {"X": "\udcff"}  # an undecodable byte of the environment (surrogateescape): json's escape
    assert json.loads(encode_request([], "/", odd)) == {"argv": [], "cwd": "/", "env": odd}
    assert decode_reply(b'{"exit_code": 0}\n') == {"exit_code": 0}
    assert decode_reply(b'{"exit_code": -9}\n') == {"exit_code": -9}
    assert decode_reply(b'{"exit_code": 1, "error": "bad"}\n') == {"exit_code": 1, "error": "bad"}
    with pytest.raises(ValueError):
        decode_reply(b"")


def _edit_keeping_stat(path: Path, old: str, new: str) -> None:
    """Replace `old` by `new` (same length) in place, then put the old mtime back: only the
    content tells the change (the worker's caches are keyed by it, mcptrials.matrix.memo)."""
    st = path.stat()
    text = path.read_text()
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns, path.stat().st_ino) == (st.st_size, st.st_mtime_ns, st.st_ino)


def test_an_edited_config_or_scenario_is_seen_by_the_next_child(project, tmp_path):
    """The worker reads the config and scenarios once in its parent (for its children to
    inherit); an edit between two requests, even one that keeps the files' size and mtime,
    is what the next child sees, as a process of its own would."""
    wd = tmp_path / "p"
    wd.mkdir()
    config = write_matrix(wd)
    co = wd / "co" / "checkout.json"
    run = [sys.executable, "-m", "mcptrials.cli"]
    assert (
        subprocess.run([*run, "checkout", "--config", str(config), "--repo", "tiny", "--out", str(co)]).returncode == 0
    )
    trial = [*run, "run-trial", "--config", str(config), "--model", "reference", "--tool", "baseline"]
    trial += [
        "--scenario",
        "find-helper",
        "--trial",
        "1",
        "--checkout",
        str(co),
        "--out",
        str(wd / "r" / "transcript.json"),
    ]
    p = subprocess.run(trial, capture_output=True, text=True, env=env(project["sock"]), timeout=120)
    assert p.returncode == 0, p.stderr
    co_data = json.loads(co.read_text())
    scenario = wd / "scenarios" / "find-helper.yaml"

    def score(name, worker):
        cmd = [
            *run,
            "score",
            "--config",
            str(config),
            "--transcript",
            str(wd / "r" / "transcript.json"),
            "--scenario",
            str(scenario),
        ]
        cmd += ["--repo-dir", co_data["tree"], "--commit", co_data["commit"], "--out", str(wd / f"{name}.json")]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env(project["sock"] if worker else None))
        assert p.returncode == 0, p.stderr
        assert served(project, wd / f"{name}.json") == worker
        return json.loads((wd / f"{name}.json").read_text())

    before = score("before", True)
    _edit_keeping_stat(scenario, "value: helper", "value: hexper")  # the required word is no longer in the answer
    after, local = score("after", True), score("local", False)
    assert after == local and after != before
    # the config: a model's provider made invalid, then the trial refused with the in-process message
    _edit_keeping_stat(config, "provider: reference", "provider: referencx")
    pw = subprocess.run(trial, capture_output=True, text=True, env=env(project["sock"]), timeout=60)
    pi = subprocess.run(trial, capture_output=True, text=True, env=env(), timeout=60)
    assert pw.returncode == pi.returncode == 2 and pw.stderr == pi.stderr and "referencx" in pw.stderr


def shell_job(p, cmd: list[str], log: Path) -> list[str]:
    """`cmd` (`mcptrials ...`) as a workflow job runs it: bash with the shell prefix's function
    (mcptrials.cli.delegate.shell_function), $MCPTRIALS_WORKER_TCP set, output to its log."""
    from mcptrials.cli.delegate import TCP_ENV, shell_function

    function = shell_function(shlex.quote(sys.executable))
    script = f"set -euo pipefail; {function} export {TCP_ENV}={shlex.quote(str(p['tcp']))}; "
    return ["bash", "-c", script + f"mcptrials {shlex.join(cmd[3:])} > {shlex.quote(str(log))} 2>&1"]


def test_trial_through_the_shell_client_equals_in_process(project, tmp_path):
    cmd_w, out_w = run_trial_cmd(project, "echo", 21, model="claude")
    cmd_i, out_i = run_trial_cmd(project, "echo", 22, model="claude")
    pw = subprocess.run(shell_job(project, cmd_w, tmp_path / "job.log"), env=env(), timeout=120)
    pi = subprocess.run(cmd_i, capture_output=True, text=True, env=env(), timeout=120)
    assert pw.returncode == 0 == pi.returncode, (tmp_path / "job.log").read_text() + pi.stderr
    assert (tmp_path / "job.log").read_text().startswith("claude/loop/echo/find-helper/21: completed")
    tw, ti = json.loads(out_w.read_text()), json.loads(out_i.read_text())
    assert tw["outcome"] == "completed" and essence(tw) == essence(ti)
    assert served(project, out_w) and not served(project, out_i), (tmp_path / "job.log").read_text()[:3000] + (
        project["dir"] / "worker.log"
    ).read_text()
    assert KEY not in (tmp_path / "job.log").read_text() + out_w.read_text()


def test_shell_client_gone_stops_its_trial(project, tmp_path):
    cmd, out = run_trial_cmd(project, "slow", 23, model="claude")
    client = subprocess.Popen(shell_job(project, cmd, tmp_path / "job.log"), env=env())
    assert_killed_job_stops_its_trial(project, client, out)
