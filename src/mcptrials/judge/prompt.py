"""What a model judge is asked and what it must reply: the versioned prompt file
src/mcptrials/prompts/judge.md (a fixed system part, the cached prefix, and a per-step user
template), and the reply: JSON matching a schema, one {name, score 0..1, rationale} per
criterion (openai also receives the schema, strict, as `response_format`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mcptrials.judge.reference import step_gold
from mcptrials.matrix.errors import ConfigError

REPLY_NAME = "judge_scores"

_REPLY_SCHEMA = {
    "type": "object",
    "required": ["criteria"],
    "properties": {
        "criteria": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "rationale"],
                "properties": {
                    "name": {"type": "string"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "rationale": {"type": "string"},
                },
            },
        }
    },
}


def _strict(schema: dict) -> dict:
    """`schema` as a strict structured-outputs schema: every object closes its properties
    (additionalProperties false) and requires them all."""
    out = dict(schema)
    if "properties" in out:
        out["properties"] = {k: _strict(v) for k, v in out["properties"].items()}
        out["required"] = list(out["properties"])
        out["additionalProperties"] = False
    if isinstance(out.get("items"), dict):
        out["items"] = _strict(out["items"])
    return out


# What the model is asked for: the reply schema, strict (openai sends it as response_format).
# Replies are checked against _REPLY_SCHEMA, which also lets a model add keys of its own.
REPLY_FORMAT = {"name": REPLY_NAME, "schema": _strict(_REPLY_SCHEMA)}


class MalformedReply(ValueError):
    """The judge's reply is not the JSON the prompt asks for."""


def load_prompt(path) -> tuple[str, str]:
    """Split the prompt file into its fixed system part and its per-step user template."""
    text = Path(path).read_text()
    try:
        _, rest = text.split("=== SYSTEM ===", 1)
        system, user = rest.split("=== USER ===", 1)
    except ValueError:
        raise ConfigError(
            f"{path}: the judge prompt needs a '=== SYSTEM ===' line and then a '=== USER ===' line; restore them"
        ) from None
    return system.strip(), user.strip()


def render_user(template: str, step_prompt: str, criteria: list[dict], step: dict, answer: str) -> str:
    """Fill the user template: the step's prompt, criteria (weight, question, the key points
    each covers), key points, gold citations and the masked answer."""
    crit_lines = []
    for c in criteria:
        crit_lines.append(f"- {c['name']} (weight {c['weight']:g}): {c['question']}")
        if c.get("key_points") is not None:
            crit_lines.append(f"  covers these key points: {'; '.join(c['key_points']) or '(none)'}")
        if c.get("citations"):
            crit_lines.append("  also judge whether the answer cites the gold locations")
    kps = list(step.get("key_points") or [])
    for c in criteria:
        kps += [k for k in c.get("key_points") or [] if k not in kps]
    gold = step_gold(step)
    fill = {
        "step_prompt": step_prompt,
        "criteria": "\n".join(crit_lines),
        "key_points": "\n".join(f"{i}. {k}" for i, k in enumerate(kps, 1)) or "(none given)",
        "gold_citations": "\n".join(f"- {g}" for g in gold) or "(none given)",
        "answer": answer,
        "criterion_names": ", ".join(c["name"] for c in criteria),
    }
    out = template
    for key, value in fill.items():
        out = out.replace("{{" + key + "}}", value)
    return out


def parse_reply(text: str, names: list[str]) -> list[dict]:
    """Parse and check a judge reply: a JSON object (optionally in a ```json fence) with one
    {name, score 0..1, rationale} per criterion in `names`. Raises MalformedReply."""
    import jsonschema

    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fence:
        body = fence.group(1).strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        start, end = body.find("{"), body.rfind("}")
        try:
            data = json.loads(body[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            raise MalformedReply("the reply is not a JSON object") from None
    try:
        jsonschema.validate(data, _REPLY_SCHEMA)
    except jsonschema.ValidationError as e:
        where = "/".join(map(str, e.absolute_path)) or "(top level)"
        raise MalformedReply(f"at {where}: {e.message}") from None
    got = [c["name"] for c in data["criteria"]]
    if any(isinstance(c["score"], bool) for c in data["criteria"]):
        raise MalformedReply("a score is true/false; give a number from 0 to 1")
    dup = sorted({n for n in got if got.count(n) > 1})
    missing = [n for n in names if n not in got]
    extra = [n for n in got if n not in names]
    if dup or missing or extra:
        raise MalformedReply(f"criteria must be exactly {names}; missing {missing}, unknown {extra}, repeated {dup}")
    by_name = {c["name"]: c for c in data["criteria"]}
    return [{"name": n, "score": float(by_name[n]["score"]), "rationale": by_name[n]["rationale"]} for n in names]
