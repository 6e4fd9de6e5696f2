"""What the warm trial worker (cli.worker) imports and builds before it forks its children: once
at start, what every trial needs (`preload`); the first time a request's config uses one, a model
SDK or the MCP client (`sdks_for`, `preload_sdks`). The children inherit all of it.

May import: everything (it preloads, by name, modules of every floor), as the worker may.
"""

from __future__ import annotations


def preload() -> list[str]:
    """Import what every trial needs, once, in the parent (the reason the worker exists). The
    model SDKs and the MCP client are imported when a request's config uses them
    (`preload_sdks`, from the worker's `warm`): each costs 0.7-2.2 s of CPU to import here, paid once a run
    whether or not any trial calls it."""
    names = [
        "psutil",
        "jsonschema",
        "referencing",
        "yaml",
        "git",
        "mcptrials.run.runner",
        "mcptrials.run.trial",
        "mcptrials.run.hosts.loop",
        "mcptrials.prepare.servers",
        "mcptrials.prepare.snapshot",
        "mcptrials.prepare.builtins",
        "mcptrials.core.records",
        "mcptrials.providers.anthropic",
        "mcptrials.providers.reference",
        "mcptrials.cost.pricing",
        "mcptrials.grade.scoring",
        "mcptrials.judge.judging",
        "mcptrials.run.hosts",
        # the commands the worker runs (cli.COMMANDS of run-trial, score, judge); the package
        # mcptrials.cli itself is imported before this module is
        "mcptrials.cli.common",
        "mcptrials.cli.run_trial",
        "mcptrials.cli.score",
        "mcptrials.cli.judge",
        # imported inside the commands (lazily, for a light `mcptrials --help`)
        "mcptrials.dag.rerun",
        "mcptrials.core.failures",
        "mcptrials.core.outcomes",
        "mcptrials.cost.budget",
        "mcptrials.cost.plan",
        # imported by the SDKs' HTTP client on its first request (~15 ms of CPU a trial otherwise)
        "anyio._backends._asyncio",
        "anyio.streams.stapled",
        "concurrent.futures.thread",
        "mcptrials.matrix.projectfiles",
        "mcptrials.providers.openai",
    ]
    loaded = _import_all(names)
    # The parsed JSON schemas (config, scenario, records) are cached by the schema module:
    # parse them once here rather than in every child (~0.2 s of pure-Python YAML each).
    from mcptrials.matrix import schema
    from mcptrials.core.paths import SCHEMA_DIR

    for path in sorted(SCHEMA_DIR.glob("*.yaml")):
        schema._schema(path.name)
        schema._validator(path.name)  # and their validators (a class built per schema)
    # The graders' regular expressions for the default extensions, compiled on first use.
    from mcptrials.grade.citations.extract import citation_pattern, mention_pattern

    citation_pattern()
    mention_pattern()
    # The sandbox's bwrap version (a `bwrap --version` process), asked once here rather than
    # in every trial (its lru_cache is inherited by the forked children).
    from mcptrials.prepare.sandbox import bwrap_version

    bwrap_version()
    return loaded


# What each SDK preload imports; `sdks_for` says which of them a config's trials use.
SDK_MODULES = {
    # and what its first request imports for its trace headers (~7 ms of CPU a trial otherwise):
    # the propagators' modules, not `opentelemetry.propagate`, whose import reads the child's
    # $OTEL_PROPAGATORS
    "anthropic": [
        "anthropic",
        "opentelemetry.propagators.composite",
        "opentelemetry.baggage.propagation",
        "opentelemetry.trace.propagation.tracecontext",
    ],
    "openai": ["openai"],
    "mcp": ["mcp", "mcp.client.stdio"],
}
_sdks_loaded: set[str] = set()


def sdks_for(config: dict) -> set[str]:
    """The SDKs a validated config's trials and judge call: a model SDK for each provider among
    its models and its judge, the MCP client when a tool has a server (transport stdio or http)
    or a host is not the built-in loop (a CLI agent's host uses it too)."""
    providers = {spec["provider"] for spec in config["models"].values()} | {config["judge"]["provider"]}
    sdks = providers & {"anthropic", "openai"}
    servers = any(spec["transport"] in ("stdio", "http") for spec in config["tools"].values())
    if servers or any(spec["kind"] != "loop" for spec in config["hosts"].values()):
        sdks.add("mcp")
    return sdks


def preload_sdks(sdks: set[str]) -> list[str]:
    """Import the SDKs named (each once a worker) and build what their first use would build in
    every child; returns the names imported now."""
    new = sorted(sdks - _sdks_loaded)
    _sdks_loaded.update(new)
    loaded = _import_all([name for sdk in new for name in SDK_MODULES[sdk]])
    if "anthropic" in loaded:
        _warm_anthropic()
    return loaded


def _import_all(names: list[str]) -> list[str]:
    """Import each module named; returns those imported (an optional part another install lacks,
    e.g. a provider's SDK, is left to the child, which reports it as without the worker)."""
    import importlib

    loaded = []
    for name in names:
        try:
            importlib.import_module(name)
            loaded.append(name)
        except ImportError:
            pass
    return loaded


def _warm_anthropic() -> None:
    import anthropic

    from mcptrials.providers.anthropic import cert_env, tls_context

    tls_context(cert_env())  # the CA store, loaded once (~20 ms a trial otherwise)

    # The SDK imports its resources lazily; building a client once pulls them in.
    anthropic.AsyncAnthropic(api_key="preload", base_url="http://127.0.0.1:9").messages  # noqa: B018
    # Reading a reply builds its pydantic schemas on first use (~30 ms of CPU in every trial
    # otherwise): read one with each block a trial's replies hold.
    message: dict = dict(
        id="msg_preload",
        type="message",
        role="assistant",
        model="preload",
        content=[{"type": "text", "text": "."}, {"type": "tool_use", "id": "t", "name": "n", "input": {}}],
        stop_reason="tool_use",
        stop_sequence=None,
        usage={"input_tokens": 1, "output_tokens": 1},
    )
    anthropic.types.Message.construct(**message)
    # and dumping its blocks (providers.anthropic) builds their serializers (~8 ms otherwise)
    for block in anthropic.types.Message.model_validate(message).content:
        block.model_dump(exclude_none=True, include={"type", "text", "id", "name", "input"})
