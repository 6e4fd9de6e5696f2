"""A scenario file: loaded, checked against scenario.schema.yaml and what the schema cannot
say (unique step names, a rubric for every step, regex checks that compile, exact answers
whose expected value reads as their mode says, state checks that stay in the workspace and
JSON paths that parse), and the parts of it each stage's rerun key depends on (task, grading, rubric)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from mcptrials.core.values import to_datetime, to_number
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256
from mcptrials.matrix.schema import read_yaml, validate_against


@dataclass
class Scenario:
    id: str
    path: Path
    data: dict
    sha256: str

    @property
    def repo(self) -> str:
        return self.data["repo"]

    @property
    def split(self) -> str:
        return self.data["split"]

    def task_part(self) -> dict:
        """What the agent's run depends on: a change here reruns its trials."""
        return {
            "repo": self.data["repo"],
            "limits": self.data["limits"],
            "steps": [
                {
                    "name": s["name"],
                    "prompt": s["prompt"],
                    "state_check": (s.get("state_check") or {}).get("command"),
                    **({"state_read": read} if (read := state_read_part(s.get("state_check"))) else {}),
                }
                for s in self.data["steps"]
            ],
        }

    def grading_part(self) -> dict:
        """What the deterministic graders depend on: a change here rescoring only."""
        return grading_part(self.data)

    def rubric_part(self) -> dict:
        """What the judge depends on: a change here re-judges only."""
        return {
            "rubric": self.data.get("rubric"),
            "steps": [
                {
                    "name": s["name"],
                    "prompt": s["prompt"],
                    "rubric": s.get("rubric"),
                    "key_points": s.get("key_points", []),
                    "gold": (s.get("citations") or {}).get("gold", []),
                }
                for s in self.data["steps"]
            ],
        }


def grading_part(data: dict) -> dict:
    """A scenario's data the deterministic graders depend on (Scenario.grading_part)."""
    keys = ("checks", "citations", "exact_answer", "state_check", "expected_tools")
    part = {"steps": [{k: s.get(k) for k in keys} for s in data["steps"]]}
    if data.get("gold"):  # only when set: scenarios without gold keep their hash
        part["gold"] = data["gold"]
    return part


def state_read_part(spec: dict | None) -> dict | None:
    """What the trial reads for a state check besides its command (grade/state.py): the
    sql query, the json file and path, the file compared; their expected values are not here,
    so an edit of those rescoring only."""
    spec = spec or {}
    out = {}
    if spec.get("sql"):
        out["sql"] = {k: spec["sql"][k] for k in ("database", "query")}
    if spec.get("json"):
        out["json"] = {k: spec["json"][k] for k in ("file", "path")}
    if spec.get("unchanged_except"):
        out["unchanged_except"] = {k: v for k, v in spec["unchanged_except"].items() if k in ("database", "file")}
    return out or None


def check_state_spec(spec: dict, where: str) -> None:
    """What the schema cannot say of a state check: its files stay in the workspace, its
    JSON path parses, its query is one statement."""
    import sqlite3

    from mcptrials.core.jsonpath import parse

    for part, key in (
        ("sql", "database"),
        ("json", "file"),
        ("unchanged_except", "database"),
        ("unchanged_except", "file"),
    ):
        rel = (spec.get(part) or {}).get(key)
        if rel is not None and (rel.startswith("/") or ".." in Path(rel).parts):
            raise ConfigError(
                f"{where}.{part}.{key}: {rel!r} must be a path inside the workspace, relative to it "
                "(no leading / and no ..)"
            )
    if spec.get("json"):
        try:
            parse(spec["json"]["path"])
        except ValueError as e:
            raise ConfigError(f"{where}.json.path: {e}") from None
    if spec.get("sql"):
        q = spec["sql"]["query"].strip().rstrip(";")
        if not sqlite3.complete_statement(q + ";") or ";" in q:
            raise ConfigError(f"{where}.sql.query: give one complete SQL statement (a SELECT), without a second one")


def check_regex(check: dict, where: str) -> re.Pattern:
    """A `regex` check's pattern, compiled with the flags the keyword grader searches with.
    Both the loader (so `validate` and the workflow's plan refuse it before any trial is paid
    for) and the grader call this: an invalid pattern is a ConfigError naming `where` (the
    file and field), the compile error and the fix."""
    flags = re.MULTILINE | (0 if check.get("case_sensitive") else re.IGNORECASE)
    try:
        return re.compile(check["value"], flags)
    except re.error as e:
        literal = re.escape(check["value"]).replace("'", "''")  # as a single-quoted YAML string
        raise ConfigError(
            f"{where}: {check['value']!r} is not a valid regular expression: {e}; fix the pattern, or "
            f"to match the text as written escape it (value: '{literal}', in single quotes so YAML "
            "keeps the backslashes) or use type: phrase"
        ) from None


def exact_mode(spec: dict, where: str) -> tuple[str, str | None]:
    """How an exact answer compares (grade.exact): ("date", format), ("number", None) or
    ("string", None). Both the loader and the grader call this: an expected value that cannot
    be compared so is a ConfigError naming `where` (the file and field) and the fix."""
    value = spec["value"]
    fmt = spec.get("date_format")
    if not fmt and "%" in (spec.get("format") or ""):
        fmt = spec["format"]
    if fmt:
        if to_datetime(str(value), fmt) is None:
            raise ConfigError(
                f"{where}.value: {value!r} does not parse with date_format {fmt!r} or as ISO 8601; fix one of them"
            )
        return "date", fmt
    if isinstance(value, (int, float)) or to_number(str(value)) is not None:
        return "number", None
    if spec.get("tolerance") is not None:
        raise ConfigError(
            f"{where}.tolerance: the value {value!r} is not a number; drop tolerance or give a numeric value"
        )
    return "string", None


def load_scenario(path: Path) -> Scenario:
    data = read_yaml(path, "scenario file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario must be a mapping with at least `repo` and `steps`")
    validate_against("scenario.schema.yaml", data, str(path))
    names = [s["name"] for s in data["steps"]]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"{path}: field steps: step names must be unique; rename {sorted(dup)}")
    for i, step in enumerate(data["steps"]):
        if not step.get("rubric") and not data.get("rubric"):
            raise ConfigError(
                f"{path}: field steps.{i}.rubric: no rubric for step {step['name']!r}; add a top-level `rubric` or one on the step"
            )
        for j, check in enumerate(step["checks"]):
            if check["type"] == "regex":
                check_regex(check, f"{path}: field steps.{i}.checks.{j}.value")
        if step.get("exact_answer"):
            exact_mode(step["exact_answer"], f"{path}: field steps.{i}.exact_answer")
        if step.get("state_check"):
            check_state_spec(step["state_check"], f"{path}: field steps.{i}.state_check")
            if data["workspace"] == "read-only":
                raise ConfigError(
                    f"{path}: field workspace: read-only, but step {step['name']!r} has a state_check, which reads "
                    "what the trial left in its workspace; drop `workspace: read-only` or the state check"
                )
    return Scenario(id=path.stem, path=path, data=data, sha256=file_sha256(path))
