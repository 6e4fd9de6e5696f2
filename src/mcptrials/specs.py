"""Typed, frozen views of the validated config: built once, read everywhere.

The config schema (src/mcptrials/schemas/*.yaml) fills every default before these are
built, so a field with a default is read with `d["field"]`, never `d.get("field", x)`:
the schema is the one place a default is written. Optional fields without a default
(e.g. a model's `base_url`) are None when absent.

This module imports nothing of mcptrials: config, the trial core, the hosts and the
judge all read it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class JudgeSpec:
    """config `judge:`. `api_key_env` is None for a provider that needs no key."""

    provider: str
    model: str | None
    base_url: str | None
    api_key_env: str | None
    repeats: int
    threshold: float
    strict: bool

    @classmethod
    def from_config(cls, d: dict) -> JudgeSpec:
        return cls(provider=d["provider"], model=d.get("model"), base_url=d.get("base_url"),
                   api_key_env=d.get("api_key_env"), repeats=d["repeats"], threshold=d["threshold"],
                   strict=d["strict"])
