"""`run_trial` (one trial under one config host: the host's code from the registry
mcptrials.run.hosts, the trial from the core mcptrials.run.trial) and the `mcptrials run-trial`
command, which writes its transcript.json and run_meta.json.

A fault inside the trial is recorded in its records and the command exits 0, so the
workflow goes on; a missing outcome (mcptrials.core.outcomes) also keeps the attempt's records
under attempts/<n>/ for the retry of the next invocation; only bad input (the config) fails it, before anything is spent. A model
with provider `recorded` runs nothing: its recorded file is converted (mcptrials.run.recorded).
"""

from __future__ import annotations

from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.matrix import Matrix
from mcptrials.run.trial import run_under, scrub_secrets

__all__ = ["register", "run_trial", "scrub_secrets"]


def run_trial(m: Matrix, model: str, tool: str, scenario_id: str, trial: int, checkout: dict,
              snapshot: dict | None, index_dir: Path | None, out_dir: Path, host: str = "loop") -> tuple[dict, dict]:
    """Run one trial in a sandbox; always return (transcript, run_meta), API keys scrubbed.
    A recorded model's trial is its recording converted (mcptrials.run.recorded): nothing runs."""
    from mcptrials.run.hosts import host_for

    if m.specs.models[model].recorded:
        from mcptrials.run.recorded import run_recorded

        return run_recorded(m, model, tool, scenario_id, trial, checkout, snapshot, host)
    return run_under(host_for(m.specs.hosts[host].kind), m, model, tool, scenario_id, trial, checkout, snapshot,
                     index_dir, out_dir, host)


def register(sub) -> None:
    p = sub.add_parser("run-trial", help="run one trial and write transcript.json and run_meta.json")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="loop", help="a key of the config's hosts (default loop)")
    p.add_argument("--tool", required=True)
    p.add_argument("--scenario", required=True)
    p.add_argument("--trial", type=int, required=True)
    p.add_argument("--checkout", required=True, help="results/checkouts/<repo>/checkout.json")
    # nargs="?": the workflow's `--snapshot {input.snapshot:q}` is a bare `--snapshot` for a
    # recorded arm (no snapshot job), and its shell string stays the one existing trials ran with
    p.add_argument("--snapshot", nargs="?", const=None,
                   help="results/snapshots/<tool>/<repo>/tools.json (none for a recorded arm)")
    p.add_argument("--index", help="the tool's index output for this repo")
    p.add_argument("--out", required=True, help="the transcript path; run_meta.json goes beside it")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from mcptrials.matrix.config import check_api_keys, load_matrix
    from mcptrials.core.outcomes import record_attempt
    from mcptrials.core.records import read_json, write_json

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
    # the budget (mcptrials.cost.budget): the trial reserves the most it and its judging can cost, or is
    # not run (no model call, no server); when it ends it settles its own cost and leaves the
    # judge's part reserved for `mcptrials judge` to settle
    from mcptrials.cost.budget import FREE_PROVIDERS, gate, judge_key, ledger_record, results_dir_of, trial_key
    from mcptrials.cost.plan import cell_cost

    repo = m.scenarios[args.scenario].repo
    cell = {"model": args.model, "host": args.host, "tool": args.tool, "repo": repo, "scenario": args.scenario,
            "trial": args.trial}
    bound, judge_part = None, 0.0
    provider = m.specs.models[args.model].provider
    if m.config["budget"].get("max_cost_usd") is not None:   # the most it can cost, reserved before it starts
        cost = cell_cost(m, args.model, args.host, args.tool, repo, args.scenario, results_dir_of(out))
        own = 0.0 if provider in FREE_PROVIDERS else (cost.upper_per_trial if cost.upper_per_trial is not None
                                                      else cost.per_trial) or 0.0
        judge_part = cost.judge_upper_per_trial or 0.0
        bound = own + judge_part
    from mcptrials.core.failures import failure

    checkout = read_json(args.checkout)
    snapshot = read_json(args.snapshot) if args.snapshot else None
    # a checkout or install that failed: missing data, reserved and spent nothing (mcptrials.core.failures)
    unavailable = failure(checkout) or (snapshot or {}).get("unavailable")
    ledger, reservation, stopped = (None, None, None) if unavailable else \
        gate(m.config, provider, out, trial_key(cell), bound)
    if unavailable or stopped:
        transcript, meta = _not_run(m, args, unavailable or stopped)
    else:
        transcript, meta = run_trial(m, args.model, args.tool, args.scenario, args.trial, checkout, snapshot,
                                     Path(args.index) if args.index else None, out.parent, host=args.host)
        if ledger is not None:
            if judge_part:   # the judge's room, kept before the trial's reservation is settled
                ledger.append({"kind": "reserve", "id": f"{reservation}-judge", "trial": judge_key(cell),
                               "reserve_usd": judge_part})
            ledger.append(ledger_record(m.config["pricing"], transcript, settles=reservation))
    # run_trial has scrubbed API-key values from both records already
    write_json(out.parent / "run_meta.json", meta)
    write_json(out, transcript)
    # a missing outcome (api_failed, harness_failed, not_run): keep this attempt's records
    # under attempts/<n>/ and the count in attempts/attempts.json, which the next DAG reads
    # (a recorded model's conversion would give the same again: kept missing, not retried)
    state = record_attempt(out.parent, transcript, m.config["retries"]["max_attempts"],
                           retriable=not m.specs.models[args.model].recorded)
    print(f"{args.model}/{args.host}/{args.tool}/{args.scenario}/{args.trial}: {transcript['outcome']} "
          f"({transcript['wall_seconds']} s, {len(transcript['tool_calls'])} tool calls)"
          + ("" if state is None else f"; attempt {state['attempt']}, run {state['runs']}"
             + (f", missing ({state['failed']} of {state['max_attempts']} attempts failed)" if state["missing"] else "")))
    return 0


def _not_run(m: Matrix, args, detail: str) -> tuple[dict, dict]:
    """The records of a trial that did not start (the budget stopped it, or a checkout or install
    it needs failed): outcome not_run, nothing spent."""
    from mcptrials.matrix.hashing import file_sha256
    from mcptrials.run.trial import SYSTEM_PROMPT, Recorder, now_iso, transcript_record

    at = now_iso()
    meta = {"model": args.model, "host": args.host, "tool": args.tool, "scenario": args.scenario, "trial": args.trial,
            "provider": m.specs.models[args.model].provider, "model_id": m.specs.models[args.model].model,
            "repo": m.scenarios[args.scenario].repo, "system_prompt_sha256": file_sha256(SYSTEM_PROMPT),
            "started_at": at, "ended_at": at, "not_run": detail}
    return transcript_record(m, m.specs.models[args.model], args.host, args.tool, m.scenarios[args.scenario],
                             args.trial, "not_run", detail, Recorder(), meta, 0.0), meta
