"""`mcptrials score` (one transcript -> scored.json) and `mcptrials citations` (debug one answer)."""

from __future__ import annotations

import json
import sys


def register(sub) -> None:
    s = sub.add_parser("score", help="grade one transcript deterministically and write scored.json")
    s.add_argument("--transcript", required=True, help="transcript.json of the trial")
    s.add_argument("--scenario", required=True, help="the scenario YAML file")
    s.add_argument("--repo-dir", required=True, help="a clone of the repository (read at --commit, from git objects)")
    s.add_argument("--commit", required=True, help="the pinned commit")
    s.add_argument("--config", help="config.yaml, for `pricing` and `citation_extensions`")
    s.add_argument("--out", required=True, help="where to write scored.json")
    s.set_defaults(func=cmd_score)

    c = sub.add_parser("citations", help="list the citations of one answer and how they ground at a commit")
    c.add_argument("--repo", required=True, help="a git repository: a clone or a bare mirror (git clone --mirror)")
    c.add_argument("--commit", required=True, help="a commit of it: a full or short id, or any revision (tag, HEAD~1)")
    c.add_argument("--extensions", help="comma-separated citation extensions (default: the built-in list)")
    c.add_argument("file", help="a text file holding the answer, or - for stdin")
    c.set_defaults(func=cmd_citations)


def _read_config_bits(path: str, repo: str | None = None) -> tuple[dict, list | None, str | None]:
    """pricing, citation_extensions and the repo's `unresolved` reason of a config, without
    checking its scenarios."""
    from mcptrials.matrix.config import read_config_files
    from mcptrials.matrix.schema import validate_against

    main, data = read_config_files(path)     # one file, or several joined by os.pathsep
    validate_against("config.schema.yaml", data, str(main))
    unresolved = (data["repos"].get(repo) or {}).get("unresolved") if repo else None
    return data["pricing"], data.get("citation_extensions"), unresolved   # pricing: the schema fills {}


def cmd_score(args) -> int:
    from pathlib import Path

    from mcptrials.matrix.errors import ConfigError
    from mcptrials.matrix.scenario import load_scenario
    from mcptrials.core.records import read_json, write_json
    from mcptrials.grade.scoring import score_trial

    try:
        transcript = read_json(args.transcript)
    except FileNotFoundError:
        raise ConfigError(f"{args.transcript}: transcript not found; check --transcript") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{args.transcript}: not valid JSON ({e}); rerun the trial") from None
    scenario = load_scenario(Path(args.scenario))
    pricing, extensions, unresolved = (_read_config_bits(args.config, scenario.data.get("repo")) if args.config
                                       else (None, None, None))
    if unresolved is None:   # a checkout that failed (mcptrials.core.failures): no tree to check citations in
        from mcptrials.core.failures import failure

        co = Path(args.repo_dir).parent / "checkout.json"
        unresolved = failure(json.loads(co.read_text())) if co.is_file() else None
    record = score_trial(transcript, scenario.data, args.repo_dir, args.commit, pricing, extensions,
                         not_checked=unresolved)
    record["scenario_sha256"] = scenario.sha256
    write_json(args.out, record)
    return 0


def cmd_citations(args) -> int:
    from mcptrials.grade.citations import analyse, public_view
    from mcptrials.grade.gittree import commit_tree

    from mcptrials.matrix.errors import ConfigError

    try:
        text = sys.stdin.read() if args.file == "-" else open(args.file, encoding="utf-8").read()
    except FileNotFoundError:
        raise ConfigError(f"{args.file}: answer file not found; give a text file or - for stdin") from None
    exts = [e for e in args.extensions.split(",") if e] if args.extensions else None
    tree = commit_tree(args.repo, args.commit)
    items = [public_view(c) for c in analyse(text, tree, exts)]
    keys = ("path_as_cited", "resolved_path", "resolved_by", "lines", "symbol", "symbol_by", "bucket", "verification",
            "candidates", "spans")
    json.dump([{k: c[k] for k in keys} for c in items], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
