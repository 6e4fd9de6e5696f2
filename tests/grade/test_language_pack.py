"""Every language parsed (issue 33 item 5): the grammars come from tree-sitter-language-pack,
which ships them in its wheel (nothing downloaded at run time); Kotlin, PHP, C#, Swift and
Scala have definitions like the other languages; a code file whose definitions are not known
here gets the strict verdict `undetermined`, never `mismatch`, where a definition would decide."""

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations import composition, strict
from mcptrials.grade.citations.grading import citation_rates, grade_citations
from mcptrials.grade.gittree import commit_tree
from mcptrials.grade.citations.symbols import (
    CODE_WITHOUT_DEFINITIONS,
    DEFINITIONS,
    _EXT_LANG,
    code_language,
    definitions,
    language_of,
)

DOCS = Path(__file__).parents[2] / "docs" / "grading.md"


def defs(lang, source):
    return [(d["kind"], d["name"], d["containers"], d["start"], d["end"]) for d in definitions(lang, source)]


# Each new language on a tiny snippet: classes and their kin, functions and methods, properties
# at file or class level; a local in a function body defines nothing.
KOTLIN = """package demo
class Box(val item: Int) {
    val size: Int = 1
    fun open(x: Int): Int {
        val local = x
        return local
    }
    companion object Factory {
        fun make() = Box(1)
    }
}
object Registry { const val MAX = 3 }
typealias Name = String
fun top() = 1
"""
PHP = """<?php
namespace App;
const TOP = 1;
function helper($x) { return $x; }
class User extends Model {
    const MAX = 3;
    public $name;
    public function save(): bool {
        $local = 1;
        return true;
    }
}
interface Shape { public function area(); }
trait Greets { public function hi() {} }
"""
CSHARP = """namespace App {
  public class User : Base {
    public const int Max = 3;
    public string Name { get; set; }
    public User() {}
    public bool Save() { var local = 1; return true; }
  }
  public interface IShape { double Area(); }
  public struct Pt { public int X; }
  public enum Color { Red }
}
"""
SWIFT = """let topLevel = 1
func helper(x: Int) -> Int { return x }
class Router {
    static let shared = Router()
    func handle(_ path: String) -> Bool {
        let local = 1
        return local == 1
    }
}
protocol Shape { func area() -> Double }
extension Router { func moved() -> Router { return self } }
"""
SCALA = """package demo
object Registry {
  val Max = 3
  def make(x: Int): Int = x
}
class Router(val base: String) {
  var count = 0
  def handle(path: String): Boolean = {
    val local = 1
    true
  }
}
trait Shape { def area: Double }
"""


@pytest.mark.parametrize(
    "lang, source, expected",
    [
        (
            "kotlin",
            KOTLIN,
            [
                ("class_declaration", "Box", [], 2, 11),
                ("property_declaration", "size", [["Box"]], 3, 3),
                ("function_declaration", "open", [["Box"]], 4, 7),
                ("companion_object", "Factory", [["Box"]], 8, 10),
                ("function_declaration", "make", [["Factory"], ["Box"]], 9, 9),
                ("object_declaration", "Registry", [], 12, 12),
                ("property_declaration", "MAX", [["Registry"]], 12, 12),
                ("type_alias", "Name", [], 13, 13),
                ("function_declaration", "top", [], 14, 14),
            ],
        ),
        (
            "php",
            PHP,
            [
                ("const_declaration", "TOP", [], 3, 3),
                ("function_definition", "helper", [], 4, 4),
                ("class_declaration", "User", [], 5, 12),
                ("const_declaration", "MAX", [["User"]], 6, 6),
                ("property_declaration", "name", [["User"]], 7, 7),
                ("method_declaration", "save", [["User"]], 8, 11),
                ("interface_declaration", "Shape", [], 13, 13),
                ("method_declaration", "area", [["Shape"]], 13, 13),
                ("trait_declaration", "Greets", [], 14, 14),
                ("method_declaration", "hi", [["Greets"]], 14, 14),
            ],
        ),
        (
            "csharp",
            CSHARP,
            [
                ("class_declaration", "User", [], 2, 7),
                ("field_declaration", "Max", [["User"]], 3, 3),
                ("property_declaration", "Name", [["User"]], 4, 4),
                ("constructor_declaration", "User", [["User"]], 5, 5),
                ("method_declaration", "Save", [["User"]], 6, 6),
                ("interface_declaration", "IShape", [], 8, 8),
                ("method_declaration", "Area", [["IShape"]], 8, 8),
                ("struct_declaration", "Pt", [], 9, 9),
                ("field_declaration", "X", [["Pt"]], 9, 9),
                ("enum_declaration", "Color", [], 10, 10),
            ],
        ),
        (
            "swift",
            SWIFT,
            [
                ("property_declaration", "topLevel", [], 1, 1),
                ("function_declaration", "helper", [], 2, 2),
                ("class_declaration", "Router", [], 3, 9),
                ("property_declaration", "shared", [["Router"]], 4, 4),
                ("function_declaration", "handle", [["Router"]], 5, 8),
                ("protocol_declaration", "Shape", [], 10, 10),
                ("protocol_function_declaration", "area", [["Shape"]], 10, 10),
                ("class_declaration", "Router", [], 11, 11),
                ("function_declaration", "moved", [["Router"]], 11, 11),
            ],
        ),
        (
            "scala",
            SCALA,
            [
                ("object_definition", "Registry", [], 2, 5),
                ("val_definition", "Max", [["Registry"]], 3, 3),
                ("function_definition", "make", [["Registry"]], 4, 4),
                ("class_definition", "Router", [], 6, 12),
                ("var_definition", "count", [["Router"]], 7, 7),
                ("function_definition", "handle", [["Router"]], 8, 11),
                ("trait_definition", "Shape", [], 13, 13),
                ("function_declaration", "area", [["Shape"]], 13, 13),
            ],
        ),
    ],
)
def test_definitions_of_each_new_language(lang, source, expected):
    assert defs(lang, source) == expected


def test_new_languages_by_extension():
    assert [language_of(p) for p in ("a/B.kt", "build.gradle.kts", "x.php", "A.cs", "V.swift", "M.scala")] == [
        "kotlin",
        "kotlin",
        "php",
        "csharp",
        "swift",
        "scala",
    ]
    assert [
        code_language(p)
        for p in ("native/util.c", "lib/app.ex", "Main.kt", "README.md", "go.mod", "app/views/a.html.erb")
    ] == ["c", "elixir", "kotlin", None, None, None]
    assert not set(CODE_WITHOUT_DEFINITIONS) & set(_EXT_LANG)  # a language has definitions or not


def test_the_grammars_ship_in_the_wheel_and_load_offline():
    """A fresh process with every network connection refused parses each new language: the
    pack downloads nothing at run time (its 1.x versions fetch grammars from the network)."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse; socket.create_connection = refuse; socket.getaddrinfo = refuse\n"
        "from mcptrials.grade.citations.symbols import definitions\n"
        "srcs = {'kotlin': 'class A { fun f() = 1 }\\n', 'php': '<?php class A { function f() {} }',\n"
        "        'csharp': 'class A { void F() {} }', 'swift': 'class A { func f() {} }',\n"
        "        'scala': 'class A { def f = 1 }'}\n"
        "print({lang: [d['name'] for d in definitions(lang, src)] for lang, src in srcs.items()})\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        # (PYTHONPATH passed through: the source under test, not the installed package's)
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": "/nonexistent",
            **{k: v for k, v in os.environ.items() if k == "PYTHONPATH"},
        },
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(
        {lang: ["A", lang == "csharp" and "F" or "f"] for lang in ("kotlin", "php", "csharp", "swift", "scala")}
    )


# --- the strict verdict -----------------------------------------------------------------------

STATE_KT = (
    "package io.javalin.config\n"  # 1
    "\n"  # 2
    "/** The state behind JavalinConfig. */\n"  # 3
    "class JavalinState {\n"  # 4
    "    @JvmField val http = HttpConfig()\n"  # 5
    "    @JvmField val router = RouterConfig()\n"  # 6
    "\n"  # 7
    "    fun jsonMapper(mapper: JsonMapper) {\n"  # 8
    "        this.mapper = mapper\n"  # 9
    "    }\n"  # 10
    "}\n"
)  # 11
UTIL_C = (
    "#include <stdio.h>\n"  # 1
    "\n"  # 2
    "int helper(int x) {\n"  # 3
    "    int y = x * 2;\n"  # 4
    "    return y;\n"  # 5
    "}\n"
)  # 6
README = "# Tiny\n\nThe helper doubles.\nNothing else here.\n"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("lang") / "repo"
    return commit_tree(
        repo,
        make_repo(
            repo, {"src/io/javalin/config/JavalinState.kt": STATE_KT, "native/util.c": UTIL_C, "README.md": README}
        ),
    )


def only(text, tree):
    (c,) = grade_citations(text, tree)["items"]
    return c


@pytest.mark.parametrize(
    "answer",
    [
        "`JavalinState` (src/io/javalin/config/JavalinState.kt:6) holds the config.",
        "The class `JavalinState` is at src/io/javalin/config/JavalinState.kt:6.",
        "- src/io/javalin/config/JavalinState.kt:6 - `JavalinState`, the state",
        "| symbol | location |\n| --- | --- |\n| `JavalinState` | src/io/javalin/config/JavalinState.kt:6 |\n",
        json.dumps({"symbol": "JavalinState", "location": "src/io/javalin/config/JavalinState.kt:6"}),
        "`JavalinState` (src/io/javalin/config/JavalinState.kt:5-6) holds the config.",
    ],
)
def test_a_kotlin_line_inside_the_class_verifies_in_every_answer_form(tree, answer):
    """Line 6 lies inside class JavalinState (4-11) but does not name it: the definition
    decides, whatever form the answer cites it in (before, the word search called it a mismatch)."""
    c = only(answer, tree)
    assert (c["subject"]["name"], c["strict"]) == ("JavalinState", "verified")


def test_a_kotlin_line_outside_the_subjects_definition_is_a_mismatch(tree):
    c = only("`jsonMapper` (src/io/javalin/config/JavalinState.kt:5)", tree)
    assert c["strict"] == "mismatch"


def test_a_code_file_without_definitions_here_is_undetermined_not_mismatch(tree):
    # line 4 is inside helper (3-6) but does not name it; no C definitions here to tell
    c = only("`helper` (native/util.c:4) doubles its argument.", tree)
    assert (c["bucket"], c["strict"]) == ("grounded", "undetermined")
    assert only("`helper` (native/util.c:3)", tree)["strict"] == "verified"  # the line names it
    # a name the file never writes: no subject there (grader 11; undetermined before); prose (a
    # README): nothing in the file says where the subject is instead, so no positive evidence of
    # a wrong line (issue 34 item 1)
    assert only("`nowhere_defined` (native/util.c:4)", tree)["strict"] == "n/a"
    assert only("`helper` (README.md:4)", tree)["strict"] == "undetermined"


def test_verdict_function_directly():
    lines = UTIL_C.splitlines()
    assert strict.verdict("native/util.c", UTIL_C, [4], "helper", lines) == "undetermined"
    assert strict.verdict("lib/util.ex", UTIL_C, [4], "helper", lines) == "undetermined"
    assert strict.verdict("notes/util.txt", UTIL_C, [4], "helper", lines) == "mismatch"


def test_undetermined_counts_as_neither_verified_nor_mismatch(tree):
    r = grade_citations(
        "`helper` (native/util.c:4) and `helper` (native/util.c:3) and "
        "`JavalinState` (src/io/javalin/config/JavalinState.kt:5)",
        tree,
    )
    c = r["counts"]
    assert (c["strict_verified"], c["strict_mismatch"], c["strict_undetermined"]) == (2, 0, 1)
    rates = citation_rates(c)
    assert rates["strict_verified_rate"] == 1.0 and rates["strict_grounded_rate"] == 1.0
    forms = composition.rates(c["by_form"])
    assert forms["path:line"]["strict_verified_rate"] == 1.0


# --- the manual ---------------------------------------------------------------------------------


def test_docs_list_the_languages_with_definitions_and_their_files():
    """docs/grading.md's table of languages (`| `lang` | `.ext`, ... |`) is DEFINITIONS and _EXT_LANG."""
    text = DOCS.read_text()
    rows = re.findall(r"^\s*\| `([a-z]+)` \| ([^|]+) \|", text, re.M)
    assert {lang for lang, _ in rows} == set(DEFINITIONS)
    files = {lang: set(re.findall(r"`([^`]+)`", cell)) for lang, cell in rows}
    want: dict[str, set] = {}
    for ext, lang in _EXT_LANG.items():
        want.setdefault(lang, set()).add("." + ext)
    from mcptrials.grade.citations.symbols import _NAME_LANG

    for name, lang in _NAME_LANG.items():
        want[lang].add(name)
    assert files == want


def test_a_python_assignment_statement_in_either_grammar_shape():
    """The pack's Python grammar puts an assignment straight in its module or block; older
    grammars wrap it in an expression_statement (the statement whose lines it covers)."""
    from types import SimpleNamespace as N

    from mcptrials.grade.citations.symbols import _statement

    module = N(type="module", parent=None)
    bare = N(type="assignment", parent=module)
    wrapper = N(type="expression_statement", parent=module)
    wrapped = N(type="assignment", parent=wrapper)
    inner = N(type="assignment", parent=bare)  # `a = b = 1`'s inner one
    assert (_statement("python", bare), _statement("python", wrapped), _statement("python", inner)) == (
        bare,
        wrapper,
        None,
    )
    assert _statement("ruby", inner) is inner
    source = "A = 1\nclass K:\n    b = 2\n    def f(self):\n        c = 3\n"
    assert [d["name"] for d in definitions("python", source)] == ["A", "K", "b", "f"]
