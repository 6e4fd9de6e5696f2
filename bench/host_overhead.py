"""What each host costs per step, beside our own loop: the harness's loop, Claude Code,
Codex and Opencode, each against a local fake model API that answers at once.

    python bench/host_overhead.py [--trials 3] [--steps 3] [--hosts loop,claude-code,codex,opencode]

Each trial is a scenario of --steps steps on the small test repository, run by
`runner.run_trial` as the workflow runs it (sandboxed, the CLI hosts through the key proxy),
twice per host:
  plain   no server (transport none); each step is one model call answering at once: the
          step's wall time is the host's own cost of a step (a CLI's start, its session
          load and save, its prompt building, our parsing)
  tool    the fault-injecting test server in `ok` mode; each step is a model call asking for
          its `echo` tool, then a model call answering: adds one MCP call and one model call
The loop and opencode talk Chat Completions, codex the Responses API (both answered by
tests/fakes/responses_api.py), claude-code the Messages API (tests/fakes/messages_api.py).
A CLI host not installed in .tools/_hosts/<name>/ (the tests' names: cc, codex, opencode) is
installed first (npm, pinned).

Prints, per host and variant: the median wall time of step 1 (includes the server start for
`tool`), of the later steps (a resumed session), and of a whole trial, in seconds; then each
host's overhead per step against the loop (median later step minus the loop's). Numbers
only: nothing is asserted. The model calls cost nothing here: a real API's latency comes on
top for every host alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
# the checkout's tool and host installs, by their real path (.tools may be a link)
os.environ.setdefault("MCPTRIALS_TOOLS_DIR", str((ROOT / ".tools").resolve()))
os.environ.setdefault("ANTHROPIC_API_KEY", "bench-key-anthropic-0123456789")
os.environ.setdefault("OPENAI_API_KEY", "bench-key-openai-0123456789")

from fakes import messages_api as ma  # noqa: E402
from fakes import responses_api as ra  # noqa: E402
from matrix_helpers import SCENARIO, faulty_tool, write_matrix  # noqa: E402

from mcptrials.prepare.checkout import checkout  # noqa: E402
from mcptrials.matrix.config import load_matrix  # noqa: E402
from mcptrials.run.hosts import host_for, needs_install  # noqa: E402
from mcptrials.run.runner import run_trial  # noqa: E402

ANSWER = "`helper` is defined at `src/util.py:1`; it returns `x * 2`."
HOSTS = ("loop", "claude-code", "codex", "opencode")
# host names: the tests' own, so their installs are reused
NAMES = {"loop": "loop", "claude-code": "cc", "codex": "codex", "opencode": "opencode"}
MODEL = {
    "claude-code": ("anthropic", "claude-sonnet-4-6"),
    "loop": ("openai", "gpt-test"),
    "codex": ("openai", "gpt-test"),
    "opencode": ("openai", "gpt-test"),
}


def script(kind: str, steps: int, tool: bool) -> list:
    """The fake's replies for one trial: per step an answer, or a call of `echo` then an answer."""
    out = []
    for _ in range(steps):
        if tool and kind == "claude-code":
            out.append(ma.reply(ma.tool_use("mcp__faulty__echo", {"text": "hi"})))
        elif tool and kind == "codex":
            out.append(ra.reply(None, ra.tool_call("echo", {"text": "hi"}, namespace="mcp__faulty")))
        elif tool:
            out.append(
                ra.reply(
                    None, ra.tool_call("faulty_echo" if kind == "opencode" else "mcp__faulty__echo", {"text": "hi"})
                )
            )
        out.append(ma.reply(ma.text(ANSWER)) if kind == "claude-code" else ra.reply(ANSWER))
    return out


def one_trial(kind: str, steps: int, tool: bool, scratch: Path, k: int) -> dict:
    provider, model = MODEL[kind]
    fake = (ma.FakeMessagesAPI if kind == "claude-code" else ra.FakeResponsesAPI)(script(kind, steps, tool))
    scenario = dict(SCENARIO, steps=[dict(SCENARIO["steps"][0], name=f"s{i}") for i in range(steps)])
    tools = {"faulty": faulty_tool("ok")} if tool else {"baseline": {"transport": "none"}}
    d = scratch / f"{kind}-{'tool' if tool else 'plain'}-{k}"
    d.mkdir()
    with fake as api:
        cfg = write_matrix(
            d,
            tools=tools,
            scenarios={"bench": scenario},
            extra={
                "models": {"m": {"provider": provider, "model": model, "base_url": api.url, "max_retries": 0}},
                "hosts": {NAMES[kind]: {"kind": kind}},
            },
        )
        m = load_matrix(cfg)
        co = checkout("tiny", m.repo_source("tiny"), "repo", m.repos["tiny"]["commit"], d / "co")
        t0 = time.monotonic()
        t, _ = run_trial(m, "m", next(iter(tools)), "bench", 1, co, None, None, d / "out", host=NAMES[kind])
        total = time.monotonic() - t0
    if t["outcome"] != "completed":
        raise SystemExit(f"{kind}: trial {t['outcome']}: {t['outcome_detail']}")
    walls = [s["wall_seconds"] for s in t["steps"]]
    return {"first": walls[0], "later": walls[1:], "total": total, "calls": t["usage"]["api_calls"]}


def ensure_installed(kind: str) -> str | None:
    if not needs_install(kind):
        return None
    d = write_matrix(
        Path(tempfile.mkdtemp()) / "m",
        extra={
            "models": {"m": {"provider": MODEL[kind][0], "model": MODEL[kind][1]}},
            "hosts": {NAMES[kind]: {"kind": kind}},
        },
    )
    spec = load_matrix(d).specs.hosts[NAMES[kind]]
    return host_for(kind).install(NAMES[kind], spec, sys.stderr)["version"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--hosts", default=",".join(HOSTS))
    a = p.parse_args()
    kinds = [h for h in a.hosts.split(",") if h]
    versions = {k: ensure_installed(k) for k in kinds}
    scratch = Path(tempfile.mkdtemp(prefix="host-overhead-"))
    rows = {}
    for tool in (False, True):
        for k in range(a.trials):  # interleaved: load from other work falls on every host alike
            for kind in kinds:
                rows.setdefault((kind, tool), []).append(one_trial(kind, a.steps, tool, scratch, k))
    print(f"{a.trials} trials x {a.steps} steps per host and variant; seconds (median)")
    print(f"{'host':12} {'version':9} {'variant':7} {'step 1':>7} {'later':>7} {'trial':>7} {'calls':>5}")
    later = {}
    for (kind, tool), rs in rows.items():
        first = statistics.median(r["first"] for r in rs)
        lat = statistics.median(x for r in rs for x in r["later"]) if a.steps > 1 else float("nan")
        later[(kind, tool)] = lat
        print(
            f"{kind:12} {versions[kind] or '-':9} {'tool' if tool else 'plain':7} {first:7.3f} {lat:7.3f} "
            f"{statistics.median(r['total'] for r in rs):7.3f} {rs[0]['calls']:5d}"
        )
    if "loop" in kinds:
        print("\noverhead per step against the loop (median later step minus the loop's), seconds")
        for kind in kinds:
            print(
                f"{kind:12} plain {later[(kind, False)] - later[('loop', False)]:+7.3f}   "
                f"tool {later[(kind, True)] - later[('loop', True)]:+7.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
