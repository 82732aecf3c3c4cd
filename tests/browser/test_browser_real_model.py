"""SmolLM2-135M in Chromium (issue 89): its link opens the Attention page on its 9 heads over its own pieces with
its sizes locked in the sidebar, Decode continues "The capital of France is" with " Paris", Heads finds its
induction heads and Patching maps indirect-object identification."""

import contextlib
import json
import time

import pytest
from browser_pages import CHART_TEXT_PROBLEMS, open_page, wait_for_charts
from browser_support import wait_idle
from chart_support import CHART_CLASS, FIRST_PLOT, PLOT, click_chart
from playwright.sync_api import TimeoutError as PlaywrightTimeout

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


def test_at_390_px_its_model_view_is_a_row_per_layer_of_square_panels_within_its_column(page, server):
    """Its 30 × 9 heads on a phone were panels 27 px wide and 100 px tall, 4,034 px down, wider than the column."""
    page.set_viewport_size({"width": 390, "height": 1600})
    page.goto(f"{server}/attention?weights=smollm2&view=Model+view")  # on a phone the sidebar starts closed
    wait_idle(page)
    _loaded(page)
    drawn = f"""() => [...document.querySelectorAll("{PLOT}")].find(plot => plot._fullLayout
        && (plot.layout.title?.text || "").includes("Masked decoder self-attention"))"""
    page.wait_for_selector(f".{CHART_CLASS}", state="attached", timeout=60_000)
    page.wait_for_timeout(1000)
    page.locator(f".{CHART_CLASS}").last.scroll_into_view_if_needed()  # a chart is drawn once in view
    page.wait_for_function(drawn, timeout=60_000)
    view = page.evaluate(f"""() => {{
        const plot = ({drawn})(), full = plot._fullLayout, y = full.yaxis.domain;
        return {{width: full.width, column: plot.parentElement.clientWidth, height: full.height,
                 scrolls: plot.parentElement.scrollWidth > plot.parentElement.clientWidth,
                 rows: plot.layout.annotations.filter(note => /^L\\d+$/.test(note.text)).length,
                 panel: [plot.querySelector(".xy .nsewdrag").getBoundingClientRect().width / 9,
                         (y[1] - y[0]) * (full.height - full.margin.t - full.margin.b)]}}; }}""")
    assert view["width"] <= view["column"] + 1 and not view["scrolls"], view
    assert view["rows"] == 30 and view["height"] < 1500, view
    width, height = view["panel"]
    assert 0.7 < height / width < 1.3, view  # a panel of gaps and cells: about as tall as it is wide
    assert page.get_by_test_id("stException").count() == 0 and not page.evaluate(CHART_TEXT_PROBLEMS)


def _drawn(title: str) -> str:
    """A script: whether a chart whose title has ``title`` is drawn."""
    return f"""() => [...document.querySelectorAll("{PLOT}")].some(plot =>
        (plot.layout.title?.text || "").includes({title!r}))"""


def _pressing_until(page, done: str, timeout_s: float = 240) -> None:
    """Until the script ``done`` is true: **Run it** pressed each time the page asks (each call priced past this
    server's light budget asks in turn, and which are depends on the speed the server measured at its start).
    On time out, what the page shows instead (a message, the lane's place, a price)."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(done):
        if time.monotonic() > deadline:
            shown = page.get_by_test_id("stMain").inner_text()
            raise AssertionError(f"not drawn after {timeout_s:.0f} s: {done}; the page shows: {shown[-2500:]}")
        run_it = page.get_by_role("button", name="Run it")
        asking = run_it.count()
        if not asking:
            page.wait_for_timeout(500)
            continue
        with contextlib.suppress(PlaywrightTimeout):  # a button the click's own rerun took away: it was pressed
            run_it.first.click(timeout=5_000)
        with contextlib.suppress(PlaywrightTimeout):  # pressed: the page follows the run until it ends
            page.wait_for_function(f"""() => [...document.querySelectorAll("button")].filter(
                b => b.innerText.trim() === "Run it").length < {asking}""", timeout=60_000)


def test_decode_on_smollm2_continues_the_capital_of_france_with_paris(page, server):
    open_page(page, server, "decode?weights=smollm2")
    _loaded(page)
    _pressing_until(page, _drawn("next token"), 180)
    top = page.evaluate(f"""() => {{
        const plot = [...document.querySelectorAll("{PLOT}")].find(p => p.layout.title.text.includes("next token"));
        const bars = plot.data[0];
        const best = bars.x.indexOf(Math.max(...bars.x));
        return bars.y[best]; }}""")
    assert top == " Paris", top
    assert page.get_by_text("A real language model continues a prompt").count() >= 1
    assert page.get_by_test_id("stException").count() == 0


def _heatmap(page, title: str, name: str | None = None) -> list:
    """The z of the first drawn chart whose title has ``title`` (each run it needs pressed for): its heatmap under
    the annotation ``name`` (None: its first heatmap), as rows of numbers."""
    _pressing_until(page, _drawn(title))
    return page.evaluate(f"""() => {{
        const plot = [...document.querySelectorAll("{PLOT}")].find(p => (p.layout.title?.text || "").includes(
            {title!r}));
        const maps = plot._fullData.filter(t => t.type === "heatmap");
        const names = (plot.layout.annotations || []).map(a => a.text);
        const wanted = {json.dumps(name)};
        const map = maps[wanted === null ? 0 : names.indexOf(wanted)];
        return Array.from(map.z, row => Array.from(row, v => v === null ? NaN : v)); }}""")


def _strongest(rows: list) -> tuple[int, int]:
    best = max((value, layer, head) for layer, row in enumerate(rows) for head, value in enumerate(row)
               if value == value)  # NaN is not a score
    return best[1], best[2]


def test_heads_on_smollm2_finds_its_induction_heads_on_repeated_words(page, server):
    """The Heads page on 4 lines of repeated one-piece words: the induction map's strongest head is in layer 17 or
    18, as the engine finds against NumPy (tests/unit/test_smollm2.py)."""
    open_page(page, server, "heads?weights=smollm2&roles_lines=repeated&roles_count=4")
    _loaded(page)
    induction = _heatmap(page, "role scores over 4 lines", "induction")
    assert (len(induction), len(induction[0])) == (30, 9)
    assert _strongest(induction)[0] in (17, 18), induction[17:19]
    assert page.get_by_test_id("stException").count() == 0 and not page.evaluate(CHART_TEXT_PROBLEMS)


def test_patching_on_smollm2_maps_ioi_and_layer_23_head_3_restores_most(page, server):
    """The Patching page's heads map on indirect-object identification (its default lines), after a press: 30 × 9
    cells, the strongest L23 H3 (0.58 of the clean − corrupted gap, docs/real_model.md)."""
    open_page(page, server, "patching?weights=smollm2")
    _loaded(page)
    restored = _heatmap(page, "clean − corrupted")
    assert (len(restored), len(restored[0])) == (30, 9)
    assert _strongest(restored) == (23, 3), restored[23]
    assert page.get_by_test_id("stException").count() == 0 and not page.evaluate(CHART_TEXT_PROBLEMS)


def test_a_click_on_a_cell_of_smollm2s_path_map_opens_its_three_runs(page, server):
    """Paths into L5 H3's value input (54 runs): a click on the last cell (every sender together) opens the three
    runs of layer 5 head 3 and puts the cell in the link."""
    open_page(page, server, "patching?weights=smollm2&pt_map=path&pt_rlayer=5&pt_rhead=3&pt_rside=v")
    _loaded(page)
    _heatmap(page, "path into L5 H3 V")
    page.locator(PLOT).first.scroll_into_view_if_needed()
    click_chart(page, 0, 53, 0)  # the column "all together", the one row
    page.wait_for_url("**pt_col=53**", timeout=60_000)
    wait_idle(page)
    opened = "() => document.querySelector('[data-testid=stMain]').innerText.includes('patched (denoise)')"
    _pressing_until(page, opened, 120)  # the cell's heading, after its own runs (each priced one pressed for)
    page.get_by_text("patched (denoise)").first.scroll_into_view_if_needed()  # a chart is drawn once in view
    _pressing_until(page, _drawn("L5 H3 in the three runs"), 120)
    assert "pt_row=0" in page.url
    assert page.get_by_text("clean: after the last piece the model writes ' Mary'").count() == 1
    assert page.get_by_test_id("stException").count() == 0
