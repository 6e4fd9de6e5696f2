"""The reference agent (issue 33): a prompt's format example is not searched for, and a
directory argument is sent only where the tool's schema asks for a directory (serena's
find_referencing_symbols wants the file that holds the symbol: no guessed ".")."""

from mcptrials.providers.reference.arguments import Need, build_arguments
from mcptrials.providers.reference.question import Term, extract_terms
from mcptrials.providers.reference.tools import classify_tool

VERSION = (
    "What version does `pyproject.toml` declare for the project (the `version` key of its `[project]` "
    "table)? Answer with the bare version string on its own line (e.g. `1.2.3`) and cite file:line."
)
MATCHER = (
    "`Router::call_with_state` first hands the request to another method that matches the request path "
    "against the registered routes. Which method is it? Answer as `Type::method` on its own line (e.g. "
    "`Router::route`) and cite file:line of its definition."
)
FILE = (
    "Which file defines the struct `MethodRouter`? Answer with the file path relative to the repository root "
    "on its own line (e.g. `crate/src/module.rs`) and cite file:line of the struct definition."
)
HINT = (
    "Which file defines the class `Guardian` (the object that answers permission questions such as "
    "`can_see?`)? Answer with the file path relative to the repository root on its own line."
)
NAMED_AS = (
    "Which class does `NextNodeServer` extend? Answer with the class name as `next-server.ts` names it, "
    "on its own line, and cite file:line of both classes."
)


def searched(prompt):
    terms, files = extract_terms(prompt)
    return [t.search for t in terms], files


def test_a_format_example_is_neither_a_term_nor_a_file():
    assert "1.2.3" not in searched(VERSION)[0] and searched(VERSION)[1] == ["pyproject.toml"]
    assert searched(MATCHER)[0] == ["Router::call_with_state"]  # not Type::method, not Router::route
    assert searched(FILE) == (["MethodRouter"], [])  # crate/src/module.rs is not read
    assert "1.2.3" not in searched('What is the version? Answer like "1.2.3".')[0]


def test_a_snippet_that_is_not_a_format_example_stays():
    assert searched(HINT)[0] == ["Guardian", "can_see?"]  # "such as" about the code, not the answer
    assert searched(NAMED_AS)[1] == ["next-server.ts"]  # "as `x` names it": a file to read


# serena 2.x, trimmed: the reference of a symbol is asked in the file that holds it
REFERENCING = {
    "name": "mcp__serena__find_referencing_symbols",
    "description": "Finds references to the symbol at the given name_path.",
    "input_schema": {
        "type": "object",
        "required": ["name_path", "relative_path"],
        "properties": {
            "name_path": {"type": "string", "description": "Name path of the symbol."},
            "relative_path": {"type": "string", "description": "The relative path to the file containing the symbol."},
        },
    },
}
FIND_FILE = {
    "name": "mcp__serena__find_file",
    "description": "Finds non-gitignored files matching the file mask.",
    "input_schema": {
        "type": "object",
        "required": ["file_mask", "relative_path"],
        "properties": {
            "file_mask": {"type": "string", "description": "The filename or file mask (wildcards * or ?)."},
            "relative_path": {
                "type": "string",
                "description": 'The relative path to the directory to search in; pass "." to scan the project root.',
            },
        },
    },
}
FIND_SYMBOL = {
    "name": "mcp__serena__find_symbol",
    "description": "Retrieves symbols matching the name path.",
    "input_schema": {
        "type": "object",
        "required": ["name_path_pattern"],
        "properties": {
            "name_path_pattern": {"type": "string"},
            "relative_path": {
                "type": "string",
                "default": "",
                "description": "Restrict the search to this file or directory.",
            },
        },
    },
}
SEARCH_IN = {
    "name": "mcp__x__search_text",
    "description": "Searches the text of files.",
    "input_schema": {
        "type": "object",
        "required": ["query"],
        "properties": {
            "query": {"type": "string"},
            "directory": {"type": "string", "description": "The directory to search in."},
        },
    },
}


def test_no_guessed_directory_for_a_file_argument():
    term = Term("Flask", "Flask", "ident")
    assert build_arguments(classify_tool(REFERENCING), Need(term=term), "/w") is None  # was relative_path "."
    assert build_arguments(classify_tool(FIND_SYMBOL), Need(term=term), "/w") == {"name_path_pattern": "Flask"}


def test_a_directory_where_the_schema_asks_for_one():
    term = Term("app", "app", "word")
    assert build_arguments(classify_tool(FIND_FILE), Need(term=term), "/w") == {
        "file_mask": "*app*",
        "relative_path": ".",
    }
    # optional, no default, and it says it is a directory: the workspace root
    assert build_arguments(classify_tool(SEARCH_IN), Need(term=term), "/w") == {"query": "app", "directory": "/w"}
