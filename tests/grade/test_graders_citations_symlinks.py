"""Symbolic links at the pinned commit (git mode 120000) are followed: a cited link reads its
target's lines, for grounding and the strict verdict; a chain is followed; a loop, an escaping
or absolute target and a missing one are unresolved with the reason (issue 33, item 4)."""

import os
import subprocess

import pytest

from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import commit_tree

GUIDE = "".join(f"Guide line {n}.\n" for n in range(1, 61))  # 60 lines
UTIL = "import os\n\n\ndef helper(x):\n    return 2 * x\n"  # helper at line 4

LINKS = {  # link -> target, as `ln -s target link` stores it
    "README.md": "pkg/README.md",  # the axum shape: the root README is the crate's
    "docs/guide.md": "../README.md",  # a chain: -> README.md -> pkg/README.md
    "site": "pkg",  # a linked folder: site/README.md is pkg/README.md
    "bin/tool.sh": "../pkg/util.py",  # from the link's folder; another language than its name says
    "loop/a.md": "b.md",
    "loop/b.md": "a.md",
    "up.md": "../outside.md",  # leaves the repository
    "abs.md": "/etc/hostname",  # absolute
    "gone.md": "pkg/missing.md",  # no such file
    "dir.md": "pkg",  # a folder, cited as a file
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("links") / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "README.md").write_text(GUIDE)
    (root / "pkg" / "util.py").write_text(UTIL)
    for link, target in LINKS.items():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, root / link)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(root),
    }
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "links"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    assert (
        "120000"
        in subprocess.run(
            ["git", "ls-tree", "HEAD", "README.md"], cwd=root, check=True, capture_output=True, text=True
        ).stdout
    )
    return commit_tree(str(root), "HEAD")


@pytest.mark.parametrize(
    "path,real,hops",
    [
        ("README.md", "pkg/README.md", ["README.md -> pkg/README.md"]),
        ("docs/guide.md", "pkg/README.md", ["docs/guide.md -> ../README.md", "README.md -> pkg/README.md"]),
        ("site/README.md", "pkg/README.md", ["site -> pkg"]),
        ("bin/tool.sh", "pkg/util.py", ["bin/tool.sh -> ../pkg/util.py"]),
        ("pkg/util.py", "pkg/util.py", []),
    ],
)
def test_follow_a_link_a_chain_and_a_linked_folder(tree, path, real, hops):
    assert tree.follow(path) == (real, hops, None)
    assert tree.real(path) == real and tree.lines(path) == tree.lines(real)


@pytest.mark.parametrize(
    "path,reason",
    [
        ("loop/a.md", "symlink loop/a.md -> b.md; loop/b.md -> a.md: a symlink loop"),
        ("up.md", "symlink up.md -> ../outside.md leaves the repository"),
        ("abs.md", "symlink abs.md -> /etc/hostname: an absolute target, outside the repository"),
        ("gone.md", "symlink gone.md -> pkg/missing.md: the target pkg/missing.md is not in the commit"),
        ("dir.md", "symlink dir.md -> pkg: the target pkg is a folder"),
    ],
)
def test_a_loop_an_escape_and_a_missing_target_read_no_file(tree, path, reason):
    real, _, why = tree.follow(path)
    assert real is None and why == reason
    assert tree.text(path) == "" and tree.line_count(path) == 0


def _one(tree, answer):
    (c,) = grade_citations(answer, tree)["items"]
    return c


def test_a_cited_link_grounds_in_its_target(tree):
    c = _one(tree, "The routing section is at `README.md:57`.")
    assert (c["bucket"], c["resolved_path"], c["reason"]) == ("grounded", "pkg/README.md", "within 1..60")
    assert c["symlink"] == {"path": "README.md", "target": "pkg/README.md", "hops": ["README.md -> pkg/README.md"]}
    assert c["resolved_by"] == "exact"
    c = _one(tree, "See `docs/guide.md:60` and nothing else.")
    assert c["bucket"] == "grounded" and c["resolved_path"] == "pkg/README.md" and len(c["symlink"]["hops"]) == 2
    c = _one(tree, "See `site/README.md:12`.")
    assert c["bucket"] == "grounded" and c["resolved_path"] == "pkg/README.md"
    c = _one(tree, "See `README.md:61`.")  # past the target's end: hallucinated
    assert c["bucket"] == "hallucinated" and c["reason"] == "line 61 outside 1..60"
    c = _one(tree, "See `pkg/util.py:4`.")  # no link: no symlink record
    assert c["symlink"] is None and c["resolved_path"] == "pkg/util.py"


def test_the_strict_verdict_reads_the_target(tree):
    c = _one(tree, "`helper` is defined at `bin/tool.sh:4`.")
    assert c["bucket"] == "grounded" and c["resolved_path"] == "pkg/util.py"
    assert c["subject"]["name"] == "helper" and c["strict"] == "verified"
    c = _one(tree, "`helper` is defined at `bin/tool.sh:1`.")
    assert c["strict"] == "mismatch"


@pytest.mark.parametrize(
    "cited,why",
    [
        ("loop/a.md:3", "a symlink loop"),
        ("up.md:3", "leaves the repository"),
        ("abs.md:3", "an absolute target"),
        ("gone.md:3", "is not in the commit"),
    ],
)
def test_a_broken_link_is_unresolved_with_the_reason(tree, cited, why):
    c = _one(tree, f"See `{cited}`.")
    assert c["bucket"] == "unresolved" and c["resolved_path"] is None and c["ungrounded"] == "no_such_file"
    assert why in c["reason"] and c["reason"].startswith("symlink ") and c["symlink"]["target"] is None


def test_gold_recall_of_a_link_counts_a_citation_of_its_target(tree):
    got = grade_citations("See `pkg/README.md:57`.", tree, gold=["README.md:57"])
    assert got["gold"][0]["cited"]


def test_the_citations_command_shows_the_link_followed(tree, tmp_path, capsys):
    import argparse
    import json

    from mcptrials.cli import score as graders_cli

    answer = tmp_path / "answer.txt"
    answer.write_text("See `README.md:57` and `pkg/util.py:4`.")
    p = argparse.ArgumentParser()
    graders_cli.register(p.add_subparsers())
    args = p.parse_args(["citations", "--repo", tree.repo_dir, "--commit", tree.commit, str(answer)])
    assert args.func(args) == 0
    linked, plain = json.loads(capsys.readouterr().out)
    assert linked["resolved_path"] == "pkg/README.md" and linked["symlink"]["target"] == "pkg/README.md"
    assert "symlink" not in plain
