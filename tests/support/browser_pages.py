"""Helpers the browser tests share: open a page of the app and wait for it, read what Plotly drew, the text a
chart draws outside its own box, a slider's thumb."""

from browser_support import wait_idle
from chart_support import FIRST_PLOT, PLOT

from ui.chart import CHART_CLASS


def open_page(page, server, path):
    page.goto(f"{server}/{path}")
    wait_idle(page)
    page.wait_for_selector("[data-testid='stSidebar']")
    return page


def chart_data(page, index=0):
    """What Plotly drew in chart ``index``: trace count, weight panels and the first trace's z shape."""
    return page.evaluate(
        """([PLOT, index]) => {
            const plot = document.querySelectorAll(PLOT)[index];
            if (!plot || !plot.data) return null;
            const z = plot._fullData?.[0]?.z;
            return {traces: plot.data.length, panels: plot.data.filter(trace => trace.coloraxis).length,
                    rows: z ? z.length : 0, cols: z && z[0] ? z[0].length : 0};
        }""",
        [PLOT, index],
    )


def wait_for_charts(page):
    page.wait_for_selector(PLOT, timeout=60_000)
    page.wait_for_function(f"() => {FIRST_PLOT}?.data")


# Text a chart draws outside its own box is cut off (a title wider than a narrow column); two panel titles
# that overlap cannot be read; a legend over a plot area hides data. Returns one line per problem, naming the
# chart and the text.
CHART_TEXT_PROBLEMS = f"""() => [...document.querySelectorAll('{PLOT}')].flatMap((plot, index) => {{
    const box = plot.getBoundingClientRect(), problems = [];
    const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    for (const text of plot.querySelectorAll('.gtitle, .annotation-text, .g-xtitle, .g-ytitle, .legendtext')) {{
        const r = text.getBoundingClientRect();
        if (r.width && (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1))
            problems.push(`chart ${{index}}: "${{text.textContent}}" is cut off`);
    }}
    const titles = [...plot.querySelectorAll('.annotation-text')].map((text) => [text, text.getBoundingClientRect()]);
    for (const [i, [text, r]] of titles.entries())
        for (const [other, o] of titles.slice(i + 1))
            if (r.width && o.width && overlap(r, o))
                problems.push(`chart ${{index}}: "${{text.textContent}}" runs into "${{other.textContent}}"`);
    const legend = plot.querySelector('.legend');
    for (const area of legend ? plot.querySelectorAll('.nsewdrag') : [])
        if (overlap(legend.getBoundingClientRect(), area.getBoundingClientRect()))
            problems.push(`chart ${{index}}: the legend covers a plot`);
    return problems;
}})"""


TALL_PX = 4000  # a window this tall has every chart of every page in view, so every chart is drawn


def wait_for_every_chart(page):
    """Until every chart on the page is drawn (each is drawn once it is in view: open the page in a tall window)."""
    wait_for_charts(page)
    page.wait_for_function(f"() => [...document.querySelectorAll('.{CHART_CLASS}')].every((node) => node._fullData)",
                           timeout=60_000)


def slider_thumb(page, label):
    container = page.get_by_test_id("stSlider").filter(has_text=label)
    return container.get_by_role("slider")


def press_until_redrawn(page, thumb, key, rows):
    """Press ``key`` on a slider's ``thumb``; return once the first chart has ``rows`` rows and the run is over."""
    thumb.focus()
    thumb.press(key)
    page.wait_for_function(f"() => {FIRST_PLOT}?._fullData?.[0]?.z?.length === {rows}", timeout=60_000)
    wait_idle(page)
