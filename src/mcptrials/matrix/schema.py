"""The JSON Schemas of src/mcptrials/schemas/: read once, applied with their defaults filled
in (the schema is the one place a default is written), and each violation turned into a
ConfigError line that names the file, the field and what is allowed. Also reading a YAML
input file with a parse error that says where.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from pathlib import Path

import yaml

from mcptrials.core.paths import SCHEMA_DIR
from mcptrials.matrix import memo
from mcptrials.matrix.errors import ConfigError

# libyaml's parser when present: parsing the schemas is most of a stage's start-up time.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml_load(f):
    return yaml.load(f, Loader=_Loader)


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


@functools.lru_cache(maxsize=None)  # stateless (defaults are set on the instance): built once a process
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


def config_default(field: str):
    """The config schema's default of a top-level field (`margin`): for a reader that has no
    config, e.g. `mcptrials compare` on results that predate the field."""
    return copy.deepcopy(_schema("config.schema.yaml")["properties"][field]["default"])


def scenario_default(field: str):
    """The scenario schema's default of a top-level field (`workspace`): what a scenario that
    does not set it gets (the rerun table leaves such a value out of the rerun keys)."""
    return copy.deepcopy(_schema("scenario.schema.yaml")["properties"][field]["default"])


def host_drives() -> dict[str, list[str] | None]:
    """Host kind -> the providers it can drive (None: any), as the config schema declares it
    (`x-drives` of a host's `kind`): data, so config knows it without importing host code."""
    return _schema("config.schema.yaml")["properties"]["hosts"]["additionalProperties"]["properties"]["kind"][
        "x-drives"
    ]


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
    if v in ("anyOf", "oneOf") and all(set(b) == {"required"} for b in schema[v]):  # a choice of keys
        keys = ", ".join(b["required"][0] for b in schema[v])
        return f"give {'exactly one' if v == 'oneOf' else 'at least one'} of: {keys}"
    if v == "oneOf" and schema.get("x-fix"):  # a field of several forms: say which
        return f"{err.instance!r} is not allowed; {schema['x-fix']}"
    return err.message


def validate_against(schema_name: str, data, source: str) -> None:
    """Validate `data` in place (filling defaults); raise ConfigError naming `source`. Valid data
    seen before (the same schema, equal data: mcptrials.matrix.memo) gets the defaults it got then."""
    given = memo.pickled(data) if isinstance(data, dict) else None
    key = ("valid", schema_name, given) if given is not None else None
    filled = memo.get(key) if key else memo.MISS
    if filled is not memo.MISS:
        _fill_in_place(data, filled)
        return
    errors = sorted(_validator(schema_name).iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{source}: field {_field_path(e)}: {_explain(e)}" for e in errors[:10]]
        raise ConfigError("\n".join(lines))
    if key:
        memo.put(key, data)


def _fill_in_place(data, filled) -> None:
    """Add to `data` the defaults `filled` (the same data, validated) has, into the same objects
    the validator would have filled (a caller may hold a part of `data` taken before)."""
    if isinstance(data, dict) and isinstance(filled, dict):
        for k, v in filled.items():
            if k in data:
                _fill_in_place(data[k], v)
            else:
                data[k] = v
    elif isinstance(data, list) and isinstance(filled, list):
        for mine, theirs in zip(data, filled):
            _fill_in_place(mine, theirs)


def validate_section(section: str, data: dict, source: str) -> None:
    """Validate one top-level section of a config (e.g. a `judge:` dict given to the
    library on its own) in place, filling its defaults from the config schema."""
    whole = _validator("config.schema.yaml")
    checker = whole.evolve(schema=whole.schema["properties"][section])
    errors = sorted(checker.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError(
            "\n".join(
                f"{source}: field {'.'.join([section, *map(str, e.absolute_path)])}: {_explain(e)}" for e in errors[:10]
            )
        )


def read_yaml(path: Path, what: str):
    """The YAML file's data; a missing file or a parse error (with its line and column) is a ConfigError."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        key = ("yaml", hashlib.sha256(raw).digest())  # the parse is a function of the bytes alone
        data = memo.get(key)
        if data is memo.MISS:
            data = _yaml_load(raw)
            memo.put(key, data)
        return data
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} not found; check the path") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(
            f"{path}: does not parse as YAML{where}: {getattr(e, 'problem', e)}; fix the syntax"
        ) from None
