"""The package as it ships: a wheel holds its schemas and prompts, a non-editable install of
that wheel works without the source checkout, and `pyproject.toml` declares exactly what the
code imports (so it cannot drift)."""

import ast
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PKG = SRC / "mcptrials"
TESTS = ROOT / "tests"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())

# Import name -> distribution, where the two differ (compared after PEP 503 normalisation).
IMPORT_TO_DIST = {
    "yaml": "pyyaml",
    "git": "gitpython",
}
# Declared but never imported by the library, on purpose: the workflow (Snakefile, profiles/)
# runs on Snakemake and its Slurm executor; the library must not import them.
WORKFLOW_ONLY = {"snakemake", "snakemake-executor-plugin-slurm", "snakemake-executor-plugin-slurm-jobstep"}
# In the test extra but never imported: this file builds a wheel with them (no build isolation;
# setuptools < 70.1 needs `wheel` for bdist_wheel).
BUILD_TOOLS = {"setuptools", "wheel"}
# In the test extra but never imported: pytest plugins, loaded by pytest itself (pytest-timeout:
# the per-test time-out of pyproject's pytest config).
PYTEST_PLUGINS = {"pytest-timeout"}
# In the test extra but never imported: the linter and type checker `make lint` runs (commands, not modules).
LINTERS = {"ruff", "mypy"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _dist_name(requirement: str) -> str:
    return _norm(re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement.strip()).group(0))


def _top_level_imports(root: Path) -> dict[str, set[str]]:
    """Every absolute import under root (module level or inside functions), as
    top-level name -> the files that import it."""
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(str(path.relative_to(ROOT)))
    return found


def _third_party(imports: dict[str, set[str]], local: set[str]) -> dict[str, set[str]]:
    return {k: v for k, v in imports.items() if k not in sys.stdlib_module_names and k not in local}


def _local_modules(root: Path) -> set[str]:
    """Names importable from a folder of the tests (helpers, fakes, fixtures) rather than installed."""
    names = {p.stem for p in root.rglob("*.py")}
    names |= {p.parent.name for p in root.rglob("__init__.py")}
    return names | {"mcptrials"}


def test_pyproject_declares_exactly_what_the_library_imports():
    declared = {_dist_name(r) for r in PYPROJECT["project"]["dependencies"]}
    imported = _third_party(_top_level_imports(PKG), {"mcptrials"})
    needed = {_norm(IMPORT_TO_DIST.get(name, name)): files for name, files in imported.items()}

    missing = {d: sorted(f) for d, f in needed.items() if d not in declared}
    assert not missing, f"imported by the library but not in [project] dependencies: {missing}"
    unused = sorted(declared - set(needed) - WORKFLOW_ONLY)
    assert not unused, f"declared in [project] dependencies but imported nowhere in src/mcptrials: {unused}"
    assert WORKFLOW_ONLY <= declared, "the workflow needs snakemake and its Slurm plugins declared"
    leaked = {d: sorted(f) for d, f in needed.items() if d in WORKFLOW_ONLY}
    assert not leaked, f"the library must not import the workflow engine: {leaked}"
    # Test tools belong in the extra, not in what every user installs.
    assert "pytest" not in declared


def test_test_extra_declares_exactly_what_the_tests_import():
    runtime = {_dist_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extra = {_dist_name(r) for r in PYPROJECT["project"]["optional-dependencies"]["test"]}
    imported = _third_party(_top_level_imports(TESTS), _local_modules(TESTS))
    needed = {_norm(IMPORT_TO_DIST.get(name, name)): files for name, files in imported.items()}

    missing = {d: sorted(f) for d, f in needed.items() if d not in runtime | extra}
    assert not missing, f"imported by tests/ but declared neither as a dependency nor in the test extra: {missing}"
    unused = sorted(extra - set(needed) - BUILD_TOOLS - PYTEST_PLUGINS - LINTERS)
    assert not unused, f"in the test extra but imported nowhere in tests/: {unused}"
    assert not extra & runtime, f"in both the dependencies and the test extra: {sorted(extra & runtime)}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the checkout (nothing written into the work tree, and no
    stale build/ folder of an earlier build can leak into it)."""
    tree = tmp_path_factory.mktemp("project")
    shutil.copy(ROOT / "pyproject.toml", tree)
    shutil.copy(ROOT / PYPROJECT["project"]["readme"], tree)
    shutil.copytree(SRC, tree / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    out = tmp_path_factory.mktemp("dist")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(tree),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    (built,) = out.glob("mcptrials-*.whl")
    return built


def test_wheel_ships_every_module_schema_and_prompt(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        str(p.relative_to(SRC))
        for p in PKG.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    }
    # The point of the exercise: the data the library reads at run time.
    assert {e for e in expected if e.startswith(("mcptrials/schemas/", "mcptrials/prompts/"))}, "no data found?"
    missing = sorted(expected - names)
    assert not missing, f"{wheel.name} lacks {missing} (package-data in pyproject.toml?)"


def test_non_editable_install_reads_its_own_data(wheel, tmp_path):
    """The wheel installed into a plain folder and imported from there, with the venv's
    site-packages for the dependencies but neither src/ nor the editable install's .pth
    (`-S`: no site processing), validates the demo config and reads every schema and prompt."""
    target = tmp_path / "site"
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--disable-pip-version-check",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr

    schemas = sorted(p.name for p in (PKG / "schemas").iterdir() if p.is_file())
    prompts = sorted(p.name for p in (PKG / "prompts").iterdir() if p.is_file())
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        target, src = Path({str(target)!r}).resolve(), Path({str(SRC)!r}).resolve()
        assert not any(Path(e or ".").resolve() == src for e in sys.path), sys.path

        import yaml
        import mcptrials
        from mcptrials import cli
        from mcptrials.core import paths
        from mcptrials.matrix import config
        for mod in (mcptrials, config, paths):
            assert Path(mod.__file__).resolve().is_relative_to(target), mod.__file__
        assert paths.SCHEMA_DIR.resolve().is_relative_to(target), paths.SCHEMA_DIR
        assert paths.PROMPT_DIR.resolve().is_relative_to(target), paths.PROMPT_DIR
        assert sorted(p.name for p in paths.SCHEMA_DIR.iterdir()) == {schemas!r}
        assert sorted(p.name for p in paths.PROMPT_DIR.iterdir()) == {prompts!r}
        for name in {schemas!r}:
            assert isinstance(yaml.safe_load((paths.SCHEMA_DIR / name).read_text()), dict), name
        for name in {prompts!r}:
            assert (paths.PROMPT_DIR / name).read_text().strip(), name

        m = config.load_matrix({str(ROOT / "config.yaml")!r})
        assert m.models and m.tools, m
        sys.exit(cli.main(["validate", "--config", {str(ROOT / "config.yaml")!r}]))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    env["PYTHONPATH"] = os.pathsep.join([str(target), *deps])
    r = subprocess.run(
        [sys.executable, "-S", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert ": ok: " in r.stdout, r.stdout
