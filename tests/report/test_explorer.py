"""The trial explorer (mcptrials.report.explorer) on the hand-made run of tests/runs_fixture.py, with one
missing trial (api_failed), one long hostile answer and patterns on the server's trials:
the data it embeds, escaping, the answer cap, the report's link, and the page itself in headless
Chromium (it lists the trials, a filter narrows them, sorting orders them, the search finds an
answer, "show more" adds rows, a link opens an existing trial page, a link's #filters apply)."""

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from mcptrials.report import explorer as ex
from mcptrials.matrix.errors import ConfigError

import runs_fixture as fx
from browser import chromium

MISSING = ("reference", "baseline", "s3", 1)
LONG = ("sonnet", "git", "s1", 2)
NEEDLE = "Zebrafish-Needle"
# a hostile answer: it tries to end the data element and run a script of its own
HOSTILE = "</script><script>document.body.setAttribute('data-pwned','1')</script><!-- "
LONG_ANSWER = f"The answer names {NEEDLE} first. {HOSTILE}" + "filler text " * 500  # over ANSWER_CAP
N_TRIALS = 2 * 2 * 3 * 2


def patterns_of(row: dict):
    """What the pattern detectors (issue 18 part 1) would add; the baseline's rows carry none,
    as rows made before the detectors existed."""
    if row["tool"] == "baseline":
        return None
    return {"repeated_call": row["trial"], "unused_tool": 0}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explorer")
    cfg, runs = fx.build(tmp, missing={MISSING: ("api_failed", "HTTP 529 overloaded after 3 retries")})
    t_path = runs / LONG[0] / "loop" / LONG[1] / "tiny" / LONG[2] / str(LONG[3]) / "transcript.json"
    t = json.loads(t_path.read_text())
    t["steps"][0]["answer_text"] = LONG_ANSWER
    t_path.write_text(json.dumps(t))
    agg, out = tmp / "aggregate", tmp / "report"
    fx.aggregate(cfg, runs, agg)
    summary = json.loads((agg / "summary.json").read_text())
    for r in summary["trials"]:
        r.pop("patterns", None)
        if patterns_of(r) is not None:
            r["patterns"] = patterns_of(r)
    (agg / "summary.json").write_text(json.dumps(summary))
    assert fx.report(cfg, runs, agg, out, tmp / "none.json") == 0
    return {"runs": runs, "out": out, "summary": summary}


def embedded(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="explorer-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1))


def by_key(data: dict) -> dict:
    """{(model, tool, scenario, trial): {column: value}} of the embedded rows."""
    keys = [c["key"] for c in data["columns"]] + data["extra"]
    rows = [dict(zip(keys, r)) for r in data["rows"]]
    return {(r["model"], r["tool"], r["scenario"], r["trial"]): r for r in rows}


# --- the data --------------------------------------------------------------------------------


def test_embeds_every_trial_with_its_figures(run):
    page = (run["out"] / "explorer.html").read_text()
    data = embedded(page)
    rows = by_key(data)
    assert len(rows) == N_TRIALS == len(run["summary"]["trials"])
    src = {(r["model"], r["tool"], r["scenario"], r["trial"]): r for r in run["summary"]["trials"]}
    r, s = rows[("reference", "git", "s1", 1)], src[("reference", "git", "s1", 1)]
    assert (r["result"], r["outcome"], r["host"]) == ("pass", "completed", "loop")
    # the fixture's git trial: keyword 1.0, 3 of 4 citations grounded, quality mean 0.7, wall 20 s
    assert (r["keyword_coverage"], r["citation_grounding"], r["quality"], r["wall_seconds"]) == (1.0, 0.75, 0.7, 20.0)
    assert r["fairness"] == s["fairness"] is not None
    assert r["exact"] is None and r["state"] is None  # the fixture's scenarios have no exact or state check
    assert r["cost_usd"] is None and rows[("sonnet", "git", "s1", 1)]["cost_usd"] == pytest.approx(2 * 0.0062775)
    assert r["patterns"] == {"repeated_call": 1, "unused_tool": 0}
    assert rows[("reference", "baseline", "s1", 1)]["patterns"] is None  # no detector ran: an empty cell
    assert r["answer"] == f"The helper is in src/util.py:1. {fx.HOSTILE}"
    assert r["page"] == "trials/reference/git/s1/1.html" and (run["out"] / r["page"]).is_file()
    crashed = rows[("reference", "git", "s2", 2)]
    assert (crashed["result"], crashed["outcome"], crashed["fairness"]) == ("fail", "server_crashed", 0.0)
    assert data["patterns"] == ["repeated_call"]  # only patterns seen at least once are offered
    assert data["produced_by"]["harness_versions"] == ["0.1.0"]
    assert data["produced_by"]["scenario_set_sha256"] == run["summary"]["identity"]["scenario_set_sha256"]


def test_missing_trial_is_marked_with_its_reason_and_has_no_score(run):
    r = by_key(embedded((run["out"] / "explorer.html").read_text()))[MISSING]
    assert (r["result"], r["outcome"], r["why"]) == ("missing", "api_failed", "api_failed")
    assert all(r[k] is None for k in ("fairness", "quality", "keyword_coverage", "citation_grounding"))


def test_ratio_of_exact_and_state_checks():
    row = {"page": "trials/m/t/s/1.html", "exact_passed": 1, "exact_steps": 2, "state_passed": 0, "state_steps": 0}
    r = dict(zip([c[0] for c in ex.COLUMNS] + list(ex.EXTRA), ex.explorer_row(row, "a")))
    assert r["exact"] == [1, 2] and r["state"] is None


def test_hostile_answer_cannot_end_the_data_element(run):
    page = (run["out"] / "explorer.html").read_text()
    # two script elements only: the data and the page's code; the answer's own tags are \u escapes
    assert page.count("</script>") == 2 and page.count("<script") == 2
    assert "<!--" not in page
    r = by_key(embedded(page))[LONG]
    assert r["answer"].startswith(f"The answer names {NEEDLE} first. {HOSTILE}")


def test_script_json_round_trips_and_escapes():
    data = {"a": "</script><!-- & \u2028 >"}
    text = ex.script_json(data)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == data


def test_long_answer_is_cut_at_the_cap_and_the_page_says_so(run):
    page = (run["out"] / "explorer.html").read_text()
    data = embedded(page)
    r = by_key(data)[LONG]
    assert len(r["answer"]) == ex.ANSWER_CAP == data["answer_cap"] and r["answer_cut"] == len(LONG_ANSWER)
    assert data["answers_cut"] == 1
    assert f"up to {ex.ANSWER_CAP:,} characters per trial (1 trial(s) cut)" in page


def test_self_contained(run):
    page = (run["out"] / "explorer.html").read_text()
    code = page.split('id="explorer-data">')[0] + page.split("</script>", 1)[1]  # the page without its data
    assert not re.search(r"\b(src|srcset)\s*=", code) and "<link" not in code
    assert "http://" not in code and "https://" not in code and "fetch(" not in code


def test_answers_steps_joined_and_missing_transcript(tmp_path):
    t = {
        "steps": [
            {"index": 1, "answer_text": "second"},
            {"index": 0, "answer_text": "first"},
            {"index": 2, "answer_text": ""},
        ]
    }
    assert ex.answer_text(t) == "first\n\nsecond"
    trial = {
        "model_name": "m",
        "host": "loop",
        "tool": "t",
        "repo": "r",
        "scenario": "s",
        "trial": 1,
        "page": "trials/m/t/s/1.html",
    }
    assert ex.read_answers([trial], tmp_path) == {trial["page"]: None}
    r = dict(zip([c[0] for c in ex.COLUMNS] + list(ex.EXTRA), ex.explorer_row(trial, None)))
    assert r["answer"] == "(no transcript.json)"
    d = tmp_path / "m" / "loop" / "t" / "r" / "s" / "1"
    d.mkdir(parents=True)
    (d / "transcript.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"transcript\.json: not valid JSON.*rerun its stage"):
        ex.read_answers([trial], tmp_path)


def test_report_links_the_explorer(run):
    index = (run["out"] / "index.html").read_text()
    assert '<a href="explorer.html">Trial explorer</a>' in index
    assert f"every trial ({N_TRIALS})" in index
    assert "[Trial explorer](explorer.html)" in (run["out"] / "report.md").read_text()


# --- in headless Chromium --------------------------------------------------------------------

# Runs after the page's own script: acts as a reader would (select, type, click) and records
# what the table shows after each action as JSON in <pre id="probe">.
PROBE = r"""<script>
(function () {
  function cells(col) { return Array.from(document.querySelectorAll('#rows td[data-col="' + col + '"]')).map(function (td) { return td.textContent; }); }
  function rowsShown() { return document.querySelectorAll("#rows tr").length; }
  function select(key, value) { var s = document.getElementById("filter-" + key); s.value = value; s.dispatchEvent(new Event("change")); }
  function type(text) { var s = document.getElementById("search"); s.value = text; s.dispatchEvent(new Event("input")); }
  function header(key) { document.querySelector('th[data-key="' + key + '"]').click(); }
  var out = {ready: document.body.getAttribute("data-ready"), initial: rowsShown(), count: document.getElementById("count").textContent,
             results: cells("result"), links: Array.from(document.querySelectorAll("#rows a.trial-link")).map(function (a) { return a.getAttribute("href"); }),
             options: {}};
  ["tool", "model", "scenario", "result", "outcome", "patterns"].forEach(function (k) {
    out.options[k] = Array.from(document.getElementById("filter-" + k).options).map(function (o) { return o.value; });
  });
  select("tool", "git"); out.tool_git = cells("tool");
  select("scenario", "s2"); out.git_s2 = cells("result");
  select("tool", ""); select("scenario", "");
  select("result", "missing"); out.missing = cells("result");
  select("result", "");
  select("patterns", "repeated_call"); out.pattern = cells("patterns");
  select("patterns", "");
  header("fairness"); out.fair_asc = cells("fairness");
  header("fairness"); out.fair_desc = cells("fairness"); out.hash = location.hash;
  header("scenario"); out.scen_asc = cells("scenario");
  type("zebrafish-needle"); out.search = {rows: rowsShown(), mark: Array.from(document.querySelectorAll("#rows mark")).map(function (m) { return m.textContent; }),
                                          tool: cells("tool"), trial: cells("trial"), model: cells("model")};
  type("no answer says this"); out.search_none = rowsShown();
  type("");
  out.pwned = document.body.getAttribute("data-pwned");
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def probe(page_html: str, where: Path, tmp_path: Path, fragment: str = "", script: str = PROBE) -> dict:
    """Load the page with the probe beside the report (relative links stay valid); the probe's JSON."""
    p = where / "probe_explorer.html"
    p.write_text(page_html.replace("</body>", script + "</body>"))
    res = chromium(["--virtual-time-budget=5000", "--dump-dom", p.as_uri() + fragment], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    m = re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S)
    assert m, res.stdout[-3000:]
    return json.loads(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&"))


def numbers(cells):
    return [float(c) for c in cells if c != "–"]


def test_page_in_chromium(run, tmp_path):
    out = probe((run["out"] / "explorer.html").read_text(), run["out"], tmp_path)
    assert out["ready"] == "1" and out["initial"] == N_TRIALS
    assert out["count"] == f"showing {N_TRIALS} of {N_TRIALS} matching trial(s); {N_TRIALS} in all"
    assert out["options"]["tool"] == ["", "baseline", "git"] and out["options"]["model"] == ["", "reference", "sonnet"]
    assert out["options"]["result"] == ["", "fail", "missing", "pass"]
    assert out["options"]["patterns"] == ["", "repeated_call"]
    assert "api_failed" in out["options"]["outcome"] and "server_crashed" in out["options"]["outcome"]
    assert out["results"].count("missing: api_failed") == 1
    # filters narrow: 12 git trials; git on s2: per model trial 1 passes, trial 2 crashed
    assert out["tool_git"] == ["git"] * 12
    assert sorted(out["git_s2"]) == ["fail", "fail", "pass", "pass"]
    assert out["missing"] == ["missing: api_failed"]
    assert sorted(out["pattern"]) == ["repeated_call 1"] * 6 + ["repeated_call 2"] * 6  # the git trials, none 0
    # sorting orders: ascending then descending, the missing trial's empty fairness last both ways
    asc, desc = numbers(out["fair_asc"]), numbers(out["fair_desc"])
    assert len(asc) == N_TRIALS - 1 and asc == sorted(asc) and desc == sorted(asc, reverse=True) and asc[0] < asc[-1]
    assert out["fair_asc"][-1] == "–" and out["fair_desc"][-1] == "–"
    assert out["hash"] == "#sort=-fairness"
    assert out["scen_asc"] == sorted(out["scen_asc"]) and out["scen_asc"][0] == "s1"
    # the search finds the one answer holding the needle (case-insensitive), marked in its snippet
    assert out["search"]["rows"] == 1 and out["search"]["mark"] == [NEEDLE]
    assert (out["search"]["model"], out["search"]["tool"], out["search"]["trial"]) == (["sonnet"], ["git"], ["#2"])
    assert out["search_none"] == 0
    assert out["pwned"] is None  # the hostile answer stayed text
    # every row links to its trial page, which exists
    assert len(out["links"]) == N_TRIALS
    for link in out["links"]:
        assert (run["out"] / unquote(link)).is_file(), link


def test_linked_trial_page_opens(run, tmp_path):
    data = embedded((run["out"] / "explorer.html").read_text())
    page = run["out"] / unquote(by_key(data)[LONG]["page"])
    res = chromium(["--dump-dom", page.as_uri()], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    assert 'id="trial-summary"' in res.stdout and "sonnet / git / s1 / trial 2" in res.stdout


SHOW_MORE = r"""<script>
(function () {
  var out = {first: document.querySelectorAll("#rows tr").length, hidden_before: document.getElementById("more").hidden};
  document.getElementById("more").click(); out.second = document.querySelectorAll("#rows tr").length;
  out.tool = Array.from(document.querySelectorAll('#rows td[data-col="tool"]')).map(function (td) { return td.textContent; });
  out.search = document.getElementById("search").value;
  out.count = document.getElementById("count").textContent;
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def test_show_more_and_filters_from_the_link(run, tmp_path):
    data = ex.explorer_data(run["summary"], ex.read_answers(run["summary"]["trials"], run["runs"]))
    data["rows_per_page"] = 5
    # a link such as the pattern counts' may carry filters: here the git trials whose answer says 'helper'
    out = probe(ex.explorer_html(data), run["out"], tmp_path, "#tool=git&q=helper", SHOW_MORE)
    assert out["search"] == "helper" and out["hidden_before"] is False
    # 12 git trials: 2 crashed with no answer and the long answer does not say 'helper', so 9 match
    assert out["first"] == 5 and out["second"] == 9
    assert out["tool"] == ["git"] * 9 and out["count"] == "showing 9 of 9 matching trial(s); 24 in all"


WIDTH = r"""<script>
(function () {
  var pre = document.createElement("pre"); pre.id = "probe";
  pre.textContent = JSON.stringify({page: document.documentElement.scrollWidth, window: window.innerWidth});
  document.body.appendChild(pre);
})();
</script>"""


def test_the_explorer_fits_a_1400_pixel_window(run, tmp_path):
    """No sideways scrolling at 1,400 pixels: answers wrap, patterns wrap (issue 27 item 7)."""
    p = run["out"] / "probe_width.html"
    p.write_text((run["out"] / "explorer.html").read_text().replace("</body>", WIDTH + "</body>"))
    res = chromium(
        ["--window-size=1400,1000", "--virtual-time-budget=5000", "--dump-dom", p.as_uri()], tmp_path / "profile"
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(re.search(r'<pre id="probe">(.*?)</pre>', res.stdout, re.S).group(1).replace("&quot;", '"'))
    assert out["window"] == 1400 and out["page"] <= out["window"], out
