"""String-key lookups per 100 lines, per package, and the modules that spell a key.

    python bench/string_keys.py [--src src] [--key verified_rate]

A string-key lookup is, counted with `ast` over each module of the package:
  - a subscript whose index is a string literal: `row["fairness"]` (read, write or del);
  - a call of a method named `get`, `pop` or `setdefault` whose first argument is a string
    literal: `row.get("fairness")`.
An f-string (`row[f"cited_recall_{g}"]`) or a name (`row[FAIRNESS]`) is not one; a lookup by a
constant of mcptrials.core.keys (the one spelling of the typed rows' keys) is counted apart, when
that module exists. Lines are the modules' physical lines, blank and comment lines included
(`wc -l`). Then, for --key:
which modules spell it as a string literal anywhere (a subscript, a dict key, a tuple of
column names, a comparison), and in how many packages.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PACKAGES = ("analyze", "gate", "report", "importers")
METHODS = ("get", "pop", "setdefault")


def is_str(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def lookups(tree: ast.AST, test=is_str) -> int:
    """How many lookups the tree holds whose key passes `test` (by default: a string literal)."""
    n = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and test(node.slice):
            n += 1
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in METHODS
            and node.args
            and test(node.args[0])
        ):
            n += 1
    return n


def key_constants(root: Path) -> set[str]:
    """The names mcptrials.core.keys defines (none before it existed)."""
    path = root / "core" / "keys.py"
    if not path.is_file():
        return set()
    return {t.id for n in ast.parse(path.read_text()).body if isinstance(n, ast.AnnAssign) for t in [n.target]}


def spells(tree: ast.AST, key: str) -> bool:
    return any(isinstance(n, ast.Constant) and n.value == key for n in ast.walk(tree))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=str(Path(__file__).resolve().parents[1] / "src"))
    ap.add_argument("--key", default="verified_rate")
    args = ap.parse_args()
    root = Path(args.src) / "mcptrials"
    names = key_constants(root)
    by_name = lambda node: isinstance(node, ast.Name) and node.id in names  # noqa: E731
    print("| package | modules | lines | string-key lookups | per 100 lines | lookups by a core.keys constant |")
    print("|---|---:|---:|---:|---:|---:|")
    for pkg in PACKAGES:
        files = sorted((root / pkg).rglob("*.py"))
        lines = sum(len(f.read_text().splitlines()) for f in files)
        trees = [ast.parse(f.read_text()) for f in files]
        n = sum(lookups(t) for t in trees)
        k = sum(lookups(t, by_name) for t in trees)
        print(f"| {pkg} | {len(files)} | {lines} | {n} | {100 * n / lines:.1f} | {k} |")
    spelled = [f for f in sorted(root.rglob("*.py")) if spells(ast.parse(f.read_text()), args.key)]
    pkgs = sorted({f.relative_to(root).parts[0] for f in spelled})
    print(f"\n{args.key!r} spelled in {len(spelled)} modules of {len(pkgs)} packages ({', '.join(pkgs)}):")
    for f in spelled:
        print(f"  {f.relative_to(root)}")


if __name__ == "__main__":
    main()
