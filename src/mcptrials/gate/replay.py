"""`mcptrials replay BASE_RESULTS`: the regression gate that needs no model and no key.

Run in the HEAD project. For every trial that BASE recorded (of `--tool T`, else of every
server tool), a fresh workspace at the same pinned commit and HEAD's server for that tool as
HEAD's config declares it (its install, index, sandbox, args); then every `tools/call` the trial
recorded is sent again, in order, with the same arguments. No model is called.

A call's arguments name BASE's trial folder where the agent gave absolute paths (e.g. the
filesystem server's `path`): that folder (`.../mcptrials-trial-XXXXXXXX`, see
trial.Sandbox.create) is replaced by the replay's own. Calls that change state are replayed in
their recorded order in the trial's own workspace, so a data-changing server replays too.
Trials whose calls are the same sequence (the reference agent repeats itself exactly) are
replayed once, and the result stands for each of them.

Each call is classified against what BASE recorded (CLASSES), after `normalise` on both sides:
identical; now empty (BASE had content, HEAD has none or says it found nothing: `is_empty`);
changed; now an error (isError, a protocol error, a time-out, the server gone) where BASE had a
result (or HEAD's result says it is an error, `says_error`, where BASE's did not: many servers
report failures as text); tool gone (not in HEAD's tools/list); did not start (HEAD's server
did not come up).
A call that failed in BASE too is identical or changed by its text. Exit 1 on a failing class
(FAILING, plus changed with --strict) of a call that succeeded in BASE, 2 when it cannot
replay (another repository commit, a BASE without recorded calls, a tool BASE never ran or
HEAD's config does not have), else 0.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from mcptrials import __version__
from mcptrials.matrix.config import load_matrix
from mcptrials.analyze.result_limits import host_limits
from mcptrials.gate.surface import surface_findings
from mcptrials.matrix.errors import ConfigError

IDENTICAL, NOW_EMPTY, CHANGED = "identical", "now empty", "changed"
NOW_ERROR, TOOL_GONE, NOT_STARTED = "now an error", "tool gone", "did not start"
CLASSES = (IDENTICAL, CHANGED, NOW_EMPTY, NOW_ERROR, TOOL_GONE, NOT_STARTED)
FAILING = (NOW_ERROR, NOW_EMPTY, TOOL_GONE, NOT_STARTED)
SLOWEST = 5  # calls listed per tool by HEAD's latency
# A call is slow (listed as such) only when HEAD took longer than BASE by more than both:
# a faster call, or a few ms of noise on a busy machine, is not.
SLOWER_RATIO, SLOWER_MS = 1.5, 20.0
DIFF_LINES = 12  # lines of a changed result's diff shown
MARKDOWN_LIMIT = 60000

# The trial folder of trial.Sandbox.create (tempfile.mkdtemp's 8 random characters)
TRIAL_ROOT = re.compile(r"/(?:[^\s\"'/]+/)*mcptrials-trial-[a-z0-9_]{8}")
# ISO 8601 date-times, with or without seconds, fraction and zone
TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?")
# what a server says when it found nothing, the whole (short) result
NOTHING_FOUND = re.compile(
    r"^\s*(?:no (?:results?|matches|match|files?|entries|items|symbols?|references?|"
    r"definitions?|occurrences?)(?: were)?(?: found)?|nothing (?:was )?found|not found|"
    r"0 (?:results?|matches)(?: found)?)\b[^\n]{0,80}$",
    re.I,
)


# a result that says it is an error without setting isError (mcp-server-sqlite answers
# "Database error: no such table: ..." as a plain result): its first line
SAYS_ERROR = re.compile(r"^\s*(?:(?:error|exception|traceback)\b|[\w.-]+ (?:error|exception)\s*:)", re.I)


def says_error(text: str) -> bool:
    """The result's first line starts with "Error", "Exception" or "Traceback", or with
    "<Word> error:" / "<Word> exception:": a failure reported as text (many servers never set
    isError). "No error here" and a path such as errors.py are not."""
    return bool(SAYS_ERROR.match((text or "").lstrip().split("\n", 1)[0]))


class CannotReplay(Exception):
    """BASE cannot be replayed here; `reasons` says why, each with the fix."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


# --- what legitimately varies ------------------------------------------------------------


def normalise(text: str, roots: tuple[str, ...] = ()) -> str:
    """A result as compared: text that is JSON is re-serialised with sorted keys (key order and
    layout vary); then the trial folders (`roots`, and any .../mcptrials-trial-XXXXXXXX) become
    `{trial}`, and ISO 8601 date-times become `{time}`. Nothing else is forgiven."""
    try:
        text = json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except (ValueError, TypeError):
        pass
    for root in roots:
        if root:
            text = text.replace(root, "{trial}")
    text = TRIAL_ROOT.sub("{trial}", text)
    return TIMESTAMP.sub("{time}", text)


def _json_empty(value) -> bool:
    if value in (None, "", [], {}):
        return True
    if isinstance(value, dict):
        lists = [v for v in value.values() if isinstance(v, list)]
        if lists:  # {"results": [], "pagination": {...}}: every list it holds is empty
            return all(not v for v in lists)
        inner = [v for v in value.values() if isinstance(v, dict)]
        return len(value) == 1 and len(inner) == 1 and _json_empty(inner[0])
    return False


def is_empty(text: str) -> bool:
    """A result that found nothing: blank; JSON that is null, empty, or an object whose lists are
    all empty; or a short text that says so ("No matches found", "0 results", ...)."""
    t = (text or "").strip()
    if not t:
        return True
    try:
        return _json_empty(json.loads(t))
    except ValueError:
        return bool(NOTHING_FOUND.match(t))


def base_root(transcript: dict) -> str | None:
    """BASE's trial folder, as its calls' arguments and results name it (None when none does)."""
    for c in transcript.get("tool_calls", []):
        m = TRIAL_ROOT.search(json.dumps(c.get("arguments")) + (c.get("result_text") or ""))
        if m:
            return m.group(0)
    return None


def rebase(value, old: str | None, new: str):
    """The arguments with BASE's trial folder replaced by the replay's, in every string."""
    if old is None:
        return value
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, list):
        return [rebase(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: rebase(v, old, new) for k, v in value.items()}
    return value


def classify(base_call: dict, head: dict, roots: tuple[str, ...]) -> str:
    """The class of one replayed call. head: {error (str or None), is_error, text}."""
    base_ok = not base_call.get("is_error")
    if head.get("class") in (TOOL_GONE, NOT_STARTED):
        return head["class"]
    b, h = normalise(base_call.get("result_text") or "", roots), normalise(head.get("text") or "", roots)
    head_failed = bool(head.get("error")) or bool(head.get("is_error"))
    if base_ok and (
        head_failed or (says_error(head.get("text") or "") and not says_error(base_call.get("result_text") or ""))
    ):
        return NOW_ERROR
    if b == h and base_ok == (not head_failed):
        return IDENTICAL
    if base_ok and is_empty(head.get("text") or "") and not is_empty(base_call.get("result_text") or ""):
        return NOW_EMPTY
    return CHANGED


# --- BASE's recorded trials --------------------------------------------------------------


def load_base_trials(folder) -> list[dict]:
    """Every trial of BASE_RESULTS/runs with its transcript and run_meta (attempts/ left out)."""
    root = Path(folder) / "runs"
    out = []
    for t in sorted(root.glob("**/transcript.json")):
        if "attempts" in t.relative_to(root).parts:
            continue
        meta_path = t.parent / "run_meta.json"
        try:
            transcript = json.loads(t.read_text())
            meta = json.loads(meta_path.read_text()) if meta_path.is_file() else {}
        except json.JSONDecodeError as e:
            raise ConfigError(f"{t}: not valid JSON ({e}); restore BASE's stored results") from None
        out.append(
            {
                "path": str(t.parent.relative_to(root)),
                "transcript": transcript,
                "meta": meta,
                "cell": transcript["cell"],
            }
        )
    return out


def base_config_hint(base_folder, m) -> str | None:
    """When HEAD's config was not given: the config file(s) BASE was run with, as BASE's
    aggregate/summary.json records them (identity.config_files, from the project's folder),
    and how to pass them; None when it records none or they are the config in use."""
    summary = Path(base_folder) / "aggregate" / "summary.json"
    try:
        ident = json.loads(summary.read_text())["identity"]
        files = ident.get("config_files") or ([ident["config"]] if ident.get("config") else [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not files or [str(Path(f).resolve()) for f in files] == list(m.sources):
        return None
    joined = os.pathsep.join(files)
    said = f"BASE was run with {joined} (identity.config_files of {summary}), not {m.path}"
    missing = [f for f in files if not Path(f).is_file()]
    if missing:
        return f"{said}; {', '.join(missing)} is not found from here: pass --config with HEAD's copy of it"
    return f"{said}: pass --config {joined}"


def select(trials: list[dict], m, tools: list[str] | None, hint: str | None = None) -> dict[str, list[dict]]:
    """tool -> its BASE trials to replay; raises CannotReplay, every reason with its fix.
    `hint` (base_config_hint): the config BASE was run with, when HEAD's was not given."""
    if not trials:
        raise CannotReplay(
            [
                "BASE holds no recorded trials (runs/**/transcript.json): store results/runs with "
                "results/aggregate and results/snapshots when you keep BASE's results"
            ]
        )
    ran = {t["cell"]["tool"] for t in trials}
    reasons = []
    if tools:
        reasons += [
            f"--tool {t}: BASE never ran it (it ran {', '.join(sorted(ran))}); a new or renamed tool cannot "
            "be replayed: store BASE's results with it first"
            for t in tools
            if t not in ran
        ]
        wanted = [t for t in tools if t in ran]
    else:
        wanted = sorted(
            t
            for t in ran
            if any(
                c.get("source") == "mcp"
                for x in trials
                if x["cell"]["tool"] == t
                for c in x["transcript"].get("tool_calls", [])
            )
        )
    picked = {}
    for tool in wanted:
        if tool not in m.tools:
            reasons.append(
                f"{m.path}: field tools: HEAD's config has no tool {tool!r}, which BASE ran; "
                + (
                    f"{hint} (or add the tool back, or replay other tools with --tool)"
                    if hint
                    else "add it back or replay other tools with --tool"
                )
            )
            continue
        if not m.specs.tools[tool].has_server:
            reasons.append(f"--tool {tool}: it has no server to replay (transport none)")
            continue
        mine = [t for t in trials if t["cell"]["tool"] == tool]
        for t in mine:
            repo, commit = t["cell"]["repo"], t["meta"].get("commit")
            if repo not in m.repos:
                reasons.append(
                    f"{m.path}: field repos: HEAD's config has no repo {repo!r}, which BASE's trial "
                    f"{t['path']} ran on" + (f"; {hint}" if hint else "")
                )
            elif commit and commit != m.repos[repo]["commit"]:
                reasons.append(
                    f"repo {repo}: BASE ran at {commit[:12]}, HEAD's config pins "
                    f"{m.repos[repo]['commit'][:12]}: replay needs the same commit (pin it, or refresh BASE)"
                    + (f"; {hint}" if hint else "")
                )
        if not any(c.get("source") == "mcp" for t in mine for c in t["transcript"].get("tool_calls", [])):
            reasons.append(
                f"BASE's trials of {tool} recorded no call of its server: nothing to replay (run BASE with "
                "scenarios that use it)"
            )
        picked[tool] = mine
    if not wanted and not reasons:
        reasons.append("BASE's trials recorded no call of any server: nothing to replay")
    if reasons:
        raise CannotReplay(list(dict.fromkeys(reasons)))
    return picked


# --- HEAD's side: checkout, install, index as the workflow would ------------------------------


def prepare(m, tool: str, repos: set[str], results: Path) -> dict:
    """HEAD's checkout of each repo, install and index of the tool, made by the stages' own
    functions when missing or out of date. Returns {repo: (checkout record, index dir or None)}."""
    from mcptrials.prepare.checkout import checkout
    from mcptrials.prepare.index import build_index
    from mcptrials.prepare.install import drop_keys, install_tool
    from mcptrials.core.records import read_json, write_json

    env = m.specs.tools[tool].env_name  # a description variant runs its base's install
    spec = m.tools[env]
    inst = results / "tools" / env / "install.json"
    wanted = [*(spec.get("install") or {}).get("pip", []), *(spec.get("install") or {}).get("npm", [])]
    if wanted and (not inst.is_file() or read_json(inst).get("requested") != wanted):
        print(f"replay: installing {env} as HEAD's config declares it", file=sys.stderr)
        drop_keys(m)
        write_json(inst, install_tool(env, spec, sys.stderr))
    out = {}
    for repo in sorted(repos):
        co = results / "checkouts" / repo / "checkout.json"
        if not co.is_file() or read_json(co).get("commit") != m.repos[repo]["commit"]:
            r = m.repos[repo]
            write_json(co, checkout(repo, m.repo_source(repo), r["url"], r["commit"], co.parent))
        index_dir = None
        if spec.get("index"):
            index_dir = results / "index" / env / repo
            if not (index_dir / "index.json").is_file():
                build_index(
                    env,
                    spec,
                    read_json(co)["tree"],
                    index_dir,
                    m.specs.key_env_names(),
                    sys.stderr,
                    tool_spec=m.specs.tools[tool],
                )
            else:
                stale_index(m, env, repo, read_json(index_dir / "index.json"), index_dir)
        out[repo] = (read_json(co), index_dir)
    return out


def stale_index(m, tool: str, repo: str, rec: dict, index_dir: Path) -> None:
    """Refuse (CannotReplay) HEAD's index when it was built from other contents of the tool's
    project files than those its server now starts from (index.json's `project_files`, as the
    tools snapshot records them; an index built before they were recorded is not checked)."""
    from mcptrials.gate.comparable import files_changed
    from mcptrials.prepare.servers import project_files

    if rec.get("project_files") is None:
        return
    if diff := files_changed(rec["project_files"], project_files(m.specs.tools[tool])):
        raise CannotReplay(
            [
                f"{index_dir / 'index.json'} was made with other contents of the project files of "
                f"tools.{tool} ({diff}), so HEAD's server would start on an index of another version: "
                "rerun snakemake (it rebuilds the index of an edited server, then its snapshot), or "
                f"remove {index_dir} and replay builds it again"
            ]
        )


# --- one replay -----------------------------------------------------------------------------


def _mcp_calls(transcript: dict) -> list[dict]:
    return [c for c in transcript.get("tool_calls", []) if c.get("source") == "mcp"]


def sequence_key(trial: dict) -> str:
    """Trials with the same key send the same calls to the same server at the same commit."""
    root = base_root(trial["transcript"])
    calls = [
        (c["tool"], normalise(json.dumps(c.get("arguments"), sort_keys=True), (root,) if root else ()))
        for c in _mcp_calls(trial["transcript"])
    ]
    return json.dumps([trial["cell"]["tool"], trial["cell"]["repo"], calls])


async def replay_trial(m, tool: str, trial: dict, checkout: dict, index_dir, errlog: Path) -> dict:
    """Start HEAD's server in a fresh workspace and send BASE's calls of one trial again.
    Returns {startup_seconds, server_version, error, calls: [{..., class}]}."""
    from mcp import MCPError

    from mcptrials.run.hosts.loop import result_text
    from mcptrials.prepare.servers import leaf_error, open_server, stderr_tail
    from mcptrials.prepare.tree_state import changed, fingerprint
    from mcptrials.run.trial import Sandbox, cap_text

    spec = m.specs.tools[tool]
    calls = _mcp_calls(trial["transcript"])
    old = base_root(trial["transcript"])
    cap = (trial["meta"].get("limits") or {}).get("max_result_tokens") or m.specs.limits.max_result_tokens
    sandbox = Sandbox.create(checkout["tree"], index_dir)
    roots = tuple(x for x in (old, str(sandbox.root)) if x)
    out: dict[str, Any] = {"calls": [], "error": None, "startup_seconds": None, "server_version": None}
    out["limits"] = host_limits(cap)  # each host's limit on one result, against HEAD's (gate.surface)

    def record(c, cls, text="", latency=None, detail=None, **extra):
        out["calls"].append(
            extra
            | {
                "step": c.get("step"),
                "tool": c["tool"],
                "arguments": c.get("arguments"),
                "base_ok": not c.get("is_error"),
                "class": cls,
                "base_latency_ms": c.get("latency_ms"),
                "head_latency_ms": latency,
                "base_text": c.get("result_text") or "",
                "head_text": text,
                "detail": detail,
            }
        )

    try:
        try:
            async with open_server(spec, sandbox.values(), errlog, m.specs.key_env_names()) as s:
                out["startup_seconds"], out["server_version"] = round(s.startup_seconds, 3), s.server_version
                out["tools"] = await s.list_tools()  # HEAD's surface (gate.surface)
                live = {t["name"] for t in out["tools"]}
                gone = None
                for c in calls:
                    if c["tool"] not in live:
                        record(c, TOOL_GONE, detail=f"{c['tool']} is not in HEAD's tools/list")
                        continue
                    if gone:
                        record(c, NOW_ERROR, detail=gone)
                        continue
                    ro = fingerprint(sandbox.workspace) if c["tool"] in s.read_only else None  # readOnlyHint
                    t0 = time.monotonic()
                    head: dict[str, Any] = {"error": None, "is_error": False, "text": ""}
                    try:
                        r = await s.client.call_tool(
                            c["tool"], rebase(c.get("arguments") or {}, old, str(sandbox.root))
                        )
                        text, cut = cap_text(whole := result_text(r), cap)
                        head.update(text=text, is_error=bool(r.is_error), over_cap=cut, chars=len(whole))
                    except MCPError as e:
                        head.update(error=f"MCP error: {e}", text=f"MCP error: {e}")
                        if "closed" in str(e).lower():  # the server is gone for the rest of the trial
                            gone = f"the server exited at an earlier call ({c['tool']}): {e}"
                    except Exception as e:  # noqa: BLE001 - a broken result is HEAD's error, recorded
                        head.update(error=f"{type(e).__name__}: {e}", text=f"{type(e).__name__}: {e}")
                    latency = round((time.monotonic() - t0) * 1000, 2)
                    cls = classify(c, head, roots)
                    over = {"head_over_cap": head.get("over_cap", False), "head_chars": head.get("chars")}
                    over["head_wrote"] = changed(ro, fingerprint(sandbox.workspace)) if ro is not None else []
                    record(c, cls, head["text"], latency, head["error"], **over)
        except Exception as e:  # noqa: BLE001 - the server did not start (or died at start)
            leaf = leaf_error(e)
            if not out["calls"]:
                out["error"] = f"{type(leaf).__name__}: {leaf}; stderr: {stderr_tail(errlog, 5)}"
                for c in calls:
                    record(c, NOT_STARTED, detail=out["error"])
            else:  # it went away while shutting down: the calls stand, the fault is noted
                out["shutdown_error"] = f"{type(leaf).__name__}: {leaf}"
    finally:
        sandbox.remove()
    for c in out["calls"]:  # what is shown of a difference: the trial folder as {trial}
        c["arguments"] = json.loads(normalise(json.dumps(c["arguments"]), roots))
    out["roots"] = roots
    return out


async def replay_all(m, picked: dict, prepared: dict, logs: Path, jobs: int) -> dict:
    """tool -> [(trials, replay)] with one replay per distinct call sequence, `jobs` at a time.
    Trials with no server call at all need no replay of their own when another sequence of the
    same tool and repo starts the server: they share its start (and its did-not-start)."""
    sem = asyncio.Semaphore(max(1, jobs))
    work, idle = [], []
    for tool, trials in picked.items():
        seqs: dict[str, list[dict]] = {}
        for t in trials:
            seqs.setdefault(sequence_key(t), []).append(t)
        busy_repos = {g[0]["cell"]["repo"] for g in seqs.values() if _mcp_calls(g[0]["transcript"])}
        for i, group in enumerate(seqs.values()):
            if not _mcp_calls(group[0]["transcript"]) and group[0]["cell"]["repo"] in busy_repos:
                idle.append((tool, group))
            else:
                work.append((tool, group, logs / tool / f"{i}.stderr.log"))

    async def one(tool, group, errlog):
        errlog.parent.mkdir(parents=True, exist_ok=True)
        errlog.unlink(missing_ok=True)
        co, index_dir = prepared[tool][group[0]["cell"]["repo"]]
        async with sem:
            return tool, group, await replay_trial(m, tool, group[0], co, index_dir, errlog)

    done = await asyncio.gather(*(one(*w) for w in work))
    out: dict = {t: [] for t in picked}
    for tool, group, rep in done:
        out[tool].append((group, rep))
    for tool, group in idle:
        sibling = next(rep for g, rep in out[tool] if g[0]["cell"]["repo"] == group[0]["cell"]["repo"])
        out[tool].append((group, dict(sibling, calls=[], shared_start=True)))
    return out


# --- the result -----------------------------------------------------------------------------


def short_diff(base: str, head: str, roots: tuple[str, ...]) -> str:
    b, h = normalise(base, roots), normalise(head, roots)
    if b.startswith(("{", "[")) and h.startswith(("{", "[")):  # JSON: one key per line, so the diff says where
        try:
            b, h = (json.dumps(json.loads(x), indent=1, sort_keys=True) for x in (b, h))
        except ValueError:
            pass
    lines = list(difflib.unified_diff(b.splitlines(), h.splitlines(), "BASE", "HEAD", lineterm="", n=1))[2:]
    return "\n".join(x[:200] for x in lines[:DIFF_LINES]) + ("\n…" if len(lines) > DIFF_LINES else "")


def is_slower(base_ms, head_ms) -> bool:
    """HEAD took longer than BASE beyond the threshold: more than SLOWER_RATIO times BASE's
    latency and more than SLOWER_MS ms more (unknown when BASE recorded none: not slower)."""
    if base_ms is None or head_ms is None:
        return False
    return head_ms > base_ms * SLOWER_RATIO and head_ms - base_ms > SLOWER_MS


def summarise(replays: dict, strict: bool) -> dict:
    """Per tool: counts per class (over every BASE trial's calls), the slowest calls (by HEAD's
    latency), the calls slower than in BASE beyond the threshold (`is_slower`, most slowed
    first), every non-identical call (with the trials it stands for), and whether the tool fails."""
    fail_on = FAILING + ((CHANGED,) if strict else ())
    tools = {}
    for tool, items in replays.items():
        counts = dict.fromkeys(CLASSES, 0)
        diffs, timed, failing, versions = [], [], 0, set()
        n_trials = 0
        for group, rep in items:
            n_trials += len(group)
            versions.add(rep["server_version"])
            for c in rep["calls"]:
                counts[c["class"]] += len(group)
                if c["base_ok"] and c["class"] in fail_on:
                    failing += len(group)
                if c["head_latency_ms"] is not None:
                    timed.append((c, group))
                if c["class"] != IDENTICAL:
                    diffs.append(
                        {
                            "trials": [g["path"] for g in group],
                            "step": c["step"],
                            "tool": c["tool"],
                            "arguments": c["arguments"],
                            "class": c["class"],
                            "base_ok": c["base_ok"],
                            "detail": c["detail"],
                            "diff": short_diff(c["base_text"], c["head_text"], rep["roots"])
                            if c["class"] in (CHANGED, NOW_EMPTY, NOW_ERROR)
                            else None,
                        }
                    )
        timed.sort(key=lambda x: -(x[0]["head_latency_ms"] or 0))
        slower = sorted(
            (x for x in timed if is_slower(x[0]["base_latency_ms"], x[0]["head_latency_ms"])),
            key=lambda x: -(x[0]["head_latency_ms"] - x[0]["base_latency_ms"]),
        )
        tools[tool] = {
            "trials": n_trials,
            "replayed": sum(1 for _, rep in items if not rep.get("shared_start")),
            "calls": sum(counts.values()),
            "counts": counts,
            "failing": failing,
            "status": "fail" if failing else "pass",
            "server_version": sorted(str(v) for v in versions if v),
            "did_not_start": next((rep["error"] for _, rep in items if rep["error"]), None),
            "slowest": [
                {
                    "tool": c["tool"],
                    "arguments": c["arguments"],
                    "trial": g[0]["path"],
                    "base_latency_ms": c["base_latency_ms"],
                    "head_latency_ms": c["head_latency_ms"],
                }
                for c, g in timed[:SLOWEST]
            ],
            "slower": [
                {
                    "tool": c["tool"],
                    "arguments": c["arguments"],
                    "trial": g[0]["path"],
                    "base_latency_ms": c["base_latency_ms"],
                    "head_latency_ms": c["head_latency_ms"],
                }
                for c, g in slower[:SLOWEST]
            ],
            "differences": diffs,
            "surface": surface_findings(items),  # what is wrong with HEAD's surface (gate.surface)
        }
    return {
        "tools": tools,
        "failed": sorted(t for t, v in tools.items() if v["status"] == "fail"),
        "strict": strict,
        "harness_version": __version__,
        "fails_on": list(fail_on),
        "slower_than_base": {"ratio": SLOWER_RATIO, "ms": SLOWER_MS},
    }


# --- the whole replay ------------------------------------------------------------------------


def replay(
    base_folder,
    config: str,
    tools: list[str] | None = None,
    strict: bool = False,
    results: Path = Path("results"),
    jobs: int | None = None,
    config_given: bool = True,
) -> dict:
    """The whole replay of a BASE results folder against HEAD's config. Raises CannotReplay;
    without `config_given` (no --config), its reasons name the config BASE was run with."""
    m = load_matrix(config)
    hint = None if config_given else base_config_hint(base_folder, m)
    picked = select(load_base_trials(base_folder), m, tools, hint)
    prepared = {tool: prepare(m, tool, {t["cell"]["repo"] for t in trials}, results) for tool, trials in picked.items()}
    # a server start mostly waits (imports, the sandbox): twice the cores keeps them busy
    replays = asyncio.run(
        replay_all(m, picked, prepared, results / "logs" / "replay", jobs or 2 * (os.cpu_count() or 1))
    )
    return summarise(replays, strict)
