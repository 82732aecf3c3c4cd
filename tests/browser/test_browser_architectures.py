"""Chromium: every page for a decoder-only and an encoder-only model, the Architecture control in the sidebar, and
a decoder-only model continuing a prompt on the Decode page."""

import pytest
from browser_pages import (
    CHART_TEXT_PROBLEMS,
    TALL_PX,
    open_page,
    open_select,
    wait_for_charts,
    wait_for_every_chart,
    walk,
)
from browser_support import wait_idle
from chart_support import FIRST_PLOT, PLOT

pytestmark = pytest.mark.browser
PAGES_WITH_MODELS = ["attention", "heads", "dot_product_lab", "shapes", "masks", "positional_encoding", "decode"]


@pytest.mark.parametrize("query", ["arch=decoder-only&norm=pre", "arch=encoder-only&d_ff=0"])
def test_every_page_draws_a_single_stack_model(page, server, query):
    """The link opens the first page; the others are reached by the sidebar's links, as a person goes on, and keep
    the architecture (one page load, not one a page: ~4 s of the browser's CPU each)."""
    page.set_viewport_size({"width": 1400, "height": TALL_PX})
    for path in walk(page, server, [f"{PAGES_WITH_MODELS[0]}?{query}", *PAGES_WITH_MODELS[1:]]):
        assert page.get_by_test_id("stException").count() == 0, path
        assert query.split("&")[0] in page.url, (path, page.url)
        if path == "decode" and "encoder-only" in query:
            assert page.get_by_text("An encoder-only model has no decoder").count() == 1
            continue
        wait_for_every_chart(page)
        assert page.locator(PLOT).count() >= 1, path
        assert page.evaluate(CHART_TEXT_PROBLEMS) == [], path


def _stack_options(page) -> list[str]:
    return page.get_by_test_id("stRadio").filter(has_text="Attention").get_by_role("radio").evaluate_all(
        "nodes => nodes.map(node => node.closest('label').innerText.trim())")


def test_choosing_decoder_only_in_the_sidebar_leaves_one_causal_stack(page, server):
    open_page(page, server, "attention?stack=cross")
    wait_for_charts(page)
    assert len(_stack_options(page)) == 3
    open_select(page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Architecture"))
    page.get_by_role("option", name="Decoder-only (GPT)").click()
    page.wait_for_function("() => location.search.includes('arch=decoder-only')", timeout=60_000)
    wait_idle(page)
    wait_for_charts(page)
    assert _stack_options(page) == ["Masked decoder self-attention"]
    assert page.get_by_text("A decoder-only model has no encoder and no cross-attention").count() == 1
    assert "stack=decoder" in page.url  # the only stack it has, not the link's cross-attention
    first_row = page.evaluate(f"() => Array.from({FIRST_PLOT}._fullData.filter(t => t.coloraxis)[0].z[0], "
                              "value => Number.isFinite(value) ? value : null)")
    assert first_row[0] == pytest.approx(1) and all(not value for value in first_row[1:])  # query 0 sees key 0 alone
    assert page.get_by_test_id("stException").count() == 0


def test_a_decoder_only_model_continues_a_prompt_step_by_step(page, server):
    open_page(page, server, "decode?arch=decoder-only&norm=pre&dec_src=1 2 3")
    wait_for_charts(page)
    assert page.get_by_text("No cross-attention: a decoder-only model has no encoder").count() == 1
    page.get_by_role("button", name="Next ▶").click()
    page.wait_for_function("() => location.search.includes('dec_step=1')", timeout=60_000)
    wait_idle(page)
    assert "Step 1" in page.locator(".al-stepper-caption").inner_text()
    assert page.get_by_test_id("stException").count() == 0
