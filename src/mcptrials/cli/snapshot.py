"""`mcptrials snapshot`: start a tool's server against a checkout and record its tools/list
(mcptrials.prepare.snapshot)."""

from __future__ import annotations

from pathlib import Path

from mcptrials.cli.common import add_config


def register(sub) -> None:
    p = sub.add_parser("snapshot", help="start a tool's server against a checkout and record tools/list")
    add_config(p)
    p.add_argument("--tool", required=True)
    p.add_argument("--repo", required=True)
    p.add_argument("--checkout", required=True, help="results/checkouts/<repo>/checkout.json")
    p.add_argument("--install", help="results/tools/<tool>/install.json")
    p.add_argument("--index", help="results/index/<tool>/<repo>/ (when the tool has an index step)")
    p.add_argument("--out", required=True)
    p.add_argument(
        "--estimate-only",
        action="store_true",
        help="estimate the tool definitions' tokens (chars/4), never call the count-tokens endpoint",
    )
    p.set_defaults(func=cmd_snapshot)


def cmd_snapshot(args) -> int:
    from mcptrials.prepare.snapshot import make_snapshot

    rec = make_snapshot(
        args.config,
        args.tool,
        args.repo,
        Path(args.checkout),
        Path(args.install) if args.install else None,
        Path(args.index) if args.index else None,
        Path(args.out),
        not args.estimate_only,
    )
    if rec.get("unavailable"):
        print(f"{args.tool}/{args.repo}: not started: {rec['unavailable']}")
    elif rec.get("error"):
        print(f"{args.tool}/{args.repo}: the server did not start: {rec['error']}")
    else:
        print(
            f"{args.tool}/{args.repo}: {len(rec['tools'])} tools, sha256 {rec['tools_sha256'][:12]}, "
            f"server {rec.get('server_name')} {rec.get('server_version')}"
        )
        print(
            f"{args.tool}/{args.repo}: tool definitions {rec['definition_tokens']} tokens per request "
            f"({rec['definition_tokens_method']})"
            + (f"; {rec['definition_tokens_error']}" if rec.get("definition_tokens_error") else "")
        )
    return 0
