"""`path:Symbol` citations resolved with tree-sitter grammars: one small real source file per
language in a real git repository, the definition's line range, and the cases that must stay
unresolved (a name that is only used, a method under the wrong container)."""

import pytest

from matrix_helpers import make_repo
from mcptrials.grade.citations.grading import grade_citations
from mcptrials.grade.gittree import commit_tree
from mcptrials.grade.citations.symbols import language_of

SOURCES = {
    "src/flask/app.py": (
        "import os\n"  # 1
        "\n"  # 2
        "\n"  # 3
        "class Flask:\n"  # 4
        "    def __init__(self, name):\n"  # 5
        "        self.name = name\n"  # 6
        "\n"  # 7
        "    @staticmethod\n"  # 8
        "    def route(rule):\n"  # 9
        "        return rule\n"  # 10
        "\n"  # 11
        "\n"  # 12
        "def create_app():\n"  # 13
        "    return Flask(os.getcwd())\n"  # 14
    ),
    "server/server.go": (
        "package server\n"  # 1
        "\n"  # 2
        'import "net/http"\n'  # 3
        "\n"  # 4
        "type Router struct {\n"  # 5
        "\tmux *http.ServeMux\n"  # 6
        "}\n"  # 7
        "\n"  # 8
        "type Server struct{}\n"  # 9
        "\n"  # 10
        "func (r *Router) Handle(pattern string) {\n"  # 11
        "\thttp.ListenAndServe(pattern, nil)\n"  # 12
        "}\n"  # 13
        "\n"  # 14
        "func New() *Router { return &Router{} }\n"  # 15
    ),
    "axum/src/routing/mod.rs": (
        "pub struct Router<S> {\n"  # 1
        "    inner: S,\n"  # 2
        "}\n"  # 3
        "\n"  # 4
        "impl<S> Router<S> {\n"  # 5
        "    pub fn route(self, path: &str) -> Self {\n"  # 6
        "        self\n"  # 7
        "    }\n"  # 8
        "}\n"  # 9
        "\n"  # 10
        "impl<S, T> Layer<S> for Extension<T> {\n"  # 11
        "    fn layer(&self, inner: S) -> S {\n"  # 12
        "        inner\n"  # 13
        "    }\n"  # 14
        "}\n"  # 15
    ),
    "src/main/java/web/Router.java": (
        "package web;\n"  # 1
        "\n"  # 2
        "public class Router {\n"  # 3
        "    public Router() {}\n"  # 4
        "\n"  # 5
        "    public void route(String path) {\n"  # 6
        "        System.out.println(path);\n"  # 7
        "    }\n"  # 8
        "\n"  # 9
        "    static class Route {\n"  # 10
        "        void match() {}\n"  # 11
        "    }\n"  # 12
        "}\n"  # 13
    ),
    "lib/sinatra/base.rb": (
        "module Sinatra\n"  # 1
        "  class Base\n"  # 2
        "    def call(env)\n"  # 3
        "      dup.call!(env)\n"  # 4
        "    end\n"  # 5
        "\n"  # 6
        "    def self.route(verb, path)\n"  # 7
        "      verb\n"  # 8
        "    end\n"  # 9
        "  end\n"  # 10
        "end\n"  # 11
    ),
    "src/router.ts": (
        "export interface Handler {\n"  # 1
        "  handle(req: Request): Response;\n"  # 2
        "}\n"  # 3
        "\n"  # 4
        "export class Router {\n"  # 5
        "  route(path: string): Router {\n"  # 6
        "    return this;\n"  # 7
        "  }\n"  # 8
        "}\n"  # 9
        "\n"  # 10
        "export const createRouter = (): Router => new Router();\n"  # 11
    ),
    "native/util.c": "int helper(int x) {\n    return x * 2;\n}\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    repo = tmp_path_factory.mktemp("sym") / "repo"
    return commit_tree(repo, make_repo(repo, SOURCES))


def cite(tree, citation):
    (c,) = grade_citations(citation, tree)["items"]
    return c


@pytest.mark.parametrize(
    "citation, lines",
    [
        ("src/flask/app.py:Flask", [4, 10]),
        ("src/flask/app.py:Flask.route", [9, 10]),  # decorated: the def itself
        ("app.py:Flask.__init__", [5, 6]),
        ("src/flask/app.py:create_app", [13, 14]),
        ("src/flask/app.py:flask.app.Flask.route", [9, 10]),  # a leading module path is accepted
        ("server/server.go:Router.Handle", [11, 13]),  # the receiver type is the container
        ("server/server.go:Handle", [11, 13]),
        ("server/server.go:New", [15, 15]),
        ("server/server.go:Router", [5, 7]),
        ("axum/src/routing/mod.rs:Router::route", [6, 8]),  # an inherent impl
        ("axum/src/routing/mod.rs:Extension::layer", [12, 14]),  # a trait impl: its type ...
        ("axum/src/routing/mod.rs:Layer::layer", [12, 14]),  # ... or its trait
        ("axum/src/routing/mod.rs:Router", [1, 3]),
        ("src/main/java/web/Router.java:Router.route", [6, 8]),
        ("Router.java:Router.Router", [4, 4]),  # the constructor
        ("Router.java:Router.Route.match", [11, 11]),
        ("lib/sinatra/base.rb:Sinatra::Base#call", [3, 5]),
        ("lib/sinatra/base.rb:Base.route", [7, 9]),  # def self.route
        ("src/router.ts:Router.route", [6, 8]),
        ("src/router.ts:Handler.handle", [2, 2]),  # an interface method
        ("src/router.ts:createRouter", [11, 11]),  # a const bound to an arrow function
    ],
)
def test_definitions_found_by_tree_sitter(tree, citation, lines):
    c = cite(tree, citation)
    assert (c["bucket"], c["symbol_by"], c["symbol_lines"]) == ("grounded", "tree-sitter", lines), c["reason"]
    assert c["verification"] == "n/a"


@pytest.mark.parametrize(
    "citation",
    [
        "src/flask/app.py:os",  # imported, not defined (a word search found it)
        "src/flask/app.py:Flask.create_app",  # create_app is not inside Flask
        "src/flask/app.py:getcwd",  # only called
        "server/server.go:Server.Handle",  # Handle's receiver is Router
        "server/server.go:ListenAndServe",  # only called
        "axum/src/routing/mod.rs:Router::layer",  # layer is in the Extension impl
        "axum/src/routing/mod.rs:inner",  # a field, not a definition
        "Router.java:Route.route",
        "Router.java:println",
        "lib/sinatra/base.rb:Sinatra::Base#dup",
        "src/router.ts:Router.handle",
        "src/router.ts:Request",
    ],
)
def test_names_that_are_not_definitions_stay_unresolved(tree, citation):
    c = cite(tree, citation)
    assert (c["bucket"], c["symbol_by"], c["symbol_lines"]) == ("unresolved", "tree-sitter", None)
    assert "no definition of" in c["reason"]


def test_languages_without_a_grammar_fall_back_to_the_word_search(tree):
    c = cite(tree, "native/util.c:helper")
    assert (c["bucket"], c["symbol_by"], c["symbol_lines"]) == ("grounded", "regex", None)
    assert cite(tree, "native/util.c:missing")["bucket"] == "unresolved"


def test_language_of():
    assert [language_of(p) for p in ("a/b.py", "x.go", "lib.rs", "A.java", "Rakefile", "t.tsx", "m.mjs", "x.c")] == [
        "python",
        "go",
        "rust",
        "java",
        "ruby",
        "tsx",
        "javascript",
        None,
    ]
