"""What you see is what runs, in a real browser: a control whose options change with another control shows the
value the model ran with (the browser keeps a select slider's place among its options, not its value)."""


import pytest
from browser_pages import CHART_TEXT_PROBLEMS, app_tab, open_page, open_select, text_collisions, wait_for_charts
from browser_support import OUTPUT, wait_idle

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
    open_select(page.get_by_test_id("stSidebar").get_by_test_id("stSelectbox").filter(has_text="Architecture"))
    page.get_by_role("option", name="Encoder-decoder", exact=False).first.click()
    wait_idle(page)
    wait_for_charts(page)
    page.screenshot(path=str(OUTPUT / "stack-after-architecture-change.png"))
    assert page.get_by_role("radio", name="Masked decoder self-attention").is_checked()
    assert page.get_by_role("heading", name="Masked decoder self-attention — layer 0, line 1").count() == 1


@pytest.mark.parametrize("width", [1400, 390])
@pytest.mark.parametrize("path, charts", [("induction?ind_count=50", 3), ("decode?weights=reverse&dec_src=a+b+c+d", 4),
                                          ("attention?seq_len=16&view=Head+view", 2)])
def test_no_chart_text_runs_into_other_text(browser, server, path, charts, width):  # noqa: F811
    """#52.8 and #52.12: the Induction page's bar labels into its axis title, its role grid's L0/L1 on the first
    panel's cells, its title cut at 390 px; the Decode page's cache chart's ticks into its colour bar's labels; the
    head view's title, with the note of the lines left out, into its legend."""
    from chart_support import PLOT  # noqa: PLC0415

    with app_tab(browser, server, path, width) as tab:
        tab.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length >= {charts}", timeout=60_000)
        wait_idle(tab)
        tab.wait_for_timeout(500)
        tab.screenshot(path=str(OUTPUT / f"collisions-{path.split('?')[0]}-{width}.png"), full_page=True)
        problems = text_collisions(tab) + tab.evaluate(CHART_TEXT_PROBLEMS)
        assert not problems, problems


def test_home_labels_every_character_of_the_dates_line_at_1400_px(browser, server):  # noqa: F811
    """#52.13: every 4th character was labelled; where every key's label fits with fewer panels to a row, the grid
    takes fewer panels to a row."""
    from chart_support import FIRST_PLOT  # noqa: PLC0415

    with app_tab(browser, server, "", 1400, 2000) as tab:
        labels = tab.evaluate(f"""() => {{
            const plot = {FIRST_PLOT}, axis = plot.querySelector('.xaxislayer-above');
            return [...axis.querySelectorAll('.xtick text')].map((t) => t.textContent); }}""")
        keys = tab.evaluate(f"() => {FIRST_PLOT}.data[1].x.length")  # one panel's keys
        tab.screenshot(path=str(OUTPUT / "home-dates-labels-1400.png"))
        positions = {label.split("·")[0] for label in labels if "·" in label}  # "12·N" -> "12"
        assert len(positions) == keys, (len(positions), keys, labels)  # every key labelled


def test_homes_page_list_fits_a_phone(browser, server):  # noqa: F811
    """#52.11: at 390 px the page list ran past the right edge."""
    with app_tab(browser, server, "", 390, 3000) as tab:
        cut = tab.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stPageLink"]')]
            .filter((link) => { const text = link.querySelector('p'), box = link.querySelector('a');
                                return text.getBoundingClientRect().right > window.innerWidth + 1
                                    || box.scrollWidth > box.clientWidth + 1
                                    || text.parentElement.scrollWidth > text.parentElement.clientWidth + 1; })
            .map((link) => link.textContent)""")
        tab.screenshot(path=str(OUTPUT / "home-390.png"), full_page=True)
        assert not cut, cut


# Every chart's toolbar (Plotly's mode bar) and title, as boxes on the screen: the pairs that overlap.
TOOLBAR_ON_TITLE = """(selector) => [...document.querySelectorAll(selector)].flatMap((plot, index) => {
    const bar = plot.querySelector('.modebar'), title = plot.querySelector('.gtitle');
    if (!bar || !title || !title.textContent.trim()) return [];
    const a = bar.getBoundingClientRect(), b = title.getBoundingClientRect();
    const overlap = a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return overlap ? [`chart ${index}: "${title.textContent}" under the toolbar`] : [];
})"""


@pytest.mark.parametrize("path", ["attention", "images", ""])
def test_at_390_px_the_toolbar_leaves_every_chart_title_readable(browser, server, path):  # noqa: F811
    """#78.12: on a phone Plotly's toolbar covered the titles of Attention's head grid ("4 heads (d_k = 16) and their
    mean"), the Images page's and Home's figure."""
    from chart_support import PLOT  # noqa: PLC0415

    with app_tab(browser, server, path, 390) as tab:
        tab.wait_for_function(f"() => document.querySelectorAll('{PLOT} .gtitle').length > 0", timeout=60_000)
        wait_idle(tab)
        tab.wait_for_timeout(500)
        first = tab.locator(PLOT).first
        first.hover()  # the toolbar shows on hover (a tap on a phone)
        tab.wait_for_timeout(300)
        tab.screenshot(path=str(OUTPUT / f"toolbar-{path or 'home'}-390.png"))
        assert tab.evaluate(f"() => document.querySelectorAll('{PLOT} .modebar').length") > 0
        problems = tab.evaluate(TOOLBAR_ON_TITLE, PLOT)
        assert not problems, problems
