"""The held-out anchor: a locked set of frozen transcripts, the scenarios they are judged
with, and hand-assigned gold scores, pinned by sha256 so the benchmark cannot drift from it.

Layout of `locked/` (every file committed to git; see below):

    locked/transcripts/<id>.json     frozen transcripts (copied from runs or written by hand)
    locked/scenarios/<scenario>.yaml the scenario (with its rubric) each is judged with
    locked/gold.json                 {"graded_by", "graded_at",
                                      "items": {<id>: {"scenario", "quality": 0..1, "notes"}}}
    locked/held-out.lock             JSON {"files": {relative path: sha256},
                                           "history": [{"who", "when", "reason"}]}
    locked/citation_labels.json      the reader's citation labels (`mcptrials label`), pinned by
    locked/citation_labels.lock      their own lockfile of the same shape (analyze.citation_labels)

`verify_lock` fails on any missing, modified or unlisted file; `lock` re-anchors on purpose
and appends who, when and why to the history; `heldout_agreement` re-judges every frozen
transcript with the current judge and prompt and reports Spearman's rho against gold.

Only committed files may be locked: the check must pass on a fresh clone, so `locked/` must
not hold git-ignored files (editor backups, caches). `lock` refuses to pin a git-ignored file.
"""

from __future__ import annotations

import getpass
import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from mcptrials.matrix.errors import ConfigError
from mcptrials.matrix.hashing import file_sha256

LOCKFILE = "held-out.lock"
GOLD = "gold.json"
# The reader's citation labels and their own lockfile (analyze.citation_labels): pinned the same
# way, but apart, so that labelling re-runs the aggregate and the report, never the judge's anchor.
LABEL_FILES = ("citation_labels.json", "citation_labels.lock")
HELDOUT_SCHEMA = "mcptrials/heldout/2"
REANCHOR = 'mcptrials lock --reason "why the held-out set changed"'
REPIN = 'mcptrials label --repin --reason "why the labels changed"'


class LockError(Exception):
    """The held-out set does not match its lockfile."""


# --- the lockfile ---------------------------------------------------------------


def locked_files(locked_dir) -> dict[str, Path]:
    """Every file under locked_dir except the lockfile and the citation labels (pinned by their
    own lockfile), by POSIX path relative to it."""
    root = Path(locked_dir)
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and rel != LOCKFILE and rel not in LABEL_FILES:
            out[rel] = p
    return out


def read_lockfile(locked_dir) -> dict:
    return read_lock_json(Path(locked_dir) / LOCKFILE)


def read_lock_json(path: Path) -> dict:
    """A lockfile ({"files": {path: sha256}, "history": [...]}), read and checked."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise LockError(f"{path}: no lockfile; create it on purpose with `{REANCHOR}`") from None
    except json.JSONDecodeError as e:
        raise LockError(f"{path}: not valid JSON ({e}); restore it from git or re-anchor with `{REANCHOR}`") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        raise LockError(
            f'{path}: field files: missing; the lockfile is {{"files": {{path: sha256}}, "history": [...]}}; re-anchor with `{REANCHOR}`'
        )
    return data


def verify_lock(locked_dir) -> list[dict]:
    """Compare the files under locked_dir with the lockfile. Returns one problem per file:
    {"kind": missing|modified|unlisted|lockfile|labels, "path", "expected", "actual", "message"}
    (labels: the citation labels drifted from their own lockfile, verify_labels);
    an empty list means the set is intact."""
    root = Path(locked_dir)
    try:
        expected = read_lockfile(root)["files"]
    except LockError as e:
        return [{"kind": "lockfile", "path": str(root / LOCKFILE), "expected": None, "actual": None, "message": str(e)}]
    actual = {rel: file_sha256(p) for rel, p in locked_files(root).items()}
    problems = []
    for rel in sorted(set(expected) | set(actual)):
        exp, act = expected.get(rel), actual.get(rel)
        if exp == act:
            continue
        kind = "missing" if act is None else "unlisted" if exp is None else "modified"
        problems.append(
            {
                "kind": kind,
                "path": str(root / rel),
                "expected": exp,
                "actual": act,
                "message": f"{root / rel}: {kind}: expected sha256 {exp or '(not in the lockfile)'}, "
                f"actual {act or '(no such file)'}",
            }
        )
    labels = verify_labels(root)  # the reader's citation labels, against their own lockfile
    if labels:
        problems.append(
            {"kind": "labels", "path": str(root / LABEL_FILES[0]), "expected": None, "actual": None, "message": labels}
        )
    return problems


def verify_labels(locked_dir) -> str | None:
    """None when the labels file matches its lockfile (or neither exists), else why not."""
    root = Path(locked_dir)
    labels, lock = root / LABEL_FILES[0], root / LABEL_FILES[1]
    if not labels.exists() and not lock.exists():
        return None
    if not lock.exists():
        return f"{labels}: not pinned (no {LABEL_FILES[1]}); re-pin on purpose with `{REPIN}`"
    try:
        expected = read_lock_json(lock)["files"].get(LABEL_FILES[0])
    except LockError as e:
        return str(e)
    actual = file_sha256(labels) if labels.exists() else None
    if expected != actual:
        return (
            f"{labels}: modified outside `mcptrials label`: expected sha256 {expected}, actual {actual}; "
            f"restore it from git, or re-pin on purpose with `{REPIN}`"
        )
    return None


def who_am_i() -> str:
    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return name or os.environ.get("USER") or getpass.getuser()


def git_ignored(paths: list[Path]) -> list[Path]:
    """Which of the paths git ignores (empty when git or a repository is absent)."""
    if not paths:
        return []
    try:
        res = subprocess.run(
            ["git", "check-ignore", "--stdin"],
            input="\n".join(str(p.resolve()) for p in paths),
            capture_output=True,
            text=True,
            cwd=paths[0].parent,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if res.returncode not in (0, 1):  # 128: not a git repository
        return []
    ignored = {line.strip() for line in res.stdout.splitlines() if line.strip()}
    return [p for p in paths if str(p.resolve()) in ignored]


def git_untracked(locked_dir) -> list[str]:
    """Files under locked_dir that git neither tracks nor ignores (they still need `git add`)."""
    try:
        res = subprocess.run(
            ["git", "ls-files", "--others", "--exclude-standard", "--", "."],
            capture_output=True,
            text=True,
            cwd=locked_dir,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return sorted(line for line in res.stdout.splitlines() if line) if res.returncode == 0 else []


def write_lock(locked_dir, reason: str, who: str | None = None) -> dict:
    """Re-anchor: pin every file under locked_dir (except the lockfile) by sha256 and append
    {who, when (UTC ISO 8601), reason} to the history. Checks the set first (gold items,
    transcripts and scenarios match up) and refuses git-ignored files."""
    root = Path(locked_dir)
    if not reason or not reason.strip():
        raise ConfigError("lock: --reason is required: say why the held-out set changed")
    if not root.is_dir():
        raise ConfigError(
            f"{root}: no such folder; create the held-out set (transcripts/, scenarios/, gold.json) first"
        )
    files = locked_files(root)
    ignored = git_ignored(list(files.values()))
    if ignored:
        raise ConfigError(
            f"{root}: git ignores {', '.join(str(p) for p in ignored)}; only committed files can be "
            "locked (a fresh clone would lack them): remove them or un-ignore them"
        )
    load_heldout(root)  # a broken set is not anchored
    history = []
    if (root / LOCKFILE).exists():
        try:
            history = list(read_lockfile(root).get("history") or [])
        except LockError:
            history = []  # a corrupt lockfile is replaced; the new entry records why
    history.append(
        {
            "who": who or who_am_i(),
            "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "reason": reason.strip(),
        }
    )
    data = {"files": {rel: file_sha256(p) for rel, p in files.items()}, "history": history}
    from mcptrials.core.records import write_json

    write_json(root / LOCKFILE, data)
    return data


# --- the held-out set -------------------------------------------------------------


def load_heldout(locked_dir) -> list[dict]:
    """The held-out items: [{"id", "scenario", "gold", "notes", "transcript": path, "scenario_path": path}],
    sorted by id. Every gold item needs its transcript and scenario file, and every transcript a gold item."""
    from mcptrials.core.records import read_json

    root = Path(locked_dir)
    gold_path = root / GOLD
    try:
        gold = read_json(gold_path)
    except FileNotFoundError:
        raise ConfigError(
            f"{gold_path}: not found; write the hand-assigned scores there "
            '({"graded_by", "graded_at", "items": {<id>: {"scenario", "quality", "notes"}}})'
        ) from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"{gold_path}: not valid JSON ({e}); fix it") from None
    items = gold.get("items") if isinstance(gold, dict) else None
    if not isinstance(items, dict):
        raise ConfigError(f"{gold_path}: field items: missing; give {{<transcript id>: {{scenario, quality, notes}}}}")
    out = []
    for tid, item in sorted(items.items()):
        where = f"{gold_path}: field items.{tid}"
        if not isinstance(item, dict) or not isinstance(item.get("scenario"), str):
            raise ConfigError(
                f"{where}.scenario: missing; name the scenario file in {root / 'scenarios'} (without .yaml)"
            )
        q = item.get("quality")
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 <= q <= 1:
            raise ConfigError(
                f"{where}.quality: {q!r} is not a number from 0 to 1; give the hand-assigned scenario quality"
            )
        t_path = root / "transcripts" / f"{tid}.json"
        s_path = root / "scenarios" / f"{item['scenario']}.yaml"
        if not t_path.is_file():
            raise ConfigError(f"{where}: no transcript {t_path}; copy it there or drop the item")
        if not s_path.is_file():
            raise ConfigError(f"{where}.scenario: no scenario file {s_path}; copy the scenario there")
        out.append(
            {
                "id": tid,
                "scenario": item["scenario"],
                "gold": float(q),
                "notes": item.get("notes"),
                "transcript": t_path,
                "scenario_path": s_path,
            }
        )
    graded = {i["id"] for i in out}
    stray = sorted(p.stem for p in (root / "transcripts").glob("*.json") if p.stem not in graded)
    if stray:
        raise ConfigError(
            f"{gold_path}: field items: no gold score for transcript(s) {stray}; grade them or remove them"
        )
    return out


def anchor_problem(m) -> str | None:
    """Why the config has no held-out anchor (None when it has one): no `locked:` folder,
    no frozen item in it, or held-out scenarios of which none has a frozen transcript there
    (another config's anchor says nothing about this one)."""
    if m.locked_dir is None:
        return f"{m.path.name} names no `locked:` folder"
    where = os.path.relpath(m.locked_dir, os.getcwd())
    if not (m.locked_dir / GOLD).is_file():
        return f"{where} holds no {GOLD}"
    frozen = {it["scenario"] for it in load_heldout(m.locked_dir)}
    held = {s.id for s in m.scenarios.values() if s.split == "held-out"}
    if held and not (held & frozen):
        return f"{where} holds no frozen transcript of this config's held-out scenarios ({', '.join(sorted(held))})"
    return None


def heldout_agreement(
    locked_dir,
    judge_cfg: dict,
    prompt_path=None,
    tool_names=(),
    pricing=None,
    current_scenarios: dict | None = None,
    anchor: str | None = None,
) -> dict:
    """Re-judge every frozen transcript with the current rubric, judge and prompt, then
    Spearman's rho of judged quality (mean over repeats) vs gold, with a bootstrap interval
    and n (mcptrials.stats.agreement.spearman_with_ci). Verifies the lock first.

    The current rubric is that of the config's scenario of the same id (`current_scenarios`,
    id -> Scenario) when there is one, else the frozen copy in locked/scenarios/: the
    rubric is what gets tuned, and this is the check that tuning it still agrees with the
    hand grades. The verdict against `judge.threshold` is the report's: changing the
    threshold never re-judges anything."""
    import asyncio

    from mcptrials.matrix.scenario import load_scenario
    from mcptrials.judge.judging import PROMPT_FILE, ajudge_trial, judge_settings_hash
    from mcptrials.core.records import read_json
    from mcptrials.stats.agreement import spearman_with_ci

    root = Path(locked_dir)
    prompt_path = prompt_path or PROMPT_FILE
    problems = verify_lock(root)
    if problems:
        raise LockError(format_problems(problems))
    items = load_heldout(root)

    current_scenarios = current_scenarios or {}

    def scenario_for(it):
        return current_scenarios.get(it["scenario"]) or load_scenario(it["scenario_path"])

    async def judge_all():
        return [
            await ajudge_trial(
                read_json(it["transcript"]), scenario_for(it), judge_cfg, prompt_path, tool_names, pricing
            )
            for it in items
        ]

    records = asyncio.run(judge_all())
    judged = [r["quality_mean"] for r in records]
    gold = [it["gold"] for it in items]
    corr = spearman_with_ci(judged, gold)
    cost = [r["usage"]["cost_usd"] for r in records]
    return {
        "schema": HELDOUT_SCHEMA,
        "anchor": anchor if anchor is not None else str(locked_dir),
        "judge": {k: records[0]["judge"][k] for k in ("provider", "model", "repeats", "prompt_sha256")}
        if records
        else None,
        "judge_settings_hash": judge_settings_hash(judge_cfg, prompt_path),
        "lockfile_sha256": file_sha256(root / LOCKFILE),
        "n": corr["n"],
        "rho": corr["rho"],
        "lo": corr["lo"],
        "hi": corr["hi"],
        "p": corr["p"],
        "method": corr["method"],
        "items": [
            {
                "id": it["id"],
                "scenario": it["scenario"],
                "gold": it["gold"],
                "judged": r["quality_mean"],
                "judged_repeats": r["quality"],
                "rubric_hash": r["scenario"]["rubric_hash"],
                "rubric": "current" if it["scenario"] in current_scenarios else "frozen",
            }
            for it, r in zip(items, records)
        ],
        "usage": {
            "api_calls": sum(r["usage"]["api_calls"] for r in records),
            "cost_usd": None if any(c is None for c in cost) else sum(cost),
        },
    }


def no_anchor(reason: str) -> dict:
    """agreement.json of a run without a held-out anchor: the report says so, and why."""
    return {
        "schema": HELDOUT_SCHEMA,
        "anchor": None,
        "reason": f"no held-out anchor for this run: {reason}",
        "n": 0,
        "rho": None,
    }


def format_problems(problems: list[dict]) -> str:
    lines = ["the held-out set does not match its lockfile:"] + [f"  {p['message']}" for p in problems]
    lines.append(
        f"If the change is deliberate, re-anchor with `{REANCHOR}` and commit locked/; "
        "otherwise restore the files from git (git checkout -- locked/)."
    )
    return "\n".join(lines)


# --- the workflow's lock and held-out jobs ---------------------------------------------


def record_verified(locked_dir, out) -> list[dict]:
    """Check the held-out set against its lockfile; when it matches, write the record of what
    was verified to `out` (the report reads it). The problems found, [] when none: a failing
    check removes a stale `out`, so a pass never outlives it."""
    from mcptrials.core.records import write_json

    problems = verify_lock(locked_dir)
    out = Path(out)
    if problems:
        if out.exists():
            out.unlink()  # a stale pass must not outlive a failing check
        return problems
    data = read_lockfile(locked_dir)
    write_json(
        out,
        {
            "locked": str(locked_dir),
            "lockfile_sha256": file_sha256(Path(locked_dir) / LOCKFILE),
            "files": data["files"],
            "problems": [],
        },
    )
    return []


def heldout_job(m, out, locked=None, prompt_path=None) -> dict:
    """The agreement of the config's own anchor (`locked:`, or `locked` given), written to
    `out`, or a record saying there is none (`no_anchor`). The verdict against
    judge.threshold (and judge.strict) is the report's. Raises LockError when the held-out
    set does not match its lockfile."""
    from mcptrials.core.records import write_json

    if locked:
        m.config["locked"] = str(Path(locked).resolve())
    problem = anchor_problem(m)
    if problem:
        result = no_anchor(problem)
    else:
        result = heldout_agreement(
            m.locked_dir,
            m.specs.judge,
            prompt_path,
            tool_names=list(m.tools),
            pricing=m.config.get("pricing"),
            current_scenarios=m.scenarios,
            anchor=os.path.relpath(m.locked_dir, os.getcwd()),
        )
    write_json(out, result)
    return result
