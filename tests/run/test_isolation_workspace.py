"""A trial's workspace is its own: writing into it, in place, never changes the shared checkout
that every trial's workspace is made from (mcptrials.run.trial.Sandbox.create). A workspace of
hard links would fail this (a write through a link changes the checkout's file): the second
test makes one and shows the check notices, so the first cannot pass by not looking."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from matrix_helpers import make_repo
from mcptrials.run.trial import Sandbox


def digest(tree: Path) -> dict[str, tuple[str, int]]:
    """Every file of the tree: its content's sha256 and its mode."""
    out = {}
    for f in sorted(tree.rglob("*")):
        if f.is_file() and not f.is_symlink():
            out[str(f.relative_to(tree))] = (hashlib.sha256(f.read_bytes()).hexdigest(), f.stat().st_mode)
    return out


def write_like_a_server(workspace: Path) -> None:
    """What a server may do to the files it was given: rewrite in place (no new inode), append,
    truncate, change a mode, and write into the git directory."""
    with open(workspace / "src" / "util.py", "r+") as f:
        f.write("# changed in place\n")
    with open(workspace / "README.md", "a") as f:
        f.write("appended\n")
    os.truncate(workspace / "src" / "app.py", 0)
    os.chmod(workspace / "src" / "util.py", 0o777)
    with open(workspace / ".git" / "HEAD", "r+") as f:
        f.write("ref: refs/heads/other\n")


def changed_by_a_server(checkout: Path, create) -> bool:
    before = digest(checkout)
    sb = create(str(checkout), None)
    try:
        write_like_a_server(sb.workspace)
    finally:
        sb.remove()
    return digest(checkout) != before


def test_a_server_writing_into_its_workspace_leaves_the_checkout_unchanged(tmp_path):
    make_repo(tmp_path / "checkout")
    assert not changed_by_a_server(tmp_path / "checkout", Sandbox.create)


def test_the_check_notices_a_workspace_of_hard_links(tmp_path, monkeypatch):
    make_repo(tmp_path / "checkout")
    linked = shutil.copytree

    def hard_links(src, dst, symlinks=False, ignore=None, copy_function=None, *rest):
        # the protection off: the workspace shares the checkout's inodes (copytree recurses through here)
        return linked(src, dst, symlinks, ignore, os.link, *rest)

    monkeypatch.setattr("mcptrials.run.trial.shutil.copytree", hard_links)
    assert changed_by_a_server(tmp_path / "checkout", Sandbox.create)
