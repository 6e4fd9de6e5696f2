"""The harness's built-in tools: `read_file`, `grep`, `list_files`, confined to the trial's workspace.

Every trial offers them, with or without an MCP server, so the baseline agent has a way
to look at the code and a server is measured against something. They never raise for
bad input: `BuiltinTools.call` answers `(text, is_error=True)` with a message that says
what was wrong and what to pass instead, as a tool result the agent can read.

Confinement: paths are relative to the workspace; absolute paths, `..` components that
leave it and symlinks whose target leaves it are refused. Walks skip `.git` and do not
follow symlinked directories. Output order is sorted, so the same workspace gives the
same text.

Globs follow pathlib's rules on the path relative to the workspace: `*` and `?` stay
within one path segment, `**` spans any number of directories (also none), so
`**/*.py` matches every Python file and `*.py` only those at the top level.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

READ_MAX_LINES = 2000  # lines shown when no range is given (as Claude Code's Read does)
LINE_MAX_CHARS = 2000  # longer lines are cut in read_file output
GREP_MAX_MATCHES = 200
GREP_LINE_MAX_CHARS = 300
GREP_MAX_FILE_BYTES = 2_000_000
LIST_MAX_FILES = 500
BINARY_SNIFF_BYTES = 8192

BUILTIN_TOOLS: list[dict] = [
    {
        "name": "read_file",
        "description": (
            "Read a text file of the workspace. Each output line starts with its line number "
            "(cat -n style) and the header gives the file's total line count. Without a range "
            f"the first {READ_MAX_LINES} lines are shown; give start_line/end_line (1-based, "
            "inclusive) to read a window."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File path relative to the workspace root, e.g. src/app/main.py.",
                },
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to show (1-based)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line to show (inclusive)."},
            },
            "required": ["path"],
            "additionalProperties": False,
        },
    },
    {
        "name": "grep",
        "description": (
            "Search the workspace's text files for a Python regular expression, line by line. "
            "Output: one `path:line: text` line per match, paths relative to the workspace, "
            f"sorted; at most {GREP_MAX_MATCHES} matches are shown, with the total. Binary files "
            "and .git are skipped."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Python regular expression (re module syntax)."},
                "path": {
                    "type": "string",
                    "description": "Optional: a file, a directory, or a glob relative to the workspace limiting "
                    "the files searched, e.g. src/**/*.py ('*.py' matches the top level only).",
                },
                "case_insensitive": {"type": "boolean", "description": "Ignore case (default false)."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
    },
    {
        "name": "list_files",
        "description": (
            "List the workspace's files matching a glob, paths relative to the workspace, sorted; "
            f"at most {LIST_MAX_FILES} are shown, with the total. .git is skipped."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "Glob relative to the workspace (default **/*: every file). "
                    "** spans directories; '*.py' matches the top level only.",
                },
            },
            "additionalProperties": False,
        },
    },
]


class ToolInputError(Exception):
    """Bad arguments: the message is returned to the agent as a tool error."""


def glob_to_regex(pattern: str) -> re.Pattern:
    """Translate a pathlib-style glob into a regex over '/'-separated relative paths."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")  # zero or more directories
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            k = i + 1 + (pattern.startswith("[!", i))  # a ']' first in the class is literal
            j = pattern.find("]", k + 1 if pattern[k : k + 1] == "]" else k)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _is_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return b"\0" in f.read(BINARY_SNIFF_BYTES)


def _read_text(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


class BuiltinTools:
    """The built-in tools of one trial, confined to `workspace`."""

    def __init__(self, workspace: Path):
        self.root = Path(workspace).resolve()

    @property
    def names(self) -> list[str]:
        return [t["name"] for t in BUILTIN_TOOLS]

    def call(self, name: str, arguments) -> tuple[str, bool]:
        """Run one tool: (text, is_error). Never raises for bad input."""
        handlers: dict[str, Callable[..., str]] = {
            "read_file": self._read_file,
            "grep": self._grep,
            "list_files": self._list_files,
        }
        if name not in handlers:
            return f"Unknown tool {name!r}; the built-in tools are: {', '.join(self.names)}.", True
        try:
            args = self._check_args(name, arguments)
            return handlers[name](**args), False
        except ToolInputError as e:
            return f"{name}: {e}", True
        except OSError as e:  # e.g. a file removed or unreadable mid-call
            return f"{name}: cannot read: {e.strerror or e}", True

    # --- argument checking -------------------------------------------------

    def _check_args(self, name: str, arguments) -> dict:
        schema = next(t["input_schema"] for t in BUILTIN_TOOLS if t["name"] == name)
        props = schema["properties"]
        if not isinstance(arguments, dict):
            raise ToolInputError(f"arguments must be a JSON object, got {type(arguments).__name__}.")
        unknown = sorted(set(arguments) - set(props))
        if unknown:
            raise ToolInputError(f"unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(props)}.")
        for req in schema.get("required", []):
            if req not in arguments:
                raise ToolInputError(f"missing required argument {req!r}.")
        expected = {"string": str, "integer": int, "boolean": bool}
        for key, value in arguments.items():
            want = props[key]["type"]
            ok = isinstance(value, expected[want])
            if want == "integer" and isinstance(value, bool):  # bool is an int subclass in Python
                ok = False
            if not ok:
                article = "an" if want == "integer" else "a"
                raise ToolInputError(
                    f"argument {key!r} must be {article} {want}, got {type(value).__name__} {value!r}."
                )
        return dict(arguments)

    def _check_relative(self, rel: str, what: str) -> None:
        if rel.startswith(("/", "\\")) or os.path.isabs(rel) or re.match(r"^[A-Za-z]:", rel):
            raise ToolInputError(
                f"{what} {rel!r} is absolute; give a path relative to the workspace root, e.g. src/main.py."
            )
        if "\0" in rel:
            raise ToolInputError(f"{what} contains a NUL character.")

    def _resolve(self, rel: str) -> Path:
        """The real path of workspace-relative `rel`; refuse anything that leaves the workspace."""
        self._check_relative(rel, "path")
        joined = os.path.normpath(os.path.join(self.root, rel))
        if not _inside(joined, self.root):
            raise ToolInputError(f"path {rel!r} leaves the workspace (through '..'); give a path inside it.")
        real = os.path.realpath(joined)
        if not _inside(real, self.root):
            raise ToolInputError(f"path {rel!r} is a symlink whose target is outside the workspace; it cannot be read.")
        return Path(real)

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    # --- walking -----------------------------------------------------------

    def _walk(self, base: Path | None = None) -> list[tuple[str, Path]]:
        """(relative path, real path) of every file under `base`, sorted, skipping .git
        and symlinks that leave the workspace; symlinked directories are not followed."""
        base = base or self.root
        found = []
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            for fname in filenames:
                p = Path(dirpath) / fname
                real = os.path.realpath(p)
                if not _inside(real, self.root) or not os.path.isfile(real):
                    continue
                found.append((p.relative_to(self.root).as_posix(), Path(real)))
        found.sort(key=lambda x: x[0])
        return found

    def _glob(self, pattern: str) -> list[tuple[str, Path]]:
        self._check_relative(pattern, "glob")
        if ".." in re.split(r"[/\\]", pattern):
            raise ToolInputError(f"glob {pattern!r} contains '..'; globs match inside the workspace only.")
        rx = glob_to_regex(pattern.removeprefix("./"))
        return [(rel, real) for rel, real in self._walk() if rx.match(rel)]

    # --- the tools ---------------------------------------------------------

    def _read_file(self, path: str, start_line: int | None = None, end_line: int | None = None) -> str:
        real = self._resolve(path)
        if not real.exists():
            raise ToolInputError(f"no such file {path!r}; use list_files to see the workspace's files.")
        if real.is_dir():
            raise ToolInputError(
                f"{path!r} is a directory; use list_files with pattern '{path.rstrip('/')}/*' to list it."
            )
        if _is_binary(real):
            raise ToolInputError(f"{path!r} is a binary file; only text files can be read.")
        lines = _read_text(real).splitlines()
        total = len(lines)
        rel = Path(os.path.normpath(path)).as_posix()
        if total == 0:
            return f"{rel}: empty file (0 lines)"
        if start_line is not None and start_line < 1:
            raise ToolInputError(f"start_line must be >= 1, got {start_line}.")
        if end_line is not None and end_line < 1:
            raise ToolInputError(f"end_line must be >= 1, got {end_line}.")
        start = start_line or 1
        if start > total:
            raise ToolInputError(f"start_line {start} is past the end of {rel!r}, which has {total} lines.")
        if end_line is not None and end_line < start:
            raise ToolInputError(f"end_line {end_line} is before start_line {start}; give end_line >= start_line.")
        end = min(end_line if end_line is not None else start + READ_MAX_LINES - 1, total)
        body = []
        for n in range(start, end + 1):
            text = lines[n - 1]
            if len(text) > LINE_MAX_CHARS:
                text = text[:LINE_MAX_CHARS] + f" [... line cut at {LINE_MAX_CHARS} characters]"
            body.append(f"{n:6d}\t{text}")
        header = f"{rel}: lines {start}-{end} of {total}"
        if end_line is None and end < total:
            header += f" (pass start_line={end + 1} to read on)"
        return header + "\n" + "\n".join(body)

    def _grep(self, pattern: str, path: str | None = None, case_insensitive: bool = False) -> str:
        try:
            rx = re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
        except re.error as e:
            raise ToolInputError(f"invalid regular expression {pattern!r}: {e}.") from None
        files = self._grep_files(path)
        matches: list[str] = []
        total, skipped_big = 0, 0
        for rel, real in files:
            try:
                if real.stat().st_size > GREP_MAX_FILE_BYTES:
                    skipped_big += 1
                    continue
                if _is_binary(real):
                    continue
                text = _read_text(real)
            except OSError:
                continue
            for n, line in enumerate(text.splitlines(), 1):
                if rx.search(line):
                    total += 1
                    if len(matches) < GREP_MAX_MATCHES:
                        shown = line if len(line) <= GREP_LINE_MAX_CHARS else line[:GREP_LINE_MAX_CHARS] + " [...]"
                        matches.append(f"{rel}:{n}: {shown}")
        where = f" in {path!r}" if path else ""
        notes = []
        if total > len(matches):
            notes.append(f"[{len(matches)} of {total} matches shown; narrow the pattern or the path]")
        if skipped_big:
            notes.append(f"[{skipped_big} file(s) over {GREP_MAX_FILE_BYTES} bytes skipped]")
        if not matches:
            return "\n".join([f"No matches for {pattern!r}{where} ({len(files)} file(s) searched)."] + notes)
        return "\n".join(matches + notes)

    def _grep_files(self, path: str | None) -> list[tuple[str, Path]]:
        if not path:
            return self._walk()
        if not any(c in path for c in "*?["):
            real = self._resolve(path)
            if real.is_dir():
                return self._walk(real)
            if real.is_file():
                return [(self._rel(real), real)]
            raise ToolInputError(f"no such file or directory {path!r}; give a path or a glob such as src/**/*.py.")
        return self._glob(path)

    def _list_files(self, pattern: str = "**/*") -> str:
        files = self._glob(pattern or "**/*")
        if not files:
            return f"No files match {pattern!r}."
        shown = [rel for rel, _ in files[:LIST_MAX_FILES]]
        if len(files) > LIST_MAX_FILES:
            shown.append(f"[{LIST_MAX_FILES} of {len(files)} files shown; use a narrower pattern]")
        return "\n".join(shown)


def _inside(path, root: Path) -> bool:
    p, r = str(path), str(root)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)
