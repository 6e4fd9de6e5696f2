"""Pinned checkouts: clone a repo (URL, local path or bundle) and check out one exact commit.

A checkout is written aside and then moved into place, so a failed one (a typo in the
commit, a source out of reach) never costs the previous good tree. `check_commits` says,
before any job (`mcptrials validate` and the run's start), whether each local repository
or bundle holds its pinned commit: a typo then stops the run before the checkout job
(whose output Snakemake would delete, rerunning every trial once the typo is fixed).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.core.records import project_path, write_json


def checkout(repo_name: str, source: str, url: str, commit: str, dest: Path) -> dict:
    """Clone `source` at `commit` beside dest/tree, verify HEAD, then move it to dest/tree
    (replacing the previous one only now); return the checkout record.

    `url` is what the config names (records keep it); `source` is where we actually
    clone from (the url itself, or a local mirror of it).
    """
    tree = dest / "tree"
    dest.mkdir(parents=True, exist_ok=True)
    for left in [*dest.glob("tree.new-*"), *dest.glob("tree.old-*")]:  # of a run killed mid-way
        shutil.rmtree(left, ignore_errors=True)
    new = Path(tempfile.mkdtemp(prefix="tree.new-", dir=dest))
    t0 = time.monotonic()
    try:
        head, files = _clone_at(repo_name, source, url, commit, new)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)  # the previous tree, if any, stays as it was
        raise
    if tree.exists():
        old = dest / f"tree.old-{os.getpid()}"
        tree.rename(old)
        new.rename(tree)
        shutil.rmtree(old, ignore_errors=True)
    else:
        new.rename(tree)
    return {
        "repo": repo_name,
        "url": url,
        "cloned_from": project_path(source) if source != url else None,
        "commit": head,
        "tree": project_path(tree),
        "files": files,
        "seconds": round(time.monotonic() - t0, 3),
    }


def _clone_at(repo_name: str, source: str, url: str, commit: str, tree: Path) -> tuple[str, int]:
    """Clone `source` into the (empty) folder `tree` at `commit`; (HEAD, number of files)."""
    import git

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
            raise ConfigError(
                f"repos.{repo_name}.commit: commit {commit} does not exist in {url}; "
                "give a full commit id that is in the repository (git log --format=%H)"
            ) from None
    head = repo.head.commit.hexsha
    if head != commit:
        raise ConfigError(f"repos.{repo_name}.commit: HEAD is {head} after checkout, expected {commit}")
    return head, len(repo.git.ls_files().splitlines())


# --- before any job: does a local source hold the pinned commit? ------------------------------


def is_local(source: str) -> bool:
    return "://" not in source and not source.startswith("git@")


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], capture_output=True, text=True)


def holds_commit(source: Path, commit: str) -> bool | None:
    """Whether a local repository (a folder) or bundle (a file) holds `commit`; None when
    it is neither. A bundle is read by its heads first, and unpacked into a scratch
    repository only when the commit is no head."""
    if source.is_dir():
        if _git("-C", str(source), "rev-parse", "--git-dir").returncode != 0:
            return None
        return _git("-C", str(source), "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0
    heads = _git("bundle", "list-heads", str(source))
    if heads.returncode != 0:
        return None
    if commit in {line.split()[0] for line in heads.stdout.splitlines() if line.strip()}:
        return True
    with tempfile.TemporaryDirectory(prefix="mcptrials-bundle-") as scratch:
        if _git("clone", "-q", "--bare", str(source), scratch + "/r").returncode != 0:
            return None
        return _git("-C", scratch + "/r", "cat-file", "-e", f"{commit}^{{commit}}").returncode == 0


def check_commits(m) -> list[str]:
    """Why a run's repositories cannot be checked out, as far as the local ones tell without
    the network (empty when they can): a local source (the url, or its mirror) that does not
    exist or is not a repository or bundle, or does not hold the pinned commit. A remote
    URL is the checkout job's to try."""
    if shutil.which("git") is None:
        return [
            f"{m.path}: field repos: git is not on PATH, and every checkout needs it; install git "
            "(`apt-get install git`) or put it on PATH"
        ]
    problems = []
    for repo in m.run_repos():
        url, commit = m.repos[repo]["url"], m.repos[repo]["commit"]
        mirror = m.config["mirrors"].get(url)
        given = mirror if mirror is not None else url
        if not is_local(given):
            continue
        source = Path(m.repo_source(repo))
        field = f"mirrors.{url}" if mirror is not None else f"repos.{repo}.url"
        if not source.exists():
            problems.append(
                f"{m.path}: field {field}: {given!r} ({source}) does not exist; fix the path (relative "
                "to the config's folder): a repository folder or a bundle file"
            )
            continue
        held = holds_commit(source, commit)
        kind = "repository" if source.is_dir() else "bundle"
        if held is None:
            problems.append(
                f"{m.path}: field {field}: {given!r} ({source}) is neither a git repository nor a "
                "bundle; give a repository folder, a bundle (`git bundle create x.bundle --all`) or a URL"
            )
        elif not held:
            here = shlex.quote(project_path(source))  # as the user can run it: from the working directory, or absolute
            look = f"git -C {here} log --all --format=%H" if kind == "repository" else f"git bundle list-heads {here}"
            of = f", the mirror of {url}" if mirror is not None else ""
            problems.append(
                f"{m.path}: field repos.{repo}.commit: {commit} is not in {given} (a local {kind}{of}); "
                f"give a commit it holds (`{look}`), or fix repos.{repo}.url"
            )
    return problems


def checkout_repo(m, repo: str, out: Path, attempt: int = 0) -> dict:
    """Check out a config repo at its pinned commit beside `out` and write its checkout record
    there. A repo without a full commit (`unresolved`: recorded runs, citations not checked)
    has nothing to check out; a clone that fails is recorded as failed, missing data
    (mcptrials.core.failures), not raised."""
    if repo not in m.repos:
        raise ConfigError(f"{m.path}: field repos: no repo {repo!r}")
    spec = m.repos[repo]
    if spec.get("unresolved"):
        rec = {
            "repo": repo,
            "url": spec["url"],
            "cloned_from": None,
            "commit": spec["commit"],
            "tree": None,
            "files": None,
            "seconds": 0.0,
            "unresolved": spec["unresolved"],
            "attempt": attempt,
        }
    else:
        try:
            rec = dict(checkout(repo, m.repo_source(repo), spec["url"], spec["commit"], out.parent), attempt=attempt)
        except Exception as e:  # noqa: BLE001 - unreachable or missing commit: missing data (mcptrials.core.failures)
            from mcptrials.core.failures import failed_record

            rec = failed_record("checkout", e, attempt, repo=repo, url=spec["url"], commit=spec["commit"])
    write_json(out, rec)
    return rec
