"""Typed, frozen views of the validated config: built once (`Matrix.specs`), read everywhere.

The config schema (src/mcptrials/schemas/*.yaml) fills every default before these are
built, so a field with a default is read with `d["field"]`, never `d.get("field", x)`:
the schema is the one place a default is written. Optional fields without a default
(e.g. a model's `base_url`) are None when absent.

This module imports nothing of mcptrials: config, the trial core, the hosts and the
judge all read it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

# Variables that hold API keys whatever the config says: never passed to a server, and
# their values are scrubbed from records like the config's own key variables.
WELL_KNOWN_KEYS = frozenset({"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"})


@dataclass(frozen=True)
class JudgeSpec:
    """config `judge:`."""

    provider: str
    model: str | None
    base_url: str | None
    api_key_env: str
    repeats: int
    threshold: float
    strict: bool
    # recorded only: where each trial's judgement is (mcptrials.judge.recorded); the schema has
    # no default, absent is None
    path: str | None = None
    # Output tokens per judge call: part of the judge's definition (its settings hash records
    # it), not a setting; the cost plan bounds a judge's spend with it.
    MAX_TOKENS: ClassVar[int] = 2048

    @classmethod
    def from_config(cls, d: dict) -> JudgeSpec:
        return cls(
            provider=d["provider"],
            model=d.get("model"),
            base_url=d.get("base_url"),
            api_key_env=d["api_key_env"],
            repeats=d["repeats"],
            threshold=d["threshold"],
            strict=d["strict"],
            path=d.get("path"),
        )


@dataclass(frozen=True)
class ToolSpec:
    """config `tools.<name>`: one MCP server under test (transport none: the baseline).
    `config` is the validated entry with `{project}` expanded (mcptrials.matrix.projectfiles):
    what the server-environment and index helpers read. `read_only` paths are absolute."""

    name: str
    transport: str
    command: str | None
    args: tuple[str, ...]
    url: str | None
    instructions: bool
    startup_timeout: float
    call_timeout: float
    version: str | None
    sandbox: str  # bubblewrap | none: the tool's own, else the config's
    network: bool
    read_only: tuple[str, ...]
    config: dict = field(repr=False)
    variant_of: str | None = None  # a description variant: its base's server behind mcptrials.prepare.proxy
    overrides: dict | None = field(default=None, repr=False)
    source: str | None = None  # transport recorded: where its recordings come from

    @classmethod
    def from_config(cls, name: str, d: dict, sandbox: str) -> ToolSpec:
        return cls(
            name=name,
            transport=d["transport"],
            command=d.get("command"),
            args=tuple(d["args"]),
            url=d.get("url"),
            instructions=d["instructions"],
            startup_timeout=d["startup_timeout"],
            call_timeout=d["call_timeout"],
            version=d.get("version"),
            sandbox=d.get("sandbox") or sandbox,
            network=d["network"],
            read_only=tuple(d["read_only"]),
            config=d,
            variant_of=d.get("variant_of"),
            overrides=d.get("overrides"),
            source=d.get("source"),
        )

    @property
    def has_server(self) -> bool:
        return self.transport not in ("none", "recorded")

    @property
    def recorded(self) -> bool:
        """An arm known only from recordings: no install, no snapshot, no server."""
        return self.transport == "recorded"

    @property
    def env_name(self) -> str:
        """Whose environment (.tools/<name>/) holds the server: a variant runs its base's install."""
        return self.variant_of or self.name


@dataclass(frozen=True)
class ModelSpec:
    """config `models.<name>`. `max_tokens`: the per-reply cap of `params` (None: the limits').
    `format` and `path`: provider recorded only (what its recorded files are, and their
    pattern relative to the config's folder), else None."""

    name: str
    provider: str
    model: str | None
    base_url: str | None
    api_key_env: str
    max_retries: int
    max_tokens: int | None
    params: dict
    format: str | None = None
    path: str | None = None

    @classmethod
    def from_config(cls, name: str, d: dict) -> ModelSpec:
        return cls(
            name=name,
            provider=d["provider"],
            model=d.get("model"),
            base_url=d.get("base_url"),
            api_key_env=d["api_key_env"],
            max_retries=d["max_retries"],
            max_tokens=d["params"].get("max_tokens"),
            params=d["params"],
            format=d.get("format"),
            path=d.get("path"),
        )

    @property
    def recorded(self) -> bool:
        return self.provider == "recorded"


@dataclass(frozen=True)
class HostSpec:
    """config `hosts.<name>`. The CLI hosts' settings are None for kind loop (the schema
    forbids them there). `providers`: what the kind can drive (None: any), from the schema."""

    name: str
    kind: str
    providers: frozenset[str] | None
    version: str | None = None
    builtin_tools: tuple[str, ...] | None = None
    bare: bool | None = None
    extra_args: tuple[str, ...] | None = None

    @classmethod
    def from_config(cls, name: str, d: dict, providers) -> HostSpec:
        opt: dict[str, Any] = {
            k: tuple(d[k]) if isinstance(d.get(k), list) else d.get(k)
            for k in ("version", "builtin_tools", "bare", "extra_args")
        }
        return cls(name=name, kind=d["kind"], providers=None if providers is None else frozenset(providers), **opt)

    def drives(self, provider: str) -> bool:
        return self.providers is None or provider in self.providers


@dataclass(frozen=True)
class Limits:
    """Per-step limits: the config's `limits`, a scenario's overriding them."""

    max_turns: int
    max_output_tokens: int
    max_seconds: float
    max_result_tokens: int

    @classmethod
    def from_config(cls, d: dict) -> Limits:
        return cls(**d)

    def overridden(self, d: dict | None) -> Limits:
        return replace(self, **(d or {}))

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Specs:
    tools: dict[str, ToolSpec]
    models: dict[str, ModelSpec]
    hosts: dict[str, HostSpec]
    judge: JudgeSpec
    limits: Limits
    sandbox: str  # the config's: state checks; a tool may override it for its own processes

    @classmethod
    def from_config(cls, config: dict, host_drives: dict[str, list[str] | None]) -> Specs:
        """`config`: validated (defaults filled); `host_drives`: host kind -> providers."""
        return cls(
            tools={n: ToolSpec.from_config(n, d, config["sandbox"]) for n, d in config["tools"].items()},
            models={n: ModelSpec.from_config(n, d) for n, d in config["models"].items()},
            hosts={n: HostSpec.from_config(n, d, host_drives[d["kind"]]) for n, d in config["hosts"].items()},
            judge=JudgeSpec.from_config(config["judge"]),
            limits=Limits.from_config(config["limits"]),
            sandbox=config["sandbox"],
        )

    def key_env_names(self) -> set[str]:
        """Every variable that holds an API key (the models', the judge's, the well-known ones):
        a server never sees them, and their values never reach a record."""
        return {s.api_key_env for s in self.models.values()} | {self.judge.api_key_env} | WELL_KNOWN_KEYS
