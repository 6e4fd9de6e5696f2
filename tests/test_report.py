"""mcptrials report on the hand-made run of tests/runs_fixture.py: the files, the headline
table, the reference labels, the trial links, escaping, no network references, and the
held-out warning."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from mcptrials.cli import main

import runs_fixture as fx


class Links(HTMLParser):
    """Every src/href value, and the text of each table id."""

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("src", "href") and v is not None:
                self.refs.append((tag, k, v))
            if k == "id":
                self.ids.add(v)


def parse(path: Path) -> Links:
    p = Links()
    p.feed(path.read_text())
    return p


def write_heldout(d: Path, rho: float, lockfile="9" * 64) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    agreement = {"schema": "mcptrials/heldout/1", "n": 3, "rho": rho, "lo": -0.5, "hi": 1.0, "p": 0.3,
                 "threshold": 0.85, "passes": rho >= 0.85, "lockfile_sha256": lockfile,
                 "items": [{"id": "t1", "scenario": "s1", "gold": 0.9, "judged": 0.8}]}
    (d / "agreement.json").write_text(json.dumps(agreement))
    (d / "lock_verified.json").write_text(json.dumps({"locked": "locked", "lockfile_sha256": lockfile,
                                                      "files": {"gold.json": "0" * 64}, "problems": []}))
    return d / "agreement.json"


def make_report(tmp: Path, rho: float | None = 0.5):
    cfg, runs = fx.build(tmp)
    agg, out = tmp / "aggregate", tmp / "report"
    assert main(["aggregate", "--config", str(cfg), "--runs", str(runs), "--out-dir", str(agg)]) == 0
    heldout = write_heldout(tmp / "heldout", rho) if rho is not None else tmp / "heldout" / "agreement.json"
    assert main(["report", "--config", str(cfg), "--aggregate", str(agg), "--heldout", str(heldout),
                 "--runs", str(runs), "--out-dir", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return make_report(tmp_path_factory.mktemp("rep"))


def test_files_exist(report):
    assert (report / "index.html").stat().st_size > 0
    assert (report / "report.md").stat().st_size > 0
    pages = list((report / "trials").rglob("*.html"))
    assert len(pages) == 24
    assert (report / "trials/reference/git/s2/2.html").is_file()


def test_headline_table(report):
    html = (report / "index.html").read_text()
    ids = parse(report / "index.html").ids
    assert {"headline-reference", "headline-sonnet"} <= ids
    table = html[html.index('id="headline-reference"'):]
    table = table[:table.index("</table>")]
    assert "Δ vs baseline [95% CI]" in table and "pass^2" in table
    assert "+0.058" in table            # the paired difference of test_aggregate, rounded
    assert "within noise" in table
    md = (report / "report.md").read_text()
    assert "| tool | fairness [95% CI] | Δ vs baseline [95% CI] |" in md
    assert "| git | 0.640 [" in md


def test_reference_labels(report):
    for name in ("index.html", "report.md"):
        text = (report / name).read_text()
        assert "reference (deterministic agent, no language model)" in text
        assert "reference (deterministic judge" in text
    trial = (report / "trials/reference/git/s1/1.html").read_text()
    assert "reference (deterministic agent, no language model)" in trial


def test_every_link_resolves(report):
    index = parse(report / "index.html")
    trial_links = [v for tag, k, v in index.refs if tag == "a" and v.startswith("trials/")]
    assert len(trial_links) == 24
    for v in trial_links:
        assert (report / unquote(v)).is_file(), v
    page = report / "trials/sonnet/git/s2/2.html"
    back = [v for tag, k, v in parse(page).refs if tag == "a"]
    assert back and all((page.parent / unquote(v)).resolve().is_file() for v in back)
    md = (report / "report.md").read_text()
    for v in re.findall(r"\]\(([^)]+)\)", md):
        assert (report / unquote(v)).is_file(), v   # trial pages and plots/*.png


def test_no_network_references(report):
    for path in [report / "index.html", *sorted((report / "trials").rglob("*.html"))]:
        for tag, k, v in parse(path).refs:
            assert not re.match(r"\s*(https?:)?//", v, re.I), (path, tag, k, v)
        assert "@import" not in path.read_text()
    imgs = [v for tag, k, v in parse(report / "index.html").refs if tag == "img"]
    assert len(imgs) == 5 and all(v.startswith("data:image/png;base64,") for v in imgs)


def test_transcript_text_is_escaped(report):
    page = (report / "trials/reference/git/s1/1.html").read_text()
    assert "<script>" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "<details>" in page   # the 3,000-character tool result is folded
    assert "&lt;i&gt;" in (report / "index.html").read_text()   # scenario titles too


def test_trial_page_has_scores_and_judge(report):
    page = (report / "trials/reference/git/s2/2.html").read_text()
    assert "server_crashed" in page and "FAIL" in page
    assert "scored 0: the trial did not complete" in page
    assert "connection closed" in page   # the error event
    ok = (report / "trials/reference/git/s1/1.html").read_text()
    assert "0.747 = 0.10×keyword 1.000" in ok
    assert "map_quality" in ok and "repeat 2: key point" in ok


def test_low_heldout_rho_warns_at_the_top(report):
    html = (report / "index.html").read_text()
    warn = html.index("Held-out judge agreement rho = 0.500")
    assert warn < html.index('id="headline-reference"')
    assert "BELOW the threshold" in html
    assert "verified: 1 file(s) match the lockfile" in html


def test_flags_and_sections(report):
    html = (report / "index.html").read_text()
    assert "ready for the regression suite" in html
    assert "likely a defect in the task or its grader" in html
    assert "the smallest difference this run can detect is" in html
    for section in ("errors-table", "profile-table", "judge-criteria", "adoption-table", "identity-table"):
        assert f'id="{section}"' in html


def test_passing_heldout_has_no_warning_and_missing_one_warns(tmp_path):
    ok = make_report(tmp_path / "ok", rho=0.9)
    assert 'class="warning"' not in (ok / "index.html").read_text()
    missing = make_report(tmp_path / "missing", rho=None)
    text = (missing / "index.html").read_text()
    assert "held-out agreement was not computed" in text and "lock was not verified" in text
