"""What reruns when something changes: one table, owned by the library.

Every field of the config (src/mcptrials/schemas/config.schema.yaml, tool.schema.yaml),
every part of a scenario (scenario.schema.yaml) and the two packaged prompts map to the
workflow stages (Snakemake rules) whose `params:` carry their value. Snakemake reruns a
job whose params changed and, by itself, everything downstream of it (a rerun job's
output is newer than what reads it). `workflow/rules/common.smk` only looks the params
up (`rule_params`); nothing else decides a rerun, so the table is the whole story.

`SHAPE` fields change which cells the matrix has (trials, splits, a scenario's repo):
new cells are planned, existing ones are not rerun; aggregate and report follow because
their set of inputs changed. `NONE` fields change nothing that is measured (the name of
the variable that holds a key, where a repository is cloned from).

A recorded model's trial jobs (provider recorded, mcptrials.run.recorded) also carry the
scenario parts marked `recorded_only`, and each trial job the sha256 of its own recorded
file (`recorded_trials`): a changed recording reruns its own trial, not its whole cell.

The "Reruns" table of docs/reruns.md is `markdown_table()` (tests/workflow/test_rerun_table.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from mcptrials.matrix.hashing import canonical_hash, file_sha256
from mcptrials.matrix.matrix import Matrix
from mcptrials.matrix.schema import scenario_default
from mcptrials.core.paths import PROMPT_DIR
from mcptrials.core.identity import TrialKey

SHAPE = "shape"
NONE = ()

# The stages in DAG order, with the dimensions that name one job of each.
RULE_KEYS: dict[str, tuple[str, ...]] = {
    "checkout": ("repo",),
    "install_tool": ("tool",),
    "install_host": ("host",),
    "index": ("tool", "repo"),
    "tools_snapshot": ("tool", "repo"),
    "transcript": ("model", "host", "tool", "scenario"),
    "scored": ("scenario",),
    "judged": ("scenario",),
    "decide": ("model",),  # a run in waves only: the checkpoint after each wave (mcptrials.dag.waves)
    "aggregate": (),
    "verify_lock": (),
    "heldout": (),
    "report": (),
    "status": (),  # fails the run after the report when a stage failed (mcptrials.core.failures)
}


@dataclass(frozen=True)
class Entry:
    field: str  # config field (`*` = any key of a map), `scenario.<part>`, `prompt:<file>`,
    #                     `code:<name>` or `files:tools.*` (a tool's files in the project)
    stages: tuple[str, ...] | str  # tuple of rules whose params carry the value, NONE, or SHAPE
    why: str
    # left out of the params while unset (None, or None in every step): a field added after
    # results exist reruns nothing until a config or scenario sets it
    omit_unset: bool = False
    # carried by the transcript params of recorded models only (what their conversion reads)
    recorded_only: bool = False
    # a top-level scenario part left out of the params while it is the schema's default: a
    # field added after results exist reruns nothing until a scenario sets another value
    omit_default: bool = False


T, SN, SC, J, H = "transcript", "tools_snapshot", "scored", "judged", "heldout"

TABLE: tuple[Entry, ...] = (
    # tools.<name>: the server under test
    Entry("tools.*.transport", (SN,), "a different server: its snapshot, then its trials"),
    Entry("tools.*.command", (SN,), "a different server: its snapshot, then its trials"),
    Entry("tools.*.args", (SN,), "a different server: its snapshot, then its trials"),
    Entry("tools.*.url", (SN,), "a different server: its snapshot, then its trials"),
    Entry("tools.*.env", (SN,), "a different server: its snapshot, then its trials"),
    Entry("tools.*.version", (SN,), "the version label is part of the server's identity"),
    Entry("tools.*.startup_timeout", (SN,), "whether the server comes up at all"),
    Entry("tools.*.install", ("install_tool",), "its install, snapshots and trials"),
    Entry("tools.*.index", ("index",), "its index per repo, snapshots and trials"),
    Entry(
        "tools.*.source",
        (T,),
        "a recorded arm's provenance, named in its trials' records (it has no snapshot)",
        omit_unset=True,
    ),
    Entry("tools.*.instructions", (T,), "what the agent's system prompt holds"),
    Entry("tools.*.call_timeout", (T,), "when a tool call fails with -32001"),
    Entry("tools.*.sandbox", ("index", SN), "what its processes can reach: its index, snapshots and trials"),
    Entry("tools.*.network", ("index", SN), "what its processes can reach: its index, snapshots and trials"),
    Entry("tools.*.read_only", ("index", SN), "what its processes can read: its index, snapshots and trials"),
    # your own server: the content of what it names in the project (mcptrials.matrix.projectfiles)
    Entry(
        "files:tools.*",
        ("index", SN),
        "the content of the project's files its command, args, read_only and "
        "index name (`{project}/server.py`; sha256 of each): an edit of your own server, its index, its snapshot, "
        "then its trials",
        omit_unset=True,
    ),
    # a description variant: its base's server (whose fields its entry carries) behind mcptrials.prepare.proxy
    Entry(
        "tools.*.variant_of",
        (SN,),
        "whose server the variant runs: its snapshot (the rewritten tools/list), then its trials",
        omit_unset=True,
    ),
    Entry(
        "tools.*.overrides",
        (SN,),
        "what the proxy rewrites in tools/list: the variant's snapshot, then its trials",
        omit_unset=True,
    ),
    Entry(
        "tools.*.ablate",
        NONE,
        "expanded at load into ablation arms, new tools of their own (variants: their snapshots and trials), "
        "and removed from the entry: the ablated server itself reruns nothing; `confirm` adds trials on the "
        "held-out scenarios (new cells) and reruns none",
    ),
    Entry(
        "tools.*.conformance",
        (SN,),
        "whether definitions that break the MCP specification stop the snapshot or are flagged in it",
        omit_unset=True,
    ),
    # repos.<name>
    Entry("repos.*.url", ("checkout",), "a different repository"),
    Entry("repos.*.commit", ("checkout", SC), "a different tree: everything of that repo (graders read the commit)"),
    Entry(
        "repos.*.unresolved",
        ("checkout", SC),
        "whether the repo has a checkout and its citations are checked: its checkout and scores",
        omit_unset=True,
    ),
    Entry("mirrors", NONE, "only where a repository is cloned from; the commit is verified"),
    # the matrix
    Entry("scenarios", SHAPE, "which scenario files exist"),
    Entry("splits", SHAPE, "which scenarios run"),
    Entry("trials", SHAPE, "only the new (or fewer) trials"),
    Entry(
        "decide.alpha",
        ("decide",),
        "a run in waves: every wave's decision (and the waves that follow from it); no trial, score or judgement",
    ),
    Entry(
        "decide.margin",
        ("decide",),
        "a run in waves: every wave's decision (and the waves that follow from it); no trial, score or judgement",
        omit_unset=True,
    ),
    Entry("locked", ("verify_lock", H, "report"), "the config's held-out anchor"),
    Entry("sandbox", ("index", SN), "what every process under test can reach (state checks too): everything"),
    # models.<name>
    Entry("models.*.provider", (T,), "that model's trials"),
    Entry("models.*.model", (T,), "that model's trials"),
    Entry("models.*.base_url", (T,), "that model's trials"),
    Entry("models.*.max_retries", (T,), "that model's trials (retries decide api_failed)"),
    Entry("models.*.params", (T,), "that model's trials"),
    Entry("models.*.api_key_env", NONE, "only which variable holds the key"),
    Entry("models.*.host", SHAPE, "which host's cells the recorded model has"),
    Entry("models.*.format", (T,), "that recorded model's trials (with each recorded file's sha256)", omit_unset=True),
    Entry("models.*.path", (T,), "that recorded model's trials (with each recorded file's sha256)", omit_unset=True),
    # hosts.<name>
    Entry("hosts.*.kind", (T,), "that host's trials"),
    Entry("hosts.*.builtin_tools", (T,), "that host's trials"),
    Entry("hosts.*.bare", (T,), "that host's trials"),
    Entry("hosts.*.extra_args", (T,), "that host's trials"),
    Entry("hosts.*.version", ("install_host",), "its install, then its trials"),
    # limits
    # retries: how often a missing trial (api_failed, harness_failed, not_run) is retried
    Entry(
        "retries.max_attempts",
        NONE,
        "only whether a missing trial is retried once more (its attempt number "
        "enters that trial's params: mcptrials.core.outcomes); no other job's params",
    ),
    Entry("limits.max_turns", (T,), "every trial"),
    Entry("limits.max_output_tokens", (T,), "every trial"),
    Entry("limits.max_seconds", (T,), "every trial"),
    Entry("limits.max_result_tokens", (T,), "every trial"),
    # the judge
    Entry("judge.provider", (J, H), "every judgement and the held-out agreement"),
    Entry("judge.path", (J, H), "where each trial's recorded judgement is (judge provider recorded)", omit_unset=True),
    Entry("judge.model", (J, H), "every judgement and the held-out agreement"),
    Entry("judge.base_url", (J, H), "every judgement and the held-out agreement"),
    Entry("judge.repeats", (J, H), "every judgement and the held-out agreement"),
    Entry("judge.api_key_env", NONE, "only which variable holds the key"),
    Entry("judge.threshold", ("report",), "only the held-out verdict, computed in the report"),
    Entry("judge.strict", ("report",), "only whether the report is refused below the threshold"),
    # aggregation
    Entry("weights.keyword", ("aggregate",), "fairness only: no trial, score or judgement"),
    Entry("weights.quality", ("aggregate",), "fairness only: no trial, score or judgement"),
    Entry("weights.citation", ("aggregate",), "fairness only: no trial, score or judgement"),
    Entry("weights.efficiency", ("aggregate",), "fairness only: no trial, score or judgement"),
    Entry("pricing", ("aggregate",), "costs are recomputed from the recorded tokens"),
    Entry(
        "compare",
        ("aggregate",),
        "only which pairs of tools are compared with each other: no trial, score or judgement",
    ),
    Entry(
        "margin",
        ("aggregate",),
        "only the verdicts against the baseline and of the compare pairs (the smallest "
        "difference that matters): no trial, score or judgement",
    ),
    Entry("citation_extensions", (SC,), "which citations the grader recognises"),
    Entry(
        "budget.max_cost_usd",
        NONE,
        "only whether a run may start and when trials stop starting; what ran is kept (trials not run are retried)",
    ),
    Entry("budget.input_tokens_per_call", NONE, "only the upper bound of the cost plan"),
    # a scenario file (scenarios/<id>.yaml); `steps.x` is that part of every step
    Entry("scenario.title", ("report",), "only its name in the report"),
    Entry("scenario.description", NONE, "a note for people; no stage reads it"),
    Entry("scenario.repo", SHAPE, "its cells move to the other repo"),
    Entry("scenario.split", SHAPE, "whether it runs"),
    Entry("scenario.suite", ("aggregate",), "only how its rows are grouped"),
    Entry("scenario.limits", (T,), "its trials"),
    Entry("scenario.gold", (SC,), "its scores only (gold recall, overall and per group)", omit_unset=True),
    Entry("scenario.rubric", (J, H), "its judgements (and the agreement, if it is held out)"),
    Entry(
        "scenario.one_answer",
        (T,),
        "its recorded models' trials only (one answer for every step); live trials send the steps as before",
        omit_unset=True,
        recorded_only=True,
    ),
    Entry(
        "scenario.workspace",
        (T,),
        "its trials (whether their servers may write into the workspace); left out while it is the default, copy",
        omit_default=True,
    ),
    Entry("scenario.steps.name", (T, J), "its trials"),
    Entry("scenario.steps.prompt", (T, J), "its trials"),
    Entry(
        "scenario.steps.answer_key",
        (SC, J, H),
        "its scores and judgements (which part of one answer is a step's)",
        omit_unset=True,
    ),
    Entry("scenario.steps.checks", (SC,), "its scores only"),
    Entry("scenario.steps.citations", (SC, J), "its scores and judgements (the gold locations)"),
    Entry("scenario.steps.exact_answer", (SC,), "its scores only"),
    Entry("scenario.steps.state_check.command", (T, SC), "its trials (the command runs in the workspace)"),
    Entry("scenario.steps.state_check.expect", (SC,), "its scores only"),
    Entry("scenario.steps.state_check.required", (SC,), "its scores only"),
    Entry(
        "scenario.steps.state_check.sql",
        (T, SC),
        "its trials (the query is read right after the step); an "
        "edit of its rows, value, ordered, case_sensitive or tolerance alone: its scores only",
    ),
    Entry(
        "scenario.steps.state_check.json",
        (T, SC),
        "its trials (the file and path are read right after the "
        "step); an edit of its value, contains, count, case_sensitive or tolerance alone: its scores only",
    ),
    Entry(
        "scenario.steps.state_check.unchanged_except",
        (T, SC),
        "its trials (the file is compared right after the step); an edit of its allow list alone: its scores only",
    ),
    Entry("scenario.steps.expected_tools", (SC,), "its scores only (reported, never scored)"),
    Entry("scenario.steps.key_points", (J, H), "its judgements"),
    Entry("scenario.steps.rubric", (J, H), "its judgements"),
    # the packaged prompts, and the graders' own version (their rules, not a config field)
    Entry("code:grader_version", (SC,), "every score (grade.GRADER_VERSION, bumped when their rules change)"),
    Entry(
        "code:aggregate_version",
        ("aggregate",),
        "every table and summary.json (analyze.AGGREGATE_VERSION, "
        "bumped when the aggregate's formulas change: efficiency, fairness, verdicts)",
    ),
    Entry("prompt:system.md", (T,), "every trial"),
    Entry("prompt:judge.md", (J, H), "every judgement and the held-out agreement"),
)

BY_FIELD = {e.field: e for e in TABLE}


def stages_of(field: str) -> tuple[str, ...]:
    e = BY_FIELD[field]
    return () if e.stages == SHAPE else tuple(e.stages)


# --- reading one field's value ---------------------------------------------------


def _dig(obj, path: list[str]):
    """The value at `path` in nested dicts; a list maps each item (a scenario's steps)."""
    if not path:
        return obj
    if isinstance(obj, list):
        return [_dig(x, path) for x in obj]
    if not isinstance(obj, dict):
        return None
    return _dig(obj.get(path[0]), path[1:])


def _value(field: str, data: dict, key: str | None = None):
    """The value of a config field (`tools.*.args` for tool `key`) or scenario part."""
    parts = field.split(".")
    if parts[0] == "scenario":
        return _dig(data, parts[1:])
    if len(parts) > 1 and parts[1] == "*":
        return _dig(data.get(parts[0], {}).get(key), parts[2:])
    return _dig(data, parts)


# The dimension whose entities a `<map>.*.<field>` belongs to.
MAP_DIM = {"tools": "tool", "repos": "repo", "models": "model", "hosts": "host"}


def _dim_of(field: str) -> str | None:
    if field.startswith("files:"):
        return "tool"
    parts = field.split(".")
    if parts[0] == "scenario":
        return "scenario"
    if len(parts) > 1 and parts[1] == "*":
        return MAP_DIM[parts[0]]
    return None


def _unset(value) -> bool:
    return value is None or (isinstance(value, list) and all(v is None for v in value))


def _omitted(e: Entry, value) -> bool:
    """Whether a field's value is left out of the params (omit_unset, omit_default)."""
    if e.omit_unset and _unset(value):
        return True
    return e.omit_default and value == scenario_default(e.field.removeprefix("scenario."))


def _recorded_part(m: Matrix, scenario: str) -> dict:
    """What a recorded model's trial jobs depend on beyond the table's model fields: the
    recorded_only scenario parts (each trial's own file is in `recorded_trials`)."""
    return {
        e.field: v
        for e in TABLE
        if e.recorded_only
        if not _omitted(e, v := _value(e.field, m.scenarios[scenario].data))
    }


def recorded_trials(m: Matrix) -> dict[tuple, str | None]:
    """(model, host, tool, scenario, trial as text) -> the sha256 of that trial's recorded
    file (None: no file yet), for every trial of a recorded model: a param of that one
    transcript job, so a new or changed recording reruns only its own trial."""
    from mcptrials.run.recorded import recorded_sha256

    return {_wildcards(k): recorded_sha256(m, k) for k in m.cells() if m.models[k.model]["provider"] == "recorded"}


def recorded_judgements(m: Matrix) -> dict[tuple, str | None]:
    """judge provider recorded: (model, host, tool, scenario, trial as text) -> the sha256 of
    that trial's recorded judgement (None: none yet), a param of its one judged job."""
    if m.specs.judge.provider != "recorded":
        return {}
    from mcptrials.run.recorded import cached_sha256
    from mcptrials.judge.recorded import judged_file

    return {_wildcards(k): cached_sha256(judged_file(m, k)) for k in m.cells()}


def _wildcards(key: TrialKey) -> tuple[str, ...]:
    """A per-trial job's lookup key in the rules: its wildcards (model, host, tool, scenario,
    trial), as text; the repo follows from the scenario."""
    return key.model, key.host, key.tool, key.scenario, str(key.trial)


def heldout_scenarios(m: Matrix) -> list[str]:
    """Scenario ids of the config that the held-out anchor holds frozen transcripts of:
    their current rubric is what the agreement re-judges with."""
    if m.locked_dir is None:
        return []
    return sorted(p.stem for p in (m.locked_dir / "scenarios").glob("*.yaml") if p.stem in m.scenarios)


def _entities(m: Matrix, rule: str) -> dict[str, list[str]]:
    """Every entity of each dimension a rule's jobs can see (the run's, not the config's)."""
    scen = heldout_scenarios(m) if rule == H else [s.id for s in m.trial_scenarios()]
    return {
        "tool": list(m.tools),
        "repo": m.run_repos(),
        "model": list(m.models),
        "host": list(m.hosts),
        "scenario": scen,
    }


def _code_version(field: str) -> str:
    from mcptrials.analyze import AGGREGATE_VERSION
    from mcptrials.grade import GRADER_VERSION

    return {"code:grader_version": GRADER_VERSION, "code:aggregate_version": AGGREGATE_VERSION}[field]


def _tool_files(m: Matrix, tool: str) -> dict[str, str]:
    """Project path -> sha256 of the files of the project the tool's entry names."""
    from mcptrials.matrix.projectfiles import content_hashes, project_dir
    from mcptrials.prepare.servers import tools_dir

    return content_hashes(m.specs.tools[tool].config, project_dir(), tools_dir())


def _prompt_hash(field: str) -> str:
    return file_sha256(PROMPT_DIR / field.split(":", 1)[1])


def rule_params(m: Matrix) -> dict[str, dict]:
    """rule -> {job key: hash of every value the table sends to that rule, in the job's scope}.

    A job's key is its values of RULE_KEYS[rule] (a tuple; () for a one-job rule). A
    dimension the key fixes contributes that entity's values (tool `git`'s args to its
    snapshot), one it does not fix contributes all entities of the run (every weight, every
    scenario's suite to the aggregate). A transcript or score job's repo is its scenario's."""
    out: dict[str, dict] = {}
    for rule, dims in RULE_KEYS.items():
        entries = [e for e in TABLE if e.stages != SHAPE and rule in e.stages and not e.recorded_only]
        ents = _entities(m, rule)
        # per dimension, per entity: {field: value}, and the global part
        glob: dict[str, object] = {}
        per: dict[str, dict[str, dict[str, object]]] = {d: {} for d in ents}
        for e in entries:
            f = e.field
            dim = _dim_of(f)
            if f.startswith("prompt:"):
                glob[f] = _prompt_hash(f)
            elif f.startswith("code:"):
                glob[f] = _code_version(f)
            elif f.startswith("files:"):
                for k in ents["tool"]:
                    if v := _tool_files(m, k):
                        per["tool"].setdefault(k, {})[f] = v
            elif dim is None:
                glob[f] = _value(f, m.config)
            elif dim == "scenario":
                for s in ents["scenario"]:
                    v = _value(f, m.scenarios[s].data)
                    if not _omitted(e, v):
                        per["scenario"].setdefault(s, {})[f] = v
            else:
                for k in ents[dim]:
                    v = _value(f, m.config, k)
                    if not _omitted(e, v):
                        per[dim].setdefault(k, {})[f] = v
        recorded = {k for k, spec in m.models.items() if spec["provider"] == "recorded"} if rule == T else set()
        free = {d: per[d] for d in per if d not in dims and per[d]}  # all entities of unfixed dims
        if "scenario" in dims and "repo" not in dims and "repo" in free:
            free.pop("repo")  # the scenario's own repo is added per job below
        jobs = {}
        for key in _job_keys(m, rule, dims):
            named = dict(zip(dims, key))
            if "scenario" in named and per["repo"]:
                named["repo"] = m.scenarios[named["scenario"]].repo
            scope = {d: per[d].get(v, {}) for d, v in named.items()}
            if named.get("model") in recorded:
                scope["recorded"] = _recorded_part(m, named["scenario"])
            jobs[key] = canonical_hash({"global": glob, "fixed": scope, "all": free})
        out[rule] = jobs
    return out


def _job_keys(m: Matrix, rule: str, dims: tuple[str, ...]):
    """The keys of the jobs the workflow has for a rule: an index only for tools with one,
    an install only for tools with a server."""
    if not dims:
        return [()]
    ents = dict(_entities(m, rule))
    if rule == "index":  # a variant uses its base's index and install: no job of its own
        ents["tool"] = [t for t in m.installed_tools() if m.tools[t].get("index")]
    elif rule == "install_tool":
        ents["tool"] = m.installed_tools()
    keys: list[tuple[str, ...]] = [()]
    for d in dims:
        keys = [k + (v,) for k in keys for v in ents[d]]
    return keys


# --- the table for people -----------------------------------------------------------


def markdown_table() -> str:
    """The table of docs/reruns.md, generated from TABLE."""
    rows = ["| change | stages whose params carry it (and everything downstream) | why |", "|---|---|---|"]
    for e in TABLE:
        if e.stages == SHAPE:
            stages = "new cells only (then aggregate, report)"
        elif not e.stages:
            stages = "nothing"
        else:
            stages = ", ".join(f"`{s}`" for s in e.stages)
        rows.append(f"| `{e.field}` | {stages} | {e.why} |")
    return "\n".join(rows) + "\n"


# --- one trial's inputs, recorded and compared ------------------------------------------
# Snakemake reruns a trial's transcript job when its own params change or a job upstream of
# it (its checkout, install, index, tools snapshot, host install) reruns. The values those
# jobs' params carry, hashed one field at a time and recorded in the trial's run_meta.json
# (`inputs`), let the cost plan say which finished trials the next run will rerun, and why,
# before Snakemake does (mcptrials.dag.planned).


def _label(field: str, entity: str | None) -> str:
    """`tools.*.args` of tool git -> `tools.git.args`; `files:tools.*` -> `files:tools.git`."""
    return field.replace("*", entity, 1) if entity is not None else field


def _scoped_values(m: Matrix, rule: str, named: dict[str, str]) -> dict[str, object]:
    """label -> value of every table field that `rule`'s job for the key values `named`
    carries in its params (the same values as rule_params hashes for that job)."""
    out: dict[str, object] = {}
    ents = _entities(m, rule)
    for e in TABLE:
        if e.stages == SHAPE or rule not in e.stages or e.recorded_only:
            continue
        f, dim = e.field, _dim_of(e.field)
        if f.startswith("prompt:"):
            out[f] = _prompt_hash(f)
        elif f.startswith("code:"):
            out[f] = _code_version(f)
        elif dim is None:
            out[f] = _value(f, m.config)
        else:
            fixed = named.get(dim)
            for k in [fixed] if fixed is not None else ents[dim]:
                if f.startswith("files:"):
                    v = _tool_files(m, k)
                    if v:
                        out[_label(f, k)] = v
                    continue
                v = _value(f, m.scenarios[k].data) if dim == "scenario" else _value(f, m.config, k)
                if not _omitted(e, v):
                    out[f if dim == "scenario" and fixed is not None else _label(f, k)] = v
    return out


def trial_jobs(m: Matrix, key: TrialKey) -> list[tuple[str, dict[str, str]]]:
    """The jobs whose params a trial's transcript job depends on, itself included: (rule, the
    job's key values), as the workflow's input functions wire them (workflow/rules/common.smk)."""
    from mcptrials.run.hosts import needs_install

    tool, server, spec = key.tool, m.server_of(key.tool), m.tools[key.tool]
    jobs = [
        ("checkout", {"repo": key.repo}),
        (
            "transcript",
            {"model": key.model, "host": key.host, "tool": tool, "scenario": key.scenario, "repo": key.repo},
        ),
    ]
    if spec["transport"] != "recorded":  # a recorded arm has no snapshot (nothing to list)
        jobs.append(("tools_snapshot", {"tool": tool, "repo": key.repo}))
    if spec["transport"] not in ("none", "recorded"):
        jobs.append(("install_tool", {"tool": server}))
    if spec.get("index"):
        jobs.append(("index", {"tool": server, "repo": key.repo}))
    if needs_install(m.specs.hosts[key.host].kind):
        jobs.append(("install_host", {"host": key.host}))
    return jobs


def trial_inputs(m: Matrix, key: TrialKey, cache: dict | None = None) -> dict[str, str]:
    """label -> a short sha256 of every value the trial's transcript job and the jobs upstream of it
    depend on (`tools.git.args`, `files:tools.mine`, `scenario.steps.prompt`, `repos.demo.commit`,
    `prompt:system.md`, ...; a recorded model's trial adds `recording`). Recorded in its
    run_meta.json; `cache` (any dict) shares the work between the trials of one plan."""
    cache = {} if cache is None else cache
    out: dict[str, str] = {}
    for rule, named in trial_jobs(m, key):
        ck = (rule, tuple(sorted(named.items())))
        if ck not in cache:
            # 16 hex digits: enough to tell a change, short enough to keep ~40 per run_meta.json
            cache[ck] = {label: canonical_hash(v)[:16] for label, v in _scoped_values(m, rule, named).items()}
        out.update(cache[ck])
    if m.models[key.model]["provider"] == "recorded":
        from mcptrials.run.recorded import recorded_sha256

        out["recording"] = (recorded_sha256(m, key) or "")[:16]
    return dict(sorted(out.items()))


def changed_inputs(recorded: dict[str, str], current: dict[str, str]) -> list[str]:
    """The labels whose value differs between a trial's recorded inputs and today's (a label on
    one side only counts: a field set or unset since)."""
    return sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))
