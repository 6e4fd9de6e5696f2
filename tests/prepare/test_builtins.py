"""The built-in tools on a small workspace made in tmp_path: output, and every refusal."""

import os

import pytest

from mcptrials.prepare.builtins import BUILTIN_TOOLS, GREP_MAX_MATCHES, BuiltinTools, glob_to_regex


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "core.py").write_text(
        '"""Core."""\n\n\ndef parse_config(path):\n    return path\n\n\nclass Loader:\n    pass\n'
    )
    (root / "src" / "pkg" / "util.py").write_text("import os\nPARSE = 1\n")
    (root / "README.md").write_text("# Demo\nCall parse_config to parse.\n")
    (root / "data.bin").write_bytes(b"\x00\x01parse_config\x02")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("parse_config in git dir\n")
    (root / "empty.txt").write_text("")
    outside = tmp_path / "secret.txt"
    outside.write_text("top secret parse_config\n")
    os.symlink(outside, root / "leak.txt")
    os.symlink("/etc/passwd", root / "passwd")
    os.symlink(root / "src" / "pkg" / "core.py", root / "alias.py")  # stays inside
    os.symlink(tmp_path, root / "up")  # a directory outside
    return BuiltinTools(root)


def test_definitions_are_valid_and_named():
    assert [t["name"] for t in BUILTIN_TOOLS] == ["read_file", "grep", "list_files"]
    for t in BUILTIN_TOOLS:
        assert t["description"] and t["input_schema"]["type"] == "object"


def test_read_file_whole_with_line_numbers(ws):
    text, err = ws.call("read_file", {"path": "src/pkg/core.py"})
    assert not err
    lines = text.splitlines()
    assert lines[0] == "src/pkg/core.py: lines 1-9 of 9"
    assert lines[4] == "     4\tdef parse_config(path):"
    assert len(lines) == 10


def test_read_file_range(ws):
    text, err = ws.call("read_file", {"path": "./src/pkg/core.py", "start_line": 4, "end_line": 5})
    assert not err
    assert text.splitlines() == [
        "src/pkg/core.py: lines 4-5 of 9",
        "     4\tdef parse_config(path):",
        "     5\t    return path",
    ]
    # end_line past the end is clamped, not an error
    text, err = ws.call("read_file", {"path": "src/pkg/core.py", "start_line": 8, "end_line": 99})
    assert not err and text.splitlines()[0] == "src/pkg/core.py: lines 8-9 of 9"


def test_read_file_symlink_inside_is_allowed(ws):
    text, err = ws.call("read_file", {"path": "alias.py", "start_line": 4, "end_line": 4})
    assert not err and "def parse_config" in text


def test_read_file_empty(ws):
    assert ws.call("read_file", {"path": "empty.txt"}) == ("empty.txt: empty file (0 lines)", False)


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({"path": "/etc/passwd"}, "is absolute"),
        ({"path": "../secret.txt"}, "leaves the workspace"),
        ({"path": "src/../../secret.txt"}, "leaves the workspace"),
        ({"path": "passwd"}, "symlink whose target is outside"),
        ({"path": "leak.txt"}, "symlink whose target is outside"),
        ({"path": "up/secret.txt"}, "symlink whose target is outside"),
        ({"path": "nope.py"}, "no such file"),
        ({"path": "src"}, "is a directory"),
        ({"path": "data.bin"}, "binary file"),
        ({"path": "src/pkg/core.py", "start_line": 0}, "start_line must be >= 1"),
        ({"path": "src/pkg/core.py", "start_line": 50}, "past the end"),
        ({"path": "src/pkg/core.py", "start_line": 5, "end_line": 3}, "before start_line"),
        ({"path": "src/pkg/core.py", "start_line": "4"}, "must be an integer"),
        ({"path": "src/pkg/core.py", "start_line": True}, "must be an integer"),
        ({"path": 3}, "must be a string"),
        ({}, "missing required argument 'path'"),
        ({"path": "src/pkg/core.py", "lines": 3}, "unknown argument(s) lines"),
    ],
)
def test_read_file_refusals(ws, args, fragment):
    text, err = ws.call("read_file", args)
    assert err, text
    assert fragment in text
    assert "top secret" not in text and "root:" not in text


def test_arguments_not_an_object(ws):
    text, err = ws.call("grep", ["parse"])
    assert err and "JSON object" in text


def test_unknown_tool(ws):
    text, err = ws.call("write_file", {"path": "x"})
    assert err and "read_file, grep, list_files" in text


def test_grep_finds_sorted_relative_hits_and_skips_binary_git_and_outside(ws):
    text, err = ws.call("grep", {"pattern": r"parse_config"})
    assert not err
    assert text.splitlines() == [
        "README.md:2: Call parse_config to parse.",
        "alias.py:4: def parse_config(path):",
        "src/pkg/core.py:4: def parse_config(path):",
    ]


def test_grep_path_glob_directory_file_and_case(ws):
    assert (
        ws.call("grep", {"pattern": "parse", "path": "src/**/*.py"})[0] == "src/pkg/core.py:4: def parse_config(path):"
    )
    assert ws.call("grep", {"pattern": "PARSE", "path": "src"})[0] == "src/pkg/util.py:2: PARSE = 1"
    text, _ = ws.call("grep", {"pattern": "PARSE", "path": "src", "case_insensitive": True})
    assert text.splitlines() == ["src/pkg/core.py:4: def parse_config(path):", "src/pkg/util.py:2: PARSE = 1"]
    assert ws.call("grep", {"pattern": "os", "path": "src/pkg/util.py"})[0] == "src/pkg/util.py:1: import os"
    assert ws.call("grep", {"pattern": "parse", "path": "*.py"})[0] == "alias.py:4: def parse_config(path):"


def test_grep_no_match_is_not_an_error(ws):
    text, err = ws.call("grep", {"pattern": "zzz_nothing"})
    assert not err and text.startswith("No matches for 'zzz_nothing'")


def test_grep_caps_matches_and_reports_total(ws):
    (ws.root / "many.txt").write_text("hit\n" * (GREP_MAX_MATCHES + 50))
    text, err = ws.call("grep", {"pattern": "^hit$"})
    lines = text.splitlines()
    assert not err
    assert len(lines) == GREP_MAX_MATCHES + 1
    assert lines[-1] == f"[{GREP_MAX_MATCHES} of {GREP_MAX_MATCHES + 50} matches shown; narrow the pattern or the path]"


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({"pattern": "def ("}, "invalid regular expression"),
        ({"pattern": "x", "path": "/etc"}, "is absolute"),
        ({"pattern": "x", "path": "../*"}, "contains '..'"),
        ({"pattern": "x", "path": "../secret.txt"}, "leaves the workspace"),
        ({"pattern": "root", "path": "passwd"}, "symlink whose target is outside"),
        ({"pattern": "x", "path": "missing_dir"}, "no such file or directory"),
        ({"pattern": "x", "case_insensitive": "yes"}, "must be a boolean"),
        ({"path": "src"}, "missing required argument 'pattern'"),
    ],
)
def test_grep_refusals(ws, args, fragment):
    text, err = ws.call("grep", args)
    assert err and fragment in text, text


def test_list_files(ws):
    text, err = ws.call("list_files", {})
    assert not err
    assert text.splitlines() == ["README.md", "alias.py", "data.bin", "empty.txt", "src/pkg/core.py", "src/pkg/util.py"]
    assert ws.call("list_files", {"pattern": "src/**/*.py"}) == ("src/pkg/core.py\nsrc/pkg/util.py", False)
    assert ws.call("list_files", {"pattern": "*.py"}) == ("alias.py", False)
    assert ws.call("list_files", {"pattern": "*.rs"}) == ("No files match '*.rs'.", False)


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({"pattern": "/etc/*"}, "is absolute"),
        ({"pattern": "../**/*"}, "contains '..'"),
        ({"pattern": 5}, "must be a string"),
    ],
)
def test_list_files_refusals(ws, args, fragment):
    text, err = ws.call("list_files", args)
    assert err and fragment in text, text


def test_glob_semantics():
    assert glob_to_regex("**/*.py").match("a.py")
    assert glob_to_regex("**/*.py").match("a/b/c.py")
    assert not glob_to_regex("*.py").match("a/b.py")
    assert glob_to_regex("src/**").match("src/a/b")
    assert glob_to_regex("[!a]?.txt").match("b1.txt")
    assert not glob_to_regex("[!a]?.txt").match("a1.txt")
