"""The house rules of src/mcptrials that a reader sees first (issue 26): no warehouse modules
(nothing over 600 lines) and no function over 80 lines, so a module holds one concept and a
function reads in one screen. The import rules are tests/workflow/test_import_graph.py.

Lines are counted as written, not as laid out: a line that only continues a bracket opened on an
earlier line (an argument list `ruff format` spreads one per line, a closing `)`) is not counted,
so the formatter's layout never moves a module or a function over its limit (issue 35)."""

import ast
import io
import tokenize

from test_import_graph import module_names

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def continuation_lines(text: str) -> set[int]:
    """The line numbers whose first token sits inside a bracket opened on an earlier line."""
    depth, continued, seen = 0, set(), set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        row = tok.start[0]
        if row not in seen and tok.type not in (tokenize.NL, tokenize.NEWLINE):
            seen.add(row)
            if depth > 0:
                continued.add(row)
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
        elif tok.type == tokenize.OP and tok.string in ")]}":
            depth -= 1
    return continued


def too_long(path) -> tuple[int, list[tuple[str, int]]]:
    text = path.read_text()
    continued = continuation_lines(text)

    def counted(first: int, last: int) -> int:
        return sum(1 for n in range(first, last + 1) if n not in continued)

    funcs = [
        (f.name, counted(f.lineno, f.end_lineno))
        for f in ast.walk(ast.parse(text))
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        and counted(f.lineno, f.end_lineno) > MAX_FUNCTION_LINES
    ]
    return counted(1, len(text.splitlines())), funcs


def test_the_measure_counts_what_it_says(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n" + "    x = 1\n" * 80 + "\n\ndef g():\n    pass\n")
    assert too_long(p) == (85, [("f", 81)])


def test_a_formatted_argument_list_counts_as_the_line_it_starts_on(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f(\n    a,\n    b,\n):\n    return g(\n        a,\n        [b, 1],\n    )\n")
    assert continuation_lines(p.read_text()) == {2, 3, 4, 6, 7, 8}
    assert too_long(p) == (2, [])


def test_no_module_over_600_lines_and_no_function_over_80():
    found = []
    for name, path in module_names().items():
        lines, funcs = too_long(path)
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (split it by concern)")
        found += [f"{name}.{f}: {n} lines (split it into named parts)" for f, n in funcs]
    assert not found, "\n".join(found)
