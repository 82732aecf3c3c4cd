"""A costly run in Chromium: the link shows its cost and a Run it button, the press draws the charts from the
background lane, and a tab closed while its run computes ends the run's process (issue 77, item 3). The light
budget is lowered so that a small model counts as costly here."""

import time

import pytest
from browser_pages import wait_for_charts
from browser_support import close_tab, headless_chromium, new_tab, require_chromium, streamlit_server, wait_idle
from heavy_lane import lane_processes  # bench/heavy_lane.py: the server's background-lane processes

pytestmark = [pytest.mark.browser, pytest.mark.slow]
LONG = ("attention?d_model=512&heads=8&d_ff=1024&layers=6&seq_len=4096&src="  # minutes in the background lane
        + "+".join(str(1 + i % 900) for i in range(4096)))


@pytest.fixture(scope="module")
def server():
    require_chromium()
    with streamlit_server(with_process=True, env={"ATTENTION_LAB_LIGHT_SECONDS": "0.000001"}) as served:
        yield served


@pytest.fixture(scope="module")
def browser(server):
    with headless_chromium() as browser:
        yield browser


def test_a_costly_link_shows_its_cost_and_draws_once_run_is_pressed(server, browser):
    base_url, _ = server
    tab = new_tab(browser)
    try:
        tab.goto(f"{base_url}/attention?seq_len=6&d_model=32&heads=2")
        wait_idle(tab)
        tab.get_by_text("A long run: 1 line of 6 tokens").wait_for(timeout=30_000)
        assert tab.get_by_test_id("stPlotlyChart").count() == 0 and tab.locator("iframe").count() == 0
        tab.get_by_role("button", name="Run it").click()
        wait_for_charts(tab)
        assert tab.get_by_text("A long run").count() == 0
    finally:
        close_tab(tab)


def test_a_tab_closed_while_its_run_computes_ends_the_runs_process(server, browser):
    base_url, process = server
    tab = new_tab(browser)
    try:
        tab.goto(f"{base_url}/{LONG}")
        wait_idle(tab)
        tab.get_by_role("button", name="Run it").click()
        tab.get_by_text("Running in the background lane").wait_for(timeout=60_000)
        assert lane_processes(process.pid), "no background process computes the run"
    finally:
        close_tab(tab)
    for _ in range(40):  # the lane checks its owners twice a second
        if not lane_processes(process.pid):
            break
        time.sleep(0.25)
    assert not lane_processes(process.pid), "the run went on for a session that had gone"
