"""The house rules of src/mcptrials that a reader sees first (issue 26): no warehouse modules
(nothing over 600 lines) and no function over 80 lines, so a module holds one concept and a
function reads in one screen. The import rules are tests/workflow/test_import_graph.py."""

import ast

from test_import_graph import module_names

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def too_long(path) -> tuple[int, list[tuple[str, int]]]:
    text = path.read_text()
    funcs = [(f.name, f.end_lineno - f.lineno + 1) for f in ast.walk(ast.parse(text))
             if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.end_lineno - f.lineno + 1 > MAX_FUNCTION_LINES]
    return len(text.splitlines()), funcs


def test_the_measure_counts_what_it_says(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("def f():\n" + "    x = 1\n" * 80 + "\n\ndef g():\n    pass\n")
    assert too_long(p) == (85, [("f", 81)])


def test_no_module_over_600_lines_and_no_function_over_80():
    found = []
    for name, path in module_names().items():
        lines, funcs = too_long(path)
        if lines > MAX_MODULE_LINES:
            found.append(f"{name}: {lines} lines (split it by concern)")
        found += [f"{name}.{f}: {n} lines (split it into named parts)" for f, n in funcs]
    assert not found, "\n".join(found)
