"""Pinned checkouts: clone a repo (URL, local path or bundle) and check out one exact commit."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from .config import ConfigError
from .records import project_path, write_json


def checkout(repo_name: str, source: str, url: str, commit: str, dest: Path) -> dict:
    """Clone `source` into dest/tree at `commit`; verify HEAD; return the checkout record.

    `url` is what the config names (records keep it); `source` is where we actually
    clone from (the url itself, or a local mirror of it).
    """
    import git

    tree = dest / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    t0 = time.monotonic()
    try:
        repo = git.Repo.clone_from(source, tree, no_checkout=True)
    except git.GitCommandError as e:
        raise ConfigError(
            f"repos.{repo_name}.url: cannot clone {source!r}: {e.stderr.strip() or e}; "
            "fix the url (a remote URL, a local repository path or a bundle file) or add a mirror"
        ) from None
    try:
        repo.git.checkout("--detach", commit)
    except git.GitCommandError:
        # A shallow or partial remote may lack the commit until fetched by id.
        try:
            repo.git.fetch("origin", commit)
            repo.git.checkout("--detach", commit)
        except git.GitCommandError:
            shutil.rmtree(tree, ignore_errors=True)
            raise ConfigError(
                f"repos.{repo_name}.commit: commit {commit} does not exist in {url}; "
                "give a full commit id that is in the repository (git log --format=%H)"
            ) from None
    head = repo.head.commit.hexsha
    if head != commit:
        raise ConfigError(f"repos.{repo_name}.commit: HEAD is {head} after checkout, expected {commit}")
    files = len(repo.git.ls_files().splitlines())
    return {
        "repo": repo_name,
        "url": url,
        "cloned_from": project_path(source) if source != url else None,
        "commit": head,
        "tree": project_path(tree),
        "files": files,
        "seconds": round(time.monotonic() - t0, 3),
    }


def register(sub) -> None:
    p = sub.add_parser("checkout", help="clone a config repo at its pinned commit")
    p.add_argument("--config", default="config.yaml")
    p.add_argument("--repo", required=True)
    p.add_argument("--out", required=True, help="the checkout record, results/checkouts/<repo>/checkout.json")
    p.set_defaults(func=_cmd)


def _cmd(args) -> int:
    from .config import load_matrix

    m = load_matrix(args.config)
    if args.repo not in m.repos:
        raise ConfigError(f"{m.path}: field repos: no repo {args.repo!r}")
    spec = m.repos[args.repo]
    out = Path(args.out)
    if spec.get("unresolved"):   # no full commit to check out: recorded runs, citations not checked
        rec = {"repo": args.repo, "url": spec["url"], "cloned_from": None, "commit": spec["commit"], "tree": None,
               "files": None, "seconds": 0.0, "unresolved": spec["unresolved"]}
    else:
        rec = checkout(args.repo, m.repo_source(args.repo), spec["url"], spec["commit"], out.parent)
    write_json(out, rec)
    print(json.dumps(rec))
    return 0
