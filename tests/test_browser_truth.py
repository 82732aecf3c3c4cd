"""What you see is what runs, in a real browser: a control whose options change with another control shows the
value the model ran with (the browser keeps a select slider's place among its options, not its value)."""

import pytest
from browser_support import OUTPUT, wait_idle
from test_browser import browser, open_page, page, server, wait_for_charts  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def _slider_value(page, label) -> str:
    slider = page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")
    return slider.get_attribute("aria-valuetext") or slider.get_attribute("aria-valuenow")


def _type_source(page, text):
    source = page.get_by_test_id("stSidebar").get_by_role("textbox", name="Source sequences")
    source.fill(text)
    source.press("Control+Enter")
    page.wait_for_timeout(500)
    wait_idle(page)


def test_the_focus_slider_shows_the_focused_token_after_the_line_changes(page, server):
    open_page(page, server, "attention?src=a+b+c+d+e%0Af+g%0Ah+i+j+k&tgt=a+b+c+d+e%0Af+g%0Ah+i+j+k&focus=6")
    wait_for_charts(page)
    assert _slider_value(page, "Focus a query") == "6·0"
    _type_source(page, "a b c d e f g\nf g\nh i j k")
    wait_for_charts(page)
    shown = _slider_value(page, "Focus a query")
    page.screenshot(path=str(OUTPUT / "focus-after-source-change.png"))
    assert shown == "6·g", shown
    assert "focus=6" in page.url


def test_the_neuron_views_key_slider_shows_its_token_after_the_line_changes(page, server):
    open_page(page, server, "attention?view=Neuron+view&nv_other=5&src=a+b+c+d+e%0Af+g%0Ah+i+j+k"
                            "&tgt=a+b+c+d+e%0Af+g%0Ah+i+j+k")
    wait_for_charts(page)
    assert _slider_value(page, "Key") == "5·0"
    _type_source(page, "a b c d e f g\nf g\nh i j k")
    wait_for_charts(page)
    assert _slider_value(page, "Key") == "5·f"


def test_the_stack_picker_shows_the_stack_drawn_after_the_architecture_changes(page, server):
    open_page(page, server, "attention?arch=decoder-only")
    wait_for_charts(page)
    architecture = page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Architecture")
    architecture.click()
    page.get_by_role("option", name="Encoder-decoder", exact=False).first.click()
    wait_idle(page)
    wait_for_charts(page)
    page.screenshot(path=str(OUTPUT / "stack-after-architecture-change.png"))
    assert page.get_by_role("radio", name="Masked decoder self-attention").is_checked()
    assert page.get_by_role("heading", name="Masked decoder self-attention — layer 0, line 1").count() == 1
