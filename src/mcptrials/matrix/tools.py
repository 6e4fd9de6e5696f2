"""Tool entries: the built-in baseline and the recorded arms, what a tool entry must say
beyond its schema, description variants (`variant_of`) expanded into their base's entry,
`{project}` expanded for the typed specs, and whether an install entry is pinned."""

from __future__ import annotations

import copy
import re
from pathlib import Path

from mcptrials.matrix.errors import ConfigError

BASELINE = "baseline"  # the built-in tool without a server (transport: none)
RECORDED = "recorded"  # a tool transport: an arm known only from recordings (no server here)
# What a recorded arm cannot have: it is never installed, indexed or started.
_SERVER_FIELDS = ("command", "args", "url", "env", "install", "index", "variant_of", "overrides")


def check_tools(path: Path, data: dict, raw_tools: dict) -> None:
    """What the schema cannot say of each tool entry: the baseline has no server, an unknown
    serverless tool is a typo, a server has a command (and an http one a url and the network);
    `raw_tools` is the entries as written, before the schema filled defaults."""
    if BASELINE in data["tools"] and data["tools"][BASELINE]["transport"] != "none":
        raise ConfigError(
            f"{path}: field tools.{BASELINE}.transport: `baseline` is built in and has no server; set transport: none or rename the tool"
        )
    for name, spec in data["tools"].items():
        where = f"{path}: field tools.{name}"
        if spec["transport"] == RECORDED:
            check_recorded_tool(path, name, spec, raw_tools.get(name) or {}, data)
            continue
        if spec["transport"] == "none":
            if name != BASELINE:
                raise ConfigError(
                    f"{where}: unknown tool {name!r}: only `{BASELINE}` is built in (transport: none); "
                    "give this tool transport: stdio or http and a command"
                )
            continue
        if not spec.get("command"):
            raise ConfigError(
                f"{where}.command: a {spec['transport']} server needs a command to start it; add `command:`"
            )
        if spec["transport"] == "http" and not spec.get("url"):
            raise ConfigError(f"{where}.url: an http server needs `url:` (its MCP endpoint)")
        if spec["transport"] == "http" and not spec["network"] and (spec.get("sandbox") or data["sandbox"]) != "none":
            raise ConfigError(
                f"{where}.network: an http server is reached over the network, and a sandboxed tool "
                "has none by default; set `network: true` (or use transport stdio)"
            )


def check_server_env(path: Path, data: dict) -> None:
    """No tool's `env` names an API key variable of the models or the judge."""
    keys = {spec["api_key_env"] for spec in data["models"].values()} | {data["judge"]["api_key_env"]}
    for name, spec in data["tools"].items():
        leaked = sorted(k for k in spec["env"] if k in keys)
        if leaked:
            raise ConfigError(
                f"{path}: field tools.{name}.env: {leaked} is an API key of the models or judge; "
                "a server never sees those: remove it"
            )


def check_recorded_tool(path: Path, name: str, spec: dict, given: dict, data: dict) -> None:
    """A `transport: recorded` entry: no server fields, and only recorded models run it."""
    where = f"{path}: field tools.{name}"
    if name == BASELINE:
        raise ConfigError(
            f"{where}.transport: `baseline` is built in (transport: none); a recorded arm needs another name"
        )
    extra = [k for k in _SERVER_FIELDS if given.get(k) not in (None, [], {})]
    if extra:
        raise ConfigError(
            f"{where}: a recorded arm has no server to install or start; remove {', '.join(extra)} "
            "(or give it transport stdio or http)"
        )
    live = sorted(mn for mn, ms in data["models"].items() if ms["provider"] != RECORDED)
    if live:
        raise ConfigError(
            f"{where}.transport: recorded: only provider recorded models can run a recorded arm, and "
            f"models {', '.join(live)} are live; run them in another config, or give {name} a server"
        )


# What a description variant (`variant_of`) may set itself; the rest is its base's.
VARIANT_FIELDS = ("variant_of", "overrides", "version")


def resolve_variants(path: Path, data: dict, given: dict[str, set]) -> None:
    """Each description variant becomes its base's entry (the same server: install, index,
    command, args, env, sandbox, timeouts) plus its `variant_of`, `overrides` and `version`
    (its own label, else the base's), in place. The trial, snapshot and rerun code then
    read a variant like any tool; ToolSpec.env_name names the base's install.

    A base must exist, have a stdio server (the proxy relays stdio: an http server would
    need an http proxy, and the baseline has no server) and not be a variant itself; two
    overrides may not give the same new name. Whether the overrides fit the server's tool
    list is known only from the server: its snapshot checks (mcptrials.prepare.proxy)."""
    tools = data["tools"]
    for name, spec in tools.items():
        base = spec.get("variant_of")
        if base is None:
            continue
        where = f"{path}: field tools.{name}"
        extra = sorted(given.get(name, set()) - set(VARIANT_FIELDS))
        if extra:
            raise ConfigError(
                f"{where}.{extra[0]}: a variant runs its base's server (tools.{base}) and takes "
                f"everything from it but {', '.join(VARIANT_FIELDS)}; remove `{extra[0]}` "
                f"(set it on tools.{base})"
            )
        if base not in tools:
            raise ConfigError(
                f"{where}.variant_of: {base!r} is not a tool of the config; use one of: "
                f"{', '.join(sorted(t for t in tools if t != name))}"
            )
        if base == name or tools[base].get("variant_of"):
            raise ConfigError(
                f"{where}.variant_of: {base!r} is itself a variant; name the tool it is a variant "
                f"of ({tools[base].get('variant_of') or base!r}) and repeat the overrides you keep"
            )
        if tools[base]["transport"] != "stdio":
            raise ConfigError(
                f"{where}.variant_of: tools.{base} has transport {tools[base]['transport']}; the "
                "variant proxy relays stdio servers only: name a stdio tool "
                + (
                    "(the baseline has no server to rewrite)"
                    if tools[base]["transport"] == "none"
                    else "(or run that server with transport stdio)"
                )
            )
        new_names: dict[str, str] = {}
        for old, o in spec["overrides"]["tools"].items():
            if o.get("name") in new_names:
                raise ConfigError(
                    f"{where}.overrides.tools.{old}.name: {o['name']!r} is also the new name of "
                    f"{new_names[o['name']]}; give each tool its own name"
                )
            if o.get("name"):
                new_names[o["name"]] = old
    for name, spec in list(tools.items()):
        if spec.get("variant_of"):
            base = tools[spec["variant_of"]]
            tools[name] = {
                **copy.deepcopy(base),
                "variant_of": spec["variant_of"],
                "overrides": spec["overrides"],
                **({"version": spec["version"]} if "version" in given.get(name, ()) else {}),
            }


def spec_config(config: dict) -> dict:
    """The config the typed specs are built from: each tool entry with `{project}` expanded
    (mcptrials.matrix.projectfiles). The config itself keeps the placeholder, so the rerun keys
    do not depend on where the project sits."""
    from mcptrials.matrix.projectfiles import expand_tool, project_dir

    project = project_dir()
    return dict(config, tools={n: expand_tool(d, project) for n, d in config["tools"].items()})


BUILT = (".whl", ".tar.gz", ".tgz", ".zip")  # a built file is one version by its content


def is_pinned(kind: str, entry: str) -> bool:
    """Whether an install entry names exactly one version: pip `name==1.2.3` (or `name===x`, or
    `name @ url` / a built file); npm `name@1.2.3`, `@scope/name@1.2.3` (an exact version, not a
    range or tag), or a built tarball. A local folder or a bare name is not."""
    e = entry.strip()
    if e.endswith(BUILT):
        return True
    if kind == "pip":
        return bool(re.fullmatch(r"[A-Za-z0-9._\-\[\],]+\s*===?\s*[A-Za-z0-9.+!_\-]+", e)) or " @ " in e
    name, at, version = e[1:].partition("@") if e.startswith("@") else e.partition("@")
    return bool(at) and bool(re.fullmatch(r"\d+\.\d+\.\d+([-+][0-9A-Za-z.\-]+)?", version))
