"""The rubric judge: scores each step's answer on its rubric criteria, blind to the tool.

Providers (config `judge.provider`):
- `reference`: offline and deterministic; a criterion's score is the share of its checkable
  items the answer has (key points present, plus gold citations cited when the criterion
  has `citations: true`). See `reference_criterion` for the exact rule.
- `anthropic`, `openai`: a language model, called only through the provider layer
  (mcptrials.run.providers: the same clients, retries, errors and `Usage` as the agent loop's
  models), with the versioned prompt file src/mcptrials/prompts/judge.md (its sha256 goes
  into every record). The reply must be JSON matching a schema: the prompt asks for it, and
  `openai` also sends the schema as `response_format` (json_schema, strict). A malformed
  reply gets one retry, then `JudgeError`; an API failure after the provider's retries is a
  `JudgeError` too (the judged job fails, naming status and retries), never a silent zero.
  The fixed system part is the cached prefix (anthropic: a cache breakpoint on it only;
  openai caches prefixes by itself). No sampling parameters (API version 2026-10-21, sent
  by anthropic 2.x, rejects temperature with a 400; none is sent to openai either): the
  judge's own noise is measured with `judge.repeats` instead.

Settings come as a `specs.JudgeSpec` or as the config's `judge:` section (a dict), which
is checked against the config schema first, filling its defaults (the schema is the one
place a default is written).

Formulas (the issue's rubric, after the Sense bench's rubric):
    step quality     q_step = sum_c w_c * s_c / sum_c w_c      (weighted mean of criteria)
    scenario quality q      = mean over the scenario's steps of q_step
Both are computed per repeat (`judge.repeats: R` judges every answer R times); the record
keeps every repeat and their mean.

Blindness: before any judging, names of MCP tools (`mcp__server__tool`), the tool names the
trial called, and every configured tool/server name are replaced by "[tool]" in the answer.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import os
import re
from pathlib import Path

from mcptrials.matrix.config import ConfigError, Scenario, canonical_hash, file_sha256
from mcptrials.grade.answer_map import step_answers
from mcptrials.cost.pricing import cost_usd
from mcptrials.core.paths import PROMPT_DIR
from mcptrials.run.providers.base import ProviderError, Usage
from mcptrials.matrix.specs import JudgeSpec

SCHEMA = "mcptrials/judged/1"
PROMPT_FILE = PROMPT_DIR / "judge.md"
MASK = "[tool]"
NOTES = {
    "anthropic": ("API 2026-10-21 takes no temperature: the judge runs at the model's default "
                  "sampling; its spread is measured by judge.repeats"),
    "openai": ("no sampling parameters are sent: the judge runs at the model's default sampling; "
               "its spread is measured by judge.repeats"),
}
MAX_TOKENS = JudgeSpec.MAX_TOKENS
MAX_RETRIES = 4          # the provider's retries per judge call (429/529/5xx, honouring retry-after)
CONCURRENCY = 4          # judge calls in flight at once (per trial)
REPLY_NAME = "judge_scores"


class JudgeError(Exception):
    """The judge could not produce a valid score (never turned into a silent zero)."""


def judge_spec(judge_cfg) -> JudgeSpec:
    """The judge's settings: a `JudgeSpec` as given, or one built from a `judge:` section.
    The section (a copy) is checked against the config schema's `judge` part first, which
    fills its defaults: a loaded config's section already has them, a partial one (tests,
    callers of the library) gets the same."""
    if isinstance(judge_cfg, JudgeSpec):
        return judge_cfg
    from mcptrials.matrix.config import validate_section

    cfg = copy.deepcopy(dict(judge_cfg))
    validate_section("judge", cfg, "judge")
    return JudgeSpec.from_config(cfg)


# --- rubric and quality -----------------------------------------------------


def step_criteria(scenario: Scenario, step: dict) -> list[dict]:
    """The step's own rubric criteria, else the scenario's top-level rubric."""
    rubric = step.get("rubric") or scenario.data.get("rubric")
    if not rubric:
        raise ConfigError(f"{scenario.path}: field steps.{step['name']}.rubric: no rubric; add a top-level `rubric` or one on the step")
    return rubric["criteria"]


def weighted_quality(scores: dict[str, float], criteria: list[dict]) -> float:
    """Step quality: sum_c w_c s_c / sum_c w_c over the step's rubric criteria."""
    total = sum(c["weight"] for c in criteria)
    return sum(c["weight"] * scores[c["name"]] for c in criteria) / total


# --- blindness ----------------------------------------------------------------

MCP_NAME_RE = re.compile(r"mcp__[A-Za-z0-9_.-]+")


def identity_names(tool_names, transcript: dict | None = None) -> list[str]:
    """Names that would reveal the tool: the configured tool/server names, plus the names
    (e.g. mcp__git__git_log) and server-side names (git_log) of the MCP tools the trial called.
    Built-in tool names (read_file, grep, ...) are left alone: every tool has them."""
    names = set(n for n in tool_names if n)
    for call in (transcript or {}).get("tool_calls", []):
        if call.get("source") == "mcp":
            names.update(n for n in (call.get("name"), call.get("tool")) if n)
    return sorted(names, key=lambda n: (-len(n), n))  # longest first, so no partial masks


def mask_identities(text: str, names) -> tuple[str, int]:
    """Replace every `mcp__...` name and every whole-word occurrence (case-insensitive) of
    `names` by "[tool]" in one pass; returns the masked text and the number of replacements.
    A name counts as a whole word when no letter, digit or underscore touches it, so
    `git` is masked in "the git server" but not in "github" or "git_log"."""
    words = sorted({n for n in names if n}, key=lambda n: (-len(n), n))  # longest first
    pattern = MCP_NAME_RE.pattern
    if words:
        pattern += r"|(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, words)) + r")(?![A-Za-z0-9_])"
    return re.compile(pattern, re.IGNORECASE).subn(MASK, text)


# --- the reference judge ------------------------------------------------------

STOPWORDS = frozenset("""
a an the and or but nor not no yes of to in on at by for with from into onto over under as is are was
were be been being am do does did doing has have had having it its this that these those there here
then than so such very can could will would shall should may might must which who whom whose what when
where why how all any both each few more most other some own same too only just also about above
below after before between through during again further once out off up down we you they he she them
his her our your their my me us i if while because until via per
""".split())

_WORD_RE = re.compile(r"[a-z0-9_]+")


def content_words(text: str) -> set[str]:
    """Lower-cased words (runs of letters, digits, `_`) that carry content: at least 3
    characters and not a stopword, or any word with a digit in it (numbers matter)."""
    words = _WORD_RE.findall(text.lower())
    return {w for w in words if (len(w) >= 3 and w not in STOPWORDS) or any(ch.isdigit() for ch in w)}


def _normalise(text: str) -> str:
    return " ".join(text.lower().split())


def key_point_present(key_point: str, answer: str) -> bool:
    """A key point is present when every one of its content words occurs as a word in the
    answer (case-insensitive, order and inflection-free: `commit` does not match `commits`).
    A key point with no content words is present when its whitespace-normalised text occurs
    in the answer's."""
    need = content_words(key_point)
    if not need:
        return _normalise(key_point) in _normalise(answer)
    return need <= set(_WORD_RE.findall(answer.lower()))


def _same_path(a: str, b: str) -> bool:
    """Equal, or one ends with the other on a `/` boundary (src/app.py ~ app.py)."""
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def gold_cited(gold: str, answer: str) -> bool:
    """Whether the answer cites a gold location, without the repository (the graders'
    citation parser, mcptrials.grade.citations.extract_citations, finds the citations).
    path:N or path:N-M: the answer cites the same path (or one ending with it, or it with
    that ending) at a line or range at most RECALL_WINDOW (5) lines from [N, M].
    path:Symbol: the answer cites that path and names every part of the symbol as a word."""
    from mcptrials.grade.citations import RECALL_WINDOW, extract_citations

    parsed = extract_citations(gold)
    if not parsed:
        return False
    g = parsed[0]
    same = [c for c in extract_citations(answer) if _same_path(c["path"], g["path"])]
    if g["lines"] is not None:
        lo, hi = min(g["lines"]), max(g["lines"])
        return any(c["lines"] is not None and max(0, min(c["lines"]) - hi, lo - max(c["lines"])) <= RECALL_WINDOW
                   for c in same)
    parts = re.split(r"\.|::|#", g["symbol"])
    return bool(same) and all(re.search(r"(?<![A-Za-z0-9_])" + re.escape(p) + r"(?![A-Za-z0-9_])", answer)
                              for p in parts)


def criterion_key_points(criterion: dict, step: dict) -> list[str]:
    """The key points a criterion covers: its own list, else all the step's key points."""
    own = criterion.get("key_points")
    return list(own) if own is not None else list(step.get("key_points") or [])


def step_gold(step: dict) -> list[str]:
    return list((step.get("citations") or {}).get("gold") or [])


def reference_criterion(answer: str, criterion: dict, step: dict) -> tuple[float, str]:
    """Reference score of one criterion: the pooled share of its items the answer has,
        s = (key points present + gold citations cited) / (key points + gold citations),
    where gold citations count only when the criterion has `citations: true`. With no items
    to check, a non-empty answer scores 1.0 (nothing required is missing); an empty one 0."""
    kps = criterion_key_points(criterion, step)
    gold = step_gold(step) if criterion.get("citations") else []
    kp_hit = [k for k in kps if key_point_present(k, answer)]
    gold_hit = [g for g in gold if gold_cited(g, answer)]
    n = len(kps) + len(gold)
    if n == 0:
        score = 1.0 if answer.strip() else 0.0
        return score, "no key points or gold citations to check: full marks for a non-empty answer"
    score = (len(kp_hit) + len(gold_hit)) / n
    parts = []
    if kps:
        missing = [k for k in kps if k not in kp_hit]
        parts.append(f"key points {len(kp_hit)}/{len(kps)}" + (f" (missing: {'; '.join(missing)})" if missing else ""))
    if gold:
        missing = [g for g in gold if g not in gold_hit]
        parts.append(f"gold citations {len(gold_hit)}/{len(gold)}" + (f" (missing: {', '.join(missing)})" if missing else ""))
    return score, "; ".join(parts)


# --- the model judge (anthropic, openai) --------------------------------------------

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
        raise ConfigError(f"{path}: the judge prompt needs a '=== SYSTEM ===' line and then a '=== USER ===' line; restore them") from None
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
            data = json.loads(body[start:end + 1]) if 0 <= start < end else None
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


def _usage_record(usage: Usage, api_calls: int = 0, retries: int = 0, malformed_replies: int = 0) -> dict:
    return dict(dataclasses.asdict(usage), api_calls=api_calls, retries=retries, malformed_replies=malformed_replies)


class ModelJudge:
    """A language-model judge through the provider layer: one client of
    `providers.create(spec.provider, ...)`; `score` judges one answer once (with one retry on
    a malformed reply). The API key is read from the env var and never stored elsewhere."""

    def __init__(self, spec: JudgeSpec, prompt_path):
        from mcptrials.run import providers

        key = os.environ.get(spec.api_key_env) if spec.api_key_env else None
        if not key:
            raise ConfigError(f"judge: provider {spec.provider} needs ${spec.api_key_env}; "
                              "export it or set judge.provider: reference")
        if not spec.model:
            raise ConfigError(f"judge.model: provider {spec.provider} needs a model id (e.g. "
                              f"{'gpt-5.1' if spec.provider == 'openai' else 'claude-sonnet-4-6'}); add `model:` under `judge`")
        self.spec = spec
        self.model = spec.model
        self.system, self.template = load_prompt(prompt_path)
        self.provider = providers.create(spec.provider, spec.model, key, spec.base_url, MAX_RETRIES)
        self.usage = Usage()
        self.api_calls = self.retries = self.malformed_replies = 0
        self.temperature = None
        self.note = NOTES[spec.provider]

    def usage_record(self) -> dict:
        return _usage_record(self.usage, self.api_calls, self.retries, self.malformed_replies)

    async def _call(self, messages: list[dict]) -> tuple[str, str]:
        """One judge call; returns the reply's text and its stop reason."""
        try:
            # The fixed instructions are the cached prefix shared by every judge call.
            reply = await self.provider.complete([{"type": "text", "text": self.system}], messages, [], MAX_TOKENS,
                                                 reply_schema=REPLY_FORMAT, cache_conversation=False)
        except ProviderError as e:
            status = f" with HTTP {e.status}" if e.status is not None else ""
            raise JudgeError(f"judge API call ({self.spec.provider} model {self.model}) failed{status} after "
                             f"{e.retries} retr{'y' if e.retries == 1 else 'ies'}: {e}; the trial is not judged") from None
        self.api_calls += 1
        self.retries += reply.retries
        self.usage.add(reply.usage)
        return "".join(b.get("text", "") for b in reply.content if b.get("type") == "text"), reply.stop_reason

    async def score(self, step_prompt: str, criteria: list[dict], step: dict, answer: str) -> list[dict]:
        names = [c["name"] for c in criteria]
        messages = [{"role": "user", "content": render_user(self.template, step_prompt, criteria, step, answer)}]
        text, stop = await self._call(messages)
        try:
            return parse_reply(text, names)
        except MalformedReply as first:
            self.malformed_replies += 1
            cut = f" (it was cut at {MAX_TOKENS} output tokens: be brief)" if stop == "max_tokens" else ""
            messages += [
                {"role": "assistant", "content": text.strip() or "(no text)"},
                {"role": "user", "content": f"Your reply could not be used: {first}{cut}. Reply again with only the "
                                            f"JSON object, one entry for each of: {', '.join(names)}."},
            ]
        text, stop = await self._call(messages)
        try:
            return parse_reply(text, names)
        except MalformedReply as second:
            self.malformed_replies += 1
            cut = f" (cut at {MAX_TOKENS} output tokens)" if stop == "max_tokens" else ""
            raise JudgeError(f"judge model {self.model} gave a malformed reply twice (last: {second}{cut}); "
                             f"the step is not scored. Reply began: {text[:200]!r}") from None

    async def aclose(self) -> None:
        await self.provider.aclose()


# --- judging a trial ------------------------------------------------------------


def judge_settings(judge_cfg, prompt_path=PROMPT_FILE) -> dict:
    """What a judge call's scores depend on besides the transcript and the rubric: provider,
    repeats, the prompt (sha256) and, for a model judge, model, base_url and max_tokens.
    Never `threshold` or `strict` (they only change the held-out verdict) nor `api_key_env`."""
    spec = judge_spec(judge_cfg)
    s = {"provider": spec.provider, "repeats": spec.repeats, "record": SCHEMA,
         "prompt_sha256": file_sha256(prompt_path)}
    if spec.provider != "reference":
        s.update(model=spec.model, base_url=spec.base_url, max_tokens=MAX_TOKENS)
    return s


def judge_settings_hash(judge_cfg, prompt_path=PROMPT_FILE) -> str:
    return canonical_hash(judge_settings(judge_cfg, prompt_path))


async def ajudge_trial(transcript: dict, scenario: Scenario, judge_cfg: dict, prompt_path=PROMPT_FILE,
                       tool_names=(), pricing: dict | None = None) -> dict:
    """Judge every step of one transcript; return the judged.json record (see `judge_trial`)."""
    spec = judge_spec(judge_cfg)
    settings = judge_settings(spec, prompt_path)
    provider, repeats = spec.provider, spec.repeats
    names = identity_names(tool_names, transcript)
    answers = {s.get("name"): s for s in transcript.get("steps", [])}
    mapped, _ = step_answers(transcript, scenario.data["steps"])  # a one_answer transcript: its parts

    model_judge = None if provider == "reference" else ModelJudge(spec, prompt_path)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(step: dict, criteria: list[dict], answer: str) -> list[dict]:
        if provider == "reference":
            return [dict(zip(("score", "rationale"), reference_criterion(answer, c, step)), name=c["name"])
                    for c in criteria]
        async with gate:
            return await model_judge.score(step["prompt"], criteria, step, answer)

    steps_out = []
    try:
        jobs: list = []
        for i, step in enumerate(scenario.data["steps"]):
            criteria = step_criteria(scenario, step)
            t_step = mapped[i] if mapped is not None else answers.get(step["name"])
            masked, n_masked = mask_identities((t_step or {}).get("answer_text") or "", names)
            empty = not masked.strip()
            steps_out.append({"index": i, "name": step["name"], "answered": t_step is not None,
                              "answer_chars": len(masked), "masked_names": n_masked, "empty": empty,
                              "criteria": criteria})
            for r in range(repeats):
                if not empty:
                    jobs.append((i, r, (step, criteria, masked)))
        tasks = [asyncio.ensure_future(one(*j[2])) for j in jobs]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            # One failure fails the trial: stop the other calls before the client closes.
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
    finally:
        if model_judge is not None:
            await model_judge.aclose()
    by_key = {(i, r): res for (i, r, _), res in zip(jobs, results)}

    for s in steps_out:
        criteria = s.pop("criteria")
        per_repeat = []
        for r in range(repeats):
            if s["empty"]:
                per_repeat.append({c["name"]: (0.0, "empty answer: 0 by the rubric's anchors (no judge call)")
                                   for c in criteria})
            else:
                per_repeat.append({x["name"]: (x["score"], x["rationale"]) for x in by_key[(s["index"], r)]})
        s["criteria"] = [{"name": c["name"], "weight": c["weight"], "citations": bool(c.get("citations")),
                          "scores": [pr[c["name"]][0] for pr in per_repeat],
                          "rationales": [pr[c["name"]][1] for pr in per_repeat],
                          "mean": sum(pr[c["name"]][0] for pr in per_repeat) / repeats} for c in criteria]
        s["quality"] = [weighted_quality({k: v[0] for k, v in pr.items()}, criteria) for pr in per_repeat]
        s["quality_mean"] = sum(s["quality"]) / repeats
        s["model_calls"] = 0 if (s["empty"] or provider == "reference") else repeats

    quality = [sum(s["quality"][r] for s in steps_out) / len(steps_out) for r in range(repeats)]
    if model_judge:
        usage = dict(model_judge.usage_record(), cost_usd=cost_usd(pricing, spec.model, model_judge.usage))
    else:
        usage = dict(_usage_record(Usage()), cost_usd=0.0)
    return {
        "schema": SCHEMA,
        "cell": transcript.get("cell"),
        "transcript_outcome": transcript.get("outcome"),
        "judge": {"provider": provider, "model": settings.get("model"),
                  "base_url": settings.get("base_url"),  # None: the provider's own endpoint
                  "repeats": repeats,
                  "temperature": model_judge.temperature if model_judge else None,
                  "note": model_judge.note if model_judge else None,
                  "settings_hash": canonical_hash(settings),
                  "prompt_file": Path(prompt_path).name, "prompt_sha256": file_sha256(prompt_path)},
        "scenario": {"id": scenario.id, "rubric_hash": canonical_hash(scenario.rubric_part())},
        "masking": {"replacement": MASK, "names_masked": sum(s["masked_names"] for s in steps_out)},
        "steps": steps_out,
        "quality": quality,
        "quality_mean": sum(quality) / repeats,
        "usage": usage,
    }


def judge_trial(transcript: dict, scenario: Scenario, judge_cfg: dict, prompt_path=PROMPT_FILE,
                tool_names=(), pricing: dict | None = None) -> dict:
    """Judge one transcript against its scenario's rubric; returns the judged.json record:
    per step and criterion every repeat's score and rationale, step and scenario quality per
    repeat and their means, the judge (provider, model, settings hash, prompt sha256), the
    rubric hash, usage and cost, and the transcript's cell. A transcript that did not complete
    is judged on the answers it has; a missing or empty answer scores 0 without a judge call.
    `tool_names`: the configured tool/server names, masked in every answer."""
    return asyncio.run(ajudge_trial(transcript, scenario, judge_cfg, prompt_path, tool_names, pricing))


# --- judge variance over many records -----------------------------------------------


def judge_variance(records: list[dict]) -> dict:
    """The judge's noise across judged.json records with R repeats each: the spread
    (mcptrials.stats.judge_spread: SD and range of the R scores of an item) and ICC(1,1)
    (mcptrials.stats.icc) per scenario (items: records), per step (items: judged steps) and
    per criterion (items: judged steps, one criterion). Empty answers are left out of the
    step and criterion levels: they were not judged. A difference smaller than the spread
    is inside the judge's noise."""
    from mcptrials.stats import icc, judge_spread

    def summary(items: list[list[float]]) -> dict | None:
        if not items:
            return None
        try:
            agreement = icc(items)
        except ValueError:  # records with different repeats: no ICC over them
            agreement = None
        return dict(judge_spread(items), icc=agreement)

    judged_steps = [s for r in records for s in r["steps"] if not s["empty"]]
    names = sorted({c["name"] for s in judged_steps for c in s["criteria"]})
    return {
        "records": len(records),
        "scenario": summary([r["quality"] for r in records]),
        "step": summary([s["quality"] for s in judged_steps]),
        "criteria": {n: summary([c["scores"] for s in judged_steps for c in s["criteria"] if c["name"] == n])
                     for n in names},
    }


# --- the workflow's judge job ---------------------------------------------------------


def judge_budget(m, transcript: dict, scenario: str, out: Path):
    """(ledger, reservation id) of a paid judge under a budget, else (None, None). The trial
    reserved its judging; judging again (a new judge or rubric) reserves anew, and raises
    ConfigError, before any call, when that no longer fits under budget.max_cost_usd."""
    from mcptrials.cost.budget import Ledger, budget_cap, judge_key, ledger_path, results_dir_of
    from mcptrials.cost.plan import judge_bound

    cap = budget_cap(m.config)
    if cap is None or m.config["judge"]["provider"] == "reference":
        return None, None
    ledger = Ledger(ledger_path(results_dir_of(out)))
    key = judge_key(transcript["cell"])
    rid = ledger.open_reservation(key)
    if rid is None:
        rid, why = ledger.reserve(key, judge_bound(m, scenario) or 0.0, cap)
        if rid is None:
            raise ConfigError(f"{m.path}: field budget.max_cost_usd: judging {key[:-len('/judge')]} again does not "
                              f"fit ({why}); raise the budget, or keep the judge settings that judged it")
    return ledger, rid


def judge_job(m, transcript_path, scenario_path, out: Path, prompt_path=PROMPT_FILE) -> dict:
    """The workflow's judge job: judge one transcript against its scenario's rubric with the
    config's judge (a recorded judge: the judgements made elsewhere, mcptrials.judge.recorded),
    under the budget (`judge_budget`), and write judged.json to `out`. Raises JudgeError when
    the judge gives no usable reply."""
    from mcptrials.matrix.config import load_scenario
    from mcptrials.core.records import read_json, write_json

    scenario = load_scenario(Path(scenario_path))
    try:
        transcript = read_json(transcript_path)
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{transcript_path}: cannot read the transcript ({e}); re-run its trial") from None
    ledger, reservation = judge_budget(m, transcript, scenario.id, out)
    if m.specs.judge.provider == "recorded":   # judgements made elsewhere (mcptrials.judge.recorded)
        from mcptrials.judge.recorded import judge_recorded

        record = judge_recorded(m, transcript, scenario)
    else:
        record = judge_trial(transcript, scenario, m.specs.judge, prompt_path, tool_names=list(m.tools),
                             pricing=m.config["pricing"])
    if ledger is not None:
        from mcptrials.cost.budget import judge_key
        from mcptrials.cost.pricing import judge_cost

        ledger.append({"trial": judge_key(transcript["cell"]), "cell": transcript["cell"], "settles": reservation,
                       "cost_usd": judge_cost(m.config["pricing"], record), "priced_as": record["judge"].get("model")})
    write_json(out, record)
    return record
