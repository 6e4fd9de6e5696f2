"""The rubric judge: scores each step's answer on its rubric criteria, blind to the tool.

Providers (config `judge.provider`): `reference`, offline and deterministic (judge/reference.py);
`anthropic`, `openai`, a language model through the provider layer (judge/model_judge.py, with
the prompt and the reply's schema of judge/prompt.py); `recorded`, judgements made elsewhere
(judge/recorded.py). Blindness: every answer is masked first (judge/blinding.py).

Settings come as a `specs.JudgeSpec` or as the config's `judge:` section (a dict), which
is checked against the config schema first, filling its defaults (the schema is the one
place a default is written).

Formulas (the issue's rubric, after the Sense bench's rubric):
    step quality     q_step = sum_c w_c * s_c / sum_c w_c      (weighted mean of criteria)
    scenario quality q      = mean over the scenario's steps of q_step
Both are computed per repeat (`judge.repeats: R` judges every answer R times); the record
keeps every repeat and their mean. The judge's noise over many records: judge/variance.py.
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash, file_sha256
from mcptrials.matrix.scenario import Scenario
from mcptrials.grade.answer_map import step_answers
from mcptrials.cost.pricing import cost_usd
from mcptrials.core.paths import PROMPT_DIR
from mcptrials.core.record_types import JudgedRecord, TranscriptRecord
from mcptrials.judge.blinding import MASK, identity_names, mask_identities
from mcptrials.judge.model_judge import MAX_TOKENS, ModelJudge, judge_usage
from mcptrials.judge.reference import reference_criterion
from mcptrials.providers.base import Usage
from mcptrials.matrix.specs import JudgeSpec

SCHEMA = "mcptrials/judged/1"
PROMPT_FILE = PROMPT_DIR / "judge.md"
CONCURRENCY = 4  # judge calls in flight at once (per trial)


def judge_spec(judge_cfg) -> JudgeSpec:
    """The judge's settings: a `JudgeSpec` as given, or one built from a `judge:` section.
    The section (a copy) is checked against the config schema's `judge` part first, which
    fills its defaults: a loaded config's section already has them, a partial one (tests,
    callers of the library) gets the same."""
    if isinstance(judge_cfg, JudgeSpec):
        return judge_cfg
    from mcptrials.matrix.schema import validate_section

    cfg = copy.deepcopy(dict(judge_cfg))
    validate_section("judge", cfg, "judge")
    return JudgeSpec.from_config(cfg)


# --- rubric and quality -----------------------------------------------------


def step_criteria(scenario: Scenario, step: dict) -> list[dict]:
    """The step's own rubric criteria, else the scenario's top-level rubric."""
    rubric = step.get("rubric") or scenario.data.get("rubric")
    if not rubric:
        raise ConfigError(
            f"{scenario.path}: field steps.{step['name']}.rubric: no rubric; add a top-level `rubric` or one on the step"
        )
    return rubric["criteria"]


def weighted_quality(scores: dict[str, float], criteria: list[dict]) -> float:
    """Step quality: sum_c w_c s_c / sum_c w_c over the step's rubric criteria."""
    total = sum(c["weight"] for c in criteria)
    return sum(c["weight"] * scores[c["name"]] for c in criteria) / total


# --- judging a trial ------------------------------------------------------------


def judge_settings(judge_cfg, prompt_path=PROMPT_FILE) -> dict:
    """What a judge call's scores depend on besides the transcript and the rubric: provider,
    repeats, the prompt (sha256) and, for a model judge, model, base_url and max_tokens.
    Never `threshold` or `strict` (they only change the held-out verdict) nor `api_key_env`."""
    spec = judge_spec(judge_cfg)
    s = {
        "provider": spec.provider,
        "repeats": spec.repeats,
        "record": SCHEMA,
        "prompt_sha256": file_sha256(prompt_path),
    }
    if spec.provider != "reference":
        s.update(model=spec.model, base_url=spec.base_url, max_tokens=MAX_TOKENS)
    return s


def judge_settings_hash(judge_cfg, prompt_path=PROMPT_FILE) -> str:
    return canonical_hash(judge_settings(judge_cfg, prompt_path))


def _steps_to_judge(
    transcript: Mapping[str, Any], scenario: Scenario, names: list[str], repeats: int
) -> tuple[list, list]:
    """(one entry per scenario step: its answer masked, and its criteria; the judge calls to
    make: (step index, repeat, (step, criteria, masked answer)), none for an empty answer)."""
    answers = {s.get("name"): s for s in transcript.get("steps", [])}
    mapped, _ = step_answers(transcript, scenario.data["steps"])  # a one_answer transcript: its parts
    steps_out, jobs = [], []
    for i, step in enumerate(scenario.data["steps"]):
        criteria = step_criteria(scenario, step)
        t_step = mapped[i] if mapped is not None else answers.get(step["name"])
        masked, n_masked = mask_identities((t_step or {}).get("answer_text") or "", names)
        empty = not masked.strip()
        steps_out.append(
            {
                "index": i,
                "name": step["name"],
                "answered": t_step is not None,
                "answer_chars": len(masked),
                "masked_names": n_masked,
                "empty": empty,
                "criteria": criteria,
            }
        )
        for r in range(repeats):
            if not empty:
                jobs.append((i, r, (step, criteria, masked)))
    return steps_out, jobs


async def _call_all(jobs: list, one) -> dict:
    """Every judge call at once (`one` limits how many are in flight); {(step index, repeat): scores}."""
    tasks = [asyncio.ensure_future(one(*j[2])) for j in jobs]
    try:
        results = await asyncio.gather(*tasks)
    except BaseException:
        # One failure fails the trial: stop the other calls before the client closes.
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return {(i, r): res for (i, r, _), res in zip(jobs, results)}


def _score_step(s: dict, by_key: dict, repeats: int, provider: str) -> None:
    """Fill one step's entry: each criterion's scores and rationales per repeat and their
    mean, the step quality per repeat and its mean (an empty answer: 0, no judge call)."""
    criteria = s.pop("criteria")
    per_repeat = []
    for r in range(repeats):
        if s["empty"]:
            per_repeat.append(
                {c["name"]: (0.0, "empty answer: 0 by the rubric's anchors (no judge call)") for c in criteria}
            )
        else:
            per_repeat.append({x["name"]: (x["score"], x["rationale"]) for x in by_key[(s["index"], r)]})
    s["criteria"] = [
        {
            "name": c["name"],
            "weight": c["weight"],
            "citations": bool(c.get("citations")),
            "scores": [pr[c["name"]][0] for pr in per_repeat],
            "rationales": [pr[c["name"]][1] for pr in per_repeat],
            "mean": sum(pr[c["name"]][0] for pr in per_repeat) / repeats,
        }
        for c in criteria
    ]
    s["quality"] = [weighted_quality({k: v[0] for k, v in pr.items()}, criteria) for pr in per_repeat]
    s["quality_mean"] = sum(s["quality"]) / repeats
    s["model_calls"] = 0 if (s["empty"] or provider == "reference") else repeats


async def ajudge_trial(
    transcript: TranscriptRecord,
    scenario: Scenario,
    judge_cfg: dict,
    prompt_path=PROMPT_FILE,
    tool_names=(),
    pricing: dict | None = None,
) -> JudgedRecord:
    """Judge every step of one transcript; return the judged.json record (see `judge_trial`)."""
    spec = judge_spec(judge_cfg)
    settings = judge_settings(spec, prompt_path)
    provider, repeats = spec.provider, spec.repeats
    steps_out, jobs = _steps_to_judge(transcript, scenario, identity_names(tool_names, transcript), repeats)

    model_judge = None if provider == "reference" else ModelJudge(spec, prompt_path)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(step: dict, criteria: list[dict], answer: str) -> list[dict]:
        if model_judge is None:  # the reference judge
            return [
                dict(zip(("score", "rationale"), reference_criterion(answer, c, step)), name=c["name"])
                for c in criteria
            ]
        async with gate:
            return await model_judge.score(step["prompt"], criteria, step, answer)

    try:
        by_key = await _call_all(jobs, one)
    finally:
        if model_judge is not None:
            await model_judge.aclose()
    for s in steps_out:
        _score_step(s, by_key, repeats, provider)

    quality = [sum(s["quality"][r] for s in steps_out) / len(steps_out) for r in range(repeats)]
    if model_judge:
        usage = model_judge.usage_record(cost_usd(pricing, spec.model, model_judge.usage))
    else:
        usage = judge_usage(Usage(), 0.0)
    return {
        "schema": SCHEMA,
        "cell": transcript.get("cell"),
        "transcript_outcome": transcript.get("outcome"),
        "judge": {
            "provider": provider,
            "model": settings.get("model"),
            "base_url": settings.get("base_url"),  # None: the provider's own endpoint
            "repeats": repeats,
            "temperature": model_judge.temperature if model_judge else None,
            "note": model_judge.note if model_judge else None,
            "settings_hash": canonical_hash(settings),
            "prompt_file": Path(prompt_path).name,
            "prompt_sha256": file_sha256(prompt_path),
        },
        "scenario": {"id": scenario.id, "rubric_hash": canonical_hash(scenario.rubric_part())},
        "masking": {"replacement": MASK, "names_masked": sum(s["masked_names"] for s in steps_out)},
        "steps": steps_out,
        "quality": quality,
        "quality_mean": sum(quality) / repeats,
        "usage": usage,
    }


def judge_trial(
    transcript: TranscriptRecord,
    scenario: Scenario,
    judge_cfg: dict,
    prompt_path=PROMPT_FILE,
    tool_names=(),
    pricing: dict | None = None,
) -> JudgedRecord:
    """Judge one transcript against its scenario's rubric; returns the judged.json record:
    per step and criterion every repeat's score and rationale, step and scenario quality per
    repeat and their means, the judge (provider, model, settings hash, prompt sha256), the
    rubric hash, usage and cost, and the transcript's cell. A transcript that did not complete
    is judged on the answers it has; a missing or empty answer scores 0 without a judge call.
    `tool_names`: the configured tool/server names, masked in every answer."""
    return asyncio.run(ajudge_trial(transcript, scenario, judge_cfg, prompt_path, tool_names, pricing))


# --- command ----------------------------------------------------------------------


def judge_budget(m, transcript: dict, scenario: str, out: Path):
    """(ledger, reservation id) of a paid judge under a budget, else (None, None). The trial
    reserved its judging; judging again (a new judge or rubric) reserves anew, and raises
    ConfigError, before any call, when that no longer fits under budget.max_cost_usd."""
    from mcptrials.cost.budget import Ledger, budget_cap, judge_key, ledger_path, results_dir_of
    from mcptrials.cost.plan import judge_bound

    cap = budget_cap(m.config)
    if cap is None or m.specs.judge.provider == "reference":
        return None, None
    ledger = Ledger(ledger_path(results_dir_of(out)))
    key = judge_key(transcript["cell"])
    rid = ledger.open_reservation(key)
    if rid is None:
        rid, why = ledger.reserve(key, judge_bound(m, scenario) or 0.0, cap)
        if rid is None:
            raise ConfigError(
                f"{m.path}: field budget.max_cost_usd: judging {key[: -len('/judge')]} again does not "
                f"fit ({why}); raise the budget, or keep the judge settings that judged it"
            )
    return ledger, rid


def judge_job(m, transcript_path, scenario_path, out: Path, prompt_path=PROMPT_FILE) -> JudgedRecord:
    """The workflow's judge job: judge one transcript against its scenario's rubric with the
    config's judge (a recorded judge: the judgements made elsewhere, mcptrials.judge.recorded),
    under the budget (`judge_budget`), and write judged.json to `out`. Raises JudgeError when
    the judge gives no usable reply."""
    from mcptrials.matrix.scenario import load_scenario
    from mcptrials.core.records import read_json, write_json

    scenario = load_scenario(Path(scenario_path))
    try:
        transcript = read_json(transcript_path)
    except (OSError, json.JSONDecodeError) as e:
        raise ConfigError(f"{transcript_path}: cannot read the transcript ({e}); re-run its trial") from None
    transcript_sha = file_sha256(transcript_path)
    if (earlier := earlier_judgement(m, Path(out), transcript_sha, scenario, prompt_path)) is not None:
        print(f"kept the judgement of the same transcript under the same judge and rubric ({out})", file=sys.stderr)
        return earlier
    ledger, reservation = judge_budget(m, transcript, scenario.id, out)
    if m.specs.judge.provider == "recorded":  # judgements made elsewhere (mcptrials.judge.recorded)
        from mcptrials.judge.recorded import judge_recorded

        record = judge_recorded(m, transcript, scenario)
    else:
        record = judge_trial(
            transcript, scenario, m.specs.judge, prompt_path, tool_names=list(m.tools), pricing=m.config["pricing"]
        )
    if ledger is not None:
        from mcptrials.cost.budget import judge_key
        from mcptrials.cost.pricing import judge_cost

        ledger.append(
            {
                "trial": judge_key(transcript["cell"]),
                "cell": transcript["cell"],
                "settles": reservation,
                "cost_usd": judge_cost(m.config["pricing"], record),
                "priced_as": record["judge"].get("model"),
            }
        )
    record["transcript_sha256"] = transcript_sha
    write_json(out, record)
    if m.specs.judge.provider in MODEL_JUDGES:
        keep_judgement(Path(out))
    return record


# A model judge's judgement is paid for: a trial whose transcript was kept byte for byte
# (mcptrials.core.outcomes.restore_finished), or rerun only because a stage before it was
# retried, is not judged again while the transcript, the judge and the rubric are the same.
# Snakemake deletes judged.json before the job runs, so each one is also hard-linked into
# the trial's finished folder (mcptrials.core.outcomes.finished_dir).
MODEL_JUDGES = ("anthropic", "openai")


def keep_judgement(out: Path) -> None:
    from mcptrials.core.outcomes import finished_dir

    keep = finished_dir(out.parent) / out.name
    keep.parent.mkdir(parents=True, exist_ok=True)
    keep.unlink(missing_ok=True)
    os.link(out, keep)


def earlier_judgement(
    m, out: Path, transcript_sha: str, scenario: Scenario, prompt_path=PROMPT_FILE
) -> JudgedRecord | None:
    """The judgement kept in the trial's finished folder when it judged these very transcript bytes with the
    same model judge (settings hash: provider, model, repeats, prompt) and the same rubric,
    linked back as `out`; else None (judge anew)."""
    from mcptrials.core.outcomes import finished_dir

    if m.specs.judge.provider not in MODEL_JUDGES:
        return None
    keep = finished_dir(out.parent) / out.name
    try:
        rec = json.loads(keep.read_text())
    except (OSError, ValueError):
        return None
    same = (
        rec.get("transcript_sha256") == transcript_sha
        and rec.get("judge", {}).get("settings_hash") == judge_settings_hash(m.specs.judge, prompt_path)
        and rec.get("scenario", {}).get("rubric_hash") == canonical_hash(scenario.rubric_part())
    )
    if not same:
        return None
    out.unlink(missing_ok=True)
    os.link(keep, out)
    return rec
