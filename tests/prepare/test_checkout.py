"""Pinned checkouts that a typo cannot cost (issue 27):

- a failed checkout (a commit the repository does not hold, a source that cannot be
  cloned) leaves the previous good tree as it was: the new one is written aside, then moved;
- `mcptrials validate` refuses a commit that a local repository or bundle (or a URL's local
  mirror) does not hold, and a local source that does not exist, naming the file, the field
  and the fix; a remote URL is left to the checkout job.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from matrix_helpers import FILES, make_repo, write_matrix
from mcptrials.prepare.checkout import check_commits, checkout
from mcptrials.cli import main as cli_main
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError

MISSING = "0123456789abcdef0123456789abcdef01234567"  # a well-formed commit id no repository holds


def head(tree: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=tree, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_a_failed_checkout_keeps_the_previous_good_one(tmp_path):
    commit = make_repo(tmp_path / "repo")
    dest = tmp_path / "co"
    rec = checkout("tiny", str(tmp_path / "repo"), "repo", commit, dest)
    assert head(dest / "tree") == commit and rec["files"] == len(FILES)
    with pytest.raises(ConfigError, match=f"repos.tiny.commit: commit {MISSING} does not exist"):
        checkout("tiny", str(tmp_path / "repo"), "repo", MISSING, dest)
    with pytest.raises(ConfigError, match="repos.tiny.url: cannot clone"):
        checkout("tiny", str(tmp_path / "nowhere"), "nowhere", commit, dest)
    # the good tree is untouched, and nothing of the failed attempts is left beside it
    assert head(dest / "tree") == commit and (dest / "tree" / "src" / "util.py").is_file()
    assert sorted(p.name for p in dest.iterdir()) == ["tree"]


def test_a_new_checkout_replaces_the_old_one(tmp_path):
    first = make_repo(tmp_path / "repo")
    dest = tmp_path / "co"
    checkout("tiny", str(tmp_path / "repo"), "repo", first, dest)
    (tmp_path / "repo" / "NEW.md").write_text("new\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    for cmd in (["git", "add", "-A"], ["git", "commit", "-qm", "second"]):
        subprocess.run(cmd, cwd=tmp_path / "repo", check=True, env=env)
    second = head(tmp_path / "repo")
    checkout("tiny", str(tmp_path / "repo"), "repo", second, dest)
    assert head(dest / "tree") == second and (dest / "tree" / "NEW.md").is_file()
    assert sorted(p.name for p in dest.iterdir()) == ["tree"]


# --- the check before anything runs ---------------------------------------------------------


def two_commit_repo(path: Path) -> tuple[str, str]:
    """A repository with two commits: (the first, the head)."""
    first = make_repo(path)
    (path / "NEW.md").write_text("new\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(path),
    }
    for cmd in (["git", "add", "-A"], ["git", "commit", "-qm", "second"]):
        subprocess.run(cmd, cwd=path, check=True, env=env)
    return first, head(path)


def project(tmp_path: Path, url: str, commit: str) -> Path:
    """The test config in tmp_path, its repo `tiny` at `url` and `commit`."""
    if not (tmp_path / "config.yaml").exists():
        write_matrix(tmp_path)
    cfg = yaml.safe_load((tmp_path / "config.yaml").read_text())
    cfg["repos"]["tiny"] = {"url": url, "commit": commit}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "config.yaml"


@pytest.mark.parametrize("kind", ["repository", "bundle"])
def test_a_commit_the_local_source_holds_passes(tmp_path, kind):
    first, last = two_commit_repo(tmp_path / "src")
    url = "src"
    if kind == "bundle":
        subprocess.run(
            ["git", "bundle", "create", "-q", str(tmp_path / "src.bundle"), "--all"],
            cwd=tmp_path / "src",
            check=True,
            capture_output=True,
        )
        url = "src.bundle"
    for commit in (first, last):  # a head, and a commit that is no head (inside the bundle's pack)
        assert check_commits(load_matrix(project(tmp_path, url, commit))) == []


@pytest.mark.parametrize("kind", ["repository", "bundle"])
def test_a_commit_the_local_source_lacks_is_refused(tmp_path, kind, capsys):
    make_repo(tmp_path / "src")
    url = "src"
    if kind == "bundle":
        subprocess.run(
            ["git", "bundle", "create", "-q", str(tmp_path / "src.bundle"), "--all"],
            cwd=tmp_path / "src",
            check=True,
            capture_output=True,
        )
        url = "src.bundle"
    cfg = project(tmp_path, url, MISSING)
    problems = check_commits(load_matrix(cfg))
    assert len(problems) == 1
    assert problems[0].startswith(f"{cfg}: field repos.tiny.commit: {MISSING} is not in {url} (a local {kind})")
    assert "give a commit it holds" in problems[0]
    assert cli_main(["validate", "--config", str(cfg)]) == 2
    assert f"field repos.tiny.commit: {MISSING}" in capsys.readouterr().err


def test_a_local_source_that_does_not_exist_is_refused(tmp_path):
    cfg = project(tmp_path, "shop.bundel", MISSING)
    problems = check_commits(load_matrix(cfg))
    assert len(problems) == 1 and problems[0].startswith(f"{cfg}: field repos.tiny.url: 'shop.bundel' (")
    assert "does not exist" in problems[0] and "fix the path" in problems[0]


def test_a_mirror_that_lacks_the_commit_is_named(tmp_path):
    commit = make_repo(tmp_path / "src")
    make_repo(tmp_path / "other", {"OTHER.md": "another history\n"})
    cfg = project(tmp_path, "https://example.org/tiny.git", commit)
    data = yaml.safe_load(cfg.read_text())
    data["mirrors"] = {"https://example.org/tiny.git": "other"}
    cfg.write_text(yaml.safe_dump(data))
    problems = check_commits(load_matrix(cfg))
    assert (
        len(problems) == 1
        and "is not in other (a local repository, the mirror of https://example.org/tiny.git)" in problems[0]
    )


def test_a_remote_url_is_not_checked(tmp_path):
    """Without the network the harness cannot know: the checkout job says it."""
    cfg = project(tmp_path, "https://example.org/tiny.git", MISSING)
    assert check_commits(load_matrix(cfg)) == []


def test_validate_without_git_says_so(tmp_path, monkeypatch):
    cfg = project(tmp_path, "repo", MISSING)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    (problem,) = check_commits(load_matrix(cfg))
    assert problem.startswith(f"{cfg}: field repos: git is not on PATH") and "install git" in problem


@pytest.mark.parametrize("kind", ["repository", "bundle"])
def test_the_hint_runs_from_where_the_user_is(tmp_path, kind, monkeypatch):
    """The config in configs/ names its source relative to itself (`../src.bundle`); the hint's
    command is given as the user can run it from the working directory."""
    import re

    make_repo(tmp_path / "src")
    url = "../src"
    if kind == "bundle":
        subprocess.run(
            ["git", "bundle", "create", "-q", str(tmp_path / "src.bundle"), "--all"],
            cwd=tmp_path / "src",
            check=True,
            capture_output=True,
        )
        url = "../src.bundle"
    (tmp_path / "configs").mkdir()
    cfg = project(tmp_path / "configs", url, MISSING)
    monkeypatch.chdir(tmp_path)
    (problem,) = check_commits(load_matrix(cfg))
    command = re.search(r"give a commit it holds \(`([^`]+)`\)", problem).group(1)
    assert command == (
        "git -C src log --all --format=%H" if kind == "repository" else "git bundle list-heads src.bundle"
    )
    assert subprocess.run(command, shell=True, capture_output=True).returncode == 0
    monkeypatch.chdir(tmp_path / "configs")  # from elsewhere: an absolute path
    (problem,) = check_commits(load_matrix(cfg))
    assert str(tmp_path / ("src" if kind == "repository" else "src.bundle")) in problem
