"""One spelling per key (issue 35 item 2): the keys the typed rows own are spelled once, as the
constants of mcptrials.core.keys, and no module outside core spells one as a string literal.

The owners are the rows analyze writes and gate and report read (mcptrials.core.rows) and the
citation rates grade writes (record_types.CitationRates); their keys are read from the
TypedDicts' annotations. A key they share with other records is not owned (SHARED, each group
with its reason), and a module may spell an owned key where the word means something else
there (EXCEPTIONS, each with its reason). The CSV headers need no exception: trials.csv,
cells.csv and tools.csv take the rows' keys, comparisons.csv ComparisonRow's annotations.
"""

from __future__ import annotations

import ast
import typing
from pathlib import Path

import mcptrials
from mcptrials.core import keys, record_types, rows

SRC = Path(mcptrials.__file__).resolve().parent

OWNERS = (
    rows.TrialRow,
    rows.CellRow,
    rows.ToolRow,
    rows.ComparisonRow,
    rows.CompositionRow,
    rows.FormRates,
    rows.UngroundedShare,
    record_types.CitationRates,
)

# The trial's identity: the config's, the folders' and every record's words.
IDENTITY = set(record_types.Cell.__annotations__)
# The keys of the trial's own records (transcript, scored, judged: record_types), which a row
# copies under the record's name: run, grade and judge write them, and their contract is the
# JSON Schemas (tests/core/test_record_types.py), not these constants.
TRIAL_RECORDS = {
    k
    for td in vars(record_types).values()
    if isinstance(td, type) and typing.is_typeddict(td) and td is not record_types.CitationRates
    for k in td.__annotations__
}
# Words a row shares with other records, where they mean something else.
GENERIC = {
    "n": "the count of every statistic's result (mcptrials.stats), the held-out agreement's too",
    "k": "pass@k's k in mcptrials.stats.pass_k",
    "a": "one side of every pair (the models x hosts pairs too), and the suffix of the sided keys",
    "b": "the other side",
    "share": "a share in several records (environment failures), and opencode's config key",
    "completed": "an outcome's name (core.outcomes.COMPLETED), which the hosts and grade spell",
    "missing": "summary.json's section of that name, and missing files and tools elsewhere",
    "grounded": "a citation's bucket (grade.citations.grounding): scored.json counts each bucket under its name",
    "hallucinated": "a citation's bucket, as `grounded`",
    "unresolved": "a citation's bucket, as `grounded`; and an unresolved repository (prepare.checkout)",
    "ungrounded": "a citation's ungrounded kind (grade.citations.grounding), counted under that name",
    "verdict": "the gate's margin test and stats.paired name their verdicts so",
    "diff": "replay's difference of two answers (gate.replay)",
    "patterns": "summary.json's section and its rows per tool (analyze.feedback)",
    "page": "a paging argument of MCP tools (providers.reference)",
    "environment": "an environment failure's kind (analyze.environment.ENVIRONMENT) and a method's name",
    "suite": "the scenario's field (scenario.schema.yaml), which the row copies",
    "attempts": "a trial's attempts/ folder and attempts.json (core.outcomes)",
    "server_peak_rss_kb": "run_meta.json's key (run.trial writes it), which the row copies",
    "outcomes": "core.outcomes' own word: OUTCOMES, the outcome names, would be the constant's name",
}
SHARED = IDENTITY | TRIAL_RECORDS | set(GENERIC)
OWNED = {k for td in OWNERS for k in td.__annotations__} - SHARED

# (module under src/mcptrials, key): a literal that is not the row's key there.
EXCEPTIONS = {
    ("report/trial_page.py", "fairness"): "the label of the trial page's fairness line, for readers",
    ("report/identity.py", "fairness"): "the label of the identity table's weights line, for readers",
    ("report/explorer.py", "fairness"): "the label of the explorer's fairness column, for readers",
    ("report/figures.py", "fairness"): "the name of a plot, plots/fairness.png",
    ("report/figures.py", "pass_hat_k"): "the name of a plot, plots/pass_hat_k.png",
    ("report/details.py", "passes"): "a column header, for readers",
    ("report/headline.py", "rank"): "a column header, for readers",
    ("report/heldout.py", "passes"): "the held-out verdict's word and its state's key (not a row)",
    ("importers/sense_scenario.py", "fairness"): "the reference bench's name of a check's layer",
    ("importers/sense_compare.py", "citation_grounding"): "the reference bench's scored.json key",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def spelled(source: str, owned: set[str] = OWNED) -> list[tuple[int, str]]:
    """(line, key) of each owned key the source spells: a string literal that is the whole key
    (a subscript, a dict key, a tuple of columns, an argument; inside an f-string's expression
    too), or a keyword argument of `.update(...)` or `dict(...)`. Docstrings and the text of
    f-strings are prose, not keys."""
    tree = ast.parse(source)
    prose = _docstrings(tree) | {
        id(v) for j in ast.walk(tree) if isinstance(j, ast.JoinedStr) for v in j.values if isinstance(v, ast.Constant)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in owned and id(node) not in prose:
            out.append((node.lineno, node.value))
        elif isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Attribute) and f.attr == "update") or (isinstance(f, ast.Name) and f.id == "dict"):
                out += [(node.lineno, kw.arg) for kw in node.keywords if kw.arg in owned]
    return sorted(out)


def test_every_owned_key_has_its_constant_and_no_other():
    constants = {name: v for name, v in vars(keys).items() if name.isupper() and isinstance(v, str)}
    assert constants == {k.upper(): k for k in OWNED}
    assert {"verified_rate", "fairness", "pass_hat_k", "n_not_checked", "by_form"} <= OWNED
    assert not OWNED & {"model", "tool", "outcome", "cost_usd", "n"}  # shared, never owned


def test_no_module_outside_core_spells_an_owned_key():
    found: dict[tuple[str, str], list[int]] = {}
    for path in sorted(SRC.rglob("*.py")):
        module = path.relative_to(SRC).as_posix()
        if module.startswith("core/"):
            continue
        for line, key in spelled(path.read_text()):
            found.setdefault((module, key), []).append(line)
    spelled_here = {
        f"{module}:{','.join(map(str, lines))}: {key!r} (use mcptrials.core.keys.{key.upper()})"
        for (module, key), lines in found.items()
        if (module, key) not in EXCEPTIONS
    }
    assert not spelled_here, "keys a typed row owns, spelled outside core:\n" + "\n".join(sorted(spelled_here))
    stale = set(EXCEPTIONS) - set(found)
    assert not stale, f"exceptions no module needs any more: {sorted(stale)}"


HAND_MADE = '''
"""A docstring naming verified_rate is prose."""
from mcptrials.core.keys import VERIFIED_RATE

COLUMNS = ("model", "pass_at_1")

def show(row, r):
    text = f"verified_rate {row[VERIFIED_RATE]} of {r['tool']}"
    r.update(diff_se=0.1, model="x")
    return row["verified_rate"], r.get("fairness"), {"mde": 1}, f"{r['t_p']:.3f}", dict(rank=1), text
'''


def test_the_check_sees_a_spelled_key_and_nothing_else():
    """A hand-made module: every way of spelling an owned key is found (a subscript, .get, a
    dict key, a tuple of columns, inside an f-string's expression, a keyword of update and
    dict); the constant, a docstring, an f-string's text and a shared key (model, tool) are not."""
    assert spelled(HAND_MADE) == [
        (5, "pass_at_1"),
        (9, "diff_se"),
        (10, "fairness"),
        (10, "mde"),
        (10, "rank"),
        (10, "t_p"),
        (10, "verified_rate"),
    ]
