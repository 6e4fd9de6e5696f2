"""summary.json `identity`: who and what ran (models, hosts, tools and their servers,
repos and commits, scenarios, judge, weights, pricing) and what graded it, as the config
says and the trials' records recorded it."""

from __future__ import annotations

from mcptrials.analyze import AGGREGATE_VERSION
from mcptrials.analyze.trial_rows import COST_METHOD
from mcptrials.matrix.hashing import canonical_hash
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.tools import BASELINE

REFERENCE_MODEL_LABEL = "reference (deterministic agent, no language model)"
REFERENCE_JUDGE_LABEL = "reference (deterministic judge: key points and gold citations, no language model)"


def recorded_judge_label(judged: list[dict]) -> str:
    """The recorded judge in the identity: whose judgements they are (every record names its model)."""
    models = sorted({str(j["judge"].get("model")) for j in judged if j["judge"].get("model")})
    missing = sum(1 for j in judged if j.get("not_judged"))
    return (
        f"recorded judgements by {', '.join(models) or 'an unnamed judge'} (read from each run's judged.json; "
        f"no call made here)" + (f"; {missing} trial(s) not judged" if missing else "")
    )


def recorded_identity(spec: dict, records: list[dict], tool: str) -> dict:
    """A recorded arm's identity: its source, each recording's sha256 (by trial), and where its
    tools/list came from (the recordings' init events, or unknown)."""
    recs = [r for r in records if r["key"]["tool"] == tool]
    lists = [r["run_meta"].get("recorded_tools") or {"from": "unknown"} for r in recs]
    return {
        "source": spec.get("source"),
        "recordings": {
            "/".join(str(r["key"][k]) for k in ("model", "host", "scenario", "trial")): r["run_meta"].get(
                "recorded_sha256"
            )
            for r in recs
        },
        "tools_list_from": sorted({x["from"] for x in lists}),
        "tools_list": sorted({n for x in lists for n in (x.get("names") or [])}),
    }


def sandbox_label(rec: dict | None) -> str:
    """'bubblewrap 0.8.0', 'bubblewrap 0.8.0 with network', 'none', or 'unrecorded'."""
    if not rec:
        return "unrecorded"
    if rec.get("mechanism") == "none":
        return "none"
    return f"{rec.get('mechanism')} {rec.get('version') or ''}".strip() + (
        " with network" if rec.get("network") else ""
    )


def identity(m: Matrix, records: list[dict]) -> dict:
    """Who and what ran: models, hosts, tools and versions, repos and commits, scenarios and
    the hash of the set, trials, judge, weights, and the pricing the costs were computed with."""
    from mcptrials.core.records import project_path
    from mcptrials.prepare.servers import project_files

    models = {}
    for name, spec in m.models.items():
        if spec["provider"] == "reference":
            label = REFERENCE_MODEL_LABEL
        elif spec["provider"] == "recorded":  # runs made elsewhere, converted: say so, and from what
            label = f"recorded runs ({spec['format']}{', ' + spec['model'] if spec.get('model') else ''})"
        else:
            label = f"{spec.get('model')} ({spec['provider']})"
        models[name] = {"provider": spec["provider"], "model_id": spec.get("model"), "label": label}
    tools = {}
    for name, spec in m.tools.items():
        metas = [r["run_meta"] for r in records if r["key"]["tool"] == name]
        tools[name] = {
            "transport": spec["transport"],
            "version_label": spec.get("version"),
            "server_name": sorted({str(x.get("server_name")) for x in metas if x.get("server_name")}),
            "server_version": sorted({str(x.get("server_version")) for x in metas if x.get("server_version")}),
            "tools_sha256": sorted({x["tools_sha256"] for x in metas if x.get("tools_sha256")}),
            "spec_sha256": m.tool_hash(name),
            # the sha256 of each project file its entry names (its own server: gate.comparable)
            "project_files": project_files(m.specs.tools[name]),
            # a description variant: its base's server behind our proxy (run_meta says so too)
            "variant_of": spec.get("variant_of"),
            "overrides_sha256": sorted({x["overrides_sha256"] for x in metas if x.get("overrides_sha256")}),
            # how its processes ran, as the trials recorded it (run_meta.sandbox)
            "sandbox": sorted({sandbox_label(x.get("sandbox")) for x in metas}),
        }
        if spec["transport"] == "recorded":  # no server: what it is known from, recording by recording
            tools[name].update(recorded_identity(spec, records, name))
    repos = {}
    for name in m.run_repos():  # only the repos the run's scenarios use
        spec = m.repos[name]
        seen = sorted({r["run_meta"].get("commit") for r in records if r["key"]["repo"] == name} - {None})
        repos[name] = {"url": spec["url"], "commit": spec["commit"], "commits_seen": seen}
    scen = {
        s.id: {
            "sha256": s.sha256,
            "suite": s.data["suite"],
            "split": s.split,
            "repo": s.repo,
            "title": s.data.get("title"),
        }
        for s in m.run_scenarios()
    }
    jspec = m.specs.judge
    judge_recs = [r["judged"]["judge"] for r in records]
    # No threshold here: the held-out verdict is the report's (judge.threshold reruns only the report).
    judge = {
        "provider": jspec.provider,
        "model": jspec.model,
        "repeats": jspec.repeats,
        "label": (
            REFERENCE_JUDGE_LABEL
            if jspec.provider == "reference"
            else recorded_judge_label([r["judged"] for r in records])
            if jspec.provider == "recorded"
            else f"{jspec.model} ({jspec.provider})"
        ),
        "prompt_sha256": sorted({j["prompt_sha256"] for j in judge_recs}),
        "settings_hash": sorted({j["settings_hash"] for j in judge_recs}),
        "temperature": sorted({str(j.get("temperature")) for j in judge_recs}),
    }
    return {
        "config": project_path(m.path),
        "config_files": [project_path(f) for f in m.sources or (m.path,)],
        "models": models,
        "hosts": sorted({str(r["run_meta"].get("host")) for r in records if r["run_meta"].get("host")}),
        "harness_versions": sorted(
            {str(r["run_meta"].get("harness_version")) for r in records if r["run_meta"].get("harness_version")}
        ),
        "tools": tools,
        "repos": repos,
        "scenarios": scen,
        "scenario_set_sha256": m.scenario_set_sha256(),
        "splits": m.config["splits"],
        "trials": m.trials,
        "judge": judge,
        "weights": m.config["weights"],
        "sandbox": m.config["sandbox"],
        "costs": {
            "method": COST_METHOD,
            "pricing_sha256": canonical_hash(m.config["pricing"]),
            "priced_models": sorted(m.config["pricing"]),
        },
        # what scored the trials, so that `mcptrials compare` refuses runs graded differently
        "grading": grading_identity(records),
        # how the aggregate turned the scores into fairness and verdicts (its formulas' version)
        "aggregate_version": AGGREGATE_VERSION,
        "baseline": BASELINE if BASELINE in m.tools else None,
        "started": min((r["run_meta"].get("started_at") or "" for r in records), default=None),
        "ended": max((r["run_meta"].get("ended_at") or "" for r in records), default=None),
    }


def grading_identity(records: list[dict]) -> dict:
    """The deterministic graders' version (scored.json grader_version) and, per scenario, the hashes
    of what graded and judged it (scored grading_sha256, judged scenario.rubric_hash), as recorded."""
    scen = dict.fromkeys(r["key"]["scenario"] for r in records)
    return {
        "grader_versions": sorted({str(r["scored"].get("grader_version")) for r in records}),
        "grading_sha256": {
            sc: sorted({str(r["scored"].get("grading_sha256")) for r in records if r["key"]["scenario"] == sc})
            for sc in scen
        },
        "rubric_sha256": {
            sc: sorted({str(r["judged"]["scenario"].get("rubric_hash")) for r in records if r["key"]["scenario"] == sc})
            for sc in scen
        },
    }
