"""Recorded runs as a model: `models: {NAME: {provider: recorded, format, path}}`.

The transcript job of a recorded model (the same `transcript` rule, `mcptrials run-trial`)
converts the cell's recorded file into the same transcript.json and run_meta.json as a
live trial: no model call, no server, no sandbox.

- `path` is a pattern relative to the config's folder, with {tool} {repo} {scenario}
  {trial}; the file's sha256 is a rerun key of the trial (mcptrials.dag.rerun) and is recorded
  in run_meta with the file's project-relative path. A missing file makes the trial
  `not_run` ("no recording", the file named in `outcome_detail`): missing, never a failure.
- `format: claude-code-stream-json`: the JSON lines of `claude -p --output-format
  stream-json --verbose`, parsed by the `claude-code` host's own parser and record
  functions (hosts/claude_code.py: parse_stream, StepStream.add_to and .answer,
  result_outcome), so both callers make the same records. One `result` event per step;
  a scenario with `one_answer: true` is one session with one result: its one final answer
  is the transcript's one step (name `one_answer`, the steps' prompts joined), and the
  transcript is marked `one_answer: true` (grade/answer_map.py maps it onto the steps).
  Outcomes from the result subtype as that host maps them (success -> completed,
  error_max_turns -> max_turns, error_max_budget_usd -> budget_exceeded with the last
  assistant text as the partial answer, an API error -> api_failed, any other ->
  harness_failed); a recording cut off before its result event is harness_failed. Tool
  names as the loop records them (the snapshot's, else the part after mcp__<server>__);
  workspace paths made relative to the recorded run's cwd; usage with cache fields from the
  result events, cost from our `pricing` (by the model's `model`, else the model the
  recording names), the recording's own cost as `usage.host_cost_usd`; wall time from the
  result events' `duration_ms`.
- Codex and Opencode runs stored in that shape without ids, init event or result text (the
  reference bench's) are completed first (mcptrials.run.recorded_streams): what they lack is
  said in run_meta `recorded_stream`; a stream without durations takes its wall time from
  the bench's run_meta.json beside it.
- A recorded arm (a tool of transport recorded) has no snapshot: its tools/list is the
  recording's (`recorded_tools`: the init event's MCP tools, else unknown).
- `format: mcptrials`: a transcript.json of ours, validated against
  schemas/transcript.schema.yaml and taken as it is, its cell (and host) rewritten.

This module is imported by mcptrials.dag.rerun at DAG time: only light imports at the top.
"""

from __future__ import annotations

import json
import os
import re
import time
import traceback
from dataclasses import replace
from pathlib import Path

from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import Cell, TranscriptRecord
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash, file_sha256
from mcptrials.matrix.matrix import Matrix

STREAM, MCPTRIALS = "claude-code-stream-json", "mcptrials"
ONE_ANSWER_STEP = "one_answer"


def recorded_file(m: Matrix, key: TrialKey) -> Path:
    """The trial's recorded file (its model's `path`, from the config's folder)."""
    return m.base_dir / m.models[key.model]["path"].format(
        tool=key.tool, repo=key.repo, scenario=key.scenario, trial=key.trial
    )


def project_path(path: Path, base: Path) -> str:
    """A path as records name it: relative to the project (the config's folder) when inside it."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(base))
    return str(path) if rel.startswith("..") else rel


_SHA: dict[tuple, str] = {}


def cached_sha256(path: Path) -> str | None:
    """The file's sha256 (None: no such file), hashed once per size and mtime in a process."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (str(path), st.st_size, st.st_mtime_ns)
    if key not in _SHA:
        _SHA[key] = file_sha256(path)
    return _SHA[key]


def recorded_sha256(m: Matrix, key: TrialKey) -> str | None:
    """The sha256 of one trial's recorded file (None: none yet): that trial's rerun key part."""
    return cached_sha256(recorded_file(m, key))


# --- reading a stream-json recording -----------------------------------------------


def read_stream(path: Path) -> list[dict]:
    """The events of a stream-json file (JSON lines; a JSON array is taken too). Lines that
    are not JSON objects are skipped, as the live host skips them."""
    text = path.read_text(errors="replace")
    if text.lstrip().startswith("["):
        with_events = json.loads(text)
        return [e for e in with_events if isinstance(e, dict)]
    out = []
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict):
            out.append(ev)
    return out


def sessions(events: list[dict]) -> list[list[dict]]:
    """The events split after each `result` event: one part per `claude -p` run (step); a
    tail with model traffic but no result is a run cut off, kept as a last part."""
    parts, cur = [], []
    for ev in events:
        cur.append(ev)
        if ev.get("type") == "result":
            parts.append(cur)
            cur = []
    if cur and (not parts or any(e.get("type") in ("assistant", "user") for e in cur)):
        parts.append(cur)
    return parts


def recorded_model_id(events: list[dict]) -> str | None:
    """The model the recording names: its replies' `model`, else the init event's (without a
    context suffix such as `[1m]`)."""
    for ev in events:
        mid = (ev.get("message") or {}).get("model") if ev.get("type") == "assistant" else None
        if mid and mid != "<synthetic>":
            return mid
    for ev in events:
        if ev.get("type") == "system" and ev.get("subtype") == "init" and ev.get("model"):
            return re.sub(r"\[.*\]$", "", ev["model"])
    return None


def recorded_tools(init: dict) -> dict:
    """The MCP tools a recording says its session had (Claude Code's `init` event lists every
    tool, `mcp__<server>__<name>` for a server's), else `unknown`: a recorded arm has no
    snapshot, so this is the only tools/list there is."""
    names = init.get("tools")
    if not isinstance(names, list):
        return {
            "from": "unknown",
            "reason": "the recording has no init event listing its tools",
            "names": None,
            "sha256": None,
        }
    mcp = sorted(str(n) for n in names if str(n).startswith("mcp__"))
    return {"from": "the recording's init event", "names": mcp, "sha256": canonical_hash(mcp)}


def sibling_wall_seconds(path: Path, meta: dict) -> float | None:
    """The wall time of a run whose stream has no durations (Codex, Opencode), from the
    reference bench's run_meta.json beside the recording (`wall_time_seconds`); said in meta."""
    side = path.parent / "run_meta.json"
    try:
        v = json.loads(side.read_text()).get("wall_time_seconds")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(v, (int, float)) or v <= 0:
        return None
    meta["wall_seconds_from"] = "run_meta.json beside the recording (wall_time_seconds)"
    return float(v)


def _seconds(part: list[dict]) -> float:
    from mcptrials.run.hosts.stream import event_time

    r = next((e for e in part if e.get("type") == "result"), None)
    if r and isinstance(r.get("duration_ms"), (int, float)):
        return round(r["duration_ms"] / 1000, 3)
    ts = [t for t in map(event_time, part) if t is not None]
    return round(max(ts) - min(ts), 3) if ts else 0.0


def _from_stream(m: Matrix, path: Path, scenario, tool: str, snapshot: dict | None, rec, meta: dict):
    """Fill rec from a stream-json recording; return (outcome, detail, one_answer, model id, wall seconds)."""
    from mcptrials.run.hosts.claude_code import parse_stream, result_outcome, server_tool_names
    from mcptrials.run.hosts.stream import record_step

    from mcptrials.run.recorded_streams import complete

    events, stream = complete(read_stream(path))  # Codex and Opencode runs: ids and the answer filled in
    meta["recorded_stream"] = stream
    model_id = recorded_model_id(events)
    if not events:
        msg = f"recorded file {meta['recorded_path']}: no stream-json events"
        rec.error("harness_error", msg)
        return "harness_failed", msg, False, model_id, 0.0
    init = next((e for e in events if e.get("type") == "system" and e.get("subtype") == "init"), None) or {}
    meta.update(recorded_session_id=init.get("session_id"), recorded_cwd=init.get("cwd"))
    if snapshot is None:  # a recorded arm: its tools/list is what the recording says, if anything
        meta["recorded_tools"] = recorded_tools(init)
    cwd = (init.get("cwd") or "").rstrip("/")

    def relative(text: str) -> str:
        return text.replace(f"{cwd}/", "") if cwd else text

    steps = scenario.data["steps"]
    one_answer = bool(scenario.data.get("one_answer"))
    parts = sessions(events)
    if one_answer and len(parts) != 1:
        msg = (
            f"recorded file {meta['recorded_path']}: scenario {scenario.id} has one_answer: true (one session, "
            f"one result), but the recording has {len(parts)} result part(s)"
        )
        rec.error("harness_error", msg)
        return "harness_failed", msg, False, model_id, 0.0
    if not one_answer and len(parts) != len(steps):
        msg = (
            f"recorded file {meta['recorded_path']}: {len(parts)} result part(s) for the {len(steps)} step(s) of "
            f"scenario {scenario.id}; a recording of every step in one session with one answer needs "
            "`one_answer: true` in the scenario"
        )
        rec.error("harness_error", msg)
        return "harness_failed", msg, False, model_id, 0.0
    names = server_tool_names(tool, (snapshot or {}).get("tools") or [])
    wall = 0.0
    outcome, detail = "completed", None
    for i, part in enumerate(parts):
        if one_answer:
            name = ONE_ANSWER_STEP
            prompt = "\n\n".join(f"## {st['name']}\n\n{st['prompt']}" for st in steps)
        else:
            name, prompt = steps[i]["name"], steps[i]["prompt"]
        s = parse_stream(part, i, names)
        seconds = _seconds(part)
        wall += seconds
        srec = record_step(rec, s, i, name, prompt, relative, seconds, None)
        s.add_to(rec, meta)  # Claude Code's own counts
        if s.result is None:
            outcome = "harness_failed"
            detail = (
                f"recorded file {meta['recorded_path']}: step {i} ends without a result event (the run was cut off)"
            )
            rec.error("harness_error", detail, step=i)
        else:
            outcome, detail = result_outcome(s, rec, i)
        srec["outcome"] = outcome
        answer, feedback = s.answer(outcome, relative)
        srec["answer_text"] = answer
        if feedback:
            rec.feedback = feedback
        rec.steps.append(srec)
        if outcome != "completed":
            break
    return outcome, detail, one_answer, model_id, round(wall, 3)


def _from_transcript(path: Path, cell: Cell, host: str, where: str) -> tuple[TranscriptRecord | None, str | None]:
    """(the recorded transcript with our cell and host, None) or (None, why it is unusable)."""
    from mcptrials.matrix.schema import validate_against

    try:
        t = json.loads(path.read_text())
    except ValueError as e:
        return None, f"recorded file {where}: not JSON ({e})"
    try:
        validate_against("transcript.schema.yaml", t, where)
    except ConfigError as e:
        return None, f"recorded file {where} is not a valid mcptrials transcript: {e}"
    t["cell"] = dict(cell)
    t["host"] = host
    return t, None


# --- one recorded trial ---------------------------------------------------------------


def run_recorded(m: Matrix, key: TrialKey, checkout: dict, snapshot: dict | None) -> tuple[TranscriptRecord, dict]:
    """The (transcript, run_meta) of one recorded trial; a fault is recorded as harness_failed,
    never raised (only bad config raises ConfigError). API-key values are scrubbed."""
    from mcptrials import __version__
    from mcptrials.run.trial import Recorder, now_iso, scrub_secrets, secret_values, transcript_record

    specs = m.specs
    model, host, tool, _, scenario_id, trial = key
    mspec, hspec, tspec = specs.models[model], specs.hosts[host], specs.tools[tool]
    scenario = m.scenarios[scenario_id]
    if not hspec.drives(mspec.provider):
        raise ConfigError(
            f"{m.path}: field hosts.{host}: {hspec.kind} cannot drive models.{model} "
            f"(provider {mspec.provider}); run that model under a loop host"
        )
    t0 = time.monotonic()
    path = recorded_file(m, key)
    where = project_path(path, m.base_dir)
    meta = {
        "harness_version": __version__,
        "host": host,
        "host_kind": hspec.kind,
        "provider": mspec.provider,
        "model": model,
        "model_id": mspec.model,
        "model_params": mspec.params,
        "recorded_format": mspec.format,
        "recorded_path": where,
        "recorded_sha256": None,
        "limits": None,
        "tool": tool,
        "tool_spec_sha256": m.tool_hash(tool),
        "server_name": (snapshot or {}).get("server_name"),
        "server_version": (snapshot or {}).get("server_version"),
        "tool_version_label": tspec.version,
        "tools_sha256": (snapshot or {}).get("tools_sha256"),
        "tool_transport": tspec.transport,
        "recorded_source": tspec.source,
        "repo": scenario.repo,
        "repo_url": checkout["url"],
        "commit": checkout["commit"],
        "scenario": scenario_id,
        "scenario_sha256": scenario.sha256,
        "trial": trial,
        "system_prompt_sha256": None,
        "started_at": now_iso(),
        "server_startup_seconds": None,
        "server_peak_rss_kb": None,
        "server_stderr_tail": "",
        "live_tools_sha256": None,
    }
    rec = Recorder()
    outcome, detail, one_answer, model_id, wall = "harness_failed", None, False, None, None
    transcript: TranscriptRecord | None = None
    try:
        if not path.is_file():
            # no run was recorded for this trial (e.g. a cell run fewer times than `trials`): not
            # run, missing, never a failure of anything
            outcome = "not_run"
            detail = (
                f"no recording: recorded file {where} not found (models.{model}.path: {mspec.path!r} for tool "
                f"{tool}, repo {scenario.repo}, scenario {scenario_id}, trial {trial})"
            )
        else:
            meta["recorded_sha256"] = file_sha256(path)
            if mspec.format == MCPTRIALS:
                transcript, detail = _from_transcript(path, key.cell(), host, where)
                if transcript is None:
                    assert detail is not None  # _from_transcript says why it is unusable
                    rec.error("harness_error", detail)
            else:
                outcome, detail, one_answer, model_id, wall = _from_stream(m, path, scenario, tool, snapshot, rec, meta)
    except (ConfigError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001 - a bad recording is recorded, never a crash of the workflow
        outcome, detail = "harness_failed", traceback.format_exc()[-4000:]
        rec.error("harness_error", detail)
    if not wall and path.is_file():  # a stream without durations: the run's own record beside it, if any
        wall = sibling_wall_seconds(path, meta) or wall
    meta["ended_at"] = now_iso()
    if tspec.recorded:
        meta.setdefault("recorded_tools", recorded_tools({}))
        meta["tools_sha256"] = meta["recorded_tools"]["sha256"]
    if transcript is None:
        if model_id and not mspec.model:
            meta["model_id"] = model_id
        priced = replace(mspec, model=mspec.model or model_id)
        transcript = transcript_record(
            m,
            priced,
            key,
            outcome,
            detail,
            rec,
            meta,
            wall if wall is not None else round(time.monotonic() - t0, 3),
        )
        if one_answer:
            transcript["one_answer"] = True
    secrets = secret_values(specs)
    return scrub_secrets(transcript, secrets), scrub_secrets(meta, secrets)
