"""One trial: what every host shares, and `run_under`, which runs one under a host.

The core owns the sandbox (a fresh copy of the checkout, or the checkout itself read-only,
its own HOME and TMPDIR, a copy of the tool's index output), the server session as the
harness's MCP client sees it (start-up time, instructions, the live tool list and its hash,
shut-down), the `Recorder` every host fills, the limits, the tool-result cap, state checks,
the feedback split, `TrialAbort`, and the records: `run_under` assembles transcript and
run_meta and scrubs API-key values out of both before returning them.

A host (mcptrials.run.hosts) gets a `TrialContext` and runs the steps. A fault inside the
trial (server crash or hang, garbage, API errors, time-outs, a bug of ours) is recorded
and classified in `outcome`; the trial still returns its records. Only bad input (the
config) raises, as ConfigError, before anything is spent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal, cast

from mcptrials import __version__
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.scenario import Scenario
from mcptrials.core.paths import PROMPT_DIR
from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import TranscriptErrors, TranscriptRecord, TranscriptUsage
from mcptrials.providers.base import Usage
from mcptrials.prepare.sandbox import NONE
from mcptrials.prepare.servers import ServerSession, leaf_error, mcp_error_code, open_server, stderr_tail
from mcptrials.prepare.snapshot import tools_hash, variant_record
from mcptrials.matrix.specs import HostSpec, Limits, ModelSpec, Specs, ToolSpec

SYSTEM_PROMPT = PROMPT_DIR / "system.md"
LAST_STEP_NOTE = "\n\n(This is the last step: end with brief feedback on the tools.)"
# `[^\w\n]*`, not `\W*`: markup before the heading ("**", "## ") stays on its own line, so an
# earlier markup-only line (a closing code fence) stays in the answer.
FEEDBACK_RE = re.compile(r"^[^\w\n]*feedback on the tools\s*:", re.I | re.M)
from mcptrials.prepare.tooldefs import CHARS_PER_TOKEN  # noqa: E402  (the one measure; re-exported for the hosts)

INSTRUCTIONS_HEADING = "\n\n# Instructions from the MCP server\n\n"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def step_prompt(step: dict, last: bool) -> str:
    """The user turn of a step; the last one asks for feedback on the tools."""
    return step["prompt"] + (LAST_STEP_NOTE if last else "")


def split_feedback(text: str) -> tuple[str, str]:
    """(answer, feedback): the closing 'Feedback on the tools:' paragraph is kept apart."""
    m = FEEDBACK_RE.search(text)
    if not m:
        return text, ""
    return text[: m.start()].rstrip(), text[m.start() :].strip()


def cap_text(text: str, max_tokens: int) -> tuple[str, bool]:
    """A tool result as the model may see it: at most max_tokens (chars/4), the cut noted."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n\n[result truncated by the harness: {len(text)} characters, shown {limit}]", True


def step_limits(m: Matrix, scenario: Scenario) -> Limits:
    """The config's limits, with the scenario's own overriding them."""
    return m.specs.limits.overridden(scenario.data["limits"])


def run_state_check(command: str, workspace: Path, mechanism: str, timeout: float = 60) -> dict:
    """Run a scenario's state check (`sh -c command`) in the workspace after the agent
    finished, sandboxed like a server (the workspace read-write, no network): the command
    is the scenario author's, but it runs over what the server left behind."""
    from mcptrials.prepare.sandbox import ProcessSandbox

    sb = ProcessSandbox(mechanism=mechanism).rw(workspace)
    argv, env = sb.wrap(
        ["sh", "-c", command], {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace)}, str(workspace)
    )
    try:
        p = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=timeout, env=env)
        return {
            "command": command,
            "exit_code": p.returncode,
            "output": (p.stdout + p.stderr)[-10000:],
            "sandbox": mechanism,
        }
    except subprocess.TimeoutExpired:
        return {
            "command": command,
            "exit_code": None,
            "output": f"[state check timed out after {timeout} s]",
            "sandbox": mechanism,
        }


def secret_values(specs: Specs, environ=os.environ) -> list[str]:
    """The values of every API-key variable (see Specs.key_env_names) that is set."""
    return [v for k in sorted(specs.key_env_names()) if (v := environ.get(k))]


def scrub_secrets(obj, secrets: list[str]):
    """Replace any secret value that slipped into a record (e.g. echoed by a server)."""
    text = json.dumps(obj, ensure_ascii=False)
    hit = False
    for s in secrets:
        if s and len(s) >= 8 and s in text:
            text = text.replace(s, "[redacted]")
            hit = True
    return json.loads(text) if hit else obj


NO_RESULT = "[no result: the step ended before the call answered]"


def unanswered_call(call: dict, latency_ms: float = 0.0) -> dict:
    """The record of a tool call the model asked for whose result never came: its step was
    stopped (a limit hit), killed or timed out while the call ran. It is kept, `answered`
    false, so a trial's calls are all counted and shown; `is_error` (the call gave nothing)
    with no `error_kind` (whose fault it was is not known). `latency_ms`: until the step ended."""
    return dict(
        call,
        result_text=NO_RESULT,
        result_chars=0,
        truncated=False,
        is_error=True,
        error_kind=None,
        error_code=None,
        latency_ms=latency_ms,
        result_tokens_est=0,
        answered=False,
    )


class TrialAbort(Exception):
    """Ends the trial with an outcome (server_crashed, api_failed, ...)."""

    def __init__(self, outcome: str, detail: str):
        super().__init__(detail)
        self.outcome = outcome
        self.detail = detail


@dataclass
class Recorder:
    """Everything the transcript will hold, filled by the host as the trial goes."""

    steps: list = field(default_factory=list)
    tool_calls: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    errors: dict = field(
        default_factory=lambda: {"tool_error": 0, "protocol_error": 0, "api_error": 0, "harness_error": 0}
    )
    error_events: list = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    retries: int = 0
    feedback: str = ""
    extra_usage: dict = field(default_factory=dict)  # a host's own figures, e.g. claude-code's host_cost_usd

    def error(self, kind: str, message: str, step=None, code=None, status=None, retries=None):
        self.errors[kind] += 1
        self.error_events.append(
            {"kind": kind, "step": step, "message": message[:2000], "code": code, "status": status, "retries": retries}
        )


COPY, READ_ONLY = "copy", "read-only"  # a scenario's `workspace` (scenario.schema.yaml)


@dataclass
class Sandbox:
    """The trial's own folders, removed at the end: workspace (the repository only, no
    scenarios or gold), home, tmp, index (a copy of the index output).

    The workspace is a copy of the checkout (mode copy), or (read-only) a symlink to the
    shared checkout itself: nothing copied. Every bubblewrap sandbox binds such a link
    read-only at the workspace path (prepare.sandbox.bind_args), so only a trial whose
    processes are all sandboxed may have one (run_under decides); the harness's own readers
    (built-in tools, the reference agent) follow the link and keep their containment checks
    on where it leads. `remove` deletes the link, never what it points to."""

    root: Path
    workspace: Path
    home: Path
    tmp: Path
    index: Path
    origin: Path | None = None  # the checkout the workspace was copied from: the state at the pinned commit
    mode: str = COPY

    @classmethod
    def create(cls, tree: str, index_dir: Path | None, mode: str = COPY) -> Sandbox:
        root = Path(tempfile.mkdtemp(prefix="mcptrials-trial-"))
        origin = Path(tree).resolve()
        sb = cls(root, root / "workspace", root / "home", root / "tmp", root / "index", origin=origin, mode=mode)
        if mode == READ_ONLY:
            sb.workspace.symlink_to(origin, target_is_directory=True)
        else:
            shutil.copytree(tree, sb.workspace, symlinks=True)
        sb.home.mkdir()
        sb.tmp.mkdir()
        if index_dir and Path(index_dir).exists():
            shutil.copytree(index_dir, sb.index, symlinks=True)
        else:
            sb.index.mkdir()
        return sb

    def values(self) -> dict[str, str]:
        """What a tool's args, url and env may name: {workspace} {repo} {home} {tmp} {index}."""
        return {
            "workspace": str(self.workspace),
            "repo": str(self.workspace),
            "home": str(self.home),
            "tmp": str(self.tmp),
            "index": str(self.index),
        }

    def relative(self, text: str) -> str:
        """The sandbox path means nothing after the trial: paths are cited relative to the repo."""
        return text.replace(f"{self.workspace}/", "")

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


@dataclass
class TrialContext:
    """What a host gets to run one trial; it fills `rec` (and may add to `meta`)."""

    m: Matrix
    model: ModelSpec
    host: HostSpec
    tool: ToolSpec
    scenario: Scenario
    trial: int
    limits: Limits
    snapshot: dict | None
    sandbox: Sandbox
    out_dir: Path
    system_text: str
    meta: dict
    rec: Recorder = field(default_factory=Recorder)

    @property
    def steps(self) -> list[dict]:
        return self.scenario.data["steps"]

    @property
    def reply_cap(self) -> int:
        """Output tokens per model reply: the model's `params.max_tokens`, within the step limit."""
        return min(self.model.max_tokens or self.limits.max_output_tokens, self.limits.max_output_tokens)

    @property
    def forbidden_env(self) -> set[str]:
        """Variables a server never sees (API keys)."""
        return self.m.specs.key_env_names()

    def api_key(self) -> str:
        """The model's API key from the environment; a missing one is bad input."""
        key = os.environ.get(self.model.api_key_env)
        if not key:
            raise ConfigError(
                f"{self.m.path}: field models.{self.model.name}: ${self.model.api_key_env} is not set; export it"
            )
        return key

    def state_check(self, step: dict) -> dict | None:
        """The step's state as it left it, recorded for grade/state.py: the command's
        output (sandboxed), and the sql / json / unchanged_except parts read by the harness."""
        spec = step.get("state_check")
        if not spec:
            return None
        from mcptrials.run.workspace_state import read_state

        rec = (
            run_state_check(spec["command"], self.sandbox.workspace, self.m.specs.sandbox)
            if spec.get("command")
            else {}
        )
        rec.update(read_state(spec, self.sandbox.workspace, self.sandbox.origin))
        return rec


class TrialServer:
    """The trial's server as the harness's MCP client sees it: `async with TrialServer(ctx)
    as server:` starts it in the sandbox and records its start-up time and protocol
    version, gets its tool list (`server.tools`) and instructions; at the end records the
    live tools' hash, its peak memory and stderr, and stops it, handing the body's
    exception (if any) to the session so its clean-up knows how the trial ended.

    A server that does not start, or whose tools/list is unusable (e.g. an invalid input
    schema), is recorded and raises TrialAbort("server_crashed"). `opener` is
    servers.open_server unless a test wraps it."""

    def __init__(self, ctx: TrialContext, opener=None):
        self.ctx = ctx
        self.opener = opener or open_server
        self.errlog = ctx.out_dir / "server.stderr.log"
        self.session: ServerSession | None = None  # between __aenter__ and __aexit__
        self.tools: list[dict] = []

    @property
    def live(self) -> ServerSession:
        """The session, inside `async with` (where the hosts use it)."""
        assert self.session is not None, "TrialServer is used inside `async with` only"
        return self.session

    @property
    def client(self):
        return self.live.client

    @property
    def instructions(self) -> str | None:
        return self.live.instructions

    async def __aenter__(self) -> TrialServer:
        ctx = self.ctx
        if self.errlog.exists():
            self.errlog.unlink()
        self._cm = self.opener(ctx.tool, ctx.sandbox.values(), self.errlog, ctx.forbidden_env)
        try:
            self.session = await self._cm.__aenter__()
        except Exception as e:  # the server did not come up: recorded as the outcome, not a fault
            leaf = leaf_error(e)
            msg = f"server failed to start: {type(leaf).__name__}: {leaf}"
            ctx.rec.error("protocol_error", msg, code=mcp_error_code(e))
            ctx.meta["server_stderr_tail"] = stderr_tail(self.errlog)
            raise TrialAbort("server_crashed", msg) from None
        ctx.meta["server_startup_seconds"] = round(self.live.startup_seconds, 3)
        ctx.meta["sandbox"] = self.live.sandbox
        ctx.meta["server_protocol_version"] = self.live.protocol_version
        try:
            self.tools = await self.live.list_tools()
        except Exception as e:  # an unusable tools/list (e.g. an invalid input schema)
            leaf = leaf_error(e)
            msg = f"tools/list failed: {type(leaf).__name__}: {str(leaf)[:500]}"
            ctx.rec.error("protocol_error", msg, code=mcp_error_code(e))
            await self.__aexit__(None, None, None)  # recorded: the session ends normally
            raise TrialAbort("server_crashed", msg) from None
        return self

    async def __aexit__(self, exc_type, exc, tb) -> Literal[False]:  # never swallows the body's error
        meta = self.ctx.meta
        # Differs from the snapshot's hash only if the server changed since it was taken.
        meta["live_tools_sha256"] = tools_hash(self.tools) if self.tools else None
        meta["server_peak_rss_kb"] = self.live.peak_rss_kb()
        try:
            await self._cm.__aexit__(exc_type, exc, tb)
        except Exception as e:
            if exc is None or leaf_error(e) is not exc:  # not the body's own error coming back
                # a server that dies on shutdown is noted, the trial stands
                self.ctx.rec.error("protocol_error", f"server shutdown: {type(e).__name__}: {e}")
        finally:
            meta["server_stderr_tail"] = stderr_tail(self.errlog)
        return False  # the body's exception, if any, goes on


# --- the whole trial ---------------------------------------------------------------


def process_sandbox(m: Matrix, tool: ToolSpec, folders: Sandbox):
    """What the trial's processes under test see: the server's sandbox (its install, the
    trial's folders), or for the baseline the state checks' (the workspace only)."""
    from mcptrials.prepare.sandbox import ProcessSandbox
    from mcptrials.prepare.servers import tool_sandbox

    if tool.has_server:
        return tool_sandbox(tool, extra_rw=folders.values().values())
    return ProcessSandbox(mechanism=m.specs.sandbox).rw(folders.workspace)


def workspace_mode(m: Matrix, tool: ToolSpec, scenario: Scenario) -> str:
    """The trial's workspace: the scenario's `workspace`, but a copy wherever the processes
    under test run unsandboxed (`sandbox: none`: nothing would keep them from writing)."""
    asked = scenario.data["workspace"]
    mechanism = tool.sandbox if tool.has_server else m.specs.sandbox  # as process_sandbox
    return COPY if asked == READ_ONLY and mechanism == NONE else asked


def run_under(
    host_impl,
    m: Matrix,
    key: TrialKey,
    checkout: dict,
    snapshot: dict | None,
    index_dir: Path | None,
    out_dir: Path,
) -> tuple[TranscriptRecord, dict]:
    """Run trial `key` in a sandbox under its config host, whose code is `host_impl` (a
    mcptrials.run.hosts.Host; mcptrials.run.runner.run_key looks it up); always return
    (transcript, run_meta), with the value of every API-key variable scrubbed from both."""
    specs = m.specs
    mspec, hspec, tspec = specs.models[key.model], specs.hosts[key.host], specs.tools[key.tool]
    scenario = m.scenarios[key.scenario]
    lim = step_limits(m, scenario)
    started = now_iso()
    t0 = time.monotonic()
    meta = {
        "harness_version": __version__,
        "host": key.host,
        "host_kind": hspec.kind,
        "provider": mspec.provider,
        "model": key.model,
        "model_id": mspec.model,
        "model_params": mspec.params,
        "limits": lim.as_dict(),
        "tool": key.tool,
        "tool_spec_sha256": m.tool_hash(key.tool),
        # the project files its server starts from, as its tools.json (this trial's input) hashed them
        "project_files": (snapshot or {}).get("project_files"),
        "server_name": (snapshot or {}).get("server_name"),
        "server_version": (snapshot or {}).get("server_version"),
        "tool_version_label": tspec.version,
        "tools_sha256": (snapshot or {}).get("tools_sha256"),
        "repo": scenario.repo,
        "repo_url": checkout["url"],
        "commit": checkout["commit"],
        "scenario": key.scenario,
        "scenario_sha256": scenario.sha256,
        "trial": key.trial,
        "system_prompt_sha256": file_sha256(SYSTEM_PROMPT),
        "started_at": started,
        "server_startup_seconds": None,
        "server_peak_rss_kb": None,
        "server_stderr_tail": "",
        "live_tools_sha256": None,
        **variant_record(tspec),  # a description variant: its base and overrides (tools_sha256 is the rewritten list's)
    }
    outcome, detail = "harness_failed", None
    rec = Recorder()
    sandbox = None
    try:
        if not hspec.drives(mspec.provider):
            raise ConfigError(
                f"{m.path}: field hosts.{key.host}: {hspec.kind} cannot drive models.{key.model} "
                f"(provider {mspec.provider}); run that model under a loop host"
            )
        mode = workspace_mode(m, tspec, scenario)
        meta["workspace"] = mode
        if mode != scenario.data["workspace"]:
            meta["workspace_note"] = "read-only asked; copied: with sandbox none a server could write into the checkout"
        sandbox = Sandbox.create(checkout["tree"], index_dir, mode)
        meta["index_files"] = sum(1 for p in sandbox.index.rglob("*") if p.is_file())
        meta["sandbox"] = process_sandbox(m, tspec, sandbox).record()  # a host may record its own
        ctx = TrialContext(
            m=m,
            model=mspec,
            host=hspec,
            tool=tspec,
            scenario=scenario,
            trial=key.trial,
            limits=lim,
            snapshot=snapshot,
            sandbox=sandbox,
            out_dir=Path(out_dir),
            system_text=SYSTEM_PROMPT.read_text(),
            meta=meta,
            rec=rec,
        )
        outcome, detail = host_impl.run(ctx)
    except TrialAbort as e:
        outcome, detail = e.outcome, e.detail
    except (ConfigError, KeyboardInterrupt):
        raise
    except BaseException:  # noqa: BLE001 - every fault is recorded, none kills the pipeline
        outcome, detail = "harness_failed", traceback.format_exc()[-4000:]
        rec.error("harness_error", detail)
    finally:
        if sandbox is not None:
            sandbox.remove()
    meta["ended_at"] = now_iso()
    transcript = transcript_record(m, mspec, key, outcome, detail, rec, meta, round(time.monotonic() - t0, 3))
    secrets = secret_values(specs)
    return scrub_secrets(transcript, secrets), scrub_secrets(meta, secrets)


def transcript_record(
    m: Matrix,
    mspec: ModelSpec,
    key: TrialKey,
    outcome: str,
    detail,
    rec: Recorder,
    meta: dict,
    wall_seconds: float,
) -> TranscriptRecord:
    """The transcript.json record of a trial from its Recorder (also a recorded trial's:
    mcptrials.run.recorded); cost from our pricing, by the model id (else the model's name)."""
    from mcptrials.cost.pricing import cost_usd
    from mcptrials.cost.work_time import work_seconds

    usage = {
        "input_tokens": rec.usage.input_tokens,
        "output_tokens": rec.usage.output_tokens,
        "cache_creation_input_tokens": rec.usage.cache_creation_input_tokens,
        "cache_read_input_tokens": rec.usage.cache_read_input_tokens,
        "api_calls": rec.api_calls,
        "retries": rec.retries,
        "cost_usd": cost_usd(m.config["pricing"], mspec.model or mspec.name, rec.usage),
        **rec.extra_usage,
    }
    startup = meta.get("server_startup_seconds")
    work = work_seconds({"steps": rec.steps, "wall_seconds": wall_seconds, "server_startup_seconds": startup})
    assert work is not None  # never None when wall_seconds is given
    return {
        "schema": "mcptrials/transcript/1",
        "cell": key.cell(),
        "provider": mspec.provider,
        "model_id": mspec.model,
        "host": key.host,
        "outcome": outcome,
        "outcome_detail": detail,
        "system_prompt_sha256": meta["system_prompt_sha256"],
        "steps": rec.steps,
        "tool_calls": rec.tool_calls,
        # the counters Recorder.errors starts with; a host's extra_usage keys are among TranscriptUsage's
        "errors": cast(TranscriptErrors, rec.errors),
        "error_events": rec.error_events,
        "usage": cast(TranscriptUsage, usage),
        "wall_seconds": wall_seconds,
        # Start-up apart from the agent's work: efficiency compares work_seconds only.
        "server_startup_seconds": startup,
        "work_seconds": work,
        "feedback_text": rec.feedback,
        "messages": rec.messages,
    }
