"""The checks before any job, so a bad config or machine fails before money is spent: the
sandbox the config asks for is available, every command and path the config names exists,
and the run fits its budget. `refusals` gathers them all (with the missing API keys,
config.check_api_keys, and the commits local sources do not hold, prepare.checkout.check_commits):
`mcptrials validate` prints them, the Snakefile refuses to start on any of them, and a dry run
prints them as warnings."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import is_pinned


def check_sandbox(m: Matrix) -> list[str]:
    """Why the run cannot sandbox what it must (empty when it can, or nothing is sandboxed):
    bubblewrap missing, or no namespaces for it here. Checked before any job."""
    from mcptrials.prepare.sandbox import BUBBLEWRAP, SandboxUnavailable, check_available

    users = (["sandbox"] if m.config["sandbox"] == BUBBLEWRAP else []) + [
        f"tools.{t}.sandbox" for t, s in m.specs.tools.items() if s.has_server and s.sandbox == BUBBLEWRAP
    ]
    if not users:
        return []
    try:
        check_available()
    except SandboxUnavailable as e:
        return [f"{m.path}: field {users[0]}: bubblewrap is asked for, but {e}"]
    return []


def run_plan(m: Matrix, results: Path = Path("results")):
    """The cost plan of the next run (mcptrials.cost.plan.CostPlan): every trial it will run, new
    and rerun, with the reasons (mcptrials.dag.planned), not only the absent ones."""
    from mcptrials.cost.plan import cost_plan
    from mcptrials.dag.planned import planned_trials, reasons_line, trial_numbers

    planned = planned_trials(m, results)
    return cost_plan(m, results, trial_numbers(planned), reasons_line(planned))


def check_budget(m: Matrix, results: Path = Path("results"), plan=None) -> list[str]:
    """Why the run must not start under the config's `budget.max_cost_usd` (empty when it fits, or
    no budget is set): the spend so far (results/budget/ledger.jsonl) plus the expected cost of the
    trials still to run, new and rerun, a cell with no history at its upper bound (`run_plan`).
    Checked before any job, with both figures and the fix."""
    from mcptrials.cost.plan import budget_refusal

    if m.config["budget"].get("max_cost_usd") is None:
        return []
    return budget_refusal(plan or run_plan(m, results), f"{m.path}: ")


def refusals(m: Matrix, results: Path = Path("results"), plan=None) -> list[str]:
    """Every reason a real run must not start, in one place: a missing API key, a sandbox that
    cannot be built, a command or path that does not exist, a commit a local source does not
    hold, a plan above the budget. `mcptrials validate` lists them; the Snakefile's `onstart`
    refuses on them before any job; a dry run prints them as warnings, so `snakemake -n` shows
    every refusal the real run would make."""
    from mcptrials.matrix.config import check_api_keys
    from mcptrials.prepare.checkout import check_commits

    return check_api_keys(m) + check_sandbox(m) + check_paths(m) + check_commits(m) + check_budget(m, results, plan)


def check_paths(m: Matrix) -> list[str]:
    """What `mcptrials validate` can tell of the paths the config names without running
    anything: each server's (and index's) command is a file, in its install, on PATH, or
    provided by its `install:` entry, and resolves inside the tool's sandbox as it will run
    there; each `read_only` path and the `locked:` folder exist."""
    from mcptrials.matrix.projectfiles import PLACEHOLDER, project_dir
    from mcptrials.prepare.servers import tools_dir

    project = project_dir()
    problems = []
    for tool in m.installed_tools():  # a variant runs its base's command: checked there
        raw, spec = m.tools[tool], m.specs.tools[tool].config
        commands = [("command", raw["command"], spec["command"])]
        if raw.get("index"):
            commands.append(("index.command", raw["index"]["command"], spec["index"]["command"]))
        for field_name, given, cmd in commands:
            problem = _command_problem(
                tool, given, cmd, bool(spec["install"]), project, tools_dir()
            ) or _sandbox_problem(m, tool, given, cmd, tools_dir())
            if problem:
                problems.append(f"{m.path}: field tools.{tool}.{field_name}: {problem}")
        for i, (given, path) in enumerate(zip(raw["read_only"], spec["read_only"])):
            if not os.path.exists(path):
                problems.append(
                    f"{m.path}: field tools.{tool}.read_only[{i}]: {given!r} ({path}) does not exist; "
                    f"fix the path (a relative one is from the project folder, {project}; "
                    f"{PLACEHOLDER} names it) or remove the entry"
                )
    for tool in m.installed_tools():
        inst = m.tools[tool].get("install") or {}
        for kind in ("pip", "npm"):
            for i, entry in enumerate(inst.get(kind) or []):
                if not is_pinned(kind, entry):
                    example = "name==1.2.3" if kind == "pip" else "name@1.2.3 (or @scope/name@1.2.3)"
                    problems.append(
                        f"{m.path}: field tools.{tool}.install.{kind}[{i}]: {entry!r} is not pinned to one "
                        f"version, so a rerun may install another server; pin it ({example}), or "
                        "name a built file (a wheel, a tarball)"
                    )
    locked, locked_dir = m.config.get("locked"), m.locked_dir  # None together
    if locked_dir is not None and not locked_dir.is_dir():
        problems.append(
            f"{m.path}: field locked: {locked!r} ({locked_dir}) is not a folder; fix the path "
            "(relative to the config's folder), or remove `locked:` to run without a held-out anchor"
        )
    return problems


def _command_problem(tool: str, given: str, cmd: str, has_install: bool, project: Path, tools: Path) -> str | None:
    """Why a tool's command cannot start (None when it can, or its install will bring it)."""
    if os.sep in cmd:  # a path: relative ones from the project folder, where the harness starts it
        path = Path(project, cmd)
        if not path.is_file():
            return (
                f"{given!r} ({path}) does not exist; fix the path (a relative one is from the project "
                f"folder; {{project}} names it) or name a command on PATH"
            )
        if not os.access(path, os.X_OK):
            return f"{given!r} ({path}) is not executable; `chmod +x` it, or run it with its interpreter"
        return None
    env = tools / tool
    if any((d / cmd).exists() for d in (env / "bin", env / "node_modules" / ".bin")) or shutil.which(cmd):
        return None
    if has_install:  # not installed yet: the install job brings it (and its log says if it does not)
        return None
    return (
        f"{given!r} is neither in {env} nor on PATH, and tools.{tool} has no `install:` entry; "
        f'add an `install:` entry that provides it (pip: ["pkg==version"] or npm: ["pkg@version"]), '
        "install it on PATH, or give its full path"
    )


def _sandbox_problem(m: Matrix, tool: str, given: str, cmd: str, tools: Path) -> str | None:
    """Why a command found outside the sandbox (a path, or a name on PATH) cannot be started
    inside the tool's sandbox as it will run (None when it can, when the tool runs with
    `sandbox: none`, or when its own install provides it): the executable, or its `#!`
    interpreter, is not visible there (mcptrials.prepare.sandbox.command_problem). Reads files,
    starts nothing."""
    from mcptrials.prepare.sandbox import NONE, SANDBOX_PATH, command_problem
    from mcptrials.prepare.servers import tool_sandbox

    spec = m.specs.tools[tool]
    if spec.sandbox == NONE:
        return None
    env = tools / tool
    if os.sep in cmd:
        resolved: str | None = os.path.normpath(os.path.abspath(cmd))
    elif any((d / cmd).exists() for d in (env / "bin", env / "node_modules" / ".bin")):
        return None  # its own install: mounted whole
    else:
        resolved = shutil.which(cmd)
    if not resolved:
        return None  # its install will bring it (or _command_problem said why not)
    inside_path = spec.config["env"].get("PATH", SANDBOX_PATH)  # what the server's PATH will be
    if inside_path is None:  # passed through by name
        inside_path = os.environ.get("PATH", SANDBOX_PATH)
    problem = command_problem(resolved, tool_sandbox(spec, commands=[resolved]), inside_path)
    if not problem:
        return None
    return (
        f"{given!r} resolves to {resolved} here, but inside the tool's sandbox {problem}, so it would not start "
        f"(bwrap: execvp ...: No such file or directory); make `command` the full path of an interpreter the "
        f"sandbox can mount (a system one such as /usr/bin/python3, or a venv's `bin/python3`, mounted read-only "
        "with the Python it is made from) and put the script in `args` and `read_only`, or add an `install:` "
        f"entry that provides the command, or run it unsandboxed knowingly with `tools.{tool}.sandbox: none`"
    )
