"""Issue 34 item 2: the lines directly above a definition (blank lines, decorators,
annotations, attributes, doc comments) up to the previous code line, and its signature's
continuation lines, are inside it for the strict verdict (strict.verdict on plain strings)."""

from __future__ import annotations

import pytest

from mcptrials.grade.citations.strict import verdict

PYTHON = 'LIMIT = 1\n\n# routes\n@app.route(\n    "/a")\ndef handler():\n    return LIMIT\n'
JAVA = "class Box {\n  int size;\n\n  /**\n   * Opens it.\n   */\n  @Override\n  public void open() {}\n}\n"
RUST = "use std::fmt;\n\n/// A point.\n#[derive(\n    Debug,\n)]\npub struct Point {\n    x: i32,\n}\n"
GO = "package a\n\nvar limit = 1\n\n// Serve answers\n// requests.\nfunc Serve(\n\tw int,\n\tr int,\n) {\n}\n"


def strict(path: str, source: str, line: int, subject: str) -> str:
    return verdict(path, source, [line], subject, source.split("\n"))


@pytest.mark.parametrize(
    ("path", "source", "line", "subject"),
    [
        ("a.py", PYTHON, 2, "handler"),  # a blank line above the decorator
        ("a.py", PYTHON, 3, "handler"),  # a comment above the decorator
        ("a.py", PYTHON, 5, "handler"),  # a decorator's continuation line
        ("Box.java", JAVA, 3, "open"),  # a blank line above the doc comment
        ("Box.java", JAVA, 5, "open"),  # inside the doc comment
        ("Box.java", JAVA, 7, "open"),  # the annotation
        ("p.rs", RUST, 3, "Point"),  # a doc comment
        ("p.rs", RUST, 5, "Point"),  # inside a multi-line attribute
        ("a.go", GO, 4, "Serve"),  # a blank line above the doc comment
        ("a.go", GO, 5, "Serve"),  # the doc comment
        ("a.go", GO, 9, "Serve"),  # a signature's continuation line
    ],
)
def test_a_header_line_belongs_to_the_definition_below(path, source, line, subject):
    assert strict(path, source, line, subject) == "verified"


@pytest.mark.parametrize(
    ("path", "source", "line", "subject"),
    [
        ("a.py", PYTHON, 1, "handler"),  # the previous code line is not the header
        ("Box.java", JAVA, 2, "open"),
        ("p.rs", RUST, 1, "Point"),
        ("a.go", GO, 3, "Serve"),
    ],
)
def test_the_previous_code_line_is_not_in_the_header(path, source, line, subject):
    assert strict(path, source, line, subject) != "verified"


def test_a_trailing_comment_on_a_code_line_is_code():
    source = "LIMIT = 1  # note\ndef handler():\n    return 2\n"
    assert strict("a.py", source, 1, "handler") != "verified"
