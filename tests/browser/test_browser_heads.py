"""The Heads page and the ablation controls in Chromium: the role grids drawn and labelled, a strongest head opening
its layer on the Attention page, the sidebar's ablation reaching the link and the charts, the importance map."""

import re

import pytest
from browser_pages import CHART_TEXT_PROBLEMS, open_page, wait_for_charts
from browser_support import wait_idle
from chart_support import PLOT

pytestmark = pytest.mark.browser


def _plots(page) -> list[dict]:
    """Each drawn chart's title and heatmap count."""
    return page.evaluate(f"""() => [...document.querySelectorAll("{PLOT}")].map(plot => ({{
        title: plot.layout.title?.text || "", heatmaps: plot.data.filter(t => t.type === "heatmap").length}}))""")


def test_the_heads_page_draws_each_role_and_a_strongest_head_opens_the_attention_page(page, server):
    open_page(page, server, "heads?roles_lines=repeated&roles_count=8")
    wait_for_charts(page)
    # charts are drawn as they come into view (exact: the navigation's help for Heads says "which heads matter" too)
    page.get_by_text("Which heads matter", exact=True).scroll_into_view_if_needed()
    page.wait_for_function(f"() => document.querySelectorAll('{PLOT}').length === 2", timeout=60_000)
    plots = _plots(page)
    assert any("role scores over 8 lines of 20 positions" in plot["title"] and plot["heatmaps"] == 5
               for plot in plots), plots
    assert any("how far and how spread" in plot["title"] for plot in plots)
    assert not page.evaluate(CHART_TEXT_PROBLEMS)
    page.get_by_role("button", name=re.compile(r"^L\d+ H\d+: ")).first.click()
    page.wait_for_url("**/attention**", timeout=60_000)
    wait_idle(page)
    wait_for_charts(page)
    assert "seq_len=20" in page.url and "src=" in page.url
    assert page.get_by_text("Encoder self-attention — layer").count() >= 1


def test_ablating_a_head_in_the_sidebar_reaches_the_link_and_the_charts(page, server):
    open_page(page, server, "attention?layer=1")
    wait_for_charts(page)
    weights = f"() => JSON.stringify(document.querySelector('{PLOT}').data.map(trace => trace.z))"
    before = page.evaluate(weights)
    page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect").filter(has_text="Ablate heads").click()
    page.keyboard.type("encoder L0 H1")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    page.wait_for_function("() => location.search.includes('ablate=e0.1')", timeout=60_000)
    wait_idle(page)
    page.wait_for_function(f"b => ({weights})() !== b", arg=before, timeout=60_000)
    assert page.get_by_text("Mean over positions").count() == 1  # the ablation's kind, once a head is chosen


def test_a_trained_models_importance_map_is_measured_with_a_progress_bar(page, server):
    open_page(page, server, "heads?weights=reverse&imp_count=50")
    wait_for_charts(page)
    page.get_by_role("button", name="Measure all 24 heads").click()
    page.wait_for_function(f"""() => [...document.querySelectorAll("{PLOT}")].some(
        plot => (plot.layout.title?.text || "").includes("what ablating each head costs"))""", timeout=120_000)
    wait_idle(page)
    assert page.get_by_text("The model as it is: loss").count() == 1
    assert page.get_by_role("button", name="Ablate the").count() == 1


def test_a_click_on_a_query_in_the_query_key_space_opens_it_focused_on_the_attention_page(page, server):
    open_page(page, server, "query_key?roles_lines=repeated&roles_count=4&qk_layer=1")
    wait_for_charts(page)
    page.wait_for_function(f"""() => [...document.querySelectorAll("{PLOT}")].some(
        p => (p.layout.title?.text || "").includes("queries and"))""", timeout=60_000)
    wait_idle(page)
    target = page.evaluate(f"""() => {{
        const plot = [...document.querySelectorAll("{PLOT}")].find(
            p => (p.layout.title?.text || "").includes("queries and"));
        plot.scrollIntoView({{block: "center"}});
        const full = plot._fullLayout, trace = plot._fullData[0], box = plot.getBoundingClientRect();
        const i = 5;
        return {{x: box.left + full.xaxis._offset + full.xaxis.l2p(trace.x[i]),
                 y: box.top + full.yaxis._offset + full.yaxis.l2p(trace.y[i]),
                 line: Number(trace.customdata[i][1]) - 1, position: Number(trace.customdata[i][2])}}; }}""")
    page.mouse.move(target["x"], target["y"])
    page.mouse.click(target["x"], target["y"])
    page.wait_for_url("**/attention**", timeout=60_000)
    wait_idle(page)
    assert f"focus={target['position']}" in page.url and "layer=1" in page.url


def test_a_role_no_line_shows_draws_grey_dashed_cells_not_an_empty_panel(page, server):
    """The default sidebar lines repeat no token: the duplicate-token and induction panels have no score. They once
    drew nothing, not even their axes."""
    open_page(page, server, "heads")
    wait_for_charts(page)
    roles = f"""() => [...document.querySelectorAll("{PLOT}")].find(
        plot => (plot.layout.title?.text || "").includes("role scores"))"""
    page.wait_for_function(f"() => !!({roles})()", timeout=60_000)
    drawn = page.evaluate(f"""() => {{
        const plot = ({roles})();
        const dashes = [...plot.querySelectorAll("text")].filter(t => t.textContent === "—").length;
        const ticks = [...plot.querySelectorAll(".xaxislayer-above text")].map(t => t.textContent);
        return {{dashes, ticks: ticks.length, heads: ticks.filter(t => /^H\\d+$/.test(t)).length}};
    }}""")
    assert drawn["dashes"] >= 2 * 2 * 4, drawn  # two roles without a score, 2 layers × 4 heads each
    assert drawn["heads"] == 5 * 4, drawn  # every panel's x axis names its heads, the empty ones too
