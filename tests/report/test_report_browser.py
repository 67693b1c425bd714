"""The report page in a real browser: shapes per GPU and slice, messages, pixels, no console errors."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli import app
from gpufleet.report.html import PALETTE
from tests.report.browser import chromium_driver, console_errors
from tests.report.fleet import ROOT, write_big_fleet

runner = CliRunner()


@pytest.fixture(scope="module")
def browser():
    driver = chromium_driver()
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    big = tmp_path_factory.mktemp("big")
    write_big_fleet(big)
    pages = {}
    for stack, project in (("dev", ROOT), ("mig", ROOT), ("greed", ROOT), ("dra", ROOT), ("big", big)):
        page = out / f"{stack}.html"
        r = runner.invoke(app, ["report", "--stack", stack, "--project-dir", str(project), "--out", str(page)])
        assert r.exit_code == 0, r.output
        pages[stack] = page
    return pages


def _open(browser, page: Path) -> None:
    browser.get_log("browser")  # drop what earlier pages logged
    browser.get(page.resolve().as_uri())


def _shapes(browser, css: str):
    from selenium.webdriver.common.by import By

    return browser.find_elements(By.CSS_SELECTOR, css)


def test_console_errors_are_seen_at_all(browser, tmp_path):
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><title>t</title><script>console.error('seen by the test')</script>")
    _open(browser, page)
    seen = []
    for _ in range(20):  # the browser hands its log over asynchronously: poll briefly
        seen += console_errors(browser)
        if any("seen by the test" in e["message"] for e in seen):
            break
        time.sleep(0.1)
    assert any("seen by the test" in e["message"] for e in seen)


def test_dev_page_draws_one_t4_split_into_four_mps_shares_without_console_errors(browser, pages):
    _open(browser, pages["dev"])
    assert len(_shapes(browser, "svg.node rect.gpu")) == 1
    shares = _shapes(browser, "svg.node rect.unit")
    assert len(shares) == 4
    assert all("mps" in s.get_attribute("class").split() for s in shares)
    assert sum("free" in s.get_attribute("class").split() for s in shares) == 1
    assert console_errors(browser) == []


def test_mig_page_shows_seven_1g5gb_slices_and_the_jobs_on_them(browser, pages):
    _open(browser, pages["mig"])
    assert len(_shapes(browser, "svg.node rect.gpu")) == 1
    slices = _shapes(browser, "svg.node rect.unit")
    assert len(slices) == 7
    titles = [s.find_element("tag name", "title").get_attribute("textContent") for s in slices]
    assert all("MIG 1g.5gb" in t for t in titles)
    assert [t.rsplit(": ", 1)[1] for t in titles[:2]] == ["Job/default/vectoradd-1", "Job/default/vectoradd-2"]
    assert "7\u00d7 1g.5gb" in browser.find_element("tag name", "body").text
    assert console_errors(browser) == []


def test_pending_workload_and_its_scheduler_message_are_on_the_page(browser, pages):
    _open(browser, pages["greed"])
    text = browser.find_element("css selector", "#not-running").text
    assert "Deployment/greed/greedy-trainer" in text
    assert "0/1 nodes are available: 1 Insufficient nvidia.com/gpu." in text
    assert console_errors(browser) == []


def test_screenshot_shows_the_workload_colours(browser, pages):
    from PIL import Image

    _open(browser, pages["mig"])
    _ = browser.find_element("css selector", "svg.node").location_once_scrolled_into_view  # reading it scrolls
    image = Image.open(io.BytesIO(browser.get_screenshot_as_png())).convert("RGB")
    colours = {c for _, c in image.getcolors(maxcolors=1 << 20)}
    assert len(colours) > 16, "the screenshot is (nearly) blank"
    wanted = {tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in PALETTE[:2]}  # vectoradd-1, vectoradd-2
    assert wanted <= colours


def test_thousand_node_page_is_small_collapses_nodes_and_loads_quickly(browser, pages):
    page = pages["big"]
    assert page.stat().st_size < 3_000_000
    started = time.monotonic()
    _open(browser, page)
    assert time.monotonic() - started < 5
    counts = [e.text for e in _shapes(browser, ".count")]
    # identical nodes collapse: 1,000 nodes in a few dozen rows (the scheduler scatters the one-slice and
    # time-sliced pods over planned nodes that all score alike, so those pools keep several rows)
    nums = [int(c.lstrip("\u00d7")) for c in counts]
    assert nums[:2] == [250, 350] and sum(nums) == 1000 and len(nums) < 40
    assert "1000 node(s)" in browser.find_element("tag name", "header").text
    assert console_errors(browser) == []


def test_every_gpu_workload_in_the_dra_legend_has_a_visible_shape_on_the_map(browser, pages):
    # The notebook and the embedding service share one GPU through a named claim: both must be drawn.
    _open(browser, pages["dra"])
    legend = set()
    for row in _shapes(browser, "#workloads table.list tr"):
        cells = row.find_elements("tag name", "td")
        if len(cells) >= 3 and cells[0].find_elements("css selector", "span.swatch") \
                and cells[2].text.strip() not in ("none", "\u2014"):  # workloads that ask for GPUs
            legend.add(cells[0].find_element("css selector", "span.swatch").get_attribute("class").split()[1])
    drawn = {c for r in _shapes(browser, "svg.node rect.unit") if r.is_displayed() and r.size["width"] > 0
             for c in r.get_attribute("class").split() if c.startswith("w")}
    assert legend and legend <= drawn, legend - drawn
    assert console_errors(browser) == []


def test_headroom_table_lists_each_gpu_shape_with_what_is_left_of_the_planned_slices(browser, pages):
    """The mig stack plans A100s cut into seven 1g.5gb slices (MIG `single`): one-slice copies fit exactly where
    the stack's own workloads left slices free, and larger shapes fit fewer."""
    from gpufleet.capacity.stack import capacity_from_stack
    from gpufleet.config.loading import load_stack
    from gpufleet.report import stack_report

    _open(browser, pages["mig"])
    rows = [[c.text for c in r.find_elements("css selector", "td")] for r in _shapes(browser, "#headroom tr")[1:]]
    assert rows, "no headroom table on the page"
    cfg = load_stack("mig", ROOT).config
    report = stack_report("mig", cfg)
    assert [(r[0], r[1] == "yes", int(r[2])) for r in rows] == [(s, t, n) for s, t, n, _, _ in report.headroom]
    slices = sum(n.allocatable.get("nvidia.com/gpu", 0) for n in capacity_from_stack(cfg))
    used = sum(w.placed * n for w in report.workloads for r, n in w.gpu_request if r == "nvidia.com/gpu")
    counts = {(r[0], r[1]): int(r[2]) for r in rows}
    one = next(v for (shape, tolerated), v in counts.items() if shape.startswith("1x ") and tolerated == "yes")
    assert one == slices - used
    sizes = sorted((int(shape.split("x ")[0]), v) for (shape, tolerated), v in counts.items() if tolerated == "yes")
    assert all(a[1] >= b[1] for a, b in zip(sizes, sizes[1:], strict=False))
    assert console_errors(browser) == []
