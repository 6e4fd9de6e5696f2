"""`mcptrials judge`: judge one transcript against its scenario's rubric, blind to the tool
(mcptrials.judge.judging.judge_job), and write judged.json."""

from __future__ import annotations

import sys
from pathlib import Path

from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    p = sub.add_parser("judge", help="judge one transcript against its scenario's rubric (blind to the tool)")
    p.add_argument("--transcript", required=True, help="transcript.json of one trial")
    p.add_argument("--scenario", required=True, help="the scenario file with its rubric")
    add_config(p, help="config.yaml (its `judge` settings and tool names)")
    p.add_argument("--prompt", help="the judge prompt file (default: the packaged prompts/judge.md)")
    p.add_argument("--out", required=True, help="judged.json to write")
    p.set_defaults(func=cmd_judge)


def cmd_judge(args) -> int:
    # Imported here, not at the top: building the parser of a per-trial job stays cheap.
    from mcptrials.judge.judging import PROMPT_FILE, judge_job
    from mcptrials.judge.model_judge import JudgeError

    try:
        record = judge_job(
            load_config(args), args.transcript, args.scenario, Path(args.out), args.prompt or PROMPT_FILE
        )
    except JudgeError as e:
        print(f"mcptrials judge: {args.transcript}: {e}", file=sys.stderr)
        return 1
    if record["quality_mean"] is None:
        print(f"{args.out}: not judged: {record['not_judged']}")
        return 0
    print(
        f"{args.out}: quality {record['quality_mean']:.3f} ({record['judge']['provider']} judge, "
        f"{record['judge']['repeats']} repeat(s))"
    )
    return 0
