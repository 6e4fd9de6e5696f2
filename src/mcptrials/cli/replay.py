"""`mcptrials replay BASE_RESULTS`: the regression gate that needs no model and no key
(mcptrials.gate.replay): BASE's recorded tool calls sent to HEAD's servers. Exit 1 when a call
that succeeded now errors, finds nothing or its tool is gone; 2 when it cannot replay."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mcptrials.cli.common import DEFAULT_CONFIG, add_config
from mcptrials.gate.output import refuse, write_outputs
from mcptrials.gate.replay import CannotReplay, replay
from mcptrials.gate.replay_output import cannot_markdown, junit, markdown, text_report


def register(sub) -> None:
    p = sub.add_parser(
        "replay",
        help="send BASE's recorded tool calls to HEAD's servers (no model, no key); exit 1 "
        "when a call that succeeded now errors, finds nothing or its tool is gone",
    )
    p.add_argument("base", metavar="BASE_RESULTS", help="the reference results/ folder, with its runs/ (transcripts)")
    add_config(p, default=None, help="HEAD's config (default $MCPTRIALS_CONFIG, else config.yaml)")
    p.add_argument("--tool", action="append", help="replay only this tool (repeatable; default: every server tool)")
    p.add_argument("--strict", action="store_true", help="also fail on a changed result")
    p.add_argument("--jobs", type=int, help="servers at once (default: twice the machine's cores)")
    p.add_argument("--markdown", help="write a pull-request comment (Markdown) here")
    p.add_argument("--junit", help="write a JUnit XML report here (one testcase per tool)")
    p.add_argument("--json", help="write the whole result as JSON here")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args) -> int:
    config = args.config or os.environ.get("MCPTRIALS_CONFIG") or DEFAULT_CONFIG
    try:
        result = replay(args.base, config, args.tool, args.strict, jobs=args.jobs, config_given=bool(args.config))
    except CannotReplay as e:
        return refuse("replay", "cannot replay", e.reasons, args, cannot_markdown(e.reasons), junit(None, e.reasons))
    print(text_report(result), end="")
    write_outputs(args, markdown(result), junit(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, ensure_ascii=False))
    return 1 if result["failed"] else 0
