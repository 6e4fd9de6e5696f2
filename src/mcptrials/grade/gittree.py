"""A repository as it was at one commit, read from git objects (never the working copy).

The repository may be a clone or a bare mirror; the commit any revision git resolves (a full or
short id, a branch, a tag).

The working copy may have been edited by an agent or by hand after the commit was pinned,
so grounding a citation against it would be wrong (the reference bench's flaw). Listings
and file texts are cached per (repository, commit) for the life of the process.
"""

from __future__ import annotations

import os
from functools import lru_cache

from mcptrials.matrix.errors import ConfigError


class CommitTree:
    """The files of `repo_dir` at `commit`: paths, line counts and texts."""

    def __init__(self, repo_dir: str, commit: str):
        import git  # gitpython; imported here so `mcptrials --help` stays fast

        try:
            self.repo = git.Repo(repo_dir)  # a clone or a bare mirror (git clone --mirror)
        except (git.NoSuchPathError, git.InvalidGitRepositoryError):
            raise ConfigError(f"{repo_dir}: not a git repository; give --repo a clone or a bare mirror") from None
        # Name the git directory in every git command this repo runs (rev-parse, ls-tree, cat-file):
        # git then never discovers a repository from the working directory, so a bare mirror works
        # even where safe.bareRepository=explicit, and no enclosing repository is read by mistake.
        self.repo.git.update_environment(GIT_DIR=self.repo.git_dir)
        try:
            # Any revision: a full or short commit id, a branch, a tag, HEAD~1. repo.commit() is lazy
            # (a well-formed but absent id resolves), so reading its tree makes a missing commit fail here.
            obj = self.repo.commit(commit)
            tree_sha = obj.tree.hexsha
        except (git.exc.ODBError, ValueError, git.GitCommandError):  # BadName, BadObject, ambiguous
            raise ConfigError(f"{repo_dir}: commit {commit!r} is not in this repository; "
                              "give a commit it has (git -C <repo> rev-parse <ref>) or fetch it") from None
        self.repo_dir = repo_dir
        self.commit = obj.hexsha
        self._blobs: dict[str, str] = {}
        out = self.repo.git.ls_tree("-r", "-z", "--full-tree", tree_sha)
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            _mode, kind, sha = meta.split()
            if kind == "blob":  # submodules (kind commit) have no lines to cite
                self._blobs[path] = sha
        self._texts: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}
        self._suffix: dict[str, list[str]] = {}
        self._dirs: set[str] | None = None      # the folders, built the first time one is asked for

    @property
    def paths(self) -> list[str]:
        return list(self._blobs)

    def has(self, path: str) -> bool:
        return path in self._blobs

    def has_dir(self, path: str) -> bool:
        """Whether `path` is a folder of the commit (one holding a file, at any depth)."""
        if self._dirs is None:
            self._dirs = {p[:i] for p in self._blobs for i in range(len(p)) if p[i] == "/"}
        return path in self._dirs

    def text(self, path: str) -> str:
        if path not in self._texts:
            data = self.repo.odb.stream(bytes.fromhex(self._blobs[path])).read()
            self._texts[path] = data.decode("utf-8", errors="replace")
        return self._texts[path]

    def lines(self, path: str) -> list[str]:
        """Lines as git and editors number them: split on \n only (str.splitlines would also
        split on form feeds and other separators that old sources contain), and a final
        newline does not start a new line."""
        cache = self._lines
        if path not in cache:               # a file is split once (a commit's files never change)
            text = self.text(path)
            parts = text.split("\n") if text else []
            if parts and parts[-1] == "":
                parts.pop()
            cache[path] = [p.rstrip("\r") for p in parts]
        return cache[path]

    def line_count(self, path: str) -> int:
        return len(self.lines(path))

    def suffix_matches(self, cited: str) -> list[str]:
        """Files whose path ends with `cited` on a component boundary."""
        cache = self._suffix
        if cited not in cache:
            tail = "/" + cited
            cache[cited] = sorted(p for p in self._blobs if p.endswith(tail))
        return list(cache[cited])


@lru_cache(maxsize=16)
def _cached(repo_dir: str, commit: str) -> CommitTree:
    return CommitTree(repo_dir, commit)


def commit_tree(repo_dir, commit: str) -> CommitTree:
    """The cached CommitTree of (repo_dir, commit); a full 40-hex id hits the cache directly."""
    return _cached(os.path.realpath(str(repo_dir)), commit)
