"""Small real git repositories and configs for tests."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
FAULTY_SERVER = ROOT / "tests" / "fixtures" / "faulty_mcp_server.py"
# The server that tries everything a server under test must not do (the sandbox tests of every host).
HOSTILE = ROOT / "tests" / "fixtures" / "hostile_mcp_server.py"
MARKER = "mcptrials-run-process-marker"  # in a harness process's command line: visible to the server?
# Test projects live in temporary folders; they share the checkout's tool installs.
TOOLS_ENV = {"MCPTRIALS_TOOLS_DIR": str(ROOT / ".tools")}
# The library under test for a subprocess whose env is built from scratch (snakemake and its
# jobs): this checkout's src/, not whichever checkout the venv's editable install points at.
LIBRARY_ENV = {"PYTHONPATH": str(ROOT / "src")}

FILES = {
    "src/app.py": "from util import helper\n\n\ndef main():\n    return helper(2)\n",
    "src/util.py": 'def helper(x):\n    """Double x."""\n    return x * 2\n',
    "README.md": "# tiny\n",
}


def make_repo(path: Path, files: dict[str, str] = FILES) -> str:
    """A git repository with one commit; returns the commit id."""
    path.mkdir(parents=True)
    for rel, text in files.items():
        f = path / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(path),
    }
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=path, check=True, env=env)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True, text=True
    ).stdout.strip()


SCENARIO = {
    "title": "Find the helper",
    "repo": "tiny",
    "rubric": {
        "criteria": [
            {
                "name": "map_quality",
                "weight": 0.6,
                "question": "Does it say where helper is defined?",
                "key_points": ["helper is defined in src/util.py"],
                "citations": True,
            },
            {
                "name": "specificity",
                "weight": 0.4,
                "question": "Does it say what helper does?",
                "key_points": ["helper doubles its argument"],
            },
        ]
    },
    "steps": [
        {
            "name": "locate",
            "prompt": "Where is the function `helper` defined, and what does it return? Cite file:line.",
            "checks": [
                {"type": "word", "value": "helper"},
                {"type": "phrase", "value": "src/util.py", "required": False},
            ],
            "citations": {"gold": ["src/util.py:1"]},
            "key_points": ["helper is defined in src/util.py", "helper doubles its argument"],
        }
    ],
}


def write_matrix(
    tmp: Path, tools: dict | None = None, trials: int = 1, scenarios: dict | None = None, extra: dict | None = None
) -> Path:
    """A config.yaml (+ repo + scenarios) in tmp; returns the config path."""
    commit = make_repo(tmp / "repo")
    (tmp / "scenarios").mkdir()
    for name, data in (scenarios or {"find-helper": SCENARIO}).items():
        (tmp / "scenarios" / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    cfg = {
        "tools": tools or {"baseline": {"transport": "none"}},
        "repos": {"tiny": {"url": "repo", "commit": commit}},
        "scenarios": "scenarios/*.yaml",
        "models": {"reference": {"provider": "reference"}},
        "trials": trials,
    }
    cfg.update(extra or {})
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


# The interpreter the venv is made from: stdlib-only fixture servers run on it, and the
# sandbox mounts it (sys.base_prefix) read-only; the script itself is named in read_only.
BASE_PYTHON = os.path.realpath(sys.executable)


def faulty_tool(mode: str = "ok", **extra) -> dict:
    """A tool entry for the test server in tests/fixtures (stdlib only, no install)."""
    spec = {
        "command": BASE_PYTHON,
        "args": [str(FAULTY_SERVER), mode],
        "env": {"FAULT_MODE": mode},
        "read_only": [str(FAULTY_SERVER)],
    }
    spec.update(extra)
    return spec


def dedent(s: str) -> str:
    return textwrap.dedent(s).lstrip()


def filled_step(**step) -> dict:
    """One scenario step as the scenario schema fills it (its defaults included): the graders
    read checks from a validated scenario and restate no default."""
    from mcptrials.matrix.schema import validate_against

    sc = {"repo": "r", "steps": [dict({"name": "s", "prompt": "p"}, **step)]}
    validate_against("scenario.schema.yaml", sc, "test")
    return sc["steps"][0]
