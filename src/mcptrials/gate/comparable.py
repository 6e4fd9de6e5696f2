"""Whether two runs can be compared (`mcptrials compare`, step 1), and HEAD's results against
its config: the same scenario files (ids and sha256), the same repository commits, and the
same grading (graders.GRADER_VERSION and the per-scenario grading and rubric hashes as
scored.json / judged.json recorded them, the judge's provider, model, prompt and settings, the
fairness weights and the aggregate's version, analyze.AGGREGATE_VERSION): a different number
would otherwise be read as the server's doing.
Summaries made for another version of a tool (its config entry, or the contents of the project
files it names: a server kept in the project), the scenarios or the commits (stale) are refused too.
"""

from __future__ import annotations

import json
from pathlib import Path

from mcptrials.matrix.errors import ConfigError


class Refused(Exception):
    """The two runs cannot be compared; `reasons` says why, each with the fix."""

    def __init__(self, reasons: list[str]):
        super().__init__("; ".join(reasons))
        self.reasons = reasons


# --- reading a results folder ---------------------------------------------------------


def load_results(folder) -> dict:
    """{"folder", "summary", "snapshots": {(tool, repo): tools.json}} of a results/ folder."""
    root = Path(folder)
    path = root / "aggregate" / "summary.json"
    if not path.is_file():
        raise ConfigError(
            f"{path}: not found; give a results/ folder that holds aggregate/summary.json "
            "(run the workflow, or `mcptrials aggregate`, there first)"
        )
    try:
        summary = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: not valid JSON ({e}); rerun `mcptrials aggregate`") from None
    snaps = {}
    for p in sorted((root / "snapshots").glob("*/*/tools.json")):
        try:
            snaps[(p.parent.parent.name, p.parent.name)] = json.loads(p.read_text())
        except json.JSONDecodeError as e:
            raise ConfigError(f"{p}: not valid JSON ({e}); rerun its tools_snapshot job") from None
    return {"folder": str(root), "summary": summary, "snapshots": snaps}


# --- comparable or not ----------------------------------------------------------------


def _diff_keys(what: str, base: dict, head: dict) -> list[str]:
    out = []
    if set(base) - set(head):
        out.append(f"{what} only in BASE: {', '.join(sorted(set(base) - set(head)))}")
    if set(head) - set(base):
        out.append(f"{what} only in HEAD: {', '.join(sorted(set(head) - set(base)))}")
    changed = sorted(k for k in set(base) & set(head) if base[k] != head[k])
    if changed:
        out.append(f"{what} changed: {', '.join(changed)}")
    return out


def refusal_reasons(base: dict, head: dict) -> list[str]:
    """Why two summaries cannot be compared (empty: they can). Each reason names the fix."""
    bi, hi = base["identity"], head["identity"]
    reasons = []
    diffs = _diff_keys(
        "scenarios",
        {k: v["sha256"] for k, v in bi["scenarios"].items()},
        {k: v["sha256"] for k, v in hi["scenarios"].items()},
    )
    if diffs:
        reasons.append(
            "the scenario sets differ (" + "; ".join(diffs) + "): run both with the same pack "
            "and splits, or refresh BASE's stored results after changing the scenarios"
        )
    diffs = _diff_keys(
        "repos", {k: v["commit"] for k, v in bi["repos"].items()}, {k: v["commit"] for k, v in hi["repos"].items()}
    )
    if diffs:
        shown = "; ".join(diffs) + "".join(
            f" ({k}: {bi['repos'][k]['commit'][:12]} -> {hi['repos'][k]['commit'][:12]})"
            for k in sorted(set(bi["repos"]) & set(hi["repos"]))
            if bi["repos"][k]["commit"] != hi["repos"][k]["commit"]
        )
        reasons.append(f"the repository commits differ ({shown}): pin the same commits in both configs")
    bg, hg = bi.get("grading"), hi.get("grading")
    if bg is None or hg is None:
        side = "BASE" if bg is None else "HEAD"
        reasons.append(
            f"{side} records no grader version (aggregated by an older mcptrials): rerun `mcptrials aggregate` there"
        )
    else:
        if bg["grader_versions"] != hg["grader_versions"]:
            reasons.append(
                f"the grader versions differ (BASE {', '.join(bg['grader_versions'])}, HEAD "
                f"{', '.join(hg['grader_versions'])}): rescore BASE with the same mcptrials version"
            )
        for part, what in (
            ("grading_sha256", "grading (checks, citations, exact answers)"),
            ("rubric_sha256", "rubrics"),
        ):
            changed = sorted(k for k in set(bg[part]) & set(hg[part]) if bg[part][k] != hg[part][k])
            if changed:
                reasons.append(
                    f"the scenarios' {what} differ for {', '.join(changed)}: grade both runs with the "
                    "same scenario files"
                )
    ba, ha = bi.get("aggregate_version"), hi.get("aggregate_version")
    if ba != ha:
        reasons.append(
            f"the aggregate versions differ (BASE {ba or 'unrecorded: an older mcptrials'}, HEAD "
            f"{ha or 'unrecorded: an older mcptrials'}), so fairness is computed differently (e.g. its "
            "efficiency): rerun `mcptrials aggregate` on both with the same mcptrials version"
        )
    judge_keys = ("provider", "model", "repeats", "prompt_sha256", "settings_hash")
    bj = {k: bi["judge"].get(k) for k in judge_keys}
    hj = {k: hi["judge"].get(k) for k in judge_keys}
    if bj != hj:
        changed = [k for k in judge_keys if bj[k] != hj[k]]
        reasons.append(f"the judge differs ({', '.join(changed)}): judge both runs with the same judge settings")
    if bi["weights"] != hi["weights"]:
        reasons.append(
            f"the fairness weights differ (BASE {bi['weights']}, HEAD {hi['weights']}): use the same `weights:`"
        )
    return reasons


# --- stale or one-sided HEAD --------------------------------------------------------------------


def head_config(head_folder, identity: dict, given: str | None) -> str:
    """The config files HEAD was run with (joined by os.pathsep): --config, else the ones its
    summary.json names, from HEAD's project (the folder holding results/). Refused when not found."""
    import os

    if given:
        return given
    project = Path(head_folder).resolve().parent
    files = identity.get("config_files") or ([identity["config"]] if identity.get("config") else [])
    paths = [p if os.path.isabs(p) else str(project / p) for p in files]
    missing = [p for p in paths if not Path(p).is_file()]
    if not paths or missing:
        raise Refused(
            [
                f"HEAD's config ({', '.join(missing or ['unnamed'])}) is not found, so HEAD's results cannot be "
                "checked against it: pass --config FILE[:FILE] (the config HEAD was run with), or "
                "--no-config-check to compare without that check"
            ]
        )
    return os.pathsep.join(paths)


def project_files_now(m, tool: str, project: Path) -> dict[str, str]:
    """Project path -> sha256 of each file of `project` that tools.<tool> names now (as the
    stages record it: mcptrials.prepare.servers.project_files, here for HEAD's project, wherever
    the gate runs)."""
    import os

    from mcptrials.matrix.projectfiles import content_hashes, expand_tool

    tools_dir = os.environ.get("MCPTRIALS_TOOLS_DIR") or str(project / ".tools")
    return content_hashes(expand_tool(m.tools[tool], project), project, tools_dir)


def files_changed(recorded: dict, now: dict) -> str:
    """What differs between two {project path: sha256} records ("" when nothing): each path
    changed, added or gone, with the sha256 recorded and the one now."""
    out = [
        f"{p} changed: sha256 {recorded[p][:12]} recorded, {now[p][:12]} now"
        for p in sorted(set(recorded) & set(now))
        if recorded[p] != now[p]
    ]
    out += [f"{p} is new" for p in sorted(set(now) - set(recorded))]
    out += [f"{p} is gone" for p in sorted(set(recorded) - set(now))]
    return "; ".join(out)


def stale_reasons(head: dict, config: str, tools: list[str], notes: list[str] | None = None) -> list[str]:
    """Why HEAD's results are not those of its config (empty: they are): summary.json or a
    tools.json made for another version of a tool (its entry, or the contents of the project
    files it names), the scenarios or the commits, e.g. left in place by a stage that failed or
    by an edit not rerun. Compares the content hashes the stages record. Results made before
    the project files were recorded (no `project_files` in summary.json nor in any tools.json of
    the tool) cannot be checked for them: a line saying so goes to `notes`, they are not refused."""
    from mcptrials.matrix.config import load_matrix

    m = load_matrix(config)
    ident = head["summary"]["identity"]
    project = Path(head["folder"]).resolve().parent  # HEAD's project: the folder that holds results/
    reasons, rerun = [], False
    for tool in tools:
        if tool not in m.tools:
            reasons.append(f"tools.{tool} is in HEAD's summary.json but not in its config")
            continue
        want = m.tool_hash(tool)
        got = (ident.get("tools") or {}).get(tool, {}).get("spec_sha256")
        if got != want:
            reasons.append(
                f"summary.json was made for another tools.{tool} (spec {str(got)[:12]}, the config's {want[:12]})"
            )
        for (t, repo), snap in head["snapshots"].items():
            if t == tool and snap.get("tool_spec_sha256") not in (None, want):
                reasons.append(
                    f"snapshots/{tool}/{repo}/tools.json was made for another tools.{tool} "
                    f"(spec {snap['tool_spec_sha256'][:12]}, the config's {want[:12]})"
                )
        # its own server's files: the content the entry names in the project (issue 27's rerun key)
        now = project_files_now(m, tool, project)
        records = [("summary.json", (ident.get("tools") or {}).get(tool, {}))] + [
            (f"snapshots/{tool}/{repo}/tools.json", snap)
            for (t, repo), snap in sorted(head["snapshots"].items())
            if t == tool
        ]
        checked = [(where, rec["project_files"]) for where, rec in records if rec.get("project_files") is not None]
        for where, recorded in checked:
            if diff := files_changed(recorded, now):
                rerun = True
                reasons.append(f"{where} was made with other contents of the project files of tools.{tool} ({diff})")
        if now and not checked and notes is not None:
            notes.append(
                f"HEAD's results record no sha256 of the project files of tools.{tool} "
                f"({', '.join(now)}): made by an mcptrials that did not record them, so they are not "
                "checked against them; the next run of its snapshot records them"
            )
    scen = {s.id: s.sha256 for s in m.run_scenarios()}
    got = {k: v["sha256"] for k, v in ident["scenarios"].items()}
    if scen != got:
        reasons.append(
            "summary.json was made for other scenarios (" + "; ".join(_diff_keys("scenarios", got, scen)) + ")"
        )
    for name, r in ident["repos"].items():
        if name in m.repos and m.repos[name]["commit"] != r["commit"]:
            reasons.append(
                f"summary.json was made at another commit of {name} ({r['commit'][:12]}, the config's "
                f"{m.repos[name]['commit'][:12]})"
            )
    if reasons:
        fix = (
            "a stage failed and left older files in place; see results/logs/, fix it and rerun the workflow"
            if not rerun
            else f"the files were edited after the run: rerun snakemake in {project} (`snakemake -n` lists the "
            "snapshot and trials it reruns; if a stage fails, see results/logs/ and fix it first), or restore "
            "the files the results were made with"
        )
        return [f"HEAD's results are stale for its config ({config}): " + "; ".join(reasons) + ": " + fix]
    return []
