"""The held-out anchor's commands (mcptrials.analyze.lock): `mcptrials verify-lock` (check the
set against its lockfile), `mcptrials lock` (re-anchor on purpose) and `mcptrials heldout`
(re-judge the set and compute Spearman's rho against gold)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcptrials.analyze.lock import LOCKFILE, LockError, format_problems, git_untracked, heldout_job, record_verified
from mcptrials.analyze.lock import read_lockfile, write_lock
from mcptrials.cli.common import add_config, load_config


def register(sub) -> None:
    v = sub.add_parser("verify-lock", help="check the held-out set against its lockfile")
    v.add_argument("--locked", default="locked", help="the held-out folder (default locked)")
    v.add_argument("--out", default="results/lock/verified.json", help="written only when the check passes")
    v.set_defaults(func=cmd_verify_lock)

    lk = sub.add_parser("lock", help="re-anchor the held-out set on purpose: rewrite its lockfile")
    lk.add_argument("--reason", required=True, help="why the held-out set changed (kept in the lockfile's history)")
    lk.add_argument("--locked", default="locked")
    lk.add_argument("--who", help="who re-anchors (default: git config user.name, else $USER)")
    lk.set_defaults(func=cmd_lock)

    h = sub.add_parser("heldout", help="re-judge the held-out set and compute Spearman's rho against gold")
    h.add_argument("--locked", help="the held-out folder (default: the config's `locked:`)")
    add_config(h)
    h.add_argument("--prompt", default=None, help="the judge prompt file (default: the packaged prompts/judge.md)")
    h.add_argument("--out", default="results/heldout/agreement.json")
    h.set_defaults(func=cmd_heldout)


def cmd_verify_lock(args) -> int:
    problems = record_verified(args.locked, args.out)
    if problems:
        print(f"mcptrials verify-lock: {format_problems(problems)}", file=sys.stderr)
        return 1
    print(f"{args.locked}: {len(read_lockfile(args.locked)['files'])} locked file(s) match {LOCKFILE}")
    return 0


def cmd_lock(args) -> int:
    data = write_lock(args.locked, args.reason, args.who)
    last = data["history"][-1]
    print(
        f"{Path(args.locked) / LOCKFILE}: pinned {len(data['files'])} file(s) ({last['who']}, {last['when']}); "
        "commit locked/ so the check passes on a fresh clone"
    )
    untracked = git_untracked(args.locked)
    if untracked:
        print(f"note: not yet in git: {', '.join(untracked)}; `git add {args.locked}` before committing")
    return 0


def cmd_heldout(args) -> int:
    try:
        result = heldout_job(load_config(args), args.out, args.locked, args.prompt)
    except LockError as e:
        print(f"mcptrials heldout: {e}", file=sys.stderr)
        return 1
    if result["anchor"] is None:
        print(f"{args.out}: {result['reason']}")
        return 0
    rho = "undefined" if result["rho"] is None else f"{result['rho']:.3f}"
    ci = "" if result["lo"] is None else f" [{result['lo']:.2f}, {result['hi']:.2f}]"
    print(f"{args.out}: held-out Spearman rho {rho}{ci} (n={result['n']}) against gold, anchor {result['anchor']}")
    return 0
