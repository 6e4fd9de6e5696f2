"""Load and check the benchmark matrix: config.yaml and the scenario files it names.

Every problem is reported before any job runs, as a `ConfigError` that names the
file, the field and what would fix it. Defaults come from the JSON schemas in
`src/mcptrials/schemas/`, so the schema is the single place a default is written.
"""

from __future__ import annotations

import copy
import functools
import glob
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

# libyaml's parser when present: parsing the schemas is most of a stage's start-up time.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_load(f):
    return yaml.load(f, Loader=_Loader)

from mcptrials.core.identity import FIELDS
from mcptrials.core.paths import SCHEMA_DIR
from mcptrials.matrix.specs import Specs

BASELINE = "baseline"


class ConfigError(Exception):
    """A bad input: the message names the file, the field and the fix."""


def canonical_hash(obj) -> str:
    """sha256 of an object's canonical JSON (sorted keys, no spaces)."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --- schema validation with defaults ---------------------------------------

_SCHEMAS: dict[str, dict] = {}


def _schema(name: str) -> dict:
    if name not in _SCHEMAS:
        with open(SCHEMA_DIR / name) as f:
            schema = _yaml_load(f)
        # jsonschema's evolve() picks a validator class from `$schema`, which would
        # drop our default-filling class inside referenced files: the class is fixed below.
        schema.pop("$schema", None)
        _SCHEMAS[name] = schema
    return _SCHEMAS[name]


def _validator(schema_name: str):
    import jsonschema
    from referencing import Registry
    from referencing.jsonschema import DRAFT202012

    def fill_defaults(validator_cls):
        # The jsonschema FAQ recipe: set each property's default before validating it.
        validate_props = validator_cls.VALIDATORS["properties"]

        def props(validator, properties, instance, schema):
            if isinstance(instance, dict):
                for name, sub in properties.items():
                    if isinstance(sub, dict) and "default" in sub and name not in instance:
                        instance[name] = copy.deepcopy(sub["default"])
            yield from validate_props(validator, properties, instance, schema)

        return jsonschema.validators.extend(validator_cls, {"properties": props})

    registry = Registry().with_resources(
        (n, DRAFT202012.create_resource(_schema(n)))
        for n in ("config.schema.yaml", "tool.schema.yaml", "scenario.schema.yaml")
    )
    cls = fill_defaults(jsonschema.Draft202012Validator)
    return cls(_schema(schema_name), registry=registry)


def host_drives() -> dict[str, list[str] | None]:
    """Host kind -> the providers it can drive (None: any), as the config schema declares it
    (`x-drives` of a host's `kind`): data, so config knows it without importing host code."""
    return _schema("config.schema.yaml")["properties"]["hosts"]["additionalProperties"]["properties"]["kind"]["x-drives"]


def _field_path(err) -> str:
    parts = [str(p) for p in err.absolute_path]
    return ".".join(parts) if parts else "(top level)"


def _explain(err) -> str:
    """Turn a jsonschema error into 'what is wrong; what is allowed'."""
    v = err.validator
    schema = err.schema
    if v == "additionalProperties" and isinstance(schema.get("properties"), dict):
        allowed = ", ".join(sorted(schema["properties"]))
        return f"{err.message}; allowed keys: {allowed}"
    if v == "not" and schema.get("description"):  # a field that another setting rules out
        return f"{err.instance!r} is not allowed here: {schema['description']}; remove it"
    if v == "enum":
        return f"{err.instance!r} is not allowed; use one of: {', '.join(map(str, schema['enum']))}"
    if v == "pattern" and "commit" in [str(p) for p in err.absolute_path]:
        return f"{err.instance!r} is not a full commit id; give all 40 lowercase hex digits (git rev-parse <ref>)"
    if v == "pattern":
        return f"{err.instance!r} does not match {schema['pattern']}"
    if v == "required":
        return err.message + " (add it)"
    if v in ("anyOf", "oneOf") and all(set(b) == {"required"} for b in schema[v]):   # a choice of keys
        keys = ", ".join(b["required"][0] for b in schema[v])
        return f"give {'exactly one' if v == 'oneOf' else 'at least one'} of: {keys}"
    return err.message


def validate_against(schema_name: str, data, source: str) -> None:
    """Validate `data` in place (filling defaults); raise ConfigError naming `source`."""
    errors = sorted(_validator(schema_name).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{source}: field {_field_path(e)}: {_explain(e)}" for e in errors[:10]]
        raise ConfigError("\n".join(lines))


def validate_section(section: str, data: dict, source: str) -> None:
    """Validate one top-level section of a config (e.g. a `judge:` dict given to the
    library on its own) in place, filling its defaults from the config schema."""
    whole = _validator("config.schema.yaml")
    checker = whole.evolve(schema=whole.schema["properties"][section])
    errors = sorted(checker.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError("\n".join(f"{source}: field {'.'.join([section, *map(str, e.absolute_path)])}: {_explain(e)}"
                                     for e in errors[:10]))


# --- the loaded matrix ------------------------------------------------------


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
                {"name": s["name"], "prompt": s["prompt"], "state_check": (s.get("state_check") or {}).get("command"),
                 **({"state_read": read} if (read := state_read_part(s.get("state_check"))) else {})}
                for s in self.data["steps"]
            ],
        }

    def grading_part(self) -> dict:
        """What the deterministic graders depend on: a change here rescoring only."""
        keys = ("checks", "citations", "exact_answer", "state_check", "expected_tools")
        part = {"steps": [{k: s.get(k) for k in keys} for s in self.data["steps"]]}
        if self.data.get("gold"):   # only when set: scenarios without gold keep their hash
            part["gold"] = self.data["gold"]
        return part

    def rubric_part(self) -> dict:
        """What the judge depends on: a change here re-judges only."""
        return {
            "rubric": self.data.get("rubric"),
            "steps": [
                {"name": s["name"], "prompt": s["prompt"], "rubric": s.get("rubric"),
                 "key_points": s.get("key_points", []), "gold": (s.get("citations") or {}).get("gold", [])}
                for s in self.data["steps"]
            ],
        }


@dataclass
class Matrix:
    path: Path
    base_dir: Path
    config: dict
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    # every config file it was read from, in order (main first): what a later check rereads
    sources: tuple[str, ...] = ()

    @property
    def tools(self) -> dict:
        return self.config["tools"]

    @property
    def repos(self) -> dict:
        return self.config["repos"]

    @property
    def models(self) -> dict:
        return self.config["models"]

    @property
    def hosts(self) -> dict:
        return self.config["hosts"]

    @property
    def trials(self) -> int:
        return self.config["trials"]

    def run_scenarios(self) -> list[Scenario]:
        splits = set(self.config["splits"])
        return [s for s in self.scenarios.values() if s.split in splits]

    def scenario_set_sha256(self) -> str:
        """One hash of the run's scenario files (id -> file sha256): names the scenario set."""
        return canonical_hash({s.id: s.sha256 for s in self.run_scenarios()})

    def run_repos(self) -> list[str]:
        """The repos the run's scenarios use, in config order: only these are checked out,
        snapshotted and named in the report (a pack narrowed to one repo runs one)."""
        used = {s.repo for s in self.run_scenarios()}
        return [r for r in self.repos if r in used]

    @property
    def locked_dir(self) -> Path | None:
        """The config's held-out anchor folder (relative paths from the config's folder), or None."""
        d = self.config.get("locked")
        return None if d is None else (self.base_dir / d)

    def server_of(self, tool: str) -> str:
        """The tool whose install and index a tool uses: its own, or a variant's base's."""
        return self.tools[tool].get("variant_of") or tool

    def installed_tools(self) -> list[str]:
        """The server tools with an install (and index) job of their own: not the variants."""
        return [t for t in self.server_tools() if self.server_of(t) == t]

    def server_tools(self) -> list[str]:
        return [t for t, spec in self.tools.items() if spec["transport"] not in ("none", RECORDED)]

    def snapshot_tools(self) -> list[str]:
        """The tools with a snapshot job: all but the recorded arms (no server, nothing to list)."""
        return [t for t, spec in self.tools.items() if spec["transport"] != RECORDED]

    def tool_hash(self, tool: str) -> str:
        return canonical_hash(self.tools[tool])

    def model_hash(self, model: str) -> str:
        spec = dict(self.models[model])
        return canonical_hash({"spec": spec, "limits": self.config["limits"]})

    def repo_source(self, repo: str) -> str:
        """Where to clone from: a mirror if one is set, else the url (relative paths from the config's folder)."""
        url = self.repos[repo]["url"]
        src = self.config["mirrors"].get(url, url)
        if "://" not in src and not src.startswith("git@"):
            src = str((self.base_dir / src).resolve())
        return src

    @functools.cached_property
    def specs(self) -> Specs:
        """The typed specs of the validated config, built once."""
        return Specs.from_config(spec_config(self.config), host_drives())

    def runs_under(self, model: str, host: str) -> bool:
        """Whether the host can drive the model (claude-code speaks the Messages API only, codex and
        opencode OpenAI's APIs); a recorded model with a `host` runs under that host only (the one it
        was recorded under)."""
        only = self.models[model].get("host")
        return (only is None or only == host) and self.specs.hosts[host].drives(self.specs.models[model].provider)

    def cells(self):
        """Every trial of the run (core.identity.TrialKey), trial counted from 1; a (model, host)
        pair the host cannot drive is left out."""
        from mcptrials.core.identity import TrialKey

        for model in self.models:
            for host in self.hosts:
                if not self.runs_under(model, host):
                    continue
                for tool in self.tools:
                    for sc in self.run_scenarios():
                        for trial in range(1, self.trials + 1):
                            yield TrialKey(model, host, tool, sc.repo, sc.id, trial)


def spec_config(config: dict) -> dict:
    """The config the typed specs are built from: each tool entry with `{project}` expanded
    (mcptrials.matrix.projectfiles). The config itself keeps the placeholder, so the rerun keys
    do not depend on where the project sits."""
    from mcptrials.matrix.projectfiles import expand_tool, project_dir

    project = project_dir()
    return dict(config, tools={n: expand_tool(d, project) for n, d in config["tools"].items()})


def _read_yaml(path: Path, what: str):
    try:
        with open(path) as f:
            return _yaml_load(f)
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found; check the path") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: does not parse as YAML{where}: {getattr(e, 'problem', e)}; fix the syntax") from None


def state_read_part(spec: dict | None) -> dict | None:
    """What the trial reads for a state check besides its command (graders/state.py): the
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

    for part, key in (("sql", "database"), ("json", "file"), ("unchanged_except", "database"),
                      ("unchanged_except", "file")):
        rel = (spec.get(part) or {}).get(key)
        if rel is not None and (rel.startswith("/") or ".." in Path(rel).parts):
            raise ConfigError(f"{where}.{part}.{key}: {rel!r} must be a path inside the workspace, relative to it "
                              "(no leading / and no ..)")
    if spec.get("json"):
        try:
            parse(spec["json"]["path"])
        except ValueError as e:
            raise ConfigError(f"{where}.json.path: {e}") from None
    if spec.get("sql"):
        q = spec["sql"]["query"].strip().rstrip(";")
        if not sqlite3.complete_statement(q + ";") or ";" in q:
            raise ConfigError(f"{where}.sql.query: give one complete SQL statement (a SELECT), without a second one")


def load_scenario(path: Path) -> Scenario:
    data = _read_yaml(path, "scenario file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a scenario must be a mapping with at least `repo` and `steps`")
    validate_against("scenario.schema.yaml", data, str(path))
    names = [s["name"] for s in data["steps"]]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ConfigError(f"{path}: field steps: step names must be unique; rename {sorted(dup)}")
    for i, step in enumerate(data["steps"]):
        if not step.get("rubric") and not data.get("rubric"):
            raise ConfigError(f"{path}: field steps.{i}.rubric: no rubric for step {step['name']!r}; add a top-level `rubric` or one on the step")
        if step.get("state_check"):
            check_state_spec(step["state_check"], f"{path}: field steps.{i}.state_check")
    return Scenario(id=path.stem, path=path, data=data, sha256=file_sha256(path))


def _merge(base: dict, over: dict) -> None:
    """Merge `over` into `base` in place: mappings recursively, anything else replaced
    (how Snakemake merges several --configfile files)."""
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge(base[k], v)
        else:
            base[k] = copy.deepcopy(v)


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
    data = _read_yaml(path, "config file")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the config must be a mapping with tools, repos, scenarios and models")
    for extra in parts[1:]:
        extra_path = Path(extra).resolve()
        over = _read_yaml(extra_path, "config file")
        if not isinstance(over, dict):
            raise ConfigError(f"{extra_path}: an added config file must be a mapping (e.g. `mirrors: {{url: path}}`)")
        mirrors = over.get("mirrors")
        if isinstance(mirrors, dict):
            over = dict(over, mirrors={
                url: src if not isinstance(src, str) or "://" in src or src.startswith("git@")
                else str((extra_path.parent / src).resolve())
                for url, src in mirrors.items()
            })
        _merge(data, over)
    return path, data


RECORDED = "recorded"   # a tool transport: an arm known only from recordings (no server here)
# What a recorded arm cannot have: it is never installed, indexed or started.
_SERVER_FIELDS = ("command", "args", "url", "env", "install", "index", "variant_of", "overrides")


def check_recorded_tool(path: Path, name: str, spec: dict, given: dict, data: dict) -> None:
    """A `transport: recorded` entry: no server fields, and only recorded models run it."""
    where = f"{path}: field tools.{name}"
    if name == BASELINE:
        raise ConfigError(f"{where}.transport: `baseline` is built in (transport: none); a recorded arm needs another name")
    extra = [k for k in _SERVER_FIELDS if given.get(k) not in (None, [], {})]
    if extra:
        raise ConfigError(f"{where}: a recorded arm has no server to install or start; remove {', '.join(extra)} "
                          "(or give it transport stdio or http)")
    live = sorted(mn for mn, ms in data["models"].items() if ms["provider"] != RECORDED)
    if live:
        raise ConfigError(f"{where}.transport: recorded: only provider recorded models can run a recorded arm, and "
                          f"models {', '.join(live)} are live; run them in another config, or give {name} a server")


def check_repo_commit(path: Path, name: str, spec: dict, data: dict) -> None:
    """A full commit, or a short one with the reason it stays unresolved (recorded models only:
    nothing is run in a repository that has no checkout)."""
    where = f"{path}: field repos.{name}"
    if spec.get("unresolved") is None:
        if len(spec["commit"]) != 40:
            raise ConfigError(f"{where}.commit: {spec['commit']!r} is a short commit; give the full 40-hex id "
                              "(git rev-parse on a clone or mirror), or say why it cannot be resolved with `unresolved:` "
                              "(no checkout; citations are then not checked)")
        return
    live = sorted(m for m, ms in data["models"].items() if ms["provider"] != RECORDED)
    servers = sorted(t for t, ts in data["tools"].items() if ts["transport"] not in ("none", RECORDED))
    if live or servers:
        raise ConfigError(f"{where}.unresolved: a repository without a checkout can only be graded from recordings, "
                          f"and {', '.join(f'models.{m}' for m in live) + ' ' if live else ''}"
                          f"{', '.join(f'tools.{t}' for t in servers)} would run in it; resolve the commit (--mirrors) "
                          "or run those in another config")


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
            raise ConfigError(f"{where}.path: unknown placeholder(s) {', '.join('{' + b + '}' for b in bad)}; use "
                              + " ".join("{" + f + "}" for f in FIELDS))
        return
    live = sorted(n for n, s in data["models"].items() if s["provider"] != RECORDED)
    if live:
        raise ConfigError(f"{where}.provider: recorded finds each judgement beside the trial's recording, and models "
                          f"{', '.join(live)} have none; give judge.path")


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
    raw_tools = data.get("tools") if isinstance(data.get("tools"), dict) else {}
    given = {n: set(t) for n, t in raw_tools.items() if isinstance(t, dict)}
    validate_against("config.schema.yaml", data, str(path))
    resolve_variants(path, data, given)
    m = Matrix(path=path, base_dir=path.parent, config=data, sources=sources)

    if BASELINE in data["tools"] and data["tools"][BASELINE]["transport"] != "none":
        raise ConfigError(f"{path}: field tools.{BASELINE}.transport: `baseline` is built in and has no server; set transport: none or rename the tool")
    for name, spec in data["tools"].items():
        where = f"{path}: field tools.{name}"
        if spec["transport"] == RECORDED:
            check_recorded_tool(path, name, spec, raw_tools.get(name) or {}, data)
            continue
        if spec["transport"] == "none":
            if name != BASELINE:
                raise ConfigError(f"{where}: unknown tool {name!r}: only `{BASELINE}` is built in (transport: none); "
                                  "give this tool transport: stdio or http and a command")
            continue
        if not spec.get("command"):
            raise ConfigError(f"{where}.command: a {spec['transport']} server needs a command to start it; add `command:`")
        if spec["transport"] == "http" and not spec.get("url"):
            raise ConfigError(f"{where}.url: an http server needs `url:` (its MCP endpoint)")
        if spec["transport"] == "http" and not spec["network"] and (spec.get("sandbox") or data["sandbox"]) != "none":
            raise ConfigError(f"{where}.network: an http server is reached over the network, and a sandboxed tool "
                              "has none by default; set `network: true` (or use transport stdio)")

    for name, spec in data["repos"].items():
        check_repo_commit(path, name, spec, data)
    check_recorded_judge(path, data)

    keys = {spec["api_key_env"] for spec in data["models"].values()} | {data["judge"]["api_key_env"]}
    for name, spec in data["tools"].items():
        leaked = sorted(k for k in spec["env"] if k in keys)
        if leaked:
            raise ConfigError(f"{path}: field tools.{name}.env: {leaked} is an API key of the models or judge; "
                              "a server never sees those: remove it")

    # Specs built for this check only: m.specs is built on first use, after loading.
    specs = Specs.from_config(spec_config(data), host_drives())
    for host, hspec in specs.hosts.items():
        if not any(hspec.drives(ms.provider) for ms in specs.models.values()):
            raise ConfigError(f"{path}: field hosts.{host}: host kind {hspec.kind} can drive none of the models "
                              f"(it needs a model with provider {' or '.join(sorted(hspec.providers or []))}); "
                              "add one or remove the host")
    for model, spec in data["models"].items():
        if spec["provider"] not in ("reference", "recorded") and not spec.get("model"):
            raise ConfigError(f"{path}: field models.{model}.model: provider {spec['provider']} needs a model id; add `model:`")
        if spec["provider"] == "recorded":
            check_recorded_model(path, model, spec, specs)

    check_compare(path, data)

    w = data["weights"]
    total = sum(w.values())
    if abs(total - 1.0) > 1e-6:
        raise ConfigError(f"{path}: field weights: the fairness weights sum to {total:.3f}; make them sum to 1")

    globs = data["scenarios"] if isinstance(data["scenarios"], list) else [data["scenarios"]]
    files: list[Path] = []
    for g in globs:
        hits = sorted(glob.glob(str(m.base_dir / g), recursive=True))
        if not hits:
            raise ConfigError(f"{path}: field scenarios: {g!r} matches no file; fix the glob (relative to {m.base_dir})")
        files += [Path(h) for h in hits]
    for f in files:
        sc = load_scenario(f)
        if sc.id in m.scenarios:
            raise ConfigError(f"{f}: scenario id {sc.id!r} is also {m.scenarios[sc.id].path}; rename one file")
        if sc.repo not in data["repos"]:
            known = ", ".join(sorted(data["repos"]))
            raise ConfigError(f"{f}: field repo: {sc.repo!r} is not a repo of {path.name}; use one of: {known}")
        m.scenarios[sc.id] = sc
    if not m.run_scenarios():
        raise ConfigError(f"{path}: field splits: no scenario is in splits {data['splits']}; add scenarios or change `splits`")
    return m


def check_compare(path: Path, data: dict) -> None:
    """`compare:` pairs name two different tools of the config, each pair once (A, B and B, A are
    the same comparison with the sign flipped, and would count twice in the Holm adjustment)."""
    seen: dict = {}
    for i, pair in enumerate(data["compare"]):
        where = f"{path}: field compare.{i}"
        unknown = [t for t in pair if t not in data["tools"]]
        if unknown:
            raise ConfigError(f"{where}: {unknown[0]!r} is not a tool of the config; use two of: "
                              f"{', '.join(sorted(data['tools']))}")
        if pair[0] == pair[1]:
            raise ConfigError(f"{where}: [{pair[0]}, {pair[1]}] compares a tool with itself; name two different tools")
        key = frozenset(pair)
        if key in seen:
            raise ConfigError(f"{where}: [{pair[0]}, {pair[1]}] is the same comparison as compare.{seen[key]}; "
                              "remove one")
        seen[key] = i


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
            raise ConfigError(f"{where}.{extra[0]}: a variant runs its base's server (tools.{base}) and takes "
                              f"everything from it but {', '.join(VARIANT_FIELDS)}; remove `{extra[0]}` "
                              f"(set it on tools.{base})")
        if base not in tools:
            raise ConfigError(f"{where}.variant_of: {base!r} is not a tool of the config; use one of: "
                              f"{', '.join(sorted(t for t in tools if t != name))}")
        if base == name or tools[base].get("variant_of"):
            raise ConfigError(f"{where}.variant_of: {base!r} is itself a variant; name the tool it is a variant "
                              f"of ({tools[base].get('variant_of') or base!r}) and repeat the overrides you keep")
        if tools[base]["transport"] != "stdio":
            raise ConfigError(f"{where}.variant_of: tools.{base} has transport {tools[base]['transport']}; the "
                              "variant proxy relays stdio servers only: name a stdio tool "
                              + ("(the baseline has no server to rewrite)" if tools[base]["transport"] == "none"
                                 else "(or run that server with transport stdio)"))
        new_names: dict[str, str] = {}
        for old, o in spec["overrides"]["tools"].items():
            if o.get("name") in new_names:
                raise ConfigError(f"{where}.overrides.tools.{old}.name: {o['name']!r} is also the new name of "
                                  f"{new_names[o['name']]}; give each tool its own name")
            if o.get("name"):
                new_names[o["name"]] = old
    for name, spec in list(tools.items()):
        if spec.get("variant_of"):
            base = tools[spec["variant_of"]]
            tools[name] = {**copy.deepcopy(base), "variant_of": spec["variant_of"], "overrides": spec["overrides"],
                           **({"version": spec["version"]} if "version" in given.get(name, ()) else {})}


RECORDED_FIELDS = ("tool", "repo", "scenario", "trial")


def check_recorded_model(path: Path, model: str, spec: dict, specs: Specs) -> None:
    """A recorded model: its path pattern names only {tool} {repo} {scenario} {trial}, and a
    host can run it (a loop host: claude-code drives live anthropic models only)."""
    import string

    where = f"{path}: field models.{model}"
    try:
        names = [f for _, f, _, _ in string.Formatter().parse(spec["path"]) if f is not None]
    except ValueError as e:
        raise ConfigError(f"{where}.path: {spec['path']!r} is not a valid pattern ({e}); write placeholders as "
                          "{tool} {repo} {scenario} {trial}, and a literal brace as {{ or }}") from None
    bad = sorted({n for n in names if n not in RECORDED_FIELDS})
    if bad:
        raise ConfigError(f"{where}.path: unknown placeholder(s) {', '.join('{' + n + '}' for n in bad)} in "
                          f"{spec['path']!r}; use {{tool}} {{repo}} {{scenario}} {{trial}}")
    if not any(h.drives("recorded") for h in specs.hosts.values()):
        raise ConfigError(f"{where}: a recorded model runs under a loop host only, and the config has none; "
                          "add `loop: {kind: loop}` to hosts")
    host = spec.get("host")
    if host is not None and (host not in specs.hosts or not specs.hosts[host].drives("recorded")):
        raise ConfigError(f"{where}.host: {host!r} is not a loop host of this config (hosts: "
                          f"{', '.join(sorted(specs.hosts))}); add `{host}: {{kind: loop}}` to hosts, or remove the field")


def check_api_keys(m: Matrix, environ=os.environ) -> list[str]:
    """Names of missing API keys for the models and judge that need one (empty when all are set)."""
    missing = []
    for name, spec in m.models.items():
        if spec["provider"] in ("anthropic", "openai") and not environ.get(spec["api_key_env"]):
            missing.append(f"{m.path}: field models.{name}: provider {spec['provider']} needs ${spec['api_key_env']}; export it or use provider: reference")
    j = m.config["judge"]
    if j["provider"] in ("anthropic", "openai") and not environ.get(j["api_key_env"]):
        missing.append(f"{m.path}: field judge: provider {j['provider']} needs ${j['api_key_env']}; export it or use provider: reference")
    return missing


BUILT = (".whl", ".tar.gz", ".tgz", ".zip")   # a built file is one version by its content


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
