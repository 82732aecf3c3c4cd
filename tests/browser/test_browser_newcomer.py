"""What a newcomer saw in Chromium that was not true (issue: a slider that shows one thing while the model runs
another, a broken grid, entry points that lose the view, a trained model's link, charts wider than a phone)."""

import re

import pytest
from browser_pages import (
    CHART_TEXT_PROBLEMS,
    open_page,
    slider_thumb,
    wait_for_charts,
)
from browser_support import OUTPUT, wait_idle
from chart_support import FIRST_PLOT, PLOT

from ui.chart import CHART_CLASS

pytestmark = pytest.mark.browser
MODEL_SIZE = "[data-testid='stSidebar'] [data-testid='stCaptionContainer']"


def _kv_shown(page) -> str:
    return slider_thumb(page, "KV heads").get_attribute("aria-valuetext")


def _kept_by(page) -> str:
    """The sidebar's "… (k of h heads keep keys and values)"."""
    text = page.locator(MODEL_SIZE).filter(has_text="keys and values").first.text_content()
    return re.search(r"\((\d+) of (\d+) heads", text).group(0)


def _head_names(page) -> list[str]:
    return page.evaluate(f"() => {FIRST_PLOT}.data.map(trace => trace.name).filter(name => name.startsWith('head'))")


def _move(page, label: str, key: str, until: str) -> None:
    thumb = slider_thumb(page, label)
    thumb.focus()
    thumb.press(key)
    page.wait_for_function(until, timeout=60_000)
    wait_idle(page)


def test_the_kv_heads_slider_always_shows_what_the_model_runs(page, server):
    open_page(page, server, "attention")
    wait_for_charts(page)
    assert (_kv_shown(page), _kept_by(page)) == ("4 (the paper)", "(4 of 4 heads")
    _move(page, "Heads (h)", "ArrowRight", f"() => {FIRST_PLOT}.data.filter(t => t.coloraxis).length === 9")
    assert (_kv_shown(page), _kept_by(page)) == ("8 (the paper)", "(8 of 8 heads")
    _move(page, "Heads (h)", "ArrowLeft", f"() => {FIRST_PLOT}.data.filter(t => t.coloraxis).length === 5")
    assert (_kv_shown(page), _kept_by(page)) == ("4 (the paper)", "(4 of 4 heads")
    assert "kv_heads" not in page.url
    assert not any("kv" in name for name in _head_names(page))


def test_a_kv_choice_that_a_change_of_heads_makes_invalid_is_replaced_visibly_and_said(page, server):
    open_page(page, server, "attention?d_model=48&heads=6&kv_heads=3")
    wait_for_charts(page)
    assert (_kv_shown(page), _kept_by(page)) == ("3", "(3 of 6 heads")
    _move(page, "Heads (h)", "ArrowLeft", f"() => {FIRST_PLOT}.data.filter(t => t.coloraxis).length === 5")
    assert (_kv_shown(page), _kept_by(page)) == ("4 (the paper)", "(4 of 4 heads")
    assert page.get_by_text("3 key/value heads do not divide 4 heads").count() == 1
    assert "kv_heads" not in page.url


# The head grid's first row as Plotly laid it out: its x categories, the categories its traces name, and each
# panel title's and focus outline's left edge against its panel's (px).
GRID_LAYOUT = f"""() => {{
    const plot = {FIRST_PLOT}, axis = plot._fullLayout.xaxis;
    const row = plot._fullData.filter(trace => (trace.xaxis || 'x') === 'x');
    const panels = row.filter(trace => trace.coloraxis);
    return {{categories: axis._categories.length, named: (axis.categoryarray || row[0].x).length,
             first_keys: panels.map(trace => trace.x[0]),
             panel_left: panels.map(trace => axis.d2p(trace.x[0])),
             titles: plot._fullLayout.annotations.filter(a => a.xref === 'x').map(a => axis.d2p(a.x)),
             panel_right: panels.map(trace => axis.d2p(trace.x[trace.x.length - 1])),
             outlines: (plot._fullLayout.shapes || []).filter(s => s.xref === 'x').map(s => axis.d2p(s.x0 + 0.5))}};
}}"""


@pytest.mark.parametrize("path", ["attention?specials=1", "attention?weights=reverse&specials=1&stack=decoder&focus=2"])
def test_hiding_the_specials_keeps_every_panel_of_the_head_grid_apart(page, server, path):
    open_page(page, server, path)
    wait_for_charts(page)
    grid = page.evaluate(GRID_LAYOUT)
    assert grid["categories"] == grid["named"], grid  # the gaps between panels are on the axis
    for left, right, title in zip(grid["panel_left"], grid["panel_right"], grid["titles"]):
        assert left <= title <= right, grid  # each title over its own panel
    for left, outline in zip(grid["panel_left"], grid["outlines"]):
        assert outline == pytest.approx(left, abs=1), grid  # the focused row starts at each panel's first key
    if "decoder" in path:  # <s> at 0 is hidden: the first key drawn is position 1, and says so
        assert grid["first_keys"][0].startswith("1·"), grid
    assert page.locator(PLOT).first.get_by_text("mean of heads").count() == 1


def test_home_opens_the_attention_page_on_the_picture_it_shows(page, server):
    open_page(page, server, "")
    wait_for_charts(page)
    title = page.evaluate(f"() => {FIRST_PLOT}.layout.title.text")
    assert "cross-attention" in title
    layer = re.search(r"layer (\d+)", title).group(1)
    page.get_by_role("button", name="Dates model → Attention").click()
    page.wait_for_url("**/attention?**", timeout=60_000)
    wait_idle(page)
    wait_for_charts(page)
    assert "stack=cross" in page.url and "weights=dates" in page.url
    assert f"layer={layer}" in page.url
    assert page.get_by_text(f"Cross-attention (decoder → encoder) — layer {layer}").count() == 1


def test_a_link_to_a_model_the_server_never_trained_says_so(page, server):
    """(A model trained here, its link in another session, and a link to one the server dropped:
    tests/browser/test_browser_training.py.)"""
    open_page(page, server, "attention?weights=session:0123456789")
    assert page.get_by_text("No model trained on this server is called").count() == 1
    wait_for_charts(page)


PHONE = {"width": 390, "height": 6000}
# Each chart's width against its column's (px), and whether its column scrolls sideways.
CHART_FITS = f"""() => [...document.querySelectorAll('.{CHART_CLASS}')].map((node) => ({{
    chart: Math.round(node.getBoundingClientRect().width), column: node.parentElement.clientWidth,
    scrolls: node.parentElement.scrollWidth > node.parentElement.clientWidth}}))"""


@pytest.mark.parametrize("path", ["", "attention", "attention?specials=1", "masks", "positional_encoding",
                                  "decode?weights=dates", "masks?mask_family=window",
                                  "patching?weights=induction&pt_map=stream"])
def test_at_390_px_no_chart_is_wider_than_its_column(page, server, path):
    page.set_viewport_size(PHONE)
    page.goto(f"{server}/{path}")  # on a phone the sidebar starts closed
    wait_idle(page)
    page.wait_for_selector(PLOT, timeout=60_000)
    fits = f"() => ({CHART_FITS})().every(one => one.chart <= one.column + 1 && !one.scrolls)"
    try:
        page.wait_for_function(fits, timeout=20_000)
    finally:
        page.screenshot(path=str(OUTPUT / f"phone-{(path or 'home').replace('?', '-').replace('=', '-')}.png"),
                        full_page=True)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    assert page.evaluate(CHART_TEXT_PROBLEMS) == []  # no title cut off, none running into another


# From the page's first frame on, every frame: each drawing (Plotly's) wider than its chart's column, as [drawn width,
# column width]; and each chart's first drawing, as [drawn width, the column width its text carries (ui/chart.py: the
# width the chart had told the page when the page sent it; 0: none)].
RECORD_DRAWINGS = f"""() => {{
    window.__wide = [];
    window.__first = [];
    const look = () => {{
        for (const plot of document.querySelectorAll('{PLOT}')) {{
            const column = plot.parentElement.clientWidth;
            const drawn = plot._fullLayout && plot._fullLayout.width;
            if (drawn > column + 1) window.__wide.push([drawn, column]);
            if (drawn && !plot.__seen) {{
                plot.__seen = true;
                window.__first.push([drawn, JSON.parse(plot.al.text).column]);
            }}
        }}
        requestAnimationFrame(look);
    }};
    look();
}}"""


@pytest.mark.parametrize("path, charts, fit", [("attention?view=Head+view", 2, True), ("attention", 1, True),
                                               ("attention?view=Model+view&heads=16&d_model=256", 2, False)])
def test_at_390_px_a_chart_is_first_drawn_at_its_columns_width(page, server, path, charts, fit):
    """A grid's first figure is laid out before the page knows its column is narrow; it was drawn that wide (the
    head view 699 px in a 358 px column, sideways scrolling) for ~0.3 s, until the figure laid out for the column came.
    Now that first figure waits for the page's answer to the width (ui/frontend/chart.js, waitsForFit), and the answer
    comes for a grid that cannot fit too (the model view of 16 heads keeps scrolling): no chart is first drawn from a
    figure sent before its width was told."""
    page.set_viewport_size(PHONE)
    page.add_init_script(f"window.addEventListener('DOMContentLoaded', {RECORD_DRAWINGS})")
    page.goto(f"{server}/{path}")
    wait_idle(page)
    page.wait_for_function(f"() => [...document.querySelectorAll('{PLOT}')].filter((plot) => plot._fullLayout).length "
                           f"=== {charts}", timeout=60_000)
    wait_idle(page)
    told = page.evaluate(f"() => [...document.querySelectorAll('{PLOT}')].map((plot) => plot.al.reported || 0)")
    first = page.evaluate("() => window.__first")
    assert sorted(column for _, column in first) == sorted(told), (first, told)  # each drawn first from its answer
    if fit:
        assert page.evaluate("() => window.__wide") == []


def test_every_page_is_in_the_sidebar_in_its_section_none_folded(page, server):
    """Issue 78, item 15: past ten entries Streamlit folded Shapes, Cost, Decode and Train behind "View 4 more"."""
    from ui.pages import PAGES, SECTIONS

    open_page(page, server, "")
    navigation = page.get_by_test_id("stSidebarNav")
    navigation.wait_for(timeout=60_000)
    assert page.get_by_test_id("stSidebarNavViewButton").count() == 0
    for _, title, _, _ in PAGES:
        link = navigation.get_by_role("link", name=title, exact=True)
        assert link.count() == 1 and link.is_visible(), title
    for header, _ in SECTIONS[1:]:
        assert navigation.get_by_text(header, exact=True).is_visible(), header


def test_a_pages_first_words_are_plain_and_a_term_opens_its_glossary_entry_in_view(page, server):
    """Issue 78, item 11: the Attention page opens with its plain sentences, the first thing under its title; a term
    there links to the glossary, which opens scrolled to an entry named in the address."""
    from ui.openings import OPENINGS

    open_page(page, server, "attention")
    wait_for_charts(page)
    first = page.get_by_test_id("stMarkdownContainer").filter(has_text="dark means a lot").first
    assert first.is_visible()
    assert first.inner_text().startswith("Each square shows how much one word")
    link = first.get_by_role("link", name="query", exact=True)
    assert link.get_attribute("href") == "glossary#query", OPENINGS["attention"]
    page.goto(f"{server}/glossary#teacher-forcing")  # the last entry: far below the first screen
    wait_idle(page)
    page.locator("#teacher-forcing").wait_for(timeout=60_000)
    page.wait_for_function("() => { const box = document.querySelector('#teacher-forcing').getBoundingClientRect(); "
                           "return box.top >= 0 && box.bottom <= window.innerHeight; }", timeout=10_000)
    assert "What a token is looking for" in page.get_by_test_id("stMain").inner_text()


def test_a_servers_first_visit_shows_the_page_before_the_engine_has_loaded(browser):
    """#78.14: a first visit after `make run` drew nothing until TensorFlow was imported (17.9 s on a loaded host).
    Now the page's own title and opening, and a line counting the seconds, come while the server still imports it
    (its log has not yet said which device the engine runs on); then the page replaces them."""
    from browser_support import ROOT, close_tab, new_tab, streamlit_server  # noqa: PLC0415

    from ui.openings import OPENINGS  # noqa: PLC0415

    with streamlit_server() as base_url:
        log = ROOT / "test-output" / f"streamlit-{base_url.rsplit(':', 1)[1]}.log"
        tab = new_tab(browser)
        try:
            tab.goto(f"{base_url}/attention")
            tab.get_by_text("Starting the engine").wait_for(timeout=30_000)
            assert "the engine runs on" not in log.read_text(), "the engine loaded before the page was drawn"
            assert tab.locator("h1").inner_text() == "Attention"
            assert tab.get_by_text("dark means a lot").is_visible(), OPENINGS["attention"]
            wait_idle(tab)
            wait_for_charts(tab)
            assert "the engine runs on" in log.read_text()
            assert tab.locator("h1").count() == 1 and tab.get_by_text("Starting the engine").count() == 0
        finally:
            close_tab(tab)
