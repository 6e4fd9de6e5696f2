"""The demo content: demo/shop.bundle is reproducible and matches demo/shop, and every
scenario about it validates, cites real lines at the bundle's commit, and states answers
that the demo code really gives."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from decimal import Decimal

import pytest

from mcptrials.matrix.scenario import load_scenario
from mcptrials.prepare.demo_repo import DEMO_BUNDLE, DEMO_SRC, build_bundle, bundle_commit, clean_git_env, demo_files
from mcptrials.core.paths import ROOT

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
DEMO_SCENARIOS = {
    "checkout-flow": "train",
    "round-money-impact": "train",
    "limits-and-alerts": "train",
    "commit-history": "train",
    "discount-selection": "held-out",
}
GOLD = re.compile(
    r"^(?P<path>[^:\s]+):(?:(?P<a>\d+)(?:[-\u2013](?P<b>\d+))?|(?P<sym>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*))$"
)


def git(*args, cwd=None, env=None) -> str:
    r = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr}"
    return r.stdout


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A clone of demo/shop.bundle: (work tree, commit, git env)."""
    tmp = tmp_path_factory.mktemp("demo")
    env = clean_git_env(tmp)
    commit = bundle_commit(DEMO_BUNDLE)
    tree = tmp / "shop"
    git("clone", "-q", str(DEMO_BUNDLE), str(tree), env=env)
    return tree, commit, env


def show(shipped, path: str) -> str | None:
    tree, commit, env = shipped
    r = subprocess.run(["git", "show", f"{commit}:{path}"], cwd=tree, env=env, capture_output=True)
    return r.stdout.decode() if r.returncode == 0 else None


# --- the bundle ---------------------------------------------------------------


def test_build_is_reproducible_and_equals_the_shipped_bundle(tmp_path):
    a = build_bundle(DEMO_SRC, tmp_path / "a.bundle")
    b = build_bundle(DEMO_SRC, tmp_path / "b.bundle")
    assert re.fullmatch(r"[0-9a-f]{40}", a)
    assert a == b == bundle_commit(tmp_path / "a.bundle")
    assert a == bundle_commit(DEMO_BUNDLE), (
        "demo/shop changed: rebuild with `mcptrials demo-bundle` and update config.yaml"
    )


def test_bundle_tree_equals_the_demo_files(shipped):
    tree, commit, env = shipped
    assert git("rev-parse", "HEAD", cwd=tree, env=env).strip() == commit
    assert git("rev-parse", "--abbrev-ref", "HEAD", cwd=tree, env=env).strip() == "main"
    listing = git("ls-tree", "-r", commit, cwd=tree, env=env).splitlines()
    modes = {line.split()[0] for line in listing}
    names = [line.split("\t", 1)[1] for line in listing]
    assert modes == {"100644"}
    assert names == demo_files(DEMO_SRC)
    for name in names:
        assert (tree / name).read_bytes() == (DEMO_SRC / name).read_bytes(), name
    assert git("log", "--format=%an <%ae> %ad|%cn <%ce> %cd", "--date=iso-strict", cwd=tree, env=env).strip() == (
        "ACME Shop <dev@acme.example> 2024-05-01T12:00:00+00:00|ACME Shop <dev@acme.example> 2024-05-01T12:00:00+00:00"
    )


def test_demo_files_leave_out_generated_files(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"x")
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("hi\n")
    assert demo_files(tmp_path) == ["README.md", "pkg/m.py"]


def test_cli_prints_the_commit(tmp_path, capsys):
    from mcptrials.cli import main

    out = tmp_path / "shop.bundle"
    assert main(["demo-bundle", "--src", str(DEMO_SRC), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == bundle_commit(out) == bundle_commit(DEMO_BUNDLE)


# --- the scenarios --------------------------------------------------------------


def test_the_demo_scenarios_exist_with_their_splits():
    found = {p.stem: load_scenario(p) for p in SCENARIOS}
    for sid, split in DEMO_SCENARIOS.items():
        assert sid in found, f"scenarios/{sid}.yaml is missing"
        assert found[sid].repo == "demo" and found[sid].split == split


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_scenario_validates_and_is_complete(path):
    sc = load_scenario(path)
    if sc.id not in DEMO_SCENARIOS:
        return
    for step in sc.data["steps"]:
        where = f"{path.name}: step {step['name']}"
        assert step["citations"]["gold"], where
        assert step["key_points"] and step["expected_tools"], where
        assert any(c["required"] for c in step["checks"]) or step.get("exact_answer"), where
        assert "file:line" in step["prompt"] or step.get("exact_answer"), (
            f"{where}: the prompt should ask for file:line"
        )
        rubric = step.get("rubric") or sc.data["rubric"]
        assert abs(sum(c["weight"] for c in rubric["criteria"]) - 1) < 1e-9, where
        for c in rubric["criteria"]:
            for kp in c.get("key_points", []):
                assert kp in step["key_points"], f"{where}: criterion {c['name']} names an unknown key point {kp!r}"


def _demo_gold():
    for path in SCENARIOS:
        sc = load_scenario(path)
        if sc.repo != "demo":
            continue
        for step in sc.data["steps"]:
            for g in (step.get("citations") or {}).get("gold", []):
                yield pytest.param(g, id=f"{sc.id}/{step['name']}/{g}")


@pytest.mark.parametrize("gold", list(_demo_gold()))
def test_gold_citation_points_at_real_code(shipped, gold):
    m = GOLD.match(gold)
    assert m, f"{gold!r} is not path:N, path:N-M or path:Symbol"
    text = show(shipped, m["path"])
    assert text is not None, f"{m['path']} is not in the bundle's commit"
    n_lines = len(text.splitlines())
    if m["sym"]:
        for part in m["sym"].split("."):
            assert re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text), f"{gold}: {part} not in the file"
    else:
        a, b = int(m["a"]), int(m["b"] or m["a"])
        assert 1 <= a <= b <= n_lines, f"{gold}: outside 1..{n_lines}"
        assert "".join(text.splitlines()[a - 1 : b]).strip(), f"{gold}: only blank lines"


# --- the answers the scenarios expect, recomputed from the code -----------------------


def _step(sid: str, name: str) -> dict:
    sc = load_scenario(ROOT / "scenarios" / f"{sid}.yaml")
    return next(s for s in sc.data["steps"] if s["name"] == name)


def _package_sources(shipped) -> dict[str, str]:
    tree, commit, env = shipped
    names = git("ls-tree", "-r", "--name-only", commit, "acme_shop", cwd=tree, env=env).split()
    return {n: show(shipped, n) for n in names if n.endswith(".py")}


def test_round_money_call_count(shipped):
    calls = []
    for name, src in _package_sources(shipped).items():
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Call):
                f = node.func
                if (isinstance(f, ast.Name) and f.id == "round_money") or (
                    isinstance(f, ast.Attribute) and f.attr == "round_money"
                ):
                    calls.append(f"{name}:{node.lineno}")
    step = _step("round-money-impact", "count-call-sites")
    assert len(calls) == int(step["exact_answer"]["value"])
    gold = {g for g in step["citations"]["gold"] if not g.startswith("acme_shop/utils.py")}
    assert gold == set(calls)


def test_max_line_quantity_value(shipped):
    src = _package_sources(shipped)["acme_shop/constants.py"]
    value = next(
        n.value.value
        for n in ast.parse(src).body
        if isinstance(n, ast.Assign) and [t.id for t in n.targets] == ["MAX_LINE_QUANTITY"]
    )
    assert value == _step("limits-and-alerts", "max-line-quantity")["exact_answer"]["value"]


def test_commit_history_answer_is_the_bundle_commit(shipped):
    tree, commit, env = shipped
    step = _step("commit-history", "checked-out-commit")
    assert step["exact_answer"]["value"] == commit
    author, date, message = git("log", "-1", "--format=%an|%ad|%s", "--date=iso", cwd=tree, env=env).strip().split("|")
    assert f"author {author}" in step["key_points"] and f"message {message}" in step["key_points"]
    assert f"date {date[:19]}" in step["key_points"]


def test_discount_subclasses(shipped):
    src = _package_sources(shipped)["acme_shop/services/discounts.py"]
    bases = {
        n.name: [b.id for b in n.bases if isinstance(b, ast.Name)]
        for n in ast.parse(src).body
        if isinstance(n, ast.ClassDef)
    }

    def derives(cls):
        return any(b == "Discount" or (b in bases and derives(b)) for b in bases.get(cls, []))

    assert sorted(c for c in bases if derives(c)) == [
        "BulkDiscount",
        "CategoryDiscount",
        "FixedAmountDiscount",
        "PercentageDiscount",
    ]


def acme_shop(shipped, *args) -> subprocess.CompletedProcess:
    tree, _, _ = shipped
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}
    env.pop("ACME_SHOP_CONFIG", None)
    return subprocess.run(
        [sys.executable, "-m", "acme_shop.cli", *args], cwd=tree, env=env, capture_output=True, text=True, timeout=60
    )


def test_quote_matches_the_held_out_answer(shipped):
    r = acme_shop(shipped, "quote", "--customer", "c-17", "--coupon", "WELCOME10", "BK-101:2", "GR-201")
    assert r.returncode == 0, r.stderr
    rows = {line[:24].strip(): Decimal(re.sub(r"[^\d.-]", "", line[24:])) for line in r.stdout.splitlines()}
    step = _step("discount-selection", "which-discount-wins")
    assert rows["Total"] == Decimal(step["exact_answer"]["value"])
    assert rows["Discount (BOOKWORM)"] == Decimal("-7.47")
    assert (rows["Subtotal"], rows["Shipping"], rows["Tax"]) == (Decimal("66.30"), Decimal("4.90"), Decimal("4.12"))


def test_cli_outcomes_the_scenarios_describe(shipped):
    over_limit = acme_shop(shipped, "checkout", "--customer", "c-9", "EL-302:3")
    assert over_limit.returncode == 2
    assert "acme-shop: error: EL-302: at most 2 units per order (cart has 0)" in over_limit.stderr
    declined = acme_shop(shipped, "checkout", "--customer", "c-1", "EL-302:2", "BK-101")
    assert declined.returncode == 4
    assert "exceeds the limit of 1500.00" in declined.stderr


def test_the_demo_code_passes_its_own_tests(shipped):
    tree, _, _ = shipped
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(tree)}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout + r.stderr
