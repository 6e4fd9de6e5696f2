"""The records two stages exchange, as types: a trial's transcript (run -> grade, judge,
analyze), its scored record (grade -> analyze) and its judged record (judge -> analyze).

The JSON Schemas in mcptrials/schemas/ stay the on-disk contract; these TypedDicts name the
fields the readers use (analyze.aggregate, the report) so a type checker and a reader see
them. A field the schema requires is a plain key here, any other is NotRequired; nested
objects are typed where the readers look inside them. tests/core/test_record_types.py checks
that every key is a property its schema defines, so the types cannot drift from the schemas.
"""

# No `from __future__ import annotations` here: TypedDict reads NotRequired from the evaluated
# annotations (Python 3.11 takes a postponed one for a required key).
from typing import Any, NotRequired, TypedDict


class Cell(TypedDict):
    """A record's `cell`: the trial's identity (core.identity.TrialKey.cell())."""

    model: str
    host: NotRequired[str]  # older records lack it
    tool: str
    repo: str
    scenario: str
    trial: int


# --- transcript.json (mcptrials.run.trial.transcript_record) ---------------------------


class TranscriptUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    api_calls: int
    retries: NotRequired[int]
    cost_usd: float | None
    host_cost_usd: NotRequired[float | None]


class TranscriptErrors(TypedDict):
    tool_error: int
    protocol_error: int
    api_error: int
    harness_error: int


class TranscriptRecord(TypedDict):
    schema: str
    cell: Cell
    provider: str
    one_answer: NotRequired[bool]
    host: NotRequired[str]
    model_id: NotRequired[str | None]
    outcome: str
    outcome_detail: NotRequired[str | None]
    system_prompt_sha256: NotRequired[str | None]
    steps: list[dict[str, Any]]
    tool_calls: list[dict[str, Any]]
    errors: TranscriptErrors
    error_events: list[dict[str, Any]]
    usage: TranscriptUsage
    wall_seconds: float
    server_startup_seconds: NotRequired[float | None]
    work_seconds: NotRequired[float]
    feedback_text: NotRequired[str]
    messages: list[dict[str, Any]]


# --- scored.json (mcptrials.grade.scoring.score_trial) ---------------------------------


class Keywords(TypedDict):
    coverage: float | None  # null when the step has no keyword checks
    required_passed: bool


class CitationRates(TypedDict):
    """grade.citations.grading.citation_rates (the formulas there); the pooled rates of the citations'
    composition (grade.citations.composition.view) and the trial rows copy them."""

    grounded_rate: float | None
    hallucinated_rate: float | None
    unresolved_rate: float | None
    verified_rate: float | None
    cited_recall: float | None
    strict_grounded_rate: NotRequired[float | None]  # older records lack it
    strict_verified_rate: NotRequired[float | None]
    strict_undetermined_rate: NotRequired[float | None]  # grader 8 on (issue 34)


class Citations(TypedDict):
    counts: dict[str, Any]  # the integer counts, and by_form and ungrounded (grade.citations.composition)
    rates: CitationRates


class StepsPassed(TypedDict):
    """`exact` and `state`: how many steps have such a check, and how many passed it."""

    steps: int
    passed: int


class ExactAnswer(TypedDict):
    """A step's `exact` (grade.exact.grade_exact): the value expected, the text it was read
    from, and whether that text states it and no other value of its kind."""

    mode: str  # string | number | date
    expected: str | float
    tolerance: float | None
    date_format: str | None
    required: bool
    passed: bool
    matched: str | None
    where: str | None
    normalised: str | None
    bare: NotRequired[str | None]  # how the step asks for a bare value, else None (older records lack it)
    read: NotRequired[str]  # whole answer | last line (n) | answer label at line n
    values: NotRequired[list[str] | None]  # the values of the expected kind the text read states; None: no kind
    ambiguous: NotRequired[bool]  # matched, but other values of the kind stated: failed


class Efficiency(TypedDict):
    tokens: dict[str, int]  # input_uncached, cache_write, cache_read, output, total
    cost_usd: float | None
    priced_as: str | None
    turns: int
    api_calls: int | None
    retries: NotRequired[int | None]
    tool_calls: int
    tool_calls_mcp: int
    tool_calls_builtin: int
    wall_seconds: float | None  # scored.schema.yaml: null when the transcript has none
    server_startup_seconds: NotRequired[float | None]
    work_seconds: NotRequired[float | None]
    steps: list[dict[str, Any]]


class Adoption(TypedDict):
    mcp_calls: int
    builtin_search_calls: int
    tool_fluency: float | None
    discoverability: dict[str, Any]
    tool_errors: dict[str, int]
    tool_error_rate: float | None
    per_tool: dict[str, dict[str, Any]]
    expected_tools: list[dict[str, Any]]


class ScoredRecord(TypedDict):
    schema: str
    gold_recall: NotRequired[dict[str, Any] | None]
    grader_version: str
    cell: Cell
    provider: str | None
    model_id: str | None
    outcome: str
    outcome_detail: NotRequired[str | None]
    repo_commit: str
    citations_not_checked: NotRequired[str | None]
    not_graded: NotRequired[dict[str, list[str]]]  # only when a check could not be made (no checkout)
    grading_sha256: str
    scenario_sha256: NotRequired[str]
    citation_extensions: NotRequired[list[str] | None]
    passed: bool
    failures: list[str]
    keywords: Keywords
    citations: Citations
    exact: StepsPassed
    state: StepsPassed
    steps: list[dict[str, Any]]
    answer_mapping: NotRequired[dict[str, Any]]
    efficiency: Efficiency
    adoption: Adoption


# --- judged.json (mcptrials.judge.judging, mcptrials.judge.recorded) ----------------------


class JudgeSettings(TypedDict):
    provider: str
    model: str | None
    base_url: NotRequired[str | None]
    repeats: int
    temperature: float | None
    note: NotRequired[str | None]
    settings_hash: str
    prompt_file: str
    prompt_sha256: str


class JudgedUsage(TypedDict):
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    api_calls: int
    retries: int
    malformed_replies: int
    cost_usd: float | None


class JudgedRecord(TypedDict):
    schema: str
    cell: Cell | None
    transcript_outcome: str | None
    judge: JudgeSettings
    scenario: dict[str, str]  # id, rubric_hash
    masking: dict[str, Any]  # replacement, names_masked
    steps: list[dict[str, Any]]
    quality: list[float]
    quality_mean: float | None
    not_judged: NotRequired[str]
    recorded: NotRequired[dict[str, Any]]
    transcript_sha256: NotRequired[str]
    usage: JudgedUsage
