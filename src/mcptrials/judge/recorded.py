"""The recorded judge (`judge: {provider: recorded}`): quality from judgements made elsewhere.

The reference bench stores, beside each run, its own LLM judge's verdict (`judged.json`:
`judge: {model, prompt_version, rubric_path}`, `scenario_quality`, `steps: [{step, scores:
{criterion: {score, rationale}}, step_quality}]`). This judge reads that file for each trial
and writes our judged.json from it, so a recorded run's quality is a real judge's, named in
every record (`judge.model` is the bench's judge model, `judge.note` the file and its
prompt version), never our reference judge's.

- The file: `judge.path`, a pattern from the config's folder with {model} {host} {tool}
  {repo} {scenario} {trial}; absent, `judged.json` beside the trial's recorded file (the
  recorded model's `path`), as `import sense-bench --vertical` lays them out.
- Steps are matched by name (the bench's step name, our step's `answer_key` or name, compared
  as slugs); each criterion keeps the bench's score and rationale, weighted by our rubric's
  weight of that name (a criterion our rubric lacks is kept with weight 0, listed in
  `recorded.unweighted`); a step's quality is the weighted mean, as for every judge.
- No file, a file that is not a judgement, or a step it does not judge: the trial is
  `not_judged` (quality null, with the reason): missing, never a zero.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from mcptrials.core.identity import TrialKey
from mcptrials.core.record_types import JudgedRecord, JudgeSettings, TranscriptRecord
from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import canonical_hash, file_sha256
from mcptrials.matrix.matrix import Matrix

SCHEMA = "mcptrials/judged/1"


def _slug(name: object) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(name).lower()).strip("-")


def judged_file(m: Matrix, key: TrialKey) -> Path:
    """Where the trial's recorded judgement is (see the module doc)."""
    pattern = m.specs.judge.path
    if pattern:
        return m.base_dir / pattern.format(**key.cell())
    from mcptrials.run.recorded import recorded_file

    if m.models[key.model]["provider"] != "recorded":
        raise ConfigError(
            f"{m.path}: field judge.path: model {key.model} is not recorded, so its trials have no "
            "recorded file to find a judgement beside; give judge.path"
        )
    return recorded_file(m, key).parent / "judged.json"


def _not_judged(base: JudgedRecord, scenario, reason: str) -> JudgedRecord:
    steps = [
        {
            "index": i,
            "name": st["name"],
            "answered": False,
            "answer_chars": 0,
            "masked_names": 0,
            "empty": True,
            "criteria": [],
            "quality": [],
            "quality_mean": None,
            "model_calls": 0,
        }
        for i, st in enumerate(scenario.data["steps"])
    ]
    return {**base, "steps": steps, "quality": [], "quality_mean": None, "not_judged": reason}


def judge_recorded(m: Matrix, transcript: TranscriptRecord, scenario) -> JudgedRecord:
    """Our judged.json of one trial, from its recorded judgement."""
    cell = transcript["cell"]
    path = judged_file(m, TrialKey.of(cell))
    where = str(path)
    judge: JudgeSettings = {
        "provider": "recorded",
        "model": None,
        "base_url": None,
        "repeats": 1,
        "temperature": None,
        "note": None,
        "settings_hash": canonical_hash({"provider": "recorded", "path": m.specs.judge.path}),
        "prompt_file": "recorded",
        "prompt_sha256": "",
    }
    recorded: dict[str, Any] = {"path": where, "sha256": None}
    # steps, quality and quality_mean are set by each return (in this place, for the key order)
    base: JudgedRecord = {
        "schema": SCHEMA,
        "cell": cell,
        "transcript_outcome": transcript.get("outcome"),
        "judge": judge,
        "scenario": {"id": scenario.id, "rubric_hash": canonical_hash(scenario.rubric_part())},
        "masking": {"replacement": "[tool]", "names_masked": 0},
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "api_calls": 0,
            "retries": 0,
            "malformed_replies": 0,
            "cost_usd": 0.0,
        },
        "recorded": recorded,
        "steps": [],
        "quality": [],
        "quality_mean": None,
    }
    if not path.is_file():
        return _not_judged(base, scenario, f"no recorded judgement: {where} not found")
    recorded["sha256"] = judge["prompt_sha256"] = file_sha256(path)
    try:
        data = json.loads(path.read_text())
    except ValueError as e:
        return _not_judged(base, scenario, f"{where}: not JSON ({e})")
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return _not_judged(base, scenario, f"{where}: no `steps` list: not a recorded judgement")
    theirs = data.get("judge")
    j = theirs if isinstance(theirs, dict) else {}
    judge["model"] = j.get("model")
    judge["note"] = (
        f"recorded judgement {where} (judge {j.get('model') or 'unnamed'}, prompt "
        f"{j.get('prompt_version') or 'unnamed'}); no call made here"
    )
    judge["prompt_file"] = str(j.get("prompt_version") or "recorded")
    recorded.update(scenario_quality=data.get("scenario_quality"))
    by_slug = {_slug(s.get("step")): s for s in data["steps"] if isinstance(s, dict) and s.get("step")}
    steps, unweighted = [], set()
    for i, st in enumerate(scenario.data["steps"]):
        rec = by_slug.get(_slug(st.get("answer_key") or st["name"])) or by_slug.get(_slug(st["name"]))
        if rec is None or not isinstance(rec.get("scores"), dict) or not rec["scores"]:
            return _not_judged(
                base,
                scenario,
                f"{where}: no judgement of step {st['name']!r} (steps judged: {', '.join(sorted(by_slug)) or 'none'})",
            )
        rubric = st.get("rubric") or scenario.data.get("rubric") or {}
        weights = {c["name"]: c["weight"] for c in rubric.get("criteria") or []}
        crits = []
        for name, v in rec["scores"].items():
            score = (v or {}).get("score") if isinstance(v, dict) else v
            if not isinstance(score, (int, float)) or not 0 <= score <= 1:
                return _not_judged(
                    base, scenario, f"{where}: step {st['name']!r} criterion {name!r}: score {score!r} is not in [0, 1]"
                )
            if name not in weights:
                unweighted.add(name)
            crits.append(
                {
                    "name": name,
                    "weight": weights.get(name, 0.0),
                    "citations": False,
                    "scores": [float(score)],
                    "rationales": [str((v or {}).get("rationale") or "") if isinstance(v, dict) else ""],
                    "mean": float(score),
                }
            )
        if not any(c["weight"] for c in crits):
            return _not_judged(
                base,
                scenario,
                f"{where}: step {st['name']!r}: none of its criteria ({', '.join(rec['scores'])}) is in our rubric",
            )
        # the step's quality as every judge's: sum_c w_c s_c / sum_c w_c (judge.weighted_quality)
        q = sum(c["weight"] * c["mean"] for c in crits) / sum(c["weight"] for c in crits)
        steps.append(
            {
                "index": i,
                "name": st["name"],
                "answered": True,
                "answer_chars": 0,
                "masked_names": 0,
                "empty": False,
                "criteria": crits,
                "quality": [q],
                "quality_mean": q,
                "model_calls": 0,
            }
        )
    recorded["unweighted"] = sorted(unweighted)
    quality = sum(s["quality_mean"] for s in steps) / len(steps)
    return {**base, "steps": steps, "quality": [quality], "quality_mean": quality}
