"""The rows analyze writes and gate and report read, as types: one per trial (trials.csv,
summary.json `trials`), per (model, tool, scenario) cell (cells.csv), per (model, tool)
against the baseline (tools.csv), per configured pair (comparisons.csv), the citations'
composition per (model, tool) and, for a run in waves, where each tool stopped; and
summary.json, which holds them.

These are TypedDicts, not classes: the rows are JSON and CSV on disk and pandas frames in
between, and a dict keeps them byte for byte as they were. Each key is spelled once, in
mcptrials.core.keys; code outside core indexes a row with those constants, never a string
literal (tests/core/test_keys.py reads the keys from these types and checks both).

A trial row also carries one `cited_recall_<group>` column per gold row group of its scenario
(analyze.trial_rows.gold_recall_columns): named by the scenario, so not declared here.
"""

# No `from __future__ import annotations` here: TypedDict reads NotRequired from the evaluated
# annotations (Python 3.11 takes a postponed one for a required key).
from typing import Any, NotRequired, TypedDict


class TrialRow(TypedDict):
    """One trial (analyze.trial_rows.raw_row, then score_rows and feedback.add_patterns)."""

    model: str  # the label tables compare within: the model, or model@host with several hosts
    model_name: str
    host: str
    tool: str
    repo: str
    scenario: str
    trial: int
    suite: str
    provider: str | None
    model_id: str | None
    outcome: str
    completed: bool
    passed: bool | None
    keyword_coverage: float | None
    citation_grounding: float | None  # strict: fairness's citation part
    citation_grounding_lenient: float | None
    verified_rate_strict: float | None
    citations: int | None
    grounded: int | None
    hallucinated: int | None
    unresolved: int | None
    verified_rate: float | None
    cited_recall: float | None
    exact_steps: int
    exact_passed: int | None
    state_steps: int
    state_passed: int | None
    quality: float | None
    quality_repeats: int
    efficiency: float | None
    fairness: float | None
    tool_fluency: float | None
    discoverability: float | None
    adoption: float | None
    cost_usd: float | None
    priced_as: str | None
    tokens_input_uncached: int
    tokens_cache_write: int
    tokens_cache_read: int
    tokens_output: int
    tokens_total: int
    turns: int
    api_calls: int | None
    retries: int | None
    wall_seconds: float
    work_seconds: float
    tool_calls: int
    tool_calls_mcp: int
    tool_calls_builtin: int
    tool_error: int
    protocol_error: int
    api_error: int
    harness_error: int
    tool_error_rate: float | None
    server_tools_used: list[str]
    server_tool_errors: int
    expected_tools_precision: float | None
    expected_tools_recall: float | None
    judge_cost_usd: float | None
    server_startup_seconds: float | None
    server_peak_rss_kb: int | None
    page: str  # the trial's page, relative to the report folder
    citations_not_checked: str | None
    not_judged: str | None
    mention_recall: NotRequired[float | None]  # a scenario with gold rows only
    gold_rows: NotRequired[int]
    missing: bool
    missing_reason: str | None
    attempts: int
    patterns: NotRequired[dict[str, int]]  # set by analyze.feedback.add_patterns
    efficiency_basis: str | None
    fairness_without: NotRequired[str]  # a part left out of fairness, and why


class CellRow(TypedDict):
    """One (model, tool, scenario): analyze.tables.cell_rows."""

    model: str
    tool: str
    scenario: str
    repo: str
    suite: str
    n: int  # the trials that count
    n_total: int
    n_missing: int
    missing_reasons: str
    passes: int
    completed: int
    fairness_se: float | None
    fairness_lo: float | None
    fairness_hi: float | None
    pass_at_1: float | None
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    fairness: float | None
    quality: float | None
    keyword_coverage: float | None
    citation_grounding: float | None
    efficiency: float | None
    adoption: float | None
    tool_fluency: float | None
    discoverability: float | None
    cost_usd: float | None
    wall_seconds: float | None
    tokens_total: float | None
    turns: float | None
    tool_calls: float | None
    cited_recall: float | None
    verified_rate: float | None
    efficiency_basis: str | None
    citations: int
    work_seconds: float | None
    server_startup_seconds: float | None
    expected_tools_precision: float | None
    expected_tools_recall: float | None
    tool_error: int
    protocol_error: int
    api_error: int
    harness_error: int
    outcomes: str  # 'completed=3;server_crashed=1'
    pages: str


class ToolRow(TypedDict):
    """One (model, tool), its paired difference against the baseline: analyze.tables.tool_rows."""

    model: str
    tool: str
    n_scenarios: int
    n_trials: int
    n_total: int
    n_missing: int
    missing_reasons: str
    passes: int
    failed_outcomes: int
    fairness: float | None
    fairness_se: float | None
    fairness_lo: float | None
    fairness_hi: float | None
    fairness_method: str
    diff: float | None
    diff_se: float | None
    diff_lo: float | None
    diff_hi: float | None
    diff_method: str | None
    t_p: float | None
    wilcoxon_p: float | None
    holm_t_p: float | None
    holm_wilcoxon_p: float | None
    diff_n: int | None
    mde: float | None
    variance: dict[str, Any] | None  # stats.variance_components
    verdict: str
    rank: int | None
    pass_at_1: float | None
    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    cost_per_trial: float | None
    wall_per_trial: float | None
    work_per_trial: float | None
    startup_per_trial: float | None
    tokens_per_trial: float | None
    adoption: float | None
    adoption_lo: float | None
    adoption_hi: float | None
    quality: float | None
    keyword_coverage: float | None
    citation_grounding: float | None
    verified_rate: float | None
    efficiency: float | None
    tool_fluency: float | None
    discoverability: float | None
    efficiency_basis: str | None
    citations: int
    expected_tools_precision: float | None
    expected_tools_recall: float | None
    tool_error: int
    protocol_error: int
    api_error: int
    harness_error: int
    environment: NotRequired[str | None]  # set by analyze.aggregate (analyze.environment)


class ComparisonRow(TypedDict):
    """One configured `compare:` pair [a, b] of one model: analyze.comparisons.comparison. Its
    fields, in this order, are comparisons.csv's header."""

    model: str
    a: str
    b: str
    n_scenarios: int
    n_trials_a: int
    n_missing_a: int
    missing_reasons_a: str
    n_trials_b: int
    n_missing_b: int
    missing_reasons_b: str
    fairness_a: float | None
    fairness_b: float | None
    diff: float | None
    diff_se: float | None
    diff_lo: float | None
    diff_hi: float | None
    diff_method: str | None
    t_p: float | None
    wilcoxon_p: float | None
    holm_t_p: float | None
    holm_wilcoxon_p: float | None
    verdict: str
    only_a: list[str]
    only_b: list[str]


class FormRates(TypedDict):
    """One citation form's count, share and rates (grade.citations.composition.rates)."""

    n: int
    share: float | None
    grounded_rate: float | None
    strict_grounded_rate: float | None
    verified_rate: float | None
    strict_verified_rate: float | None
    strict_undetermined_rate: float | None


class UngroundedShare(TypedDict):
    """One ungrounded kind's count and share of all citations (grade.citations.composition.ungrounded_shares)."""

    n: int
    share: float | None


class CitationComposition(TypedDict):
    """A pooled citation score composed (grade.citations.composition.view): strict beside lenient, by form
    and the ungrounded kinds."""

    n_citations: int
    grounded_rate: float | None
    strict_grounded_rate: float | None
    verified_rate: float | None
    strict_verified_rate: float | None
    strict_undetermined_rate: float | None  # None for records before grader 8
    by_form: dict[str, FormRates]
    ungrounded: dict[str, UngroundedShare]


class CompositionRow(CitationComposition):
    """One (model, tool) of summary.json `citation_composition`
    (analyze.records_summary.citation_composition)."""

    model: str
    tool: str
    n_trials: int
    n_not_checked: int


class SequentialRow(TypedDict):
    """One (model, host, tool) of a run in waves, the baseline too, from its last wave record:
    summary.json `sequential` `tools` (analyze.sequential.sequential_summary). Not an owner of
    its keys (tests/core/test_keys.py): they are the wave record's words (decide_wave)."""

    host: str
    tool: str
    waves: int
    trials: int  # per scenario
    stopped: str  # 'decided: better|worse|equivalent', 'max', 'budget'; the baseline's 'with its last tool'
    decision: NotRequired[str]  # a tool's (stats.sequential's), undecided when it did not stop decided
    lo: float | None  # the confidence sequence's interval when it stopped; None for the baseline
    hi: float | None
    skipped_trials: NotRequired[list[int]]  # a tool's trial numbers with a missing pair
    model: str  # the label, as TrialRow's
    model_name: str
    unspent_trials: int  # the trials max would have run beyond these
    unspent_usd: float | None  # priced as the cost plan prices them; None when a cell's cost is unknown


class SequentialSummary(TypedDict):
    """summary.json `sequential`, a run in waves only (analyze.sequential.sequential_summary)."""

    method: str
    about: str
    alpha: float
    margin: float
    min: int
    max: int
    tools: list[SequentialRow]
    unspent_trials: int
    unspent_usd: float | None


class Summary(TypedDict):
    """summary.json (analyze.aggregate.aggregate): the rows typed above, and the other sections
    as the modules that make them describe them."""

    schema: str
    identity: dict[str, Any]
    methods: dict[str, str]
    margin: float
    notes: list[str]
    failed_stages: list[dict[str, Any]]
    environment_failures: list[dict[str, Any]]
    missing: dict[str, Any]
    trials: list[TrialRow]
    cells: list[CellRow]
    tools: list[ToolRow]
    comparisons: list[ComparisonRow]
    judge_noise: dict[str, Any]
    errors: list[dict[str, Any]]
    server_profile: list[dict[str, Any]]
    scenarios: list[dict[str, Any]]
    pass_hat_curve: list[dict[str, Any]]
    power: list[dict[str, Any]]
    model_host: dict[str, Any]
    gold_recall: list[dict[str, Any]]
    patterns: dict[str, Any]
    feedback: dict[str, Any]
    citation_composition: list[CompositionRow]
    sequential: NotRequired[SequentialSummary]  # a run in waves only
    contribution: dict[str, Any]  # each tool's contribution from ablation arms (analyze.contribution)
    calibration: dict[str, Any] | None  # None without the reader's citation labels (analyze.calibration)
