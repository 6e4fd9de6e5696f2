"""Citation grounding against a real git repository made in tmp_path."""

import argparse
import json
import subprocess

import pytest

from mcptrials.matrix.errors import ConfigError
from mcptrials.cli import score as graders_cli
from mcptrials.grade.citations.extract import extract_citations
from mcptrials.grade.citations.grading import citation_rates, grade_citations
from mcptrials.grade.gittree import commit_tree

APP = '''"""The app."""

import os


class Flask:
    def __init__(self, name):
        self.name = name

    def route(self, rule):
        return rule


def create_app():
    return Flask(os.getcwd())
'''  # 15 lines


def git(repo, *args):
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t", *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def make_repo(root):
    """A repo with src/app.py (15 lines) and two helpers.py; returns (repo, commit A, commit B).

    Commit B grows app.py to 30 lines and adds src/later.py; the working copy then changes
    app.py again and adds an untracked file, so only git objects tell commit A apart."""
    repo = root / "repo"
    for d in ("src/util", "lib/util", "docs"):
        (repo / d).mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "src/app.py").write_text(APP)
    (repo / "src/util/helpers.py").write_text("def helper():\n    pass\n")
    (repo / "lib/util/helpers.py").write_text("def helper():\n    pass\n")
    (repo / "docs/guide.md").write_text("# Guide\n\nUse create_app.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "A")
    a = git(repo, "rev-parse", "HEAD")
    (repo / "src/app.py").write_text(APP + "\n" * 14 + "# 30\n")
    (repo / "src/later.py").write_text("x = 1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "B")
    b = git(repo, "rev-parse", "HEAD")
    (repo / "src/app.py").write_text(APP * 4)  # uncommitted edit
    (repo / "src/untracked.py").write_text("y = 2\n")
    return repo, a, b


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("cit"))


def one(text, repo_dir, commit, gold=None):
    return grade_citations(text, commit_tree(repo_dir, commit), gold)


def test_extraction_forms():
    text = (
        "At `src/app.py:14`, ./src/app.py:6, src/app.py:10\u201311, src/app.py#L10-L11, "
        "[x](src/app.py#L3), src/app.py:Flask.route, lib.rs:Router::route, a.py:15. "
        "https://github.com/o/r/blob/abc/src/app.py#L6 and `src/app.py`:7 and app.py (no locator)."
    )
    got = [(c["path"], c["lines"], c["symbol"]) for c in extract_citations(text)]
    assert got == [
        ("src/app.py", [14], None),
        ("src/app.py", [6], None),
        ("src/app.py", [10, 11], None),
        ("src/app.py", [10, 11], None),
        ("src/app.py", [3], None),
        ("src/app.py", None, "Flask.route"),
        ("lib.rs", None, "Router::route"),
        ("a.py", [15], None),
        ("src/app.py", [6], None),
        ("src/app.py", [7], None),
    ]
    assert extract_citations("./src/app.py:6")[0]["path_as_cited"] == "./src/app.py"


def test_extensions_are_configurable():
    assert extract_citations("notes.xyz:3") == []
    assert extract_citations("notes.xyz:3", extensions=[".xyz"])[0]["lines"] == [3]
    assert extract_citations("Makefile:3")[0]["path"] == "Makefile"


def test_buckets_at_the_commit(repo):
    repo_dir, a, _ = repo
    r = one(
        "src/app.py:15 src/app.py:16 src/app.py:14-16 src/app.py:0 app.py:1 rc/app.py:1 "
        "helpers.py:1 util/helpers.py:1 src/util/helpers.py:2 missing.py:1 src/later.py:1",
        repo_dir,
        a,
    )
    by = {c["text"]: c for c in r["items"]}
    assert by["src/app.py:15"]["bucket"] == "grounded"  # last line
    assert by["src/app.py:16"]["bucket"] == "hallucinated"  # one past EOF
    assert by["src/app.py:14-16"]["bucket"] == "hallucinated"  # range ending past EOF
    assert by["src/app.py:0"]["bucket"] == "hallucinated"
    assert by["app.py:1"]["resolved_path"] == "src/app.py"  # unique suffix
    assert by["rc/app.py:1"]["bucket"] == "unresolved"  # not on a component boundary
    amb = by["helpers.py:1"]
    assert amb["bucket"] == "unresolved" and amb["candidates"] == ["lib/util/helpers.py", "src/util/helpers.py"]
    # (no full path is cited at line 1, and none precedes: the context does not settle it either)
    assert by["util/helpers.py:1"]["candidates"] == ["lib/util/helpers.py", "src/util/helpers.py"]
    assert by["src/util/helpers.py:2"]["bucket"] == "grounded"
    assert by["missing.py:1"]["bucket"] == "unresolved" and by["missing.py:1"]["candidates"] == []
    assert by["src/later.py:1"]["bucket"] == "unresolved"  # only exists in a later commit


def test_working_copy_changes_do_not_count(repo):
    repo_dir, a, b = repo
    assert (repo_dir / "src/app.py").read_text().count("\n") == 60  # the working copy has 60 lines
    assert one("src/app.py:20", repo_dir, a)["items"][0]["bucket"] == "hallucinated"
    assert one("src/app.py:20", repo_dir, b)["items"][0]["bucket"] == "grounded"
    assert one("src/app.py:31", repo_dir, b)["items"][0]["bucket"] == "hallucinated"
    assert one("src/untracked.py:1", repo_dir, b)["items"][0]["bucket"] == "unresolved"


def test_symbols_without_a_line(repo):
    repo_dir, a, _ = repo
    r = one(
        "src/app.py:create_app, src/app.py:Flask.route, app.py:Flask::route, "
        "src/app.py:Flask.delete, src/app.py:Missing",
        repo_dir,
        a,
    )
    assert [c["bucket"] for c in r["items"]] == ["grounded", "grounded", "grounded", "unresolved", "unresolved"]
    assert r["items"][0]["symbol"] == "create_app" and r["items"][0]["lines"] is None


def test_markdown_backticks_punctuation_and_dedup(repo):
    repo_dir, a, _ = repo
    text = (
        "The factory (`src/app.py:14`) is [here](src/app.py#L14); see app.py:14, "
        "./src/app.py:14. Also (src/app.py:10\u201311)."
    )
    r = one(text, repo_dir, a)
    assert [(c["resolved_path"], c["lines"], c["occurrences"]) for c in r["items"]] == [
        ("src/app.py", [14], 4),
        ("src/app.py", [10, 11], 1),
    ]
    assert all(c["bucket"] == "grounded" for c in r["items"])


def test_verification(repo):
    repo_dir, a, _ = repo
    text = (
        "The `create_app` factory is at src/app.py:14.\n"  # verified: on the line
        "The `route` method is at src/app.py:3.\n"  # mismatch: route is line 10, 7 away
        "`Flask.route()` is src/app.py:5.\n"  # verified: line 10 within 5
        "Range: `route` in src/app.py:6-8.\n"  # mismatch: a range checks inside only
        "Range: `route` in src/app.py:6-11.\n"  # verified
        "No identifier here: src/app.py:1.\n"  # n/a
        "`create_app` at src/app.py:99.\n"  # hallucinated -> n/a
        "`route` in `src/app.py` at src/app.py:2.\n"
    )  # the file name is not an identifier
    r = one(text, repo_dir, a)
    v = {c["text"]: c["verification"] for c in r["items"]}
    assert v == {
        "src/app.py:14": "verified",
        "src/app.py:3": "mismatch",
        "src/app.py:5": "verified",
        "src/app.py:6-8": "mismatch",
        "src/app.py:6-11": "verified",
        "src/app.py:1": "n/a",
        "src/app.py:99": "n/a",
        "src/app.py:2": "mismatch",
    }
    assert r["counts"]["verified"] == 3 and r["counts"]["mismatch"] == 3
    assert r["rates"]["verified_rate"] == pytest.approx(0.5)


def test_rates_and_cited_recall(repo):
    repo_dir, a, _ = repo
    gold = ["src/app.py:9", "src/app.py:Flask", "docs/guide.md:3", "src/app.py:1-2"]
    text = "`Flask` lives in app.py:14. Not src/app.py:99 or helpers.py:1 or docs/guide.md:Nope."
    r = one(text, repo_dir, a, gold)
    # 4 citations: grounded 1, hallucinated 1, unresolved 2; `Flask` is on line 15, within 5 of 14
    counts = {k: v for k, v in r["counts"].items() if k not in ("by_form", "ungrounded")}
    assert counts == {
        "total": 4,
        "grounded": 1,
        "hallucinated": 1,
        "unresolved": 2,
        "verified": 1,
        "mismatch": 0,
        "n/a": 3,
        "gold_total": 4,
        "gold_cited": 2,
        # strictly, line 14 is `def create_app():`, whose body calls `Flask` (line 15): since
        # grader 10 a function's first line stands for its body, so verified
        "strict_verified": 1,
        "strict_mismatch": 0,
        "strict_undetermined": 0,
        "strict_na": 3,
    }
    assert r["counts"]["ungrounded"] == {
        "basename": 1,
        "past_eof": 1,
        "no_such_file": 0,
        "symbol_not_defined": 1,
        "ambiguous": 0,
    }
    assert r["rates"]["grounded_rate"] == 0.25 and r["rates"]["hallucinated_rate"] == 0.25
    cited = {g["location"]: g["cited"] for g in r["gold"]}
    # line 14 is 5 from gold 9 (cited); Flask: file cited and name in the answer; docs only by a bad symbol
    assert cited == {"src/app.py:9": True, "src/app.py:Flask": True, "docs/guide.md:3": False, "src/app.py:1-2": False}
    assert r["rates"]["cited_recall"] == 0.5
    assert one("src/app.py:15", repo_dir, a, ["src/app.py:9"])["rates"]["cited_recall"] == 0.0  # 6 lines away


def test_rates_formula_hand_case():
    counts = {
        "total": 8,
        "grounded": 5,
        "hallucinated": 2,
        "unresolved": 1,
        "verified": 3,
        "mismatch": 1,
        "n/a": 4,
        "gold_total": 3,
        "gold_cited": 1,
        "strict_verified": 2,
        "strict_mismatch": 2,
        "strict_undetermined": 0,
        "strict_na": 4,
    }
    # strict grounding (5 - 2) / 8; strict verified 2 / (2 + 2)
    assert citation_rates(counts) == {
        "grounded_rate": 0.625,
        "hallucinated_rate": 0.25,
        "unresolved_rate": 0.125,
        "verified_rate": 0.75,
        "strict_grounded_rate": 0.375,
        "strict_verified_rate": 0.5,
        "strict_undetermined_rate": 0.0,  # strict_undetermined 0 / (2 + 2 + 0)
        "cited_recall": pytest.approx(1 / 3),
    }
    zero = dict.fromkeys(counts, 0)
    assert set(citation_rates(zero).values()) == {None}


def test_tree_is_cached_and_bad_commit_is_named(repo):
    repo_dir, a, _ = repo
    assert commit_tree(repo_dir, a) is commit_tree(str(repo_dir), a)
    with pytest.raises(ConfigError, match="not in this repository"):
        commit_tree(repo_dir, "0" * 40)


def _run_cli(argv):
    p = argparse.ArgumentParser()
    graders_cli.register(p.add_subparsers())
    args = p.parse_args(argv)
    return args.func(args)


def test_citations_command(repo, tmp_path, capsys, monkeypatch):
    repo_dir, a, _ = repo
    f = tmp_path / "answer.md"
    f.write_text("See helpers.py:1 and src/app.py:16 and `create_app` at src/app.py:14.\n")
    assert _run_cli(["citations", "--repo", str(repo_dir), "--commit", a, str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [set(o) for o in out] == [
        {
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
            "form",
            "strict",
            "subject",
            "subject_from",
            "occurrences",
        }
    ] * 3
    assert [(o["bucket"], o["verification"]) for o in out] == [
        ("unresolved", "n/a"),
        ("hallucinated", "n/a"),
        ("grounded", "verified"),
    ]
    assert out[0]["candidates"] == ["lib/util/helpers.py", "src/util/helpers.py"]
    # stdin, and a short revision
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("src/app.py:20"))
    assert _run_cli(["citations", "--repo", str(repo_dir), "--commit", "HEAD~1", "-"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["bucket"] == "hallucinated"


def test_citations_command_shows_the_strict_verdict(repo, tmp_path, capsys):
    """What fairness counts, per citation and per occurrence: the strict verdict (each of the
    four, undetermined on an occurrence), the form, the subject and where it came from, and why a verdict is undetermined."""
    repo_dir, a, _ = repo
    f = tmp_path / "answer.md"
    f.write_text(
        "`create_app` is at src/app.py:14. The `route` method is at src/app.py:6. "
        "`helper` is at src/app.py:3. See src/app.py:1. The `route` method is at src/app.py:14.\n"
    )
    assert _run_cli(["citations", "--repo", str(repo_dir), "--commit", a, str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(o["lines"], o["form"], o["verification"], o["strict"], o["subject"], o["subject_from"]) for o in out] == [
        ([14], "path:line", "verified", "verified", "create_app", "before"),
        ([6], "path:line", "verified", "mismatch", "route", "before"),  # route is defined at 10
        # `helper` is written nowhere in the file: no subject (grader 11; undetermined before)
        ([3], "path:line", "mismatch", "n/a", None, None),
        ([1], "path:line", "mismatch", "n/a", None, None),
    ]
    occ = [[(o["strict"], o["subject"], o["undetermined"]) for o in c["occurrences"]] for c in out]
    assert occ == [
        # cited twice: one occurrence's subject is at the line, so the citation is verified; the
        # other's is not, but a name written beside it is: no mismatch
        [
            ("verified", "create_app", None),
            # (grader 13: that name is what the occurrence cites; undetermined before)
            ("verified", "create_app", None),
        ],
        [("mismatch", "route", None)],
        [("n/a", None, None)],
        [("n/a", None, None)],
    ]
    assert [o["span"] for o in out[0]["occurrences"]] == out[0]["spans"]


def test_line_counting_matches_git(tmp_path):
    repo = tmp_path / "lc"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "ff.c").write_bytes(b"a\n\x0c\nb\x0cc\n")  # form feeds do not end lines: 3 lines
    (repo / "crlf.py").write_bytes(b"a\r\nb\r\n")  # 2 lines
    (repo / "open.py").write_bytes(b"a\nb")  # no final newline: 2 lines
    (repo / "empty.py").write_bytes(b"")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "x")
    t = commit_tree(repo, git(repo, "rev-parse", "HEAD"))
    assert [t.line_count(p) for p in ("ff.c", "crlf.py", "open.py", "empty.py")] == [3, 2, 2, 0]
    r = grade_citations("ff.c:3 ff.c:4 empty.py:1", t)
    assert [c["bucket"] for c in r["items"]] == ["grounded", "hallucinated", "hallucinated"]


@pytest.fixture(scope="module")
def mirror(repo, tmp_path_factory):
    """A bare mirror of the test repo (as the README recommends: git clone --mirror)."""
    repo_dir, a, b = repo
    bare = tmp_path_factory.mktemp("mirror") / "repo.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(repo_dir), str(bare)], check=True)
    return bare, a, b


def test_citations_command_on_a_bare_mirror_with_a_short_commit(mirror, tmp_path, capsys, monkeypatch):
    bare, a, _ = mirror
    assert not (bare / "src").exists()  # no work tree: every text comes from the object store
    # Where git refuses to discover a bare repository from the working directory, naming the
    # git directory explicitly still works (the default git config allows both).
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "safe.bareRepository")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "explicit")
    monkeypatch.chdir(bare)
    f = tmp_path / "answer.md"
    # At commit A app.py has 15 lines (line 16 is beyond EOF); at B it has 30.
    f.write_text("`create_app` is at src/app.py:14; src/app.py:16 is past the end.\n")
    assert _run_cli(["citations", "--repo", str(bare), "--commit", a[:7], str(f)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(o["resolved_path"], o["lines"], o["bucket"]) for o in out] == [
        ("src/app.py", [14], "grounded"),
        ("src/app.py", [16], "hallucinated"),
    ]
    assert out[0]["verification"] == "verified"


def test_short_commit_resolves_to_the_full_id_in_a_bare_mirror(mirror):
    bare, a, b = mirror
    t = commit_tree(bare, a[:7])
    assert t.commit == a and t.line_count("src/app.py") == 15 and not t.has("src/later.py")
    assert commit_tree(bare, b[:7]).line_count("src/app.py") == 30
    with pytest.raises(ConfigError, match="is not in this repository"):
        commit_tree(bare, "1234567")  # well-formed, absent
    with pytest.raises(ConfigError, match="is not in this repository"):
        commit_tree(bare, "1" * 40)  # a full id that is absent (repo.commit alone would not fail)
