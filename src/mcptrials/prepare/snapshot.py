"""The tools snapshot: what a server offers against one repo, and a hash of it.

Per-trial rules take `tools.json` as input, so a new server version or a changed
tool description reruns that server's trials and nothing else. It also records how many
input tokens the server's tool definitions add to every request (mcptrials.prepare.definition_tokens).
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from mcptrials import __version__
from mcptrials.matrix.config import load_matrix
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.core.records import read_json, write_json
from mcptrials.matrix.specs import ToolSpec


def tools_hash(tools: list[dict]) -> str:
    """sha256 of the canonical tool list (sorted by name; name, description, input schema)."""
    canon = sorted(
        (
            {"name": t["name"], "description": t.get("description", ""), "input_schema": t.get("input_schema")}
            for t in tools
        ),
        key=lambda t: t["name"],
    )
    return canonical_hash(canon)


async def snapshot_server(
    tool: ToolSpec, workspace: Path, index_dir: Path | None, forbidden: set[str], errlog: Path
) -> dict:
    from mcptrials.prepare.servers import open_server, stderr_tail

    with tempfile.TemporaryDirectory(prefix="mcptrials-snap-") as sandbox:
        home, tmp = Path(sandbox, "home"), Path(sandbox, "tmp")
        home.mkdir()
        tmp.mkdir()
        index_copy = ""
        if index_dir and Path(index_dir).exists():
            # a copy, as every trial gets: what the server writes there never reaches the shared index
            index_copy = str(Path(sandbox, "index"))
            shutil.copytree(index_dir, index_copy, symlinks=True)
        values = {
            "workspace": str(workspace),
            "repo": str(workspace),
            "home": str(home),
            "tmp": str(tmp),
            "index": index_copy,
        }
        t0 = time.monotonic()
        async with open_server(tool, values, errlog, forbidden) as s:
            startup = s.startup_seconds
            t1 = time.monotonic()
            tools = await s.list_tools()
            list_ms = (time.monotonic() - t1) * 1000
            return {
                "server_name": s.server_name,
                "server_version": s.server_version,
                "protocol_version": s.protocol_version,
                "instructions": s.instructions,
                "startup_seconds": round(startup, 3),
                "list_tools_ms": round(list_ms, 2),
                "total_seconds": round(time.monotonic() - t0, 3),
                "tools": tools,
                "stderr_tail": stderr_tail(errlog),
                "sandbox": s.sandbox,
            }


def make_snapshot(
    config_path: str,
    tool: str,
    repo: str,
    checkout_json: Path,
    install_json: Path | None,
    index_dir: Path | None,
    out: Path,
    count_tokens: bool = True,
) -> dict:
    """`count_tokens=False` (a dry run): the definitions' tokens are estimated, no API request."""
    m = load_matrix(config_path)
    if tool not in m.tools:
        raise ConfigError(f"{m.path}: field tools: no tool {tool!r}")
    spec = m.specs.tools[tool]
    co = read_json(checkout_json)
    inst = read_json(install_json) if install_json else None
    from mcptrials.core.failures import failure
    from mcptrials.prepare.servers import project_files

    rec = {
        "harness_version": __version__,
        "tool": tool,
        "repo": repo,
        "repo_url": co["url"],
        "commit": co["commit"],
        "tool_spec_sha256": m.tool_hash(tool),
        "project_files": project_files(spec),  # what of the project it starts from (gate.comparable)
        "install": (inst or {}).get("resolved") or {},
    }
    unavailable = failure(co) or failure(inst)
    if unavailable:  # a stage before it failed: nothing to start (its trials are not_run, mcptrials.core.failures)
        from mcptrials.prepare.builtins import BUILTIN_TOOLS

        rec.update(
            unavailable=unavailable,
            error=unavailable,
            tools=[],
            server_name=None,
            server_version=None,
            protocol_version=None,
            instructions=None,
            startup_seconds=None,
            builtin_tools=BUILTIN_TOOLS,
        )
    elif not spec.has_server:
        from mcptrials.prepare.builtins import BUILTIN_TOOLS

        rec.update(
            server_name=None,
            server_version=None,
            protocol_version=None,
            instructions=None,
            startup_seconds=0.0,
            tools=[],
        )
        rec["builtin_tools"] = BUILTIN_TOOLS
    else:
        # A scratch copy: some servers write into the repo they are pointed at.
        errlog = out.parent / "server.stderr.log"
        # this run's stderr only: its tail goes into tools.json, and an older run's error there would mislead
        errlog.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(prefix="mcptrials-snapws-") as ws:
            work = Path(ws, "repo")
            shutil.copytree(co["tree"], work, symlinks=True)
            try:
                data = asyncio.run(snapshot_server(spec, work, index_dir, m.specs.key_env_names(), errlog))
            except Exception as e:
                # A server that does not start is a fault of that tool, not of the run: it is
                # recorded here, and each of its trials records its own attempt as crashed.
                from mcptrials.prepare.proxy import OVERRIDE_MISMATCH
                from mcptrials.prepare.servers import leaf_error, mcp_error_code, stderr_tail

                leaf = leaf_error(e)
                if spec.variant_of and mcp_error_code(e) == OVERRIDE_MISMATCH:  # bad input, not a fault
                    raise ConfigError(
                        override_mismatch_message(m.path, spec, getattr(leaf, "data", None) or {}, str(leaf))
                    ) from None
                data = {
                    "error": f"{type(leaf).__name__}: {leaf}",
                    "tools": [],
                    "server_name": None,
                    "server_version": None,
                    "protocol_version": None,
                    "instructions": None,
                    "startup_seconds": None,
                    "stderr_tail": stderr_tail(errlog),
                }
        rec.update(data)
        if not data.get("error"):
            check_conformance(m.path, spec, rec)
        from mcptrials.prepare.builtins import BUILTIN_TOOLS

        rec["builtin_tools"] = BUILTIN_TOOLS
    rec["tools_sha256"] = tools_hash(rec["tools"])  # a variant's: the rewritten list the model sees
    rec["version_label"] = spec.version
    rec.update(variant_record(spec))
    from mcptrials.prepare.definition_tokens import definition_tokens, not_started

    instructions = rec.get("instructions") if spec.instructions else None  # what the agent's prompt gets
    rec.update(
        not_started()
        if rec.get("error")
        else definition_tokens(m, tool, rec["tools"], count=count_tokens, instructions=instructions)
    )
    write_json(out, rec)
    return rec


def check_conformance(path, spec: ToolSpec, rec: dict) -> None:
    """The server's definitions against the MCP specification (mcptrials.prepare.conformance):
    refused with the tool, field and fix, or recorded in `conformance` with `conformance: warn`."""
    from mcptrials.prepare.conformance import conformance_message, conformance_problems

    from mcptrials.prepare.tooldefs import model_tool_name

    seen: dict[str, str] = {}
    for t in rec["tools"]:  # ours, not the server's: a long tool entry name (an ablation arm's) cut to 64
        shown = model_tool_name(spec.name, str(t.get("name")))
        if shown in seen and seen[shown] != t.get("name"):
            raise ConfigError(
                f"{path}: field tools.{spec.name}: the model would see tools {seen[shown]!r} and {t.get('name')!r} "
                f"under one name, {shown!r} (mcp__<tool>__<name> is cut to 64 characters); give the tool entry a "
                "shorter name"
            )
        seen[shown] = str(t.get("name"))
    problems = conformance_problems(rec["tools"])
    if problems and spec.config.get("conformance") != "warn":
        raise ConfigError(conformance_message(path, spec.name, problems))
    rec["conformance"] = problems


def variant_record(spec: ToolSpec) -> dict:
    """What a record says of a description variant (snapshot and run_meta): its base and the
    sha256 of its overrides; for any other tool both None."""
    return {
        "variant_of": spec.variant_of,
        "overrides_sha256": canonical_hash(spec.overrides) if spec.variant_of else None,
    }


def override_mismatch_message(path, spec: ToolSpec, problems: dict, detail: str) -> str:
    """The config error for overrides that do not fit the server's tool list (the proxy's
    OVERRIDE_MISMATCH data: unknown_tools, unknown_parameters, name_clashes)."""
    where = f"{path}: field tools.{spec.name}.overrides.tools"
    fix = f"name only tools and parameters the server of tools.{spec.variant_of} lists (its tools.json snapshot)"
    if (spec.overrides or {}).get("ablation"):  # an ablation arm: its names come from the base's `ablate`
        where = f"{path}: field tools.{spec.variant_of}.ablate (arm {spec.name})"
    if problems.get("unknown_tools"):
        name = problems["unknown_tools"][0]
        return (
            f"{where}.{name}: the server lists no tool {name!r} (it lists: {', '.join(problems.get('listed', []))}); "
            f"fix the name or remove the entry: {fix}"
        )
    if problems.get("unknown_parameters"):
        name, p = next(iter(problems["unknown_parameters"].items()))
        return (
            f"{where}.{name}.parameters.{p['unknown'][0]}: tool {name!r} has no such parameter (it has: "
            f"{', '.join(p['listed']) or 'none'}); fix the name or remove it: {fix}"
        )
    if problems.get("name_clashes"):
        new, olds = next(iter(problems["name_clashes"].items()))
        return (
            f"{where}: tools {', '.join(olds)} would all be named {new!r} (a rename onto a tool the server "
            "already has); give the renamed tool a name of its own"
        )
    return f"{where}: {detail}; {fix}"
