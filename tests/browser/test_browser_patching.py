"""The Patching page in Chromium: the dates model's heads map drawn, a click on a cell opening its patched run
between the clean and the corrupted one, and the cell in the link
(at 390 px: tests/browser/test_browser_newcomer.py)."""

import pytest
from browser_pages import open_page, wait_for_charts
from browser_support import wait_idle
from chart_support import PLOT, click_chart

pytestmark = pytest.mark.browser

TITLES = f"""() => [...document.querySelectorAll("{PLOT}")].map(plot => plot.layout.title?.text || "")"""


def test_a_click_on_a_heads_cell_opens_the_three_runs_and_reaches_the_link(page, server):
    open_page(page, server, "patching?weights=dates&pt_part=day")
    wait_for_charts(page)
    page.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length === 1", timeout=60_000)
    assert "each head's output<br>patched alone" in page.evaluate(TITLES)[0]
    page.locator(PLOT).first.scroll_into_view_if_needed()
    click_chart(page, 0, 2, 5)  # column H2, row "cross L1"
    opened = page.get_by_text("cross L1 H2 patched (denoise)")
    opened.wait_for(timeout=60_000)
    opened.scroll_into_view_if_needed()  # a chart below the window is drawn once it comes into view
    page.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length === 2", timeout=60_000)
    wait_idle(page)
    titles = page.evaluate(TITLES)
    assert any("cross L1 H2 in the three runs" in title for title in titles), titles
    assert "pt_row=5" in page.url and "pt_col=2" in page.url
    assert "pt_metric" not in page.url  # the metric left at its default stays so (a default's label is its own)

