"""Open the report in headless Debian Chromium: the headline table, the plots (decoded by the
browser) and a linked trial page render. Chromium is required: `make test` installs it."""

import base64
import re
from urllib.parse import unquote

import pytest


import runs_fixture as fx
from browser import chromium

# Run after load: record each image's decoded size and the number of rows of each headline table.
PROBE = """<script>window.addEventListener("load", function () {
  var imgs = []; for (var i of document.images) imgs.push(i.naturalWidth + "x" + i.naturalHeight);
  var rows = []; for (var t of document.querySelectorAll("table.headline")) rows.push(t.id + ":" + t.tBodies[0].rows.length);
  document.body.setAttribute("data-images", imgs.join(","));
  document.body.setAttribute("data-headline-rows", rows.join(","));
});</script>"""


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    cfg, runs = fx.build(tmp, models=("reference",))
    agg, out = fx.aggregate_and_report(tmp, cfg, runs)
    return out


def test_index_renders_headline_and_plots(report, tmp_path):
    probe = report / "probe.html"  # beside index.html, so relative links stay valid
    probe.write_text((report / "index.html").read_text().replace("</body>", PROBE + "</body>"))
    res = chromium(["--virtual-time-budget=5000", "--dump-dom", probe.as_uri()], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    # the headline table is in the rendered DOM with one row per tool
    rows = re.search(r'data-headline-rows="([^"]*)"', dom).group(1)
    assert rows == "headline-reference:2", rows
    assert "within noise" in dom and "reference (deterministic agent, no language model)" in dom
    # every plot was decoded by the browser into a real image
    sizes = re.search(r'data-images="([^"]*)"', dom).group(1).split(",")
    assert len(sizes) == 5 and all(int(s.split("x")[0]) > 100 and int(s.split("x")[1]) > 100 for s in sizes), sizes
    # and the data: URI holds a PNG
    src = re.search(r'<img[^>]*src="data:image/png;base64,([^"]+)"', dom).group(1)
    assert base64.b64decode(src)[:8] == b"\x89PNG\r\n\x1a\n"


def test_linked_trial_page_renders(report, tmp_path):
    index = (report / "index.html").read_text()
    link = re.search(r'<a href="(trials/reference/git/s2/2\.html)"', index).group(1)
    page = report / unquote(link)
    res = chromium(["--dump-dom", page.as_uri()], tmp_path / "profile")
    assert res.returncode == 0, res.stderr[-2000:]
    dom = res.stdout
    assert 'id="trial-summary"' in dom and "server_crashed" in dom
    assert "Step 0: locate" in dom
    assert "<script>alert" not in dom  # the transcript's markup stays text
    assert "&lt;script&gt;alert" in dom


def test_screenshot(report, tmp_path):
    shot = tmp_path / "index.png"
    res = chromium(
        ["--window-size=1280,2000", f"--screenshot={shot}", (report / "index.html").as_uri()], tmp_path / "profile"
    )
    assert res.returncode == 0, res.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 60_000  # a near-blank page is about 12 kB
