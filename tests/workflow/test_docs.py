"""The manual: README.md (the front page) and docs/ (the site).

- the site builds with `mkdocs build --strict`: a broken link or anchor, a page left out of
  the nav or a nav entry without a page fails it (mkdocs.yml turns each into a warning);
- the README stays a front page: under 200 lines, the two set-up commands, links that resolve;
- every shell block shown (```sh, ```bash, ```console) runs as shown in a fresh copy of the
  repository, unless the line before it says why not: `<!-- not run: REASON -->`. The blocks
  of one page run in order in one copy, as a reader would type them; none writes into the
  checkout.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from matrix_helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"sh", "bash", "console"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not run:(?P<reason>.*?)-->")
BLOCK_SECONDS = 300


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    body: str  # the block's text, its indentation removed
    not_run: str | None  # the reason given by the marker before it, if any

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def script(self) -> str:
        """What a reader types: a console block's `$ ` lines only, the rest as it is."""
        if self.lang != "console":
            return self.body
        return "\n".join(ln[2:] for ln in self.body.splitlines() if ln.startswith("$ "))


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip().splitlines()
        marker = NOT_RUN.fullmatch(before[-1].strip()) if before else None
        indent = len(m["indent"])
        body = "\n".join(ln[indent:] for ln in m["body"].splitlines())
        found.append(
            Block(
                page, text.count("\n", 0, m.start()) + 1, m["lang"], body, marker["reason"].strip() if marker else None
            )
        )
    return found


def shell_blocks(page: Path) -> list[Block]:
    return [b for b in blocks(page) if b.lang in SHELL]


# --- the site ----------------------------------------------------------------------------------


def test_the_site_builds_strictly(tmp_path, caplog):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    config = load_config(str(ROOT / "mkdocs.yml"), strict=True, site_dir=str(tmp_path / "site"))
    caplog.set_level(logging.WARNING, logger="mkdocs")
    try:
        build(config)
    except Abort as e:
        warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        pytest.fail(f"mkdocs build --strict: {e}\n" + "\n".join(warnings))
    assert (tmp_path / "site" / "index.html").is_file()


def test_every_code_block_names_its_language():
    """A block without a language would be neither run nor marked; ```text for a synopsis."""
    unnamed = [b.where for page in PAGES for b in blocks(page) if not b.lang]
    assert not unnamed, f"code blocks without a language (```sh, ```yaml, ```text, ...): {unnamed}"


def test_every_not_run_marker_says_why_and_stands_before_a_shell_block():
    for page in PAGES:
        text = page.read_text()
        marked = {b.line for b in shell_blocks(page) if b.not_run is not None}
        for b in shell_blocks(page):
            assert b.not_run != "", f"{b.where}: `<!-- not run: -->` without a reason"
        for m in NOT_RUN.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            assert any(0 < n - line <= 1 for n in marked), (
                f"{page.relative_to(ROOT)}:{line}: a not-run marker that stands before no shell block"
            )


# --- the front page ------------------------------------------------------------------------------


def test_the_readme_is_a_front_page():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200
    setup = shell_blocks(ROOT / "README.md")[0]
    commands = [ln.split("#")[0].strip() for ln in setup.body.splitlines()]
    assert commands == ["make demo", "make test"], "the README's set-up block is exactly `make demo` and `make test`"
    assert "reference model" in text.replace("`", "") and "reference judge" in text.replace("`", "")
    # the citation part of fairness is the strict number, and the front page says how it is made
    assert "`strict_grounded_rate` = (grounded − strict_mismatch) / total" in text


def test_after_make_demo_the_readme_and_the_demo_say_how_to_get_the_commands_on_the_path():
    """`make demo` installs mcptrials and snakemake into .venv/, which is not on the PATH: both
    the README's set-up section and the end of `make demo` say how to put them there."""
    activate = "source .venv/bin/activate"
    text = (ROOT / "README.md").read_text()
    setup = text.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    assert activate in setup and "`mcptrials`" in setup and "`snakemake`" in setup
    assert any(b.body.strip() == activate for b in shell_blocks(ROOT / "README.md")), (
        "the README shows the activate line as a command"
    )
    # what `make demo` ends with (-n: its commands printed, none run)
    plan = subprocess.run(["make", "-n", "demo"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    last = plan.strip().splitlines()[-3:]
    assert any(activate in line and line.startswith("echo") for line in last), last


def test_the_readme_links_resolve():
    text = (ROOT / "README.md").read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if not re.match(r"[a-z]+://", target):
            assert (ROOT / target).exists(), f"README.md links to {target}, which does not exist"


# --- every shell block runs as shown -------------------------------------------------------------


def fresh_copy(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked, plus new ones not ignored):
    no results/, .snakemake/, .venv/ or .tools/."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


def run_env(copy: Path) -> dict[str, str]:
    """This interpreter's tools first on PATH, the copy's library, and no API key."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(copy / "src")
    env.pop("MCPTRIALS_WORKER", None)
    env.pop("MCPTRIALS_WORKER_TCP", None)
    return env


PAGES_WITH_SHELL = [p for p in PAGES if shell_blocks(p)]


@pytest.mark.parametrize("page", PAGES_WITH_SHELL, ids=[p.name for p in PAGES_WITH_SHELL])
def test_the_shell_blocks_run_as_shown(page, tmp_path):
    runnable = [b for b in shell_blocks(page) if b.not_run is None]
    if not runnable:
        pytest.skip(f"every shell block of {page.name} is marked not run, with its reason")
    copy = fresh_copy(tmp_path / "repo")
    env = run_env(copy)
    for b in runnable:
        try:
            r = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", b.script()],
                cwd=copy,
                env=env,
                capture_output=True,
                text=True,
                timeout=BLOCK_SECONDS,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(
                f"{b.where}: still running after {BLOCK_SECONDS} s; mark it not run, or make it fast:\n{b.body}"
            )
        assert r.returncode == 0, (
            f"{b.where} exits {r.returncode}:\n{b.body}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
        )
