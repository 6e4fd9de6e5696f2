"""Where a cited symbol is defined in a file: `path:Symbol`, `path:Class.method` (also
`Class::method`, `Class#method`), found with a tree-sitter parser of the file's language.

A definition is a function, method, class, struct, enum, trait, interface, module, type
or constant node (per language, in DEFINITIONS) whose name is the symbol's last component;
in Python and Ruby also an assignment at module or class level (Python: to a name,
`TRANSPORTS: dict[...] = {...}` defines TRANSPORTS over the whole statement; Ruby: to a
constant, `FLAGGABLE_DAYS = 7`), never one inside a function body. Each definition also
keeps `outer_start`: a decorated Python definition's first decorator line (the strict
verdict counts the decorators as part of it; `start` stays the def line).
The components before it must name the definition's enclosing containers, innermost first:
a class or module around it, a Rust `impl` (its type or its trait), a Go method's receiver
type. Leading components beyond the containers (a module or crate path such as
`flask.app.Flask.route`) are accepted only when none of them names a definition of the file.
The first such definition in source order wins; its line range (1-based, inclusive) is kept.

Languages with a grammar here: Python, Go, Rust, Java, Ruby, TypeScript/TSX and
JavaScript. For any other file `find_definition` returns None and the caller falls back to
its word search.
"""

from __future__ import annotations

from functools import lru_cache

_EXT_LANG = {
    "py": "python", "pyi": "python",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "rb": "ruby", "rake": "ruby", "gemspec": "ruby",
    "ts": "typescript", "mts": "typescript", "cts": "typescript",
    "tsx": "tsx",
    "js": "javascript", "jsx": "javascript", "mjs": "javascript", "cjs": "javascript",
}
_NAME_LANG = {"Rakefile": "ruby", "Gemfile": "ruby"}

# node type -> "def" (a definition), "container" (encloses definitions, names them) or "both".
_TS_DEFS = {
    "function_declaration": "def", "generator_function_declaration": "def",
    "class_declaration": "both", "abstract_class_declaration": "both", "class": "both",
    "method_definition": "def", "method_signature": "def", "abstract_method_signature": "def",
    "interface_declaration": "both", "type_alias_declaration": "def", "enum_declaration": "def",
    "internal_module": "both", "module": "both", "variable_declarator": "def",
}
DEFINITIONS = {
    "python": {"function_definition": "both", "class_definition": "both", "assignment": "def"},
    "go": {"function_declaration": "def", "method_declaration": "def", "type_spec": "both",
           "method_elem": "def", "method_spec": "def", "const_spec": "def", "var_spec": "def"},
    "rust": {"function_item": "both", "function_signature_item": "def", "struct_item": "def",
             "enum_item": "def", "union_item": "def", "trait_item": "both", "type_item": "def",
             "const_item": "def", "static_item": "def", "macro_definition": "def", "mod_item": "both",
             "impl_item": "container"},
    "java": {"class_declaration": "both", "interface_declaration": "both", "enum_declaration": "both",
             "record_declaration": "both", "annotation_type_declaration": "both",
             "method_declaration": "def", "constructor_declaration": "def"},
    "ruby": {"class": "both", "module": "both", "method": "def", "singleton_method": "def", "assignment": "def"},
    "typescript": _TS_DEFS, "tsx": _TS_DEFS, "javascript": _TS_DEFS,
}
_FUNCTION_VALUES = {"arrow_function", "function_expression", "function", "generator_function", "class"}


@lru_cache(maxsize=4096)            # asked for every line a strict verdict reads
def language_of(path: str) -> str | None:
    name = path.rsplit("/", 1)[-1]
    if name in _NAME_LANG:
        return _NAME_LANG[name]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return _EXT_LANG.get(ext)


@lru_cache(maxsize=None)
def _parser(lang: str):
    import tree_sitter

    if lang == "python":
        import tree_sitter_python as mod
        ptr = mod.language()
    elif lang == "go":
        import tree_sitter_go as mod
        ptr = mod.language()
    elif lang == "rust":
        import tree_sitter_rust as mod
        ptr = mod.language()
    elif lang == "java":
        import tree_sitter_java as mod
        ptr = mod.language()
    elif lang == "ruby":
        import tree_sitter_ruby as mod
        ptr = mod.language()
    elif lang in ("typescript", "tsx"):
        import tree_sitter_typescript as mod
        ptr = mod.language_typescript() if lang == "typescript" else mod.language_tsx()
    elif lang == "javascript":
        import tree_sitter_javascript as mod
        ptr = mod.language()
    else:
        raise KeyError(lang)
    return tree_sitter.Parser(tree_sitter.Language(ptr))


def _text(node) -> str:
    return node.text.decode("utf-8", errors="replace")


def _type_name(node) -> str | None:
    """The bare name of a type node: Router for `*Router`, `Router<S>`, `crate::x::Router`."""
    if node is None:
        return None
    if node.type in ("type_identifier", "identifier", "constant", "field_identifier", "property_identifier"):
        return _text(node)
    for f in ("name", "type"):
        sub = node.child_by_field_name(f)
        if sub is not None and sub is not node:
            return _type_name(sub)
    for child in node.named_children:
        got = _type_name(child)
        if got:
            return got
    return None


def _go_receiver(params) -> str | None:
    """Router for the receiver list `(r *Router)` or `(Router[T])`."""
    for p in (params.named_children if params is not None else []):
        if p.type == "parameter_declaration":
            return _type_name(p.child_by_field_name("type"))
    return None


def _names(lang: str, node) -> list[str]:
    """The names a definition or container node goes by (a Rust impl: its type and trait)."""
    t = node.type
    if lang == "rust" and t == "impl_item":
        return [n for n in (_type_name(node.child_by_field_name("type")),
                            _type_name(node.child_by_field_name("trait"))) if n]
    if t == "variable_declarator":
        value = node.child_by_field_name("value")
        if value is None or value.type not in _FUNCTION_VALUES:
            return []
    if t == "assignment":
        return _assigned_name(lang, node)
    name = node.child_by_field_name("name")
    if name is None:
        return []
    if name.type == "scope_resolution":      # Ruby `class Foo::Bar`
        name = name.child_by_field_name("name") or name
    return [_text(name)]


def _assigned_name(lang: str, node) -> list[str]:
    """The name a module- or class-level assignment defines (rule in the module docstring)."""
    left = node.child_by_field_name("left")
    if left is None or left.type != ("identifier" if lang == "python" else "constant"):
        return []
    stmt = node.parent if lang == "python" else node
    if stmt is None or (lang == "python" and stmt.type != "expression_statement"):
        return []
    scope = stmt.parent
    if lang == "python":
        ok = scope is not None and (scope.type == "module" or (
            scope.type == "block" and scope.parent is not None and scope.parent.type == "class_definition"))
    else:
        ok = scope is not None and (scope.type == "program" or (
            scope.type == "body_statement" and scope.parent is not None and scope.parent.type in ("class", "module")))
    return [_text(left)] if ok else []


def _span_node(lang: str, node):
    """The node whose lines a definition covers: a Python assignment's whole statement."""
    if node.type == "assignment" and lang == "python" and node.parent is not None:
        return node.parent
    return node


def _outer_start(lang: str, node) -> int:
    """The first line of a definition with what belongs to it above: a decorated Python
    function or class from its first decorator (`@classmethod` above `def put`)."""
    if lang == "python" and node.parent is not None and node.parent.type == "decorated_definition":
        return node.parent.start_point[0] + 1
    return node.start_point[0] + 1


@lru_cache(maxsize=None)
def _definition_query(lang: str):
    """A query capturing every node of the language's definition and container kinds (those
    its grammar has: DEFINITIONS lists kinds of several grammar versions)."""
    import tree_sitter

    language = _parser(lang).language
    kinds = [t for t in DEFINITIONS[lang] if language.id_for_node_kind(t, True) is not None]
    return tree_sitter.Query(language, " ".join(f"({t}) @d" for t in kinds))


@lru_cache(maxsize=256)
def definitions(lang: str, source: str) -> list[dict]:
    """Every definition of `source`, in document order: name, containers (innermost first,
    each a list of names), kind, start and end line (1-based). The definition and container
    nodes come from one tree-sitter query (found in C, not by walking every node in Python);
    a definition's containers are its container ancestors among them."""
    import tree_sitter

    tree = _parser(lang).parse(source.encode("utf-8"))
    kinds = DEFINITIONS[lang]
    nodes = tree_sitter.QueryCursor(_definition_query(lang)).captures(tree.root_node).get("d", [])
    nodes.sort(key=lambda n: (n.start_byte, -n.end_byte))
    names_of = {n.id: _names(lang, n) for n in nodes}
    out: list[dict] = []
    for node in nodes:
        if kinds[node.type] not in ("def", "both") or not names_of[node.id]:
            continue
        containers = []
        up = node.parent
        while up is not None:
            if up.id in names_of and kinds[up.type] in ("container", "both") and names_of[up.id]:
                containers.append(names_of[up.id])
            up = up.parent
        if lang == "go" and node.type == "method_declaration":
            recv = _go_receiver(node.child_by_field_name("receiver"))
            containers = [[recv]] + containers if recv else containers
        span = _span_node(lang, node)
        out.append({"name": names_of[node.id][0], "containers": containers, "kind": node.type,
                    "start": span.start_point[0] + 1, "end": span.end_point[0] + 1,
                    "outer_start": min(_outer_start(lang, node), span.start_point[0] + 1)})
    return out


def _matches(d: dict, qualifiers: list[str], defined: set[str]) -> bool:
    containers = d["containers"]
    for k, q in enumerate(reversed(qualifiers)):
        if k < len(containers):
            if q not in containers[k]:
                return False
        elif q in defined:              # a leftover qualifier must be a module path, not a definition
            return False
    return True


def find_definition(path: str, source: str, parts: list[str]) -> dict | None:
    """The definition of the symbol `parts` (its components) in `source`:
    {"found": bool, "lines": [start, end] | None, "kind": ..., "by": "tree-sitter"};
    None when no grammar covers the file."""
    lang = language_of(path)
    if lang is None or not parts:
        return None
    defs = definitions(lang, source)
    defined = {d["name"] for d in defs}
    *qualifiers, name = parts
    for d in defs:
        if d["name"] == name and _matches(d, qualifiers, defined):
            return {"found": True, "lines": [d["start"], d["end"]], "kind": d["kind"], "by": "tree-sitter"}
    return {"found": False, "lines": None, "kind": None, "by": "tree-sitter"}
