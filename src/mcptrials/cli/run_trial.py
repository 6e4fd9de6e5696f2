"""`mcptrials run-trial`: one trial of the matrix (mcptrials.run.runner.run_trial_job), its
transcript.json and run_meta.json written. A fault inside the trial is recorded and exits 0;
only bad input (the config) fails it, before anything is spent."""

from __future__ import annotations

from pathlib import Path

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("run-trial", help="run one trial and write transcript.json and run_meta.json")
    add_config(p)
    p.add_argument("--model", required=True)
    p.add_argument("--host", default="loop", help="a key of the config's hosts (default loop)")
    p.add_argument("--tool", required=True)
    p.add_argument("--scenario", required=True)
    p.add_argument("--trial", type=int, required=True)
    p.add_argument("--checkout", required=True, help="results/checkouts/<repo>/checkout.json")
    # nargs="?": the workflow's `--snapshot {input.snapshot:q}` is a bare `--snapshot` for a
    # recorded arm (no snapshot job), and its shell string stays the one existing trials ran with
    p.add_argument(
        "--snapshot", nargs="?", const=None, help="results/snapshots/<tool>/<repo>/tools.json (none for a recorded arm)"
    )
    p.add_argument("--index", help="the tool's index output for this repo")
    p.add_argument("--out", required=True, help="the transcript path; run_meta.json goes beside it")
    p.set_defaults(func=cmd_run_trial)


def cmd_run_trial(args) -> int:
    from mcptrials.core.identity import TrialKey
    from mcptrials.dag.rerun import trial_inputs
    from mcptrials.run.runner import check_trial, run_trial_job

    m = load_config(args)
    check_trial(m, args.model, args.host, args.tool, args.scenario)  # bad names stop here, with the fix
    key = TrialKey(args.model, args.host, args.tool, m.scenarios[args.scenario].repo, args.scenario, args.trial)
    transcript, state = run_trial_job(
        m,
        args.model,
        args.host,
        args.tool,
        args.scenario,
        args.trial,
        args.checkout,
        args.snapshot,
        Path(args.index) if args.index else None,
        Path(args.out),
        inputs=trial_inputs(m, key),
    )
    print(
        f"{args.model}/{args.host}/{args.tool}/{args.scenario}/{args.trial}: {transcript['outcome']} "
        f"({transcript['wall_seconds']} s, {len(transcript['tool_calls'])} tool calls)"
        + (
            ""
            if state is None
            else f"; attempt {state['attempt']}, run {state['runs']}"
            + (f", missing ({state['failed']} of {state['max_attempts']} attempts failed)" if state["missing"] else "")
        )
    )
    return 0
