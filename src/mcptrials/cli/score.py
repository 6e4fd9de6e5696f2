"""`mcptrials score` (one transcript -> scored.json) and `mcptrials citations` (debug one answer)."""

from __future__ import annotations

import json
import sys

from mcptrials.cli.common import add_config


def register(sub) -> None:
    s = sub.add_parser("score", help="grade one transcript deterministically and write scored.json")
    s.add_argument("--transcript", required=True, help="transcript.json of the trial")
    s.add_argument("--scenario", required=True, help="the scenario YAML file")
    s.add_argument("--repo-dir", required=True, help="a clone of the repository (read at --commit, from git objects)")
    s.add_argument("--commit", required=True, help="the pinned commit")
    add_config(s, default=None, help="config.yaml, for `pricing` and `citation_extensions` (default: none)")
    s.add_argument("--out", required=True, help="where to write scored.json")
    s.set_defaults(func=cmd_score)

    c = sub.add_parser(
        "citations", help="list the citations of one answer, how they ground at a commit and their strict verdict"
    )
    c.add_argument("--repo", required=True, help="a git repository: a clone or a bare mirror (git clone --mirror)")
    c.add_argument("--commit", required=True, help="a commit of it: a full or short id, or any revision (tag, HEAD~1)")
    c.add_argument("--extensions", help="comma-separated citation extensions (default: the built-in list)")
    c.add_argument("file", help="a text file holding the answer, or - for stdin")
    c.set_defaults(func=cmd_citations)


def cmd_score(args) -> int:
    from mcptrials.grade.scoring import score_job

    score_job(args.transcript, args.scenario, args.repo_dir, args.commit, args.config, args.out)
    return 0


def cmd_citations(args) -> int:
    from mcptrials.grade.citations.grading import analyse, public_view
    from mcptrials.grade.gittree import commit_tree

    from mcptrials.matrix.errors import ConfigError

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except FileNotFoundError:
        raise ConfigError(f"{args.file}: answer file not found; give a text file or - for stdin") from None
    exts = [e for e in args.extensions.split(",") if e] if args.extensions else None
    tree = commit_tree(args.repo, args.commit)
    items = [public_view(c) for c in analyse(text, tree, exts)]
    json.dump([_shown(c) for c in items], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


LENIENT = (
    "path_as_cited",
    "resolved_path",
    "resolved_by",
    "lines",
    "symbol",
    "symbol_by",
    "bucket",
    "verification",
    "candidates",
    "spans",
)


def _subject(subject: dict | None) -> dict:
    return {"subject": subject["name"] if subject else None, "subject_from": subject["from"] if subject else None}


def _shown(c: dict) -> dict:
    """One citation as `mcptrials citations` prints it: the lenient fields, then what fairness
    counts (the strict verdict, the form, the subject and where it came from), then each
    occurrence's own strict verdict, subject and, when undetermined, why."""
    return (
        {k: c[k] for k in LENIENT}
        | ({"symlink": c["symlink"]} if c["symlink"] else {})
        | {"form": c["form"], "strict": c["strict"]}
        | _subject(c["subject"])
        | {
            "occurrences": [
                {"span": o["span"], "strict": o["strict"]}
                | _subject(o["subject"])
                | {"undetermined": o["undetermined"]}
                for o in c["by_occurrence"]
            ]
        }
    )
