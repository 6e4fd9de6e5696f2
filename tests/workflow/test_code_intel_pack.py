"""The public code-intelligence pack (configs/code-intel.yaml, packs/code-intel/scenarios/).

- the config validates and `snakemake -n` plans the whole matrix;
- every gold citation and every exact answer is true at its repository's pinned commit,
  read from git objects of a local copy of that repository (a mirror). A scenario whose
  repository has no local copy here is skipped, naming the repository and how to get it.

Local copies are the `mirrors:` of configs/code-intel.yaml merged with
configs/mirrors.local.yaml (git-ignored; see configs/mirrors.example.yaml), or of the file
named by $MCPTRIALS_PACK_MIRRORS.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcptrials.matrix.config import load_matrix, read_config_files
from mcptrials.grade.citations.extract import extract_citations
from mcptrials.grade.exact import grade_exact

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "configs" / "code-intel.yaml"
LOCAL = Path(os.environ.get("MCPTRIALS_PACK_MIRRORS", ROOT / "configs" / "mirrors.local.yaml"))
MATRIX = load_matrix(PACK)
SCENARIOS = sorted(MATRIX.scenarios.values(), key=lambda s: s.id)


def _config_arg() -> str:
    return os.pathsep.join([str(PACK)] + ([str(LOCAL)] if LOCAL.exists() else []))


def _mirrors() -> dict[str, str]:
    return read_config_files(_config_arg())[1].get("mirrors") or {}


def test_validate_passes_with_the_mirrors():
    p = subprocess.run(
        [sys.executable, "-m", "mcptrials.cli", "validate", "--config", _config_arg()],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr
    n = len(MATRIX.models) * len(MATRIX.hosts) * len(MATRIX.tools) * len(MATRIX.run_scenarios()) * MATRIX.trials
    assert f"= {n} trials" in p.stdout


def test_a_mirrors_file_is_merged_with_paths_from_its_own_folder(tmp_path):
    """`--configfile pack.yaml local.yaml` reaches the stages as 'pack.yaml:local.yaml': the
    second file's mirrors are merged in, relative to that file; the URL stays in the config."""
    local = tmp_path / "elsewhere" / "mirrors.local.yaml"
    local.parent.mkdir()
    local.write_text(
        "mirrors:\n  https://github.com/pallets/flask: ../copies/flask.git\n"
        "  https://github.com/gin-gonic/gin: /abs/gin.bundle\n"
    )
    m = load_matrix(f"{PACK}{os.pathsep}{local}")
    assert m.path == PACK and m.repos["flask"]["url"] == "https://github.com/pallets/flask"
    assert m.repo_source("flask") == str(tmp_path / "copies" / "flask.git")
    assert m.repo_source("gin") == "/abs/gin.bundle"
    assert m.repo_source("axum") == "https://github.com/tokio-rs/axum"  # no mirror: the URL
    assert load_matrix(PACK).config["mirrors"] == {}


def test_pack_shape():
    """Six repos by public URL and full commit; per repo one multi-step exploration and at
    least four single-answer tasks (one needing no server tool); a third held out."""
    assert set(MATRIX.repos) == {"flask", "gin", "axum", "javalin", "discourse", "nextjs"}
    for name, spec in MATRIX.repos.items():
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", spec["url"]), name
        assert re.fullmatch(r"[0-9a-f]{40}", spec["commit"]), name
    assert MATRIX.config["mirrors"] == {}, "the committed pack must not name machine paths"
    assert set(MATRIX.tools) == {"baseline", "filesystem", "git", "code-index", "serena", "tree-sitter"}
    for repo in MATRIX.repos:
        mine = [s for s in SCENARIOS if s.repo == repo]
        explore = [s for s in mine if len(s.data["steps"]) >= 3]
        tasks = [s for s in mine if any("exact_answer" in st for st in s.data["steps"])]
        assert len(explore) == 1 and 3 <= len(explore[0].data["steps"]) <= 4, repo
        assert len(tasks) >= 4, repo
        assert any("no server tool is needed" in s.data.get("description", "") for s in tasks), repo
        for st in explore[0].data["steps"]:
            assert any(c["required"] for c in st["checks"]) and any(not c["required"] for c in st["checks"]), st["name"]
            assert st["citations"]["gold"] and st["key_points"], st["name"]
    held = [s for s in SCENARIOS if s.split == "held-out"]
    assert abs(len(held) - len(SCENARIOS) / 3) <= 1
    assert not {s.id for s in held} & {s.id for s in MATRIX.run_scenarios()}


@pytest.mark.slow  # over 10 s: the pack's whole DAG (1,137 jobs)
def test_dry_run_plans_the_whole_matrix():
    args = ["--configfile", str(PACK)] + ([str(LOCAL)] if LOCAL.exists() else [])
    # --forceall: the whole matrix, whatever results/ of this checkout already holds
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", *args, "-n", "--forceall", "--cores", "1"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout + p.stderr
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", out, re.M))
    trials = sum(1 for _ in MATRIX.cells())
    assert int(counts["transcript"]) == trials and int(counts["scored"]) == trials
    assert int(counts["checkout"]) == len(MATRIX.repos)
    assert int(counts["tools_snapshot"]) == len(MATRIX.tools) * len(MATRIX.repos)
    assert int(counts["install_tool"]) == len(MATRIX.server_tools())
    assert int(counts["index"]) == len(MATRIX.repos)  # serena's offline set-up, per repo
    assert int(counts["report"]) == 1


# --- gold and exact answers at the pinned commits ------------------------------------

_TREES: dict[str, object] = {}


def tree_for(repo: str, tmp_factory):
    """The repo's files at its pinned commit, from its local mirror; skip when there is none."""
    from mcptrials.grade.gittree import CommitTree

    spec = MATRIX.repos[repo]
    if repo in _TREES:
        return _TREES[repo]
    src = _mirrors().get(spec["url"])
    if not src or not Path(src).exists():
        pytest.skip(
            f"repo {repo!r} is not available locally: clone {spec['url']} (it must contain commit "
            f"{spec['commit']}) and list it under `mirrors:` in {LOCAL.relative_to(ROOT)} "
            "(see configs/mirrors.example.yaml)"
        )
    # A bare local clone (hard links, seconds), as the checkout stage clones: it reads a
    # bundle or a minimal bare directory (no `config` file) that gitpython cannot open.
    dest = tmp_factory.mktemp(repo) / "repo.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", src, str(dest)], check=True)
    _TREES[repo] = CommitTree(str(dest), spec["commit"])
    return _TREES[repo]


DEF = r"(?:def|class|module|function|func|fn|struct|enum|interface|trait|type|const|let|var|val)\s+(?:self\.)?"


def _identifiers(step: dict) -> set[str]:
    """Names a gold location should show: check words, `backticked` names in the prompt, and
    identifier-shaped tokens (snake_case, CamelCase, ALL_CAPS, dotted) of the key points."""
    names = {c["value"] for c in step.get("checks", []) if c["type"] == "word"}
    names |= {m for m in re.findall(r"`([A-Za-z_][\w.:#?]*)`", step["prompt"])}
    for kp in step.get("key_points", []):
        names |= {
            t
            for t in re.findall(r"[A-Za-z_][\w]*", kp)
            if "_" in t or re.search(r"[a-z][A-Z]|^[A-Z][a-z]+[A-Z]", t) or (t.isupper() and len(t) > 2)
        }
    parts = set()
    for n in names:
        parts |= {p for p in re.split(r"\.|::|#|\?", n) if len(p) > 2}
    return parts


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_gold_citations_hold_at_the_pinned_commit(sc, tmp_path_factory):
    tree = tree_for(sc.repo, tmp_path_factory)
    for step in sc.data["steps"]:
        for loc in (step.get("citations") or {}).get("gold", []):
            where = f"{sc.path.name}: step {step['name']}: gold {loc}"
            parsed = extract_citations(loc)
            assert parsed and parsed[0]["text"] == loc, f"{where}: not a path:N, path:N-M or path:Symbol form"
            g = parsed[0]
            assert tree.has(g["path"]), f"{where}: no file {g['path']} at {tree.commit}"
            text = tree.text(g["path"])
            lines = text.split("\n")
            if g["lines"] is not None:
                first, last = g["lines"][0], g["lines"][-1]
                assert 1 <= first <= last <= len(lines), f"{where}: outside 1..{len(lines)}"
                shown = "\n".join(lines[first - 1 : last])
                names = _identifiers(step)
                assert any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", shown) for n in names), (
                    f"{where}: the lines show none of {sorted(names)}:\n{shown[:500]}"
                )
            else:
                parts = [p for p in re.split(r"\.|::|#", g["symbol"]) if p]
                for p in parts:
                    assert re.search(rf"(?<!\w){re.escape(p)}(?!\w)", text), f"{where}: {p!r} not in the file"
                assert re.search(
                    rf"(?:{DEF}|^\s*(?:export\s+)?(?:default\s+)?(?:public\s+|private\s+|protected\s+|static\s+|async\s+)*)"
                    rf"{re.escape(parts[-1])}\b",
                    text,
                    re.M,
                ), f"{where}: no definition of {parts[-1]!r}"


# Each exact answer recomputed from the code at the pinned commit, one function per task.


def _one(tree, path: str, pattern: str, flags=re.M) -> str:
    m = re.search(pattern, tree.text(path), flags)
    assert m, f"{path}: no match for {pattern!r}"
    return m.group(1)


def _block(tree, path: str, start: str, end: str) -> str:
    text = tree.text(path)
    i = text.index(start)
    return text[i : text.index(end, i + len(start))]


def _defining_file(tree, pattern: str, prefix: str = "", suffix: str = "") -> str:
    hits = [
        p for p in tree.paths if p.startswith(prefix) and p.endswith(suffix) and re.search(pattern, tree.text(p), re.M)
    ]
    assert len(hits) == 1, f"{pattern!r} is defined in {hits}"
    return hits[0]


def _enclosing(tree, path: str, line_pattern: str, owner_pattern: str) -> str:
    """The name of the nearest `owner_pattern` (e.g. a class) above the line matching line_pattern."""
    lines = tree.text(path).split("\n")
    at = next(i for i, l in enumerate(lines) if re.search(line_pattern, l))
    return next(m.group(1) for l in reversed(lines[:at]) if (m := re.search(owner_pattern, l)))


FLASK_APP = "src/flask/app.py"
MR = "axum/src/routing/"
JAV = "javalin/src/main/java/io/javalin/"
HEADERS = "packages/next/src/client/components/app-router-headers.ts"

EXACT = {
    "flask-project-version": lambda t: _one(t, "pyproject.toml", r'^version = "([^"]+)"'),
    "flask-session-interface-file": lambda t: _defining_file(
        t, r"^class SecureCookieSessionInterface\b", "src/", ".py"
    ),
    "flask-json-tag-count": lambda t: str(
        len(re.findall(r"^\s+Tag\w+,|^\s+Pass\w+,", _block(t, "src/flask/json/tag.py", "default_tags = [", "]"), re.M))
    ),
    "flask-response-conversion": lambda t: (
        _enclosing(t, FLASK_APP, r"^    def make_response\(self", r"^class (\w+)") + ".make_response"
        if "response = self.make_response(rv)"
        in _block(t, FLASK_APP, "def finalize_request(", "def make_default_options")
        else "finalize_request does not call make_response"
    ),
    "gin-version": lambda t: _one(t, "version.go", r'^const Version = "([^"]+)"'),
    "gin-any-methods-count": lambda t: str(
        len(re.findall(r"http\.Method\w+", _block(t, "routergroup.go", "anyMethods = []string{", "}")))
    ),
    "gin-abort-index": lambda t: str(
        127 >> int(_one(t, "context.go", r"^const abortIndex int8 = math\.MaxInt8 >> (\d+)$"))
    ),
    "gin-tree-lookup": lambda t: (
        _one(t, "tree.go", r"^func \(n \*(node)\) getValue\(path string.*\(value nodeValue\)") + ".getValue"
    ),
    "axum-crate-version": lambda t: _one(t, "axum/Cargo.toml", r'\A\[package\]\nname = "axum"\nversion = "([^"]+)"', 0),
    "axum-method-filter-count": lambda t: str(
        len(re.findall(r"^    pub const [A-Z]+: Self = Self::from_bits\(", t.text(MR + "method_filter.rs"), re.M))
    ),
    "axum-methodrouter-file": lambda t: _defining_file(t, r"^pub struct MethodRouter<", "axum/src/", ".rs"),
    "axum-path-matcher": lambda t: (
        _one(t, MR + "mod.rs", r"^\s+path_router: (PathRouter)<S>", re.M) + "::call_with_state"
        if "self.inner.path_router.call_with_state(req, state)"
        in _block(t, MR + "mod.rs", "pub(crate) fn call_with_state", "\n    }\n")
        and "pub(super) fn call_with_state(" in t.text(MR + "path_router.rs")
        else "not delegated"
    ),
    "javalin-parent-version": lambda t: _one(
        t, "pom.xml", r"<artifactId>javalin-parent</artifactId>\s*<version>([^<]+)</version>"
    ),
    "javalin-lifecycle-count": lambda t: str(
        len(
            re.findall(
                r"DefaultTasks\.\w+",
                _block(t, JAV + "config/JavalinState.kt", "servletRequestLifecycle = mutableListOf(", ")"),
            )
        )
    ),
    "javalin-http-method-count": lambda t: str(
        len(re.findall(r'= new HandlerType\("\w+"\);', t.text(JAV + "http/HandlerType.java")))
    ),
    "javalin-servlet-context-file": lambda t: _defining_file(
        t, r"^open class JavalinServletContext\(", "javalin/src/main/", ".kt"
    ),
    "discourse-trust-level-count": lambda t: str(
        len(re.findall(r":\w+", _one(t, "lib/trust_level.rb", r"Enum\.new\(([^)]*?),\s*start:")))
    ),
    "discourse-highest-trust-level": lambda t: re.findall(
        r":(\w+)", _one(t, "lib/trust_level.rb", r"Enum\.new\(([^)]*?),\s*start:")
    )[-1],
    "discourse-guardian-file": lambda t: _defining_file(t, r"^class Guardian\b", "lib/", ".rb"),
    "discourse-post-creation-method": lambda t: (
        _one(t, "lib/new_post_manager.rb", r"creator = (PostCreator)\.new\(@user, @args\)\n\s+post = creator\.create\b")
        + "#create"
    ),
    "nextjs-rsc-union-query": lambda t: _one(t, HEADERS, r"^export const NEXT_RSC_UNION_QUERY = '([^']+)'"),
    "nextjs-action-header": lambda t: _one(t, HEADERS, r"^export const ACTION_HEADER = '([^']+)'"),
    "nextjs-node-server-file": lambda t: _defining_file(
        t, r"^export default class NextNodeServer\b", "packages/next/src/server/", ".ts"
    ),
    "nextjs-node-server-base": lambda t: _one(
        t, "packages/next/src/server/next-server.ts", r"^export default class NextNodeServer extends (\w+)"
    ),
}

TASKS = [s for s in SCENARIOS if any("exact_answer" in st for st in s.data["steps"])]


def test_every_exact_answer_has_a_check():
    assert sorted(EXACT) == sorted(s.id for s in TASKS)


@pytest.mark.parametrize("sc", TASKS, ids=[s.id for s in TASKS])
def test_exact_answers_hold_at_the_pinned_commit(sc, tmp_path_factory):
    tree = tree_for(sc.repo, tmp_path_factory)
    (step,) = [st for st in sc.data["steps"] if "exact_answer" in st]
    computed = EXACT[sc.id](tree)
    verdict = grade_exact(step["exact_answer"], computed)
    assert verdict["passed"], (
        f"{sc.path.name}: the code at {tree.commit[:12]} says {computed!r}, "
        f"the scenario expects {step['exact_answer']['value']!r}"
    )
