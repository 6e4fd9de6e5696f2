"""One trial: a fresh workspace, a fresh server, and the agent loop, all recorded.

A fault inside the trial (server crash or hang, garbage, API errors, time-outs, a bug
of ours) is recorded in the transcript and classified in `outcome`; the trial still
writes its records and the command exits 0, so the workflow goes on. Only bad input
(the config) fails the command, before anything is spent.
"""

from __future__ import annotations

import asyncio
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

from . import __version__
from .config import ConfigError, Matrix, Scenario, file_sha256
from .paths import PROMPT_DIR
from .providers.base import Provider, ProviderError, Usage

SYSTEM_PROMPT = PROMPT_DIR / "system.md"
LAST_STEP_NOTE = "\n\n(This is the last step: end with brief feedback on the tools.)"
FEEDBACK_RE = re.compile(r"^\W*feedback on the tools\s*:", re.I | re.M)
CHARS_PER_TOKEN = 4  # a rough estimate, the same Claude Code uses for its cap


def model_tool_name(tool: str, name: str) -> str:
    """mcp__<tool>__<name>, reduced to what the Messages API accepts (^[a-zA-Z0-9_-]{1,64}$)."""
    raw = f"mcp__{tool}__{name}"
    return re.sub(r"[^a-zA-Z0-9_-]", "_", raw)[:64]


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def split_feedback(text: str) -> tuple[str, str]:
    """(answer, feedback): the closing 'Feedback on the tools:' paragraph is kept apart."""
    m = FEEDBACK_RE.search(text)
    if not m:
        return text, ""
    return text[: m.start()].rstrip(), text[m.start():].strip()


def cap_text(text: str, max_tokens: int) -> tuple[str, bool]:
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text, False
    return text[:limit] + f"\n\n[result truncated by the harness: {len(text)} characters, shown {limit}]", True


class TrialAbort(Exception):
    """Ends the trial with an outcome (server_crashed, api_failed, ...)."""

    def __init__(self, outcome: str, detail: str):
        super().__init__(detail)
        self.outcome = outcome
        self.detail = detail


@dataclass
class Recorder:
    """Everything the transcript will hold, filled as the trial goes."""

    steps: list = field(default_factory=list)
    tool_calls: list = field(default_factory=list)
    messages: list = field(default_factory=list)
    errors: dict = field(default_factory=lambda: {"tool_error": 0, "protocol_error": 0, "api_error": 0, "harness_error": 0})
    error_events: list = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    retries: int = 0
    feedback: str = ""
    extra_usage: dict = field(default_factory=dict)  # a host's own figures, e.g. claude-code's host_cost_usd

    def error(self, kind: str, message: str, step=None, code=None, status=None, retries=None):
        self.errors[kind] += 1
        self.error_events.append({"kind": kind, "step": step, "message": message[:2000], "code": code,
                                  "status": status, "retries": retries})


def _leaf_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, as anyio raises them."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _mcp_error_code(exc) -> int | None:
    exc = _leaf_error(exc)
    code = getattr(exc, "code", None)
    if code is None:
        err = getattr(exc, "error", None)
        code = getattr(err, "code", None)
    return code


def _result_text(result) -> str:
    parts = []
    for block in result.content or []:
        t = getattr(block, "type", None)
        if t == "text":
            parts.append(block.text)
        elif t == "resource":
            res = block.resource
            parts.append(getattr(res, "text", None) or f"[resource {getattr(res, 'uri', '')}]")
        else:
            parts.append(f"[{t} content]")
    if not parts and getattr(result, "structured_content", None) is not None:
        import json

        parts.append(json.dumps(result.structured_content))
    return "\n".join(parts)


class Trial:
    def __init__(self, m: Matrix, model: str, tool: str, scenario: Scenario, trial: int,
                 provider: Provider, workspace: Path, server=None, limits: dict | None = None,
                 max_tokens: int = 4096):
        self.m = m
        self.model = model
        self.tool = tool
        self.scenario = scenario
        self.trial = trial
        self.provider = provider
        self.workspace = workspace
        self.server = server
        self.limits = limits or {}
        self.max_tokens = max_tokens
        self.rec = Recorder()
        self.mcp_names: dict[str, str] = {}  # model-facing name -> server tool name
        self.live_tools: list[dict] = []

    async def list_server_tools(self) -> None:
        self.live_tools = await self.server.list_tools()

    async def tool_definitions(self) -> list[dict]:
        from .builtins import BUILTIN_TOOLS

        defs = [dict(t) for t in BUILTIN_TOOLS]
        if self.server is not None:
            for t in self.live_tools:
                name = model_tool_name(self.tool, t["name"])
                self.mcp_names[name] = t["name"]
                schema = t["input_schema"] if isinstance(t["input_schema"], dict) else {"type": "object"}
                defs.append({"name": name, "description": t["description"][:4000] or t["name"],
                             "input_schema": schema})
        return defs

    async def call_tool(self, block: dict, step: int, turn: int, builtins) -> dict:
        """Execute one tool_use block; return the tool_result block. Records everything."""
        name, args = block["name"], block.get("input") or {}
        call = {"id": block["id"], "step": step, "turn": turn, "name": name, "arguments": args,
                "is_error": False, "error_kind": None, "error_code": None}
        t0 = time.monotonic()
        if name in self.mcp_names:
            call.update(source="mcp", tool=self.mcp_names[name])
            text, is_error = await self._call_mcp(call, step)
        else:
            call.update(source="builtin", tool=name)
            try:
                text, is_error = builtins.call(name, args)
                if is_error:
                    call["error_kind"] = "tool_error"
                    self.rec.error("tool_error", f"{name}: {text[:300]}", step=step)
            except Exception as e:  # a bug in our own tools is ours, not the agent's
                text, is_error = f"harness error in {name}: {e}", True
                call["error_kind"] = "harness_error"
                self.rec.error("harness_error", f"{name}: {traceback.format_exc()}", step=step)
        call["latency_ms"] = round((time.monotonic() - t0) * 1000, 2)
        capped, truncated = cap_text(text, self.limits["max_result_tokens"])
        call.update(is_error=is_error, result_text=capped, result_chars=len(text), truncated=truncated,
                    result_tokens_est=len(text) // CHARS_PER_TOKEN)
        self.rec.tool_calls.append(call)
        return {"type": "tool_result", "tool_use_id": block["id"], "content": capped, "is_error": is_error}

    async def _call_mcp(self, call: dict, step: int) -> tuple[str, bool]:
        from mcp import MCPError

        try:
            result = await self.server.client.call_tool(call["tool"], call["arguments"])
        except MCPError as e:
            code = _mcp_error_code(e)
            call.update(error_kind="protocol_error", error_code=code)
            self.rec.error("protocol_error", f"{call['tool']}: {e}", step=step, code=code)
            if code == -32000:  # connection closed: the server is gone for this trial
                raise TrialAbort("server_crashed", f"server connection closed during {call['tool']}: {e}")
            return f"MCP error {code}: {e}", True
        except Exception as e:  # invalid result shape, output-schema mismatch, broken stream
            call.update(error_kind="protocol_error")
            self.rec.error("protocol_error", f"{call['tool']}: {type(e).__name__}: {e}", step=step)
            return f"MCP protocol error: {type(e).__name__}: {str(e)[:500]}", True
        text = _result_text(result)
        if result.is_error:
            call["error_kind"] = "tool_error"
            self.rec.error("tool_error", f"{call['tool']}: {text[:300]}", step=step)
        return text, bool(result.is_error)

    async def run_step(self, index: int, step: dict, system: list[dict], tools: list[dict], builtins) -> dict:
        last = index == len(self.scenario.data["steps"]) - 1
        prompt = step["prompt"] + (LAST_STEP_NOTE if last else "")
        self.rec.messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
        lim = self.limits
        rec = {"index": index, "name": step["name"], "prompt": step["prompt"], "answer_text": "",
               "reasoning_text": "", "audit_text": "", "outcome": "completed", "turns": 0, "state_check": None}
        reasoning, audit = [], []
        out_tokens = 0
        t0 = time.monotonic()
        try:
            async with asyncio.timeout(lim["max_seconds"]):
                while True:
                    if rec["turns"] >= lim["max_turns"]:
                        rec["outcome"] = "max_turns"
                        break
                    rec["turns"] += 1
                    try:
                        reply = await self.provider.complete(system, self.rec.messages, tools,
                                                             min(self.max_tokens, lim["max_output_tokens"]))
                    except ProviderError as e:
                        self.rec.error("api_error", str(e), step=index, status=e.status, retries=e.retries)
                        raise TrialAbort("api_failed", str(e))
                    self.rec.api_calls += 1
                    self.rec.retries += reply.retries
                    self.rec.usage.add(reply.usage)
                    out_tokens += reply.usage.output_tokens
                    self.rec.messages.append({"role": "assistant", "content": reply.content})
                    texts = [b["text"] for b in reply.content if b.get("type") == "text" and b.get("text")]
                    uses = [b for b in reply.content if b.get("type") == "tool_use"]
                    if not uses:
                        # The sandbox path means nothing after the trial: cite relative to the repo.
                        joined = "\n\n".join(texts).replace(f"{self.workspace}/", "")
                        answer, feedback = split_feedback(joined)
                        rec["answer_text"] = answer
                        if feedback:
                            self.rec.feedback = feedback
                        if reply.stop_reason == "max_tokens":
                            rec["outcome"] = "budget_exceeded"
                        break
                    reasoning += texts
                    results = []
                    for b in uses:
                        res = await self.call_tool(b, index, rec["turns"], builtins)
                        results.append(res)
                        audit.append(f"> {b['name']} {b.get('input')}\n{res['content'][:2000]}")
                    self.rec.messages.append({"role": "user", "content": results})
                    if out_tokens >= lim["max_output_tokens"]:
                        rec["outcome"] = "budget_exceeded"
                        break
        except TimeoutError:
            rec["outcome"] = "timed_out"
            # The assistant asked for tools that never answered: close the turn for the record.
            if self.rec.messages and self.rec.messages[-1]["role"] == "assistant":
                pending = [b for b in self.rec.messages[-1]["content"] if b.get("type") == "tool_use"]
                if pending:
                    self.rec.messages.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": b["id"], "content": "[timed out]", "is_error": True}
                        for b in pending]})
        finally:
            rec["reasoning_text"] = "\n\n".join(reasoning)
            rec["audit_text"] = "\n\n".join(audit)
            rec["wall_seconds"] = round(time.monotonic() - t0, 3)
            self.rec.steps.append(rec)
        if step.get("state_check"):
            rec["state_check"] = run_state_check(step["state_check"]["command"], self.workspace)
        return rec

    async def run(self, system_text: str) -> str:
        """Run every step; return the trial's outcome."""
        from .builtins import BuiltinTools

        builtins = BuiltinTools(self.workspace)
        tools = await self.tool_definitions()
        system = [{"type": "text", "text": system_text}]
        for i, step in enumerate(self.scenario.data["steps"]):
            rec = await self.run_step(i, step, system, tools, builtins)
            if rec["outcome"] != "completed":
                return rec["outcome"]
        return "completed"


def run_state_check(command: str, workspace: Path, timeout: float = 60) -> dict:
    try:
        p = subprocess.run(["sh", "-c", command], cwd=workspace, capture_output=True, text=True, timeout=timeout,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(workspace)})
        return {"command": command, "exit_code": p.returncode, "output": (p.stdout + p.stderr)[-10000:]}
    except subprocess.TimeoutExpired:
        return {"command": command, "exit_code": None, "output": f"[state check timed out after {timeout} s]"}


# --- the whole trial, isolated ----------------------------------------------


def make_provider(m: Matrix, model: str, workspace: Path) -> Provider:
    spec = m.models[model]
    if spec["provider"] == "reference":
        from .providers.reference import ReferenceProvider

        return ReferenceProvider(str(workspace))
    if spec["provider"] == "anthropic":
        from .providers.anthropic import AnthropicProvider

        key = os.environ.get(spec["api_key_env"])
        if not key:
            raise ConfigError(f"{m.path}: field models.{model}: ${spec['api_key_env']} is not set; export it")
        return AnthropicProvider(spec["model"], key, base_url=spec.get("base_url"), max_retries=spec["max_retries"])
    if spec["provider"] == "openai":
        from .providers.openai import OpenAIProvider

        key = os.environ.get(spec["api_key_env"])
        if not key:
            raise ConfigError(f"{m.path}: field models.{model}: ${spec['api_key_env']} is not set; export it")
        return OpenAIProvider(spec["model"], key, base_url=spec.get("base_url"), max_retries=spec["max_retries"])
    raise ConfigError(f"{m.path}: field models.{model}.provider: unknown provider {spec['provider']!r}")


def step_limits(m: Matrix, scenario: Scenario) -> dict:
    lim = dict(m.config["limits"])
    lim.update(scenario.data.get("limits") or {})
    return lim


def trial_cost(m: Matrix, model: str, usage: Usage):
    from .graders.cost import cost_usd

    return cost_usd(m.config["pricing"], m.models[model].get("model") or model, usage)


def run_trial(m: Matrix, model: str, tool: str, scenario_id: str, trial: int, checkout: dict,
              snapshot: dict | None, index_dir: Path | None, out_dir: Path, host: str = "loop") -> tuple[dict, dict]:
    """Run one trial in a sandbox; always return (transcript, run_meta)."""
    scenario = m.scenarios[scenario_id]
    spec = m.tools[tool]
    started = now_iso()
    t0 = time.monotonic()
    system_text = SYSTEM_PROMPT.read_text()
    meta = {
        "harness_version": __version__, "host": host, "host_kind": m.hosts[host]["kind"],
        "provider": m.models[model]["provider"], "model": model, "model_id": m.models[model].get("model"),
        "model_params": m.models[model].get("params", {}), "limits": step_limits(m, scenario),
        "tool": tool, "tool_spec_sha256": m.tool_hash(tool),
        "server_name": (snapshot or {}).get("server_name"), "server_version": (snapshot or {}).get("server_version"),
        "tool_version_label": spec.get("version"), "tools_sha256": (snapshot or {}).get("tools_sha256"),
        "repo": scenario.repo, "repo_url": checkout["url"], "commit": checkout["commit"],
        "scenario": scenario_id, "scenario_sha256": scenario.sha256, "trial": trial,
        "system_prompt_sha256": file_sha256(SYSTEM_PROMPT), "started_at": started,
        "server_startup_seconds": None, "server_peak_rss_kb": None, "server_stderr_tail": "",
        "live_tools_sha256": None,
    }
    outcome, detail = "harness_failed", None
    trial_obj = None
    sandbox = Path(tempfile.mkdtemp(prefix="mcptrials-trial-"))
    try:
        workspace, home, tmp = sandbox / "workspace", sandbox / "home", sandbox / "tmp"
        shutil.copytree(checkout["tree"], workspace, symlinks=True)
        home.mkdir()
        tmp.mkdir()
        idx = sandbox / "index"
        if index_dir and Path(index_dir).exists():
            shutil.copytree(index_dir, idx, symlinks=True)
        else:
            idx.mkdir()
        meta["index_files"] = sum(1 for p in idx.rglob("*") if p.is_file())
        values = {"workspace": str(workspace), "repo": str(workspace), "home": str(home), "tmp": str(tmp),
                  "index": str(idx)}
        lim = step_limits(m, scenario)
        max_tokens = m.models[model]["params"].get("max_tokens", lim["max_output_tokens"])
        if m.hosts[host]["kind"] == "claude-code":  # the CLI runs the loop and starts the server itself
            from .hosts.claude_code import run_claude_code

            trial_obj = Trial(m, model, tool, scenario, trial, None, workspace, None, lim, max_tokens)
            outcome, detail = run_claude_code(trial_obj, host, snapshot, values, system_text, meta)
        else:
            provider = make_provider(m, model, workspace)
            trial_obj = Trial(m, model, tool, scenario, trial, provider, workspace, None, lim, max_tokens)
            outcome, detail = asyncio.run(_run_async(trial_obj, spec, values, system_text, out_dir, meta))
    except TrialAbort as e:
        outcome, detail = e.outcome, e.detail
    except ConfigError:
        raise
    except BaseException as e:  # noqa: BLE001 - every fault is recorded, none kills the pipeline
        if isinstance(e, KeyboardInterrupt):
            raise
        outcome, detail = "harness_failed", traceback.format_exc()[-4000:]
        if trial_obj is not None:
            trial_obj.rec.error("harness_error", detail)
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)
    rec = trial_obj.rec if trial_obj else Recorder()
    meta["ended_at"] = now_iso()
    usage = {"input_tokens": rec.usage.input_tokens, "output_tokens": rec.usage.output_tokens,
             "cache_creation_input_tokens": rec.usage.cache_creation_input_tokens,
             "cache_read_input_tokens": rec.usage.cache_read_input_tokens,
             "api_calls": rec.api_calls, "retries": rec.retries, "cost_usd": trial_cost(m, model, rec.usage),
             **rec.extra_usage}
    transcript = {
        "schema": "mcptrials/transcript/1",
        "cell": {"model": model, "host": host, "tool": tool, "repo": scenario.repo, "scenario": scenario_id,
                 "trial": trial},
        "provider": m.models[model]["provider"], "model_id": m.models[model].get("model"), "host": host,
        "outcome": outcome, "outcome_detail": detail, "system_prompt_sha256": meta["system_prompt_sha256"],
        "steps": rec.steps, "tool_calls": rec.tool_calls, "errors": rec.errors, "error_events": rec.error_events,
        "usage": usage, "wall_seconds": round(time.monotonic() - t0, 3), "feedback_text": rec.feedback,
        "messages": rec.messages,
    }
    return transcript, meta


async def _run_async(trial: Trial, spec: dict, values: dict, system_text: str, out_dir: Path, meta: dict):
    from .servers import open_server, stderr_tail

    try:
        if spec["transport"] == "none":
            return await trial.run(system_text), None
        errlog = out_dir / "server.stderr.log"
        if errlog.exists():
            errlog.unlink()
        try:
            cm = open_server(trial.tool, spec, values, errlog, _forbidden(trial.m))
            server = await cm.__aenter__()
        except Exception as e:  # the server did not come up: recorded, not raised
            leaf = _leaf_error(e)
            msg = f"server failed to start: {type(leaf).__name__}: {leaf}"
            trial.rec.error("protocol_error", msg, code=_mcp_error_code(e))
            meta["server_stderr_tail"] = stderr_tail(errlog)
            return "server_crashed", msg
        exc_info = (None, None, None)
        try:
            trial.server = server
            meta["server_startup_seconds"] = round(server.startup_seconds, 3)
            meta["server_protocol_version"] = server.protocol_version
            if spec.get("instructions", True) and server.instructions:
                system_text = system_text + "\n\n# Instructions from the MCP server\n\n" + server.instructions
            try:
                await trial.list_server_tools()
            except Exception as e:  # an unusable tools/list (e.g. an invalid input schema)
                leaf = _leaf_error(e)
                msg = f"tools/list failed: {type(leaf).__name__}: {str(leaf)[:500]}"
                trial.rec.error("protocol_error", msg, code=_mcp_error_code(e))
                return "server_crashed", msg
            try:
                return await trial.run(system_text), None
            except TrialAbort as e:
                return e.outcome, e.detail
        finally:
            from .snapshot import tools_hash

            # Differs from the snapshot's hash only if the server changed since it was taken.
            meta["live_tools_sha256"] = tools_hash(trial.live_tools) if trial.live_tools else None
            meta["server_peak_rss_kb"] = server.peak_rss_kb()
            try:
                await cm.__aexit__(*exc_info)
            except Exception as e:  # a server that dies on shutdown is noted, the trial stands
                trial.rec.error("protocol_error", f"server shutdown: {type(e).__name__}: {e}")
            meta["server_stderr_tail"] = stderr_tail(errlog)
    finally:
        await trial.provider.aclose()


def _forbidden(m: Matrix) -> set[str]:
    from .snapshot import forbidden_env_names

    return forbidden_env_names(m)


# --- the command ----------------------------------------------------------------


def scrub_secrets(obj, secrets: list[str]):
    """Replace any secret value that slipped into a record (e.g. echoed by a server)."""
    import json

    text = json.dumps(obj, ensure_ascii=False)
    hit = False
    for s in secrets:
        if s and len(s) >= 8 and s in text:
            text = text.replace(s, "[redacted]")
            hit = True
    return json.loads(text) if hit else obj


def register(sub) -> None:
    p = sub.add_parser("run-trial", help="run one trial and write transcript.json and run_meta.json")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="loop", help="a key of the config's hosts (default loop)")
    p.add_argument("--tool", required=True)
    p.add_argument("--scenario", required=True)
    p.add_argument("--trial", type=int, required=True)
    p.add_argument("--checkout", required=True, help="results/checkouts/<repo>/checkout.json")
    p.add_argument("--snapshot", help="results/snapshots/<tool>/<repo>/tools.json")
    p.add_argument("--index", help="the tool's index output for this repo")
    p.add_argument("--out", required=True, help="the transcript path; run_meta.json goes beside it")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from .config import check_api_keys, load_matrix
    from .records import read_json, write_json

    m = load_matrix(args.config)
    for kind, name, known in (("models", args.model, m.models), ("hosts", args.host, m.hosts), ("tools", args.tool, m.tools),
                              ("scenarios", args.scenario, m.scenarios)):
        if name not in known:
            raise ConfigError(f"{m.path}: field {kind}: no {kind[:-1]} {name!r}; use one of: {', '.join(sorted(known))}")
    missing = [p for p in check_api_keys(m) if f"models.{args.model}" in p]
    if missing:
        raise ConfigError("\n".join(missing))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    transcript, meta = run_trial(m, args.model, args.tool, args.scenario, args.trial, read_json(args.checkout),
                                 read_json(args.snapshot) if args.snapshot else None,
                                 Path(args.index) if args.index else None, out.parent, host=args.host)
    secrets = [os.environ.get(spec.get("api_key_env", "")) for spec in m.models.values()]
    secrets.append(os.environ.get(m.config["judge"].get("api_key_env", "")))
    write_json(out.parent / "run_meta.json", scrub_secrets(meta, secrets))
    write_json(out, scrub_secrets(transcript, secrets))
    print(f"{args.model}/{args.host}/{args.tool}/{args.scenario}/{args.trial}: {transcript['outcome']} "
          f"({transcript['wall_seconds']} s, {len(transcript['tool_calls'])} tool calls)")
    return 0
