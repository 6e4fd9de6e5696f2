"""The library's import graph, computed from the source: no cycles, no Snakemake.

Every Import/ImportFrom node counts, also those inside functions (a lazy import is still
a dependency: it only moves the failure to run time). Imports by string count as well
(`string_imports`): `importlib.import_module("x")`, `import_module("x")`, `__import__("x")`, and,
in a module that imports by a name it computes, every `mcptrials.` string of its literal lists
(the worker's preload list). The two name tables that import modules by a composed string
(cli.COMMANDS, hosts.HOSTS) add their edges too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import mcptrials

SRC = Path(mcptrials.__file__).resolve().parent


def module_names() -> dict[str, Path]:
    out = {}
    for p in sorted(SRC.rglob("*.py")):
        parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def import_froms(name: str, path: Path):
    """(module imported from, the names) of every `from ... import` in the file, resolved."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                yield ".".join(base + ([node.module] if node.module else [])), [a.name for a in node.names]
            else:
                yield node.module, [a.name for a in node.names]


IMPORT_BY_NAME = {"import_module", "__import__"}


def string_imports(source: str) -> set[str]:
    """The modules a source imports by string: the literal argument of `importlib.import_module`,
    `import_module` or `__import__`; and where one of them is called with a computed name (a loop
    over a list, as the worker's preload), every string naming a mcptrials module in the
    source's list, tuple and set literals."""
    out: set[str] = set()
    computed = False
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            f = node.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if called in IMPORT_BY_NAME:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    out.add(arg.value)
                else:
                    computed = True
    if computed:
        for node in ast.walk(tree):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                out |= {
                    e.value
                    for e in node.elts
                    if isinstance(e, ast.Constant)
                    and isinstance(e.value, str)
                    and (e.value == "mcptrials" or e.value.startswith("mcptrials."))
                }
    return out


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The mcptrials modules (and top-level third-party names) `name` imports anywhere, by
    statement or by string."""
    out: set[str] = string_imports(path.read_text())
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    for target, names in import_froms(name, path):
        out.add(target)
        out |= {f"{target}.{n}" for n in names if f"{target}.{n}" in modules}  # `from . import x`: a module
    return out


def graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = module_names()
    raw = {n: imported(n, p, modules) for n, p in modules.items()}
    from mcptrials.cli import COMMANDS
    from mcptrials.run.hosts import HOSTS

    raw["mcptrials.cli"] |= {f"mcptrials.{m}" for m in COMMANDS.values()}
    raw["mcptrials.run.hosts"] |= {f"mcptrials.run.hosts.{row.module}" for row in HOSTS.values()}
    edges = {n: {t for t in targets if t in modules and t != n} for n, targets in raw.items()}
    return edges, raw


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def a_path(edges, start: str, members: set[str]) -> list[str]:
    """One concrete cycle through `start` inside a component, for the message."""
    prev, todo = {}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v] & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return [start]


def test_the_parser_sees_lazy_and_relative_imports():
    modules = module_names()
    edges, _ = graph()
    assert "mcptrials.run.hosts.claude_code" in modules and "mcptrials.matrix.config" in modules
    # runner imports the trial core lazily or not, relatively: the edge must be there
    assert "mcptrials.run.trial" in edges["mcptrials.run.runner"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    edges, _ = graph()
    found = cycles(edges)
    msg = "\n".join(
        " -> ".join(a_path(edges, comp[0], set(comp))) + f"   (component: {', '.join(comp)})" for comp in found
    )
    assert not found, "import cycles in src/mcptrials:\n" + msg


def test_the_library_never_imports_snakemake():
    _, raw = graph()
    users = sorted(
        n for n, targets in raw.items() if any(t == "snakemake" or t.startswith("snakemake.") for t in targets)
    )
    assert not users, f"these modules import snakemake: {users}"


# The stages, bottom to top (each package's __init__ says what it owns): a module may import
# its own package and any package on its floor or below, never one above. core and stats are the
# ground floor; cli, the command layer, is the roof.
FLOORS = (
    ("core", "stats"),
    ("matrix",),
    ("prepare",),
    ("cost",),
    ("providers",),
    ("run",),
    ("grade",),
    ("judge",),
    ("analyze",),
    ("gate",),
    ("report",),
    ("importers",),
    ("dag",),
    ("cli",),
)
FLOOR = {pkg: i for i, pkgs in enumerate(FLOORS) for pkg in pkgs}


def floor(module: str) -> int:
    parts = module.split(".")
    return FLOOR[parts[1]] if len(parts) > 1 else 0  # the root package (its __version__): ground


def upward_arrows(edges) -> list[str]:
    return sorted(f"{a} -> {b}" for a, targets in edges.items() for b in targets if floor(b) > floor(a))


def test_every_package_has_a_floor():
    modules = module_names()
    assert {n.split(".")[1] for n in modules if n.count(".")} == set(FLOOR), "a package the floors do not name"
    for pkg in FLOOR:
        doc = ast.get_docstring(ast.parse((SRC / pkg / "__init__.py").read_text())) if (SRC / pkg).is_dir() else None
        if (SRC / pkg).is_dir():
            assert doc and "May import:" in doc, f"{pkg}/__init__.py: say in its docstring what it owns and may import"


def test_imports_point_down_the_stages_only():
    assert upward_arrows({"mcptrials.run.trial": {"mcptrials.grade.state"}}) == [
        "mcptrials.run.trial -> mcptrials.grade.state"
    ]
    assert upward_arrows({"mcptrials.grade.state": {"mcptrials.run.trial", "mcptrials.core.records"}}) == []
    edges, _ = graph()
    found = upward_arrows(edges)
    assert not found, "imports from an earlier stage to a later one:\n" + "\n".join(found)


def test_the_layering_rules():
    edges, _ = graph()
    assert "mcptrials.run.runner" not in edges["mcptrials.prepare.snapshot"], "snapshot imports runner"
    below_cli = [
        a for a, targets in edges.items() if floor(a) < FLOOR["cli"] and any(floor(b) == FLOOR["cli"] for b in targets)
    ]
    assert not below_cli, f"modules below the command layer import it: {below_cli}"
    assert not [
        a
        for a in edges
        if a.startswith("mcptrials.judge") and any(b.startswith("mcptrials.run.providers") for b in edges[a])
    ]
    assert "mcptrials.providers.base" in edges["mcptrials.judge.model_judge"], "the judge's clients are the providers'"


UPWARD_BY_STRING = """
import importlib
from importlib import import_module

def preload():
    for name in ["anthropic", "mcptrials.core.records", "mcptrials.cli.run_trial"]:
        importlib.import_module(name)

def lazily():
    import_module("mcptrials.analyze.tables")
    return __import__("mcptrials.report.document")
"""


def test_an_import_by_string_is_read_and_an_upward_one_fails(tmp_path):
    """A hand-made module on the run floor that imports upward only by string: the checker sees
    every one (the preload list, import_module, __import__) and reports each as an upward arrow."""
    assert string_imports(UPWARD_BY_STRING) == {
        "mcptrials.core.records",
        "mcptrials.cli.run_trial",
        "mcptrials.analyze.tables",
        "mcptrials.report.document",
    }
    path = tmp_path / "warm.py"
    path.write_text(UPWARD_BY_STRING)
    modules = {
        "mcptrials.run.warm": path,
        "mcptrials.core.records": path,
        "mcptrials.cli.run_trial": path,
        "mcptrials.analyze.tables": path,
        "mcptrials.report.document": path,
    }
    targets = imported("mcptrials.run.warm", path, modules)
    found = upward_arrows({"mcptrials.run.warm": {t for t in targets if t in modules and t != "mcptrials.run.warm"}})
    assert found == [
        "mcptrials.run.warm -> mcptrials.analyze.tables",
        "mcptrials.run.warm -> mcptrials.cli.run_trial",
        "mcptrials.run.warm -> mcptrials.report.document",
    ]
    # a literal list alone, with no import by a computed name, is data, not an import
    assert string_imports('NAMES = ["mcptrials.cli"]\nimportlib.import_module("json")') == {"json"}


def test_the_real_string_imports_are_in_the_graph():
    _, raw = graph()
    assert {"mcptrials.cli.run_trial", "mcptrials.grade.scoring", "mcptrials.judge.judging"} <= raw[
        "mcptrials.cli.preload"  # the worker's preloads
    ]


# Private names imported across modules (none left: what modules share is public).
KNOWN_PRIVATE: set = set()


def test_modules_use_each_others_public_api():
    """What modules share is public in its owner (e.g. servers.free_port, trial.step_limits)."""
    found = set()
    for name, path in module_names().items():
        for target, names in import_froms(name, path):
            if target and target.startswith("mcptrials"):
                found |= {(name, target, n) for n in names if n.startswith("_") and not n.startswith("__")}
    assert found <= KNOWN_PRIVATE, f"private names imported from another module: {sorted(found - KNOWN_PRIVATE)}"


def test_the_citation_grader_imports_only_itself_and_gittree_of_grade():
    """grade.citations (its __init__ says so) imports, of grade, only its own modules and
    grade.gittree: the other graders are its siblings, not its parts."""
    edges, _ = graph()
    found = sorted(
        f"{a} -> {b}"
        for a, targets in edges.items()
        if a.startswith("mcptrials.grade.citations")
        for b in targets
        if b.startswith("mcptrials.grade")
        and not b.startswith("mcptrials.grade.citations")
        and b not in ("mcptrials.grade", "mcptrials.grade.gittree")
    )
    assert any(a.startswith("mcptrials.grade.citations.") for a in edges), "the subpackage is not seen"
    assert not found, "grade.citations imports other graders:\n" + "\n".join(found)
