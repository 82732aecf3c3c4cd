"""Every page in Chromium: it opens without an exception, with its title, and its charts fit a 1000 px window, a
narrow one and a phone (split from test_browser.py so that the two test processes share the browser tests)."""

import contextlib

import pytest
from browser_pages import (
    CHART_TEXT_PROBLEMS,
    TALL_PX,
    open_page,
    wait_for_every_chart,
    walk,
)
from browser_support import OUTPUT, wait_idle
from chart_support import PLOT
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from ui.chart import CHART_CLASS

pytestmark = pytest.mark.browser
WALKED = ["", "masks", "positional_encoding", "attention", "heads", "dot_product_lab", "shapes", "cost", "train"]
LINKED = ["decode?weights=dates", "attention?weights=reverse&stack=cross",
          "attention?weights=dates&stack=cross&seq_len=28", "decode?dec_model=translate&dec_step=5"]


def _drawn_whole_and_screenshotted(page, path: str) -> None:
    assert page.locator("[data-testid='stException']").count() == 0, path
    if path not in ("train", "cost"):  # Home too: the dates model reading today's date
        wait_for_every_chart(page)
        assert page.locator(PLOT).count() >= 1, path
        assert page.evaluate(CHART_TEXT_PROBLEMS) == [], path
    name = (path or "home").replace("?", "-").replace("&", "-").replace("=", "-")
    page.screenshot(path=str(OUTPUT / f"{name}.png"), full_page=True)
    title = TAB_TITLES[(path or "home").split("?")[0]]
    page.wait_for_function("(title) => document.title === title", arg=f"{title} · Attention Lab", timeout=10_000)


def test_every_page_opens_from_home_by_the_sidebar_without_exception_and_is_screenshotted(page, server):
    """One page load (Home), then each page by the sidebar's links, as a person goes on (a load a page cost ~4 s of
    Chromium's CPU each)."""
    page.set_viewport_size({"width": 1400, "height": TALL_PX})
    for path in walk(page, server, WALKED):
        _drawn_whole_and_screenshotted(page, path)


@pytest.mark.parametrize("path", LINKED)
def test_a_link_with_a_trained_model_opens_without_exception_and_is_screenshotted(page, server, path):
    page.set_viewport_size({"width": 1400, "height": TALL_PX})
    open_page(page, server, path)
    _drawn_whole_and_screenshotted(page, path)


TAB_TITLES = {"home": "Home", "masks": "Masks", "positional_encoding": "Positional encoding",
              "attention": "Attention", "heads": "Heads", "dot_product_lab": "Dot-product lab", "shapes": "Shapes",
              "decode": "Decode", "train": "Train", "cost": "Cost"}


TEXT_FITS = ["dot_product_lab", "attention?seq_len=30&stack=cross", "masks?seq_len=200",
             "attention?seq_len=300&full_res=1",  # long titles: pooled, cropped
             "attention?seq_len=200&view=Head+view&focus=150&specials=1",
             "attention?view=Rollout&specials=1&element=1", "attention?view=Neuron+view",
             # one long title line each was cut off in the 540 px column: RoPE's angles, a d_k of 256's neuron view
             "positional_encoding", "attention?view=Neuron+view&d_model=256&heads=1"]
NO_SIDEWAYS = ["masks", "masks?seq_len=200", "positional_encoding", "attention", "heads", "dot_product_lab", "shapes",
               "attention?view=Head+view", "attention?view=Rollout", "attention?view=Neuron+view&d_model=256&heads=1"]


AT_1000_PX = list(dict.fromkeys(TEXT_FITS + NO_SIDEWAYS))
PLAIN = [path for path in AT_1000_PX if "?" not in path]  # reached by the sidebar


# How far each chart's wrapper scrolls sideways (px; 0 where it fits its column).
SIDEWAYS = f"""() => [...document.querySelectorAll('.{CHART_CLASS}')].map((node) =>
    node.parentElement.scrollWidth - node.parentElement.clientWidth)"""


# Every chart kept wider than its column (ui/frontend/chart.js's keepMinWidth) has told the page its column's width.
REPORTED = f"""() => [...document.querySelectorAll('.{CHART_CLASS}')].every((node) =>
    !(node.al.minWidth > node.parentElement.clientWidth) || node.al.reported)"""


def _fits_a_1000_px_window(page, path: str) -> None:
    """A chart whose width the page did not know yet (the head view: drawn 699 px wide first) reports its 540 px
    column, and the page's next run lays it out for it: ~0.3 s of scrolling here, longer on CI (28 November)."""
    wait_for_every_chart(page)
    page.wait_for_function(REPORTED, timeout=20_000)
    if path in NO_SIDEWAYS:
        with contextlib.suppress(PlaywrightTimeout):  # the assertion below names what still scrolls
            page.wait_for_function(f"() => !({SIDEWAYS})().some(Boolean)", timeout=20_000)
    wait_idle(page)
    wait_for_every_chart(page)
    if path in TEXT_FITS:
        assert page.evaluate(CHART_TEXT_PROBLEMS) == [], path
    if path in NO_SIDEWAYS:
        assert page.get_by_test_id("stSidebar").bounding_box()["width"] > 200  # open
        overflow = page.evaluate(SIDEWAYS)
        assert overflow and not any(overflow), (path, overflow)


@pytest.mark.parametrize("path", ["walk", *[path for path in AT_1000_PX if path not in PLAIN]])
def test_in_a_1000_px_window_with_the_sidebar_open_no_chart_text_is_cut_off_or_scrolls_sideways(page, server, path):
    """The column is 540 px wide there: the four target-mask panels' titles fit it (they took 563 px before). One
    load a link for both checks; the pages without settings (`PLAIN`) on one walk by the sidebar's links."""
    page.set_viewport_size({"width": 1000, "height": TALL_PX})
    for shown in walk(page, server, PLAIN if path == "walk" else [path]):
        _fits_a_1000_px_window(page, shown)


@pytest.mark.parametrize("path", ["masks", "attention", "attention?heads=16&d_model=128&view=Model+view",
                                  "dot_product_lab?seq_len=3", "masks?seq_len=200"])  # 200: a long pooled title
def test_on_a_phone_a_grid_of_panels_keeps_its_titles_apart_and_fits_its_column(page, server, path):
    """A grid too wide for the column is laid out again for its width (fewer panels to a row); one that cannot fit
    (the model view's 16 heads to a row) keeps the width its titles need and its wrapper scrolls, the page does not."""
    page.set_viewport_size({"width": 400, "height": 2 * TALL_PX})  # the lab's charts stack in one column: 6,600 px
    page.goto(f"{server}/{path}")  # not open_page: on a phone the sidebar starts closed
    wait_idle(page)
    wait_for_every_chart(page)
    model_view = "Model+view" in path
    page.wait_for_function(f"() => ({SIDEWAYS})().filter(Boolean).length === {1 if model_view else 0}",
                           timeout=20_000)
    wait_idle(page)
    assert page.evaluate(CHART_TEXT_PROBLEMS) == []
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    page.set_viewport_size({"width": 1400, "height": TALL_PX})  # a wide window: every chart fits its column again
    page.wait_for_function(f"() => !({SIDEWAYS})().some(Boolean)", timeout=10_000)
