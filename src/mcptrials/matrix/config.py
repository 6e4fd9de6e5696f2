"""Load and check the benchmark matrix: config.yaml and the scenario files it names.

Every problem is reported before any job runs, as a `ConfigError` (mcptrials.matrix.errors)
that names the file, the field and what would fix it. Defaults come from the JSON schemas in
`src/mcptrials/schemas/` (mcptrials.matrix.schema), so the schema is the single place a default
is written. This module reads the config file(s), runs the checks the schema cannot express
across the config's sections, and returns the `Matrix`; a tool entry's own checks are in
mcptrials.matrix.tools, a scenario's in mcptrials.matrix.scenario.
"""

from __future__ import annotations

import copy
import glob
import os
from pathlib import Path

from mcptrials.core.identity import FIELDS
from mcptrials.matrix.ablation import expand_ablations
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.scenario import Scenario, load_scenario
from mcptrials.matrix.schema import host_drives, read_yaml, validate_against
from mcptrials.matrix.specs import Specs
from mcptrials.matrix.tools import BASELINE, RECORDED, check_server_env, check_tools, resolve_variants, spec_config


def load_matrix(config_path, overrides: dict | None = None) -> Matrix:
    """Read the config file(s) (see `read_config_files`), or use `overrides` as the
    config's data with `config_path` naming it; check everything."""
    sources = tuple(str(Path(p).resolve()) for p in str(config_path).split(os.pathsep) if p)
    if overrides is not None:
        path = Path(str(config_path).split(os.pathsep)[0]).resolve()
        data = copy.deepcopy(overrides)
    else:
        path, data = read_config_files(config_path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with tools, repos, scenarios and models")
    # what each tool entry itself says, before the schema fills defaults (a variant may set only a few fields)
    tools = data.get("tools")
    raw_tools = tools if isinstance(tools, dict) else {}
    given = {n: set(t) for n, t in raw_tools.items() if isinstance(t, dict)}
    validate_against("config.schema.yaml", data, str(path))
    expand_ablations(path, data)  # the arms are variants: resolved with the others next
    resolve_variants(path, data, given)
    check_tools(path, data, raw_tools)
    for name, spec in data["repos"].items():
        check_repo_commit(path, name, spec, data)
    check_recorded_judge(path, data)
    check_server_env(path, data)
    check_hosts_and_models(path, data)
    check_compare(path, data)
    check_weights(path, data)
    check_trials(path, data)
    m = Matrix(path=path, base_dir=path.parent, config=data, scenarios=load_scenarios(path, data), sources=sources)
    if not m.run_scenarios():
        raise ConfigError(
            f"{path}: field splits: no scenario is in splits {data['splits']}; add scenarios or change `splits`"
        )
    check_read_only_workspaces(m)
    return m


def check_read_only_workspaces(m: Matrix) -> None:
    """A scenario with `workspace: read-only` runs under hosts of kind loop only: a CLI agent
    (claude-code, codex, opencode) edits files with its own tools, which a read-only workspace
    would break, not measure."""
    read_only = [sc for sc in m.trial_scenarios() if sc.data["workspace"] == "read-only"]
    for host, spec in m.hosts.items():
        if read_only and spec["kind"] != "loop" and any(m.runs_under(model, host) for model in m.models):
            raise ConfigError(
                f"{read_only[0].path}: field workspace: read-only, but the config's host {host!r} (kind "
                f"{spec['kind']}) runs it, and its agent edits files; drop `workspace: read-only`, or run the "
                "scenario under hosts of kind loop only"
            )


def read_config_files(config_path) -> tuple[Path, dict]:
    """(main file, data) of a config given as one path, or several joined by os.pathsep.

    Several files are what `snakemake --configfile a.yaml b.yaml` passes to the stages
    (`a.yaml:b.yaml`): the first is the main config (relative paths are from its folder),
    each later one is merged over it. A later file's relative `mirrors:` paths are made
    absolute from that file's own folder, so a machine-local mirrors file (e.g.
    configs/mirrors.local.yaml, kept out of git) can sit anywhere.
    """
    parts = [p for p in str(config_path).split(os.pathsep) if p] or [str(config_path)]
    path = Path(parts[0]).resolve()
    data = read_yaml(path, "config file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with tools, repos, scenarios and models")
    for extra in parts[1:]:
        extra_path = Path(extra).resolve()
        over = read_yaml(extra_path, "config file")
        if not isinstance(over, dict):
            raise ConfigError(f"{extra_path}: an added config file must be a mapping (e.g. `mirrors: {{url: path}}`)")
        mirrors = over.get("mirrors")
        if isinstance(mirrors, dict):
            over = dict(
                over,
                mirrors={
                    url: src
                    if not isinstance(src, str) or "://" in src or src.startswith("git@")
                    else str((extra_path.parent / src).resolve())
                    for url, src in mirrors.items()
                },
            )
        _merge(data, over)
    return path, data


def _merge(base: dict, over: dict) -> None:
    """Merge `over` into `base` in place: mappings recursively, anything else replaced
    (how Snakemake merges several --configfile files)."""
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)


def load_scenarios(path: Path, data: dict) -> dict[str, Scenario]:
    """The scenario files the config's `scenarios:` glob(s) match (relative to its folder), by id:
    each id once, each on a repo of the config."""
    base_dir = path.parent
    scenarios: dict[str, Scenario] = {}
    globs = data["scenarios"] if isinstance(data["scenarios"], list) else [data["scenarios"]]
    files: list[Path] = []
    for g in globs:
        hits = sorted(glob.glob(str(base_dir / g), recursive=True))
        if not hits:
            raise ConfigError(f"{path}: field scenarios: {g!r} matches no file; fix the glob (relative to {base_dir})")
        files += [Path(h) for h in hits]
    for f in files:
        sc = load_scenario(f)
        if sc.id in scenarios:
            raise ConfigError(f"{f}: scenario id {sc.id!r} is also {scenarios[sc.id].path}; rename one file")
        if sc.repo not in data["repos"]:
            known = ", ".join(sorted(data["repos"]))
            raise ConfigError(f"{f}: field repo: {sc.repo!r} is not a repo of {path.name}; use one of: {known}")
        scenarios[sc.id] = sc
    return scenarios


def check_hosts_and_models(path: Path, data: dict) -> None:
    """Every host drives one of the models; a live model names its model id; a recorded model's
    path and host fit (check_recorded_model)."""
    # Specs built for this check only: m.specs is built on first use, after loading.
    specs = Specs.from_config(spec_config(data), host_drives())
    for host, hspec in specs.hosts.items():
        if not any(hspec.drives(ms.provider) for ms in specs.models.values()):
            raise ConfigError(
                f"{path}: field hosts.{host}: host kind {hspec.kind} can drive none of the models "
                f"(it needs a model with provider {' or '.join(sorted(hspec.providers or []))}); "
                "add one or remove the host"
            )
    for model, spec in data["models"].items():
        if spec["provider"] not in ("reference", "recorded") and not spec.get("model"):
            raise ConfigError(
                f"{path}: field models.{model}.model: provider {spec['provider']} needs a model id; add `model:`"
            )
        if spec["provider"] == "recorded":
            check_recorded_model(path, model, spec, specs)


def check_weights(path: Path, data: dict) -> None:
    """The fairness weights sum to 1."""
    w = data["weights"]
    total = sum(w.values())
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"{path}: field weights: the fairness weights sum to {total:.3f}; make them sum to 1")


def check_trials(path: Path, data: dict) -> None:
    """Trials in waves ({min, max, until: decided}) need min <= max and a baseline to decide against."""
    t = data["trials"]
    if not isinstance(t, dict):
        return
    if t["min"] > t["max"]:
        raise ConfigError(f"{path}: field trials: min {t['min']} is above max {t['max']}; make min <= max")
    if BASELINE not in data["tools"]:
        raise ConfigError(
            f"{path}: field trials: until: decided decides each tool against the baseline, and tools has no "
            "`baseline`; add a baseline tool (transport: none), or give trials as a number"
        )


def check_compare(path: Path, data: dict) -> None:
    """`compare:` pairs name two different tools of the config, each pair once (A, B and B, A are
    the same comparison with the sign flipped, and would count twice in the Holm adjustment)."""
    seen: dict = {}
    for i, pair in enumerate(data["compare"]):
        where = f"{path}: field compare.{i}"
        unknown = [t for t in pair if t not in data["tools"]]
        if unknown:
            raise ConfigError(
                f"{where}: {unknown[0]!r} is not a tool of the config; use two of: {', '.join(sorted(data['tools']))}"
            )
        if pair[0] == pair[1]:
            raise ConfigError(f"{where}: [{pair[0]}, {pair[1]}] compares a tool with itself; name two different tools")
        key = frozenset(pair)
        if key in seen:
            raise ConfigError(
                f"{where}: [{pair[0]}, {pair[1]}] is the same comparison as compare.{seen[key]}; remove one"
            )
        seen[key] = i


def check_repo_commit(path: Path, name: str, spec: dict, data: dict) -> None:
    """A full commit, or a short one with the reason it stays unresolved (recorded models only:
    nothing is run in a repository that has no checkout)."""
    where = f"{path}: field repos.{name}"
    if spec.get("unresolved") is None:
        if len(spec["commit"]) != 40:
            raise ConfigError(
                f"{where}.commit: {spec['commit']!r} is a short commit; give the full 40-hex id "
                "(git rev-parse on a clone or mirror), or say why it cannot be resolved with `unresolved:` "
                "(no checkout; citations are then not checked)"
            )
        return
    live = sorted(m for m, ms in data["models"].items() if ms["provider"] != RECORDED)
    servers = sorted(t for t, ts in data["tools"].items() if ts["transport"] not in ("none", RECORDED))
    if live or servers:
        raise ConfigError(
            f"{where}.unresolved: a repository without a checkout can only be graded from recordings, "
            f"and {', '.join(f'models.{m}' for m in live) + ' ' if live else ''}"
            f"{', '.join(f'tools.{t}' for t in servers)} would run in it; resolve the commit (--mirrors) "
            "or run those in another config"
        )


def check_recorded_judge(path: Path, data: dict) -> None:
    """judge.provider recorded: `path` names only known placeholders; without it every model is
    recorded (the judgement is found beside the trial's recording). `path` only for recorded."""
    import string

    j = data["judge"]
    where = f"{path}: field judge"
    if j["provider"] != RECORDED:
        if j.get("path"):
            raise ConfigError(f"{where}.path: only for provider recorded; remove it")
        return
    if j.get("path"):
        try:
            names = {f for _, f, _, _ in string.Formatter().parse(j["path"]) if f}
        except ValueError as e:
            raise ConfigError(f"{where}.path: {j['path']!r} is not a valid pattern ({e})") from None
        bad = sorted(names - set(FIELDS))
        if bad:
            raise ConfigError(
                f"{where}.path: unknown placeholder(s) {', '.join('{' + b + '}' for b in bad)}; use "
                + " ".join("{" + f + "}" for f in FIELDS)
            )
        return
    live = sorted(n for n, s in data["models"].items() if s["provider"] != RECORDED)
    if live:
        raise ConfigError(
            f"{where}.provider: recorded finds each judgement beside the trial's recording, and models "
            f"{', '.join(live)} have none; give judge.path"
        )


RECORDED_FIELDS = ("tool", "repo", "scenario", "trial")


def check_recorded_model(path: Path, model: str, spec: dict, specs: Specs) -> None:
    """A recorded model: its path pattern names only {tool} {repo} {scenario} {trial}, and a
    host can run it (a loop host: claude-code drives live anthropic models only)."""
    import string

    where = f"{path}: field models.{model}"
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(spec["path"]) if f is not None]
    except ValueError as e:
        raise ConfigError(
            f"{where}.path: {spec['path']!r} is not a valid pattern ({e}); write placeholders as "
            "{tool} {repo} {scenario} {trial}, and a literal brace as {{ or }}"
        ) from None
    bad = sorted({n for n in names if n not in RECORDED_FIELDS})
    if bad:
        raise ConfigError(
            f"{where}.path: unknown placeholder(s) {', '.join('{' + n + '}' for n in bad)} in "
            f"{spec['path']!r}; use {{tool}} {{repo}} {{scenario}} {{trial}}"
        )
    if not any(h.drives("recorded") for h in specs.hosts.values()):
        raise ConfigError(
            f"{where}: a recorded model runs under a loop host only, and the config has none; "
            "add `loop: {kind: loop}` to hosts"
        )
    host = spec.get("host")
    if host is not None and (host not in specs.hosts or not specs.hosts[host].drives("recorded")):
        raise ConfigError(
            f"{where}.host: {host!r} is not a loop host of this config (hosts: "
            f"{', '.join(sorted(specs.hosts))}); add `{host}: {{kind: loop}}` to hosts, or remove the field"
        )


def check_api_keys(m: Matrix, environ=os.environ) -> list[str]:
    """Names of missing API keys for the models and judge that need one (empty when all are set)."""
    missing = []
    for name, spec in m.models.items():
        if spec["provider"] in ("anthropic", "openai") and not environ.get(spec["api_key_env"]):
            missing.append(
                f"{m.path}: field models.{name}: provider {spec['provider']} needs ${spec['api_key_env']}; export it or use provider: reference"
            )
    j = m.config["judge"]
    if j["provider"] in ("anthropic", "openai") and not environ.get(j["api_key_env"]):
        missing.append(
            f"{m.path}: field judge: provider {j['provider']} needs ${j['api_key_env']}; export it or use provider: reference"
        )
    return missing
