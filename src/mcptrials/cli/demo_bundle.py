"""`mcptrials demo-bundle`: build demo/shop.bundle (mcptrials.prepare.demo_repo) and print
its commit id."""

from __future__ import annotations

from mcptrials.prepare.demo_repo import DEMO_BUNDLE, DEMO_SRC, MESSAGE, build_bundle


def register(sub) -> None:
    p = sub.add_parser(
        "demo-bundle", help="build demo/shop.bundle (one commit with a fixed id) and print the commit id"
    )
    p.add_argument("--src", default=str(DEMO_SRC), help="folder with the demo code (default: demo/shop)")
    p.add_argument("--out", default=str(DEMO_BUNDLE), help="bundle to write (default: demo/shop.bundle)")
    p.add_argument("--message", default=MESSAGE, help="the commit message (default: the demo's)")
    p.set_defaults(func=cmd_demo_bundle)


def cmd_demo_bundle(args) -> int:
    print(build_bundle(args.src, args.out, args.message))
    return 0
