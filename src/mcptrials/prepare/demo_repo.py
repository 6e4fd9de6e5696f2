"""The demo repository: demo/shop as a git bundle with one commit whose id never changes.

The commit id depends only on the files' bytes and paths: the author, committer,
dates, message and file modes are fixed, the tree is built with git plumbing
(no work tree, so no attributes, filters or line-ending conversion), and git runs
with a clean environment (no system or user config, no hooks). Building twice,
on any machine, gives the same id; the config pins it as `repos.demo.commit`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.core.paths import ROOT

DEMO_SRC = ROOT / "demo" / "shop"
DEMO_BUNDLE = ROOT / "demo" / "shop.bundle"
BRANCH = "main"

# Fixed identity and time (2024-05-01 12:00:00 UTC, git's raw "epoch offset" form).
IDENTITY = {
    "GIT_AUTHOR_NAME": "ACME Shop",
    "GIT_AUTHOR_EMAIL": "dev@acme.example",
    "GIT_AUTHOR_DATE": "1714564800 +0000",
    "GIT_COMMITTER_NAME": "ACME Shop",
    "GIT_COMMITTER_EMAIL": "dev@acme.example",
    "GIT_COMMITTER_DATE": "1714564800 +0000",
}
MESSAGE = "acme-shop 1.4.2\n"
FILE_MODE = "100644"

# Generated files that running the demo's code or tests leaves behind; never part of the repo.
IGNORED_NAMES = {"__pycache__", ".pytest_cache", ".mypy_cache", ".git", "var"}
IGNORED_SUFFIXES = (".pyc", ".pyo", ".egg-info")


def demo_files(src_dir) -> list[str]:
    """The repository's files: relative POSIX paths under src_dir, sorted, generated files left out."""
    src = Path(src_dir)
    if not src.is_dir():
        raise ConfigError(f"{src}: demo source folder not found; pass --src with the folder holding the demo code")
    out = []
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames[:] = [d for d in dirnames if d not in IGNORED_NAMES and not d.endswith(IGNORED_SUFFIXES)]
        for name in filenames:
            if name in IGNORED_NAMES or name.endswith(IGNORED_SUFFIXES):
                continue
            out.append(Path(dirpath, name).relative_to(src).as_posix())
    if not out:
        raise ConfigError(f"{src}: no files to put in the demo repository")
    return sorted(out)


def _git(args: list[str], env: dict, cwd=None, input: bytes | None = None) -> str:
    r = subprocess.run(
        [
            "git",
            "-c",
            "core.autocrlf=false",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "commit.gpgSign=false",
            *args,
        ],
        cwd=cwd,
        env=env,
        input=input,
        capture_output=True,
    )
    if r.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed ({r.returncode}): {r.stderr.decode(errors='replace').strip()}")
    return r.stdout.decode().strip()


def clean_git_env(home: Path, git_dir: Path | None = None) -> dict:
    """An environment in which no user, system or inherited git setting can reach git."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "LC_ALL": "C",
        "TZ": "UTC",
        **IDENTITY,
    }
    if git_dir is not None:
        env["GIT_DIR"] = str(git_dir)
    return env


def build_bundle(src_dir=DEMO_SRC, bundle_path=DEMO_BUNDLE, message: str = MESSAGE) -> str:
    """Make src_dir's files one commit on branch `main`, write it as a git bundle, return the commit id.
    Other fixed repositories (the data pack's fixture) give their own `message`; the demo's default
    keeps its commit id."""
    files = demo_files(src_dir)
    src = Path(src_dir)
    bundle_path = Path(bundle_path)
    with tempfile.TemporaryDirectory(prefix="mcptrials-demo-") as tmp:
        home = Path(tmp, "home")
        home.mkdir()
        git_dir = Path(tmp, "repo.git")
        env = clean_git_env(home)
        _git(["init", "-q", "--bare", str(git_dir)], env)
        env = clean_git_env(home, git_dir)
        for rel in files:
            # --no-filters: store the bytes exactly as they are on disk.
            blob = _git(["hash-object", "-w", "--no-filters", "--stdin"], env, input=(src / rel).read_bytes())
            _git(["update-index", "--add", "--cacheinfo", f"{FILE_MODE},{blob},{rel}"], env)
        tree = _git(["write-tree"], env)
        commit = _git(["commit-tree", tree], env, input=message.encode())
        _git(["update-ref", f"refs/heads/{BRANCH}", commit], env)
        _git(["symbolic-ref", "HEAD", f"refs/heads/{BRANCH}"], env)
        bundle_path.parent.mkdir(parents=True, exist_ok=True)
        tmp_bundle = Path(tmp, "out.bundle")
        # HEAD too, so that `git clone shop.bundle` checks out main.
        _git(["bundle", "create", "-q", str(tmp_bundle), "HEAD", BRANCH], env)
        shutil.copyfile(tmp_bundle, bundle_path)
    return commit


def bundle_commit(bundle_path=DEMO_BUNDLE) -> str:
    """The commit id of branch main in a bundle file."""
    bundle_path = Path(bundle_path)
    if not bundle_path.is_file():
        raise ConfigError(f"{bundle_path}: bundle not found; build it with `mcptrials demo-bundle`")
    with tempfile.TemporaryDirectory(prefix="mcptrials-demo-") as tmp:
        out = _git(
            ["bundle", "list-heads", str(bundle_path.resolve()), f"refs/heads/{BRANCH}"],
            clean_git_env(Path(tmp)),
            cwd=tmp,
        )
    if not out:
        raise ConfigError(
            f"{bundle_path}: the bundle has no refs/heads/{BRANCH}; rebuild it with `mcptrials demo-bundle`"
        )
    return out.split()[0]
