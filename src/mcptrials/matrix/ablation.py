"""Ablation arms: `ablate:` on a tool entry expanded, at load, into variants of that tool.

    tools:
      code-index:
        command: ...
        ablate: leave_one_out            # or {leave_one_out: [a, b]}, {subsets: all},
                                         # {subsets: {sample: N}}, {instructions: off}

Each arm is a description variant (`variant_of: <tool>`, mcptrials.matrix.tools) whose
`overrides` carry no rewrite but `hide` (the server's tools the proxy leaves out of
`tools/list` and refuses on `tools/call` with the spec's unknown-tool error) or
`instructions: false` (the proxy drops the server's `instructions`), and `ablation`
(the base and the kind, read by mcptrials.analyze.contribution). The arms are then ordinary
tools: snapshot, trials, reruns, statistics and budget treat them like any variant. The
base entry loses its `ablate` field, so adding an ablation reruns nothing of the base.

Names: `<tool>-without-<name>` (leave one out), `<tool>-without-<a>-<b>` for a subset
(the left-out names; `<tool>-without-all` is the empty surface), `<tool>-without-instructions`.
A server name's characters outside [A-Za-z0-9_-] become `_` in the arm's name only.

The names of the server's tools come from `ablate.leave_one_out` (or `ablate.tools` for
subsets) when listed, else from the tool's recorded `tools/list`:
results/snapshots/<tool>/<repo>/tools.json of the config's repos (their union, in listing
order). Without either, loading stops with the file, the field and both fixes.

Subsets: `all` runs every proper subset (2^n - 1 arms; at most 6 tools, so 63 arms) and
gives the exact Shapley value; `{sample: N}` draws N random orders of the tools (seeded by
`ablate.seed`) and runs every prefix of each: the arms the permutation-sampling estimate
needs (mcptrials.stats.shapley), at most N*(n-1)+1 arms.

`confirm: [arm, ...]` names arms to confirm on the held-out split: each, and its full server,
also run on the config's held-out scenarios (Matrix.confirm_scenarios), and the report sets
their train and held-out differences side by side (mcptrials.analyze.contribution).
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
from pathlib import Path

from mcptrials.matrix.errors import ConfigError

MAX_ALL_SUBSETS = 6  # 2^6 - 1 = 63 arms; beyond, sample orders
# The loaded config's arms to confirm on the held-out split (arm -> its full server), set by
# expand_ablations from `ablate.confirm`: kept out of the tool entries, so confirming an arm
# adds its held-out trials and reruns none of its train ones.
CONFIRM = "ablation_confirm"


def arm_name(tool: str, left_out: list[str] | str) -> str:
    part = left_out if isinstance(left_out, str) else "-".join(left_out)
    return f"{tool}-without-{re.sub(r'[^A-Za-z0-9_-]', '_', part)}"


def sample_orders(names: list[str], n: int, seed: int) -> list[list[str]]:
    """N random orders of the names (the permutations of the sampling estimate), seeded."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        order = list(names)
        rng.shuffle(order)
        out.append(order)
    return out


def subsets_of(names: list[str], how) -> list[frozenset[str]]:
    """The kept sets a subsets ablation runs (each a proper subset of `names`, the empty one included)."""
    if how == "all":
        sets = [frozenset(c) for k in range(len(names)) for c in itertools.combinations(names, k)]
    else:
        seen: dict[frozenset[str], None] = {}
        for order in sample_orders(names, how["sample"], how["seed"]):
            for k in range(len(order)):
                seen.setdefault(frozenset(order[:k]))
        sets = list(seen)
    return sets


def recorded_names(path: Path, tool: str, data: dict, field: str, results: Path) -> list[str]:
    """The server's tool names from its recorded tools/list snapshots (union, in listing order)."""
    files = [results / "snapshots" / tool / repo / "tools.json" for repo in data["repos"]]
    names: dict[str, None] = {}
    for f in files:
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for t in rec.get("tools") or []:
            names.setdefault(str(t.get("name")))
    if not names:
        raise ConfigError(
            f"{path}: field tools.{tool}.ablate: {field} needs the names of the server's tools at load, and no "
            f"recorded tools/list of tools.{tool} lists any ({files[0]}, field tools, is missing or empty); "
            f"either list them, e.g. `ablate: {{{field}: [name_a, name_b]}}`"
            + (" (subsets: `ablate: {subsets: ..., tools: [name_a, name_b]}`)" if field == "subsets" else "")
            + f", or record the snapshot first with `ablate` removed: snakemake -- {files[0]}"
        )
    return list(names)


def _arms(path: Path, tool: str, ablate, data: dict, results: Path) -> dict[str, dict]:
    """arm name -> its overrides, for one tool's `ablate` value (validated by the schema)."""
    where = f"{path}: field tools.{tool}.ablate"
    if ablate == "leave_one_out":
        ablate = {"leave_one_out": True}
    arms: dict[str, dict] = {}
    loo = ablate.get("leave_one_out")
    if loo is not None:
        names = list(loo) if isinstance(loo, list) else recorded_names(path, tool, data, "leave_one_out", results)
        for n in names:
            arms[arm_name(tool, n)] = {"tools": {}, "hide": [n], "ablation": {"of": tool, "kind": "leave_one_out"}}
    how = ablate.get("subsets")
    if how is not None:
        names = list(ablate.get("tools") or recorded_names(path, tool, data, "subsets", results))
        if how == "all" and len(names) > MAX_ALL_SUBSETS:
            raise ConfigError(
                f"{where}.subsets: all would run {2 ** len(names) - 1} arms for {len(names)} tools (at most "
                f"{MAX_ALL_SUBSETS} tools); sample orders instead: `subsets: {{sample: 20}}`, or name at most "
                f"{MAX_ALL_SUBSETS} tools in `ablate.tools`"
            )
        if how != "all":
            how = dict(how, seed=ablate["seed"])
        meta = {"of": tool, "kind": "subsets", "tools": names, "subsets": how}
        for kept in subsets_of(names, how):
            out = [n for n in names if n not in kept]
            arms[arm_name(tool, out if kept else "all")] = {"tools": {}, "hide": out, "ablation": meta}
    if ablate.get("instructions") == "off":
        arms[arm_name(tool, "instructions")] = {
            "tools": {},
            "instructions": False,
            "ablation": {"of": tool, "kind": "instructions"},
        }
    return arms


def expand_ablations(path: Path, data: dict, results: Path = Path("results")) -> None:
    """Each tool's `ablate` replaced, in place, by its arms (variants placed right after it)."""
    tools = data["tools"]
    if not any("ablate" in spec for spec in tools.values()):
        return
    out: dict[str, dict] = {}
    confirm: dict[str, str] = {}
    for name, spec in tools.items():
        ablate = spec.pop("ablate", None)
        out[name] = spec
        if ablate is None:
            continue
        where = f"{path}: field tools.{name}.ablate"
        if spec["transport"] != "stdio" or spec.get("variant_of"):
            raise ConfigError(
                f"{where}: ablation arms run a stdio server behind the variant proxy, and tools.{name} "
                + ("is itself a variant: put `ablate` on its base" if spec.get("variant_of") else "has transport ")
                + ("" if spec.get("variant_of") else f"{spec['transport']}: remove `ablate` or use transport stdio")
            )
        arms = _arms(path, name, ablate, data, results)
        for arm, overrides in arms.items():
            if arm in tools or arm in out:
                raise ConfigError(
                    f"{where}: the arm {arm} is also a tool of the config; rename that tool or remove `ablate`"
                )
            out[arm] = dict(copy.deepcopy(spec), variant_of=name, overrides=overrides)
        confirm.update(confirmed_arms(where, name, ablate, list(arms)))
    tools.clear()
    tools.update(out)
    if confirm and isinstance(data.get("trials"), dict):
        # a confirmation is one fixed set of held-out trials; waves decide how many trials a cell
        # needs from the train cells only, so the two have no agreed meaning together yet
        raise ConfigError(
            f"{path}: field tools.*.ablate.confirm: confirming an arm on the held-out split needs a fixed "
            f"number of trials, and field trials is in waves ({{min, max}}); set trials to a number for "
            f"the confirmation run, or remove `confirm`"
        )
    if confirm:
        data[CONFIRM] = confirm


def confirmed_arms(where: str, tool: str, ablate, arms: list[str]) -> dict[str, str]:
    """arm -> its full server, for `ablate.confirm` (each must be one of the arms just expanded)."""
    names = (ablate.get("confirm") or []) if isinstance(ablate, dict) else []
    unknown = [a for a in names if a not in arms]
    if unknown:
        raise ConfigError(
            f"{where}.confirm: {', '.join(unknown)} is not an arm of tools.{tool} (its arms: "
            f"{', '.join(arms) or 'none'}); name an arm by its full name, e.g. {arms[0] if arms else tool + '-without-x'}"
        )
    return dict.fromkeys(names, tool)


def ablation_of(spec: dict) -> dict | None:
    """An arm's `ablation` ({of, kind, ...}), or None for any other tool entry."""
    return ((spec.get("overrides") or {}).get("ablation")) if spec.get("variant_of") else None
