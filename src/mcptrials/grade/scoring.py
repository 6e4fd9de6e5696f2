"""One trial's scored.json: every deterministic grader, with its evidence, and the pass.

A trial passes when its outcome is `completed` and, in every step, every required keyword
check hit, the exact answer matched (when required) and the state check passed (when
required). Citations, efficiency and adoption are measured, never part of the pass.

A `one_answer` transcript (one answer for every step) is graded per step on the part of
the answer grade/answer_map.py gives the step; `answer_mapping` says how it was split.
"""

from __future__ import annotations

from mcptrials.matrix.hashing import canonical_hash
from mcptrials.matrix.scenario import grading_part
from mcptrials.grade import GRADER_VERSION
from mcptrials.grade.citations import grading
from mcptrials.grade import keywords
from mcptrials.grade.answer_map import step_answers
from mcptrials.grade.exact import grade_exact
from mcptrials.grade.gittree import commit_tree
from mcptrials.grade.gold_recall import gold_recall, whole_answer
from mcptrials.grade.state import grade_state
from mcptrials.grade.usage import adoption, efficiency
from mcptrials.core.record_types import ScoredRecord, TranscriptRecord

SCHEMA = "mcptrials/scored/1"
# what reads files at the commit: without a checkout these are missing (never zero, never a
# pass); everything else (keywords, gold recall, exact answers, usage, adoption) is text only
CITATION_CHECKS = ("grounding", "verification (lenient)", "verification (strict)")


def _step(i: int, spec: dict, tstep: dict | None, tree, extensions, source: str) -> dict:
    where = f"{source}: field steps.{i}"  # a grading error names the scenario file and the field
    answer = (tstep or {}).get("answer_text") or ""
    kw = keywords.grade_keywords(spec["checks"], answer, f"{where}.checks")
    cit = (
        grading.grade_citations(answer, tree, (spec.get("citations") or {}).get("gold", []), extensions)
        if tree is not None
        else not_checked_citations()
    )
    ex = (
        grade_exact(spec["exact_answer"], answer, f"{where}.exact_answer", spec.get("prompt"))
        if spec.get("exact_answer")
        else None
    )
    st = grade_state(spec["state_check"], (tstep or {}).get("state_check")) if spec.get("state_check") else None

    failures = [
        f"step {i} ({spec['name']}): required {r['type']} check {r['value']!r} not in the answer"
        for r in kw["checks"]
        if r["required"] and not r["hit"]
    ]
    if ex and ex["required"] and not ex["passed"]:
        failures.append(f"step {i} ({spec['name']}): {exact_failure(ex)}")
    if st and st["required"] and not st["passed"]:
        failures.append(f"step {i} ({spec['name']}): state check: {st['reason']}")
    if tstep is None:
        failures.append(f"step {i} ({spec['name']}): the transcript has no such step")
    return {
        "index": i,
        "name": spec["name"],
        "present": tstep is not None,
        "outcome": (tstep or {}).get("outcome"),
        "answer_chars": len(answer),
        "keywords": kw,
        "citations": cit,
        "exact": ex,
        "state": st,
        "required_passed": not failures,
        "failures": failures,
    }


def exact_failure(ex: dict) -> str:
    """Why an exact answer failed, in words: ambiguous (the values it states), or not found
    (on the line a bare value is read from)."""
    if ex["ambiguous"]:
        return (
            f"exact answer {ex['expected']!r} ambiguous: the answer states "
            + ", ".join(repr(v) for v in ex["values"])
            + (f" ({ex['read']})" if ex["bare"] else "")
        )
    if ex["bare"]:
        return f"exact answer {ex['expected']!r} not found on the line a bare value is read from ({ex['read']})"
    return f"exact answer {ex['expected']!r} not found"


def not_checked_citations() -> dict:
    """A step's citations when the repository has no checkout: nothing found, nothing
    counted, every rate null (missing, never zero); the trial says why (citations_not_checked)."""
    counts = grading.empty_counts()
    return {"items": [], "gold": [], "counts": counts, "rates": grading.citation_rates(counts)}


def score_trial(
    transcript: TranscriptRecord,
    scenario: dict,
    repo_dir: str,
    commit: str,
    pricing: dict | None,
    extensions: list | None,
    not_checked: str | None = None,
    source: str = "scenario",
) -> ScoredRecord:
    """The scored.json record of one transcript (see src/mcptrials/schemas/scored.schema.yaml).

    pricing: the config's `pricing` table, or None to keep the transcript's own cost.
    extensions: the config's `citation_extensions`, or None for the defaults.
    not_checked: why the repository has no checkout (the repo's `unresolved`, or its checkout
    failed): citations are then not checked, `not_graded` names those checks (CITATION_CHECKS);
    everything else is graded as usual.
    source: the scenario file, named by an error in its grading part (a date or tolerance the
    exact answer cannot use).
    """
    tree = commit_tree(repo_dir, commit) if not_checked is None else None
    mapped, mapping = step_answers(transcript, scenario["steps"])  # a one_answer transcript: its parts
    by_index = {s["index"]: s for s in (mapped if mapped is not None else transcript.get("steps", []))}
    steps = [_step(i, spec, by_index.get(i), tree, extensions, source) for i, spec in enumerate(scenario["steps"])]

    failures = []
    if transcript["outcome"] != "completed":
        failures.append(f"outcome {transcript['outcome']}: only a completed trial can pass")
    for s in steps:
        failures += s["failures"]
    exacts = [s["exact"] for s in steps if s["exact"]]
    states = [s["state"] for s in steps if s["state"]]
    record: ScoredRecord = {
        "schema": SCHEMA,
        "grader_version": GRADER_VERSION,
        "cell": transcript["cell"].copy(),
        "provider": transcript.get("provider"),
        "model_id": transcript.get("model_id"),
        "outcome": transcript["outcome"],
        "outcome_detail": transcript.get("outcome_detail"),
        "repo_commit": tree.commit if tree is not None else commit,
        "citations_not_checked": not_checked,
        "grading_sha256": canonical_hash(grading_part(scenario)),
        "citation_extensions": list(extensions) if extensions else None,
        "passed": not failures,
        "failures": failures,
        "keywords": keywords.pool([s["keywords"] for s in steps]),
        "citations": grading.pool([s["citations"] for s in steps]),
        "gold_recall": gold_recall(whole_answer(transcript), scenario.get("gold")),
        "exact": {"steps": len(exacts), "passed": sum(1 for e in exacts if e["passed"])},
        "state": {"steps": len(states), "passed": sum(1 for e in states if e["passed"])},
        "steps": steps,
        "answer_mapping": mapping,
        "efficiency": efficiency(transcript, pricing),
        "adoption": adoption(transcript, scenario),
    }
    if not_checked is not None:  # only when a check could not be made (a trial graded in full has no such key)
        record["not_graded"] = {"citations": list(CITATION_CHECKS)}
    return record


def config_grading_bits(path: str, repo: str | None = None) -> tuple[dict, list | None, str | None]:
    """pricing, citation_extensions and the repo's `unresolved` reason of a config (one file,
    or several joined by os.pathsep), without checking its scenarios: a scoring job reads
    only these."""
    from mcptrials.matrix.config import read_config_files
    from mcptrials.matrix.schema import validate_against

    main, data = read_config_files(path)
    validate_against("config.schema.yaml", data, str(main))
    unresolved = (data["repos"].get(repo) or {}).get("unresolved") if repo else None
    return data["pricing"], data.get("citation_extensions"), unresolved  # pricing: the schema fills {}


def score_job(transcript_path, scenario_path, repo_dir, commit: str, config: str | None, out) -> ScoredRecord:
    """The workflow's scoring job: grade one transcript file against its scenario file at the
    pinned commit (`config`: its pricing and citation extensions, None for the defaults) and
    write scored.json to `out`. A repository with no checkout (`unresolved`, or a checkout
    that failed, mcptrials.core.failures) leaves the citations not checked."""
    import json
    from pathlib import Path

    from mcptrials.core.failures import failure
    from mcptrials.core.records import read_json, write_json
    from mcptrials.matrix.errors import ConfigError
    from mcptrials.matrix.scenario import load_scenario

    try:
        transcript = read_json(transcript_path)
    except FileNotFoundError:
        raise ConfigError(f"{transcript_path}: transcript not found; check --transcript") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{transcript_path}: not valid JSON ({e}); rerun the trial") from None
    scenario = load_scenario(Path(scenario_path))
    pricing, extensions, unresolved = (
        config_grading_bits(config, scenario.data.get("repo")) if config else (None, None, None)
    )
    if unresolved is None:
        co = Path(repo_dir).parent / "checkout.json"
        unresolved = failure(json.loads(co.read_text())) if co.is_file() else None
    record = score_trial(
        transcript,
        scenario.data,
        repo_dir,
        commit,
        pricing,
        extensions,
        not_checked=unresolved,
        source=str(scenario.path),
    )
    record["scenario_sha256"] = scenario.sha256
    write_json(out, record)
    return record
