"""A repository as it was at one commit, read from git objects (never the working copy).

The repository may be a clone or a bare mirror; the commit any revision git resolves (a full or
short id, a branch, a tag).

The working copy may have been edited by an agent or by hand after the commit was pinned,
so grounding a citation against it would be wrong (the reference bench's flaw). Listings
and file texts are cached per (repository, commit) for the life of the process.

Symbolic links (git mode 120000) are followed as a checkout would follow them: a link's
target, relative to the link's folder, is read as a path of the same commit; a link in a
folder position (`docs -> site/docs`, cited as `docs/a.md`) too; chains are followed. A
link resolves to nothing, with the reason, when it loops, its target is absolute or leaves
the repository (`..` above the root), or its target is no file of the commit (missing, a
folder, a submodule): `follow`. The text and lines of a path are its final target's.
"""

from __future__ import annotations

import os
from functools import lru_cache

from mcptrials.matrix.errors import ConfigError

SYMLINK_MODE = "120000"  # git's mode of a symbolic link: its blob holds the target path
MAX_LINK_HOPS = 40  # links followed for one path (the kernel's limit), then a loop


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
            raise ConfigError(
                f"{repo_dir}: commit {commit!r} is not in this repository; "
                "give a commit it has (git -C <repo> rev-parse <ref>) or fetch it"
            ) from None
        self.repo_dir = repo_dir
        self.commit = obj.hexsha
        self._blobs: dict[str, str] = {}
        self._links: dict[str, str] = {}  # symbolic links (also in _blobs): path -> blob of the target
        out = self.repo.git.ls_tree("-r", "-z", "--full-tree", tree_sha)
        for entry in out.split("\0"):
            if not entry:
                continue
            meta, path = entry.split("\t", 1)
            mode, kind, sha = meta.split()
            if kind == "blob":  # submodules (kind commit) have no lines to cite
                self._blobs[path] = sha
                if mode == SYMLINK_MODE:
                    self._links[path] = sha
        self._texts: dict[str, str] = {}
        self._lines: dict[str, list[str]] = {}
        self._suffix: dict[str, list[str]] = {}
        self._dirs: set[str] | None = None  # the folders, built the first time one is asked for

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
        """The file's text; a symbolic link's is its final target's ("" when it leads to no file)."""
        if self._links and self.through_link(path):
            real = self.follow(path)[0]
            return self.text(real) if real is not None else ""
        return self._blob_text(path)

    def _blob_text(self, path: str) -> str:
        if path not in self._texts:
            data = self.repo.odb.stream(bytes.fromhex(self._blobs[path])).read()
            self._texts[path] = data.decode("utf-8", errors="replace")
        return self._texts[path]

    def through_link(self, path: str) -> bool:
        """Whether reading `path` goes through a symbolic link: it is one, or a folder of it is."""
        if not self._links:
            return False
        if path in self._links:
            return True
        parts = path.split("/")
        return any("/".join(parts[:k]) in self._links for k in range(1, len(parts)))

    def follow(self, path: str) -> tuple[str | None, list[str], str | None]:
        """(the file `path` reads, the links followed as "link -> target", why it reads no file).

        Each component is looked up in turn; a link's target replaces it, read from the link's
        folder (`.` and `..` as a checkout reads them). Unresolved, with the reason: a loop (the
        same link met again with the same rest of the path, or more than MAX_LINK_HOPS links), an
        absolute target, a `..` above the repository's root, a final path that is no file of the
        commit. A path through no link is itself (or unresolved when it is no file)."""
        hops: list[str] = []
        seen: set[tuple[str, tuple[str, ...]]] = set()
        done: list[str] = []
        parts = path.split("/")
        while parts:
            comp = parts.pop(0)
            if comp in ("", "."):
                continue
            if comp == "..":
                if not done:
                    return None, hops, f"{_chain(path, hops)} leaves the repository"
                done.pop()
                continue
            cur = "/".join(done + [comp])
            if cur in self._links:
                if (cur, tuple(parts)) in seen or len(hops) >= MAX_LINK_HOPS:
                    return None, hops, f"{_chain(path, hops)}: a symlink loop"
                seen.add((cur, tuple(parts)))
                target = self._blob_text(cur).strip("\n")
                hops.append(f"{cur} -> {target}")
                if target.startswith("/"):
                    return None, hops, f"{_chain(path, hops)}: an absolute target, outside the repository"
                parts = target.split("/") + parts  # read from the link's folder (done)
                continue
            done.append(comp)
        final = "/".join(done)
        if final in self._blobs and final not in self._links:
            return final, hops, None
        what = "a folder" if self.has_dir(final) else "not in the commit"
        return None, hops, f"{_chain(path, hops)}: the target {final} is {what}"

    def real(self, path: str) -> str:
        """The file a path reads: a symbolic link's final target, else the path itself."""
        if self._links and self.through_link(path):
            return self.follow(path)[0] or path
        return path

    def lines(self, path: str) -> list[str]:
        """Lines as git and editors number them: split on \n only (str.splitlines would also
        split on form feeds and other separators that old sources contain), and a final
        newline does not start a new line."""
        cache = self._lines
        if path not in cache:  # a file is split once (a commit's files never change)
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


def _chain(path: str, hops: list[str]) -> str:
    """The links followed, for a reason: `symlink README.md -> docs/README.md -> ../x` (a chain),
    `symlink docs -> site/docs` (a folder of the path)."""
    if not hops:
        return path
    out, last = hops[0], hops[0].split(" -> ", 1)[1]
    for h in hops[1:]:
        link, target = h.split(" -> ", 1)
        out += f" -> {target}" if link == last else f"; {h}"
        last = target
    return "symlink " + out


@lru_cache(maxsize=16)
def _cached(repo_dir: str, commit: str) -> CommitTree:
    return CommitTree(repo_dir, commit)


def commit_tree(repo_dir, commit: str) -> CommitTree:
    """The cached CommitTree of (repo_dir, commit); a full 40-hex id hits the cache directly."""
    return _cached(os.path.realpath(str(repo_dir)), commit)
