"""The library's import graph, computed from the source: no cycles, no Snakemake.

Every Import/ImportFrom node counts, also those inside functions (a lazy import is still
a dependency: it only moves the failure to run time). The two name tables that import
modules by string (cli.COMMANDS, hosts.HOSTS) add their edges too.
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


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The mcptrials modules (and top-level third-party names) `name` imports anywhere."""
    out: set[str] = set()
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
    from mcptrials.hosts import HOSTS

    raw["mcptrials.cli"] |= {f"mcptrials.{m}" for m in COMMANDS.values()}
    raw["mcptrials.hosts"] |= {f"mcptrials.hosts.{row.module}" for row in HOSTS.values()}
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
    assert "mcptrials.hosts.claude_code" in modules and "mcptrials.config" in modules
    # runner imports the trial core lazily or not, relatively: the edge must be there
    assert "mcptrials.trial" in edges["mcptrials.runner"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycle():
    edges, _ = graph()
    found = cycles(edges)
    msg = "\n".join(" -> ".join(a_path(edges, comp[0], set(comp))) + f"   (component: {', '.join(comp)})"
                    for comp in found)
    assert not found, "import cycles in src/mcptrials:\n" + msg


def test_the_library_never_imports_snakemake():
    _, raw = graph()
    users = sorted(n for n, targets in raw.items() if any(t == "snakemake" or t.startswith("snakemake.") for t in targets))
    assert not users, f"these modules import snakemake: {users}"


def test_the_layering_rules():
    edges, _ = graph()
    assert not {t for t in edges["mcptrials.config"] if t.startswith("mcptrials.hosts")}, "config imports hosts"
    assert "mcptrials.runner" not in edges["mcptrials.snapshot"], "snapshot imports runner"
    assert "mcptrials.cli" not in edges["mcptrials.worker"], "worker imports cli"


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
