"""SmolLM2-135M in Chromium (issue 89): its link opens the Attention page on its 9 heads over its own pieces with
its sizes locked in the sidebar, and Decode continues "The capital of France is" with " Paris"."""

import pytest
from browser_pages import CHART_TEXT_PROBLEMS, open_page, wait_for_charts
from browser_support import wait_idle
from chart_support import FIRST_PLOT, PLOT

pytestmark = pytest.mark.browser


def _loaded(page) -> None:
    """Load it where the server has not yet: the page says what loading costs and waits for **Load it**."""
    load = page.get_by_role("button", name="Load it")
    if load.count():
        assert page.get_by_text("once on this server").count() >= 1
        load.click()
        wait_idle(page)


def test_a_link_opens_smollm2_on_the_attention_page_over_its_own_pieces(page, server):
    open_page(page, server, "attention?weights=smollm2")
    _loaded(page)
    wait_for_charts(page)
    drawn = page.evaluate(f"""() => {{
        const plot = {FIRST_PLOT};
        return {{panels: plot.data.filter(t => t.coloraxis && t.name !== "mean of heads").length,
                 ticks: plot.layout.xaxis.tickvals.map(String)}}; }}""")
    assert drawn["panels"] == 9, drawn
    assert "1· capital" in drawn["ticks"] and not any("Ġ" in tick for tick in drawn["ticks"]), drawn["ticks"][:8]
    sidebar = page.get_by_test_id("stSidebar").inner_text()
    assert "Locked by the model: SmolLM2-135M" in sidebar and "576" in sidebar, sidebar[:600]
    assert page.get_by_test_id("stException").count() == 0 and not page.evaluate(CHART_TEXT_PROBLEMS)


def test_decode_on_smollm2_continues_the_capital_of_france_with_paris(page, server):
    open_page(page, server, "decode?weights=smollm2")
    _loaded(page)
    run_it = page.get_by_role("button", name="Run it")
    if run_it.count():  # priced past this server's light budget: the background lane, after a press
        run_it.click()
        wait_idle(page)
    page.wait_for_function(f"""() => [...document.querySelectorAll("{PLOT}")].some(plot =>
        (plot.layout.title?.text || "").includes("next token"))""", timeout=180_000)
    top = page.evaluate(f"""() => {{
        const plot = [...document.querySelectorAll("{PLOT}")].find(p => p.layout.title.text.includes("next token"));
        const bars = plot.data[0];
        const best = bars.x.indexOf(Math.max(...bars.x));
        return bars.y[best]; }}""")
    assert top == " Paris", top
    assert page.get_by_text("A real language model continues a prompt").count() >= 1
    assert page.get_by_test_id("stException").count() == 0
