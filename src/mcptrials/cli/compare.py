"""`mcptrials compare BASE_RESULTS HEAD_RESULTS`: the regression gate for CI, run against run
(mcptrials.gate.compare). Exit 1 on a regression or a deterministic failure, 2 when the runs
cannot be compared."""

from __future__ import annotations

import sys

from mcptrials.cli.common import add_config
from mcptrials.gate.comparable import Refused, head_config, load_results
from mcptrials.gate.compare import compare_runs
from mcptrials.gate.compare_report import junit, markdown, refusal_markdown, text_report
from mcptrials.gate.findings import DEFAULT_ERROR_RISE
from mcptrials.gate.output import refuse, write_outputs
from mcptrials.matrix.errors import ConfigError


def register(sub) -> None:
    p = sub.add_parser(
        "compare",
        help="compare two results folders (BASE, HEAD) paired by model, host, tool and "
        "scenario; exit 1 on a regression or a deterministic failure, 2 when not comparable",
    )
    p.add_argument("base", metavar="BASE_RESULTS", help="the reference results/ folder (e.g. main's stored results)")
    p.add_argument("head", metavar="HEAD_RESULTS", help="the results/ folder under test (e.g. the pull request's)")
    p.add_argument("--tool", action="append", help="compare only this tool (repeatable; default: every tool)")
    p.add_argument(
        "--margin",
        type=float,
        default=None,
        help="non-inferiority margin in fairness points, 0-1 (default: the config's `margin:`, the "
        "smallest difference that matters, as HEAD's summary.json records it)",
    )
    p.add_argument(
        "--error-rise",
        type=float,
        default=DEFAULT_ERROR_RISE,
        help=f"fail when the server tools' error rate rises by more than this share (default {DEFAULT_ERROR_RISE})",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--strict", action="store_true", help="also fail a tool whose non-inferiority is not shown (inconclusive)"
    )
    mode.add_argument(
        "--lenient", action="store_true", help="pass a probable regression (inconclusive, point estimate below -margin)"
    )
    add_config(
        p,
        default=None,
        help="the config HEAD was run with (files joined by ':'; default: the ones HEAD's "
        "summary.json names, from HEAD's project); stale results are refused",
    )
    p.add_argument(
        "--no-config-check",
        action="store_true",
        help="do not check HEAD's results against its config (e.g. hand-copied folders)",
    )
    p.add_argument("--junit", help="write a JUnit XML report here (one testcase per tool)")
    p.add_argument("--markdown", help="write a pull-request comment (Markdown) here")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    if args.margin is not None and args.margin < 0:
        raise ConfigError(f"--margin {args.margin:g}: the margin must be >= 0 (fairness points, e.g. 0.05)")
    if not 0 <= args.error_rise <= 1:
        raise ConfigError(f"--error-rise {args.error_rise:g}: give a share between 0 and 1 (e.g. 0.2)")
    if args.strict and args.lenient:
        raise ConfigError(
            "--strict and --lenient: choose one (strict fails every inconclusive tool, lenient passes a "
            "probable regression)"
        )
    base, head = load_results(args.base), load_results(args.head)
    try:
        config = None if args.no_config_check else head_config(args.head, head["summary"]["identity"], args.config)
        result = compare_runs(base, head, args.margin, args.tool, args.strict, args.lenient, args.error_rise, config)
    except Refused as e:
        return refuse(
            "compare",
            "refused: the two runs cannot be compared",
            e.reasons,
            args,
            refusal_markdown(e.reasons),
            junit(None, e.reasons),
        )
    print(text_report(result), end="")
    for note in result["notes"]:
        print(f"mcptrials compare: note: {note}", file=sys.stderr)
    write_outputs(args, markdown(result), junit(result))
    return 1 if result["failed"] else 0
