"""The Lab page in a real browser: the heatmaps draw from the vendored plotly, a click on a
cell opens that cell's worst run at the step where the record was lost, and the table under
each map does the same from the keyboard, under a strict Content-Security-Policy. Screenshots at 1366 and 390 px go to the test's
temp directory (KAFKAVIZ_SCREENSHOTS=dir keeps them)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from engine.lab.grid import make_grid
from kafkaviz.lab.spark_jobs import sweep_without_spark

from .conftest import daphne_server

pytestmark = pytest.mark.browser
NAME = "sweep-20260101-000000-abcd"
# The team's policy: our own files only, no inline script or style. The pages must work under it.
STRICT_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
              "connect-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'")


def with_strict_csp(page: Page) -> None:
    def handle(route):
        response = route.fetch()
        headers = dict(response.headers)
        if "text/html" in headers.get("content-type", ""):
            headers["content-security-policy"] = STRICT_CSP
        route.fulfill(response=response, headers=headers)
    page.route("**/*", handle)


@pytest.fixture(scope="module")
def lab_server(tmp_path_factory):
    """daphne with its own lab directory holding one finished sweep (acks 1/all x hw/epoch)."""
    tmp = tmp_path_factory.mktemp("lab-server")
    (tmp / "lab").mkdir()
    sweep_without_spark(make_grid("truncation", runs=30, seed=40), tmp / "lab" / NAME)
    with daphne_server(tmp, {"KAFKAVIZ_LAB_DIR": str(tmp / "lab")}, ready_path="/lab/") as url:
        yield url, tmp


def shots_dir(tmp: Path) -> Path:
    d = Path(os.environ.get("KAFKAVIZ_SCREENSHOTS", tmp / "shots"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_heatmaps_draw_and_a_click_on_a_cell_opens_its_worst_run_at_the_loss_step(page: Page, lab_server):
    url, tmp = lab_server
    with_strict_csp(page)
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{url}/lab/sweeps/{NAME}/")
    maps = page.locator("#metric-loss .heatmap .main-svg")
    expect(maps.first).to_be_visible()
    assert page.locator(".heatmap .main-svg").count() >= 4
    page.screenshot(path=str(shots_dir(tmp) / "lab-sweep-1366.png"), full_page=True)
    # The loss heatmap: x = acks (1, all), y = truncation (hw, epoch). Top-left is acks=1, hw.
    drag = page.locator("#metric-loss .heatmap .nsewdrag").first
    box = drag.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.25)
    page.wait_for_url("**/worst/**")
    assert "acks=1" in page.url and "truncation=hw" in page.url
    step = page.url.rsplit("#step-", 1)[1]
    loss = page.locator(f"#step-{step}")
    expect(loss).to_have_class("run-step is-loss has-findings")
    expect(loss.locator(".finding").first).to_contain_text("lost")


def test_the_tables_links_reach_the_same_runs_by_keyboard_and_the_page_fits_a_phone(page: Page, lab_server):
    url, tmp = lab_server
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{url}/lab/sweeps/{NAME}/")
    expect(page.locator("#metric-loss .heatmap .main-svg").first).to_be_visible()
    page.screenshot(path=str(shots_dir(tmp) / "lab-sweep-390.png"), full_page=True)
    assert page.evaluate("document.documentElement.scrollWidth") <= 390 + 1
    link = page.locator("#metric-loss .heat-table a").first
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/worst/**")
    expect(page.locator("#run-steps")).to_be_visible()
    page.screenshot(path=str(shots_dir(tmp) / "lab-worst-390.png"), full_page=True)
