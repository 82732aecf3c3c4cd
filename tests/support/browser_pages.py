"""Helpers the browser tests share: open a page of the app and wait for it, read what Plotly drew, the text a
chart draws outside its own box, a slider's thumb."""

import contextlib

from browser_support import close_tab, new_tab, wait_idle
from chart_support import FIRST_PLOT, PLOT

from ui.chart import CHART_CLASS
from ui.pages import PAGES


def open_page(page, server, path):
    page.goto(f"{server}/{path}")
    wait_idle(page)
    page.wait_for_selector("[data-testid='stSidebar']")
    return page


def open_select(box) -> None:
    """Open the select box ``box`` (a Playwright locator) as a person does: scrolled into view first, then clicked.
    The sidebar's boxes sit below the list of pages: a click that has to scroll closes the list it opens."""
    box.scroll_into_view_if_needed()
    box.page.wait_for_timeout(300)
    box.click()


def go_to_page(page, path: str):
    """The sidebar's link to ``path`` (a page's URL path) clicked: the app's own navigation, no page load. Returns
    once that page's run is over."""
    title = next(title for name, title, *_ in PAGES if name == path)
    link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)  # as the benchmark's first visits
    if not link.count():  # past the first ten pages: the list is folded
        page.get_by_test_id("stSidebarNavViewButton").click()
    link.click()
    page.wait_for_url(f"**/{path}**", timeout=60_000)
    wait_idle(page)
    return page


def walk(page, server, paths):
    """Each of ``paths`` in turn, yielded once its run is over: the first opened by its link (settings may follow
    it), the others by the sidebar's links (`go_to_page`), keeping the session's settings."""
    for index, path in enumerate(paths):
        if index == 0:
            open_page(page, server, path)
        else:
            go_to_page(page, path)
        yield path


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


# Text that runs into other text, or onto another panel's cells: a tick label into its axis title, a colour bar's
# labels into a neighbour's ticks, one panel's y labels on the panel to its left. One line per collision.
TEXT_COLLISIONS = r"""(selector) => [...document.querySelectorAll(selector)].flatMap((plot, index) => {
    const found = [], shrink = (r, by) => ({left: r.left + by, right: r.right - by, top: r.top + by,
                                            bottom: r.bottom - by});
    const overlap = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const texts = [...plot.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, '
                                            + '.annotation-text, .cbaxis text, .cbtitle text, .gtitle, '
                                            + '.legendtext, .legendtitletext')]
        .filter((node) => node.textContent.trim() && node.getBoundingClientRect().width)
        .map((node) => [node, shrink(node.getBoundingClientRect(), 1)]);
    const axis = (node) => node.closest('.xtick, .ytick') ? node.closest('g[class*="axislayer"]') : null;
    const rotated = (node) => /rotate\((?!0[ ,)])/.test(node.getAttribute('transform') || '');
    for (const [i, [a, ra]] of texts.entries())
        for (const [b, rb] of texts.slice(i + 1)) {
            const sameAxis = axis(a) && axis(a) === axis(b);
            const ticks = axis(a) && axis(b);
            if ((sameAxis || ticks) && (rotated(a) || rotated(b))) continue;  // a rotated label's box is not its ink
            if (overlap(ra, rb)) found.push(`chart ${index}: "${a.textContent}" runs into "${b.textContent}"`);
        }
    const cells = [...plot.querySelectorAll('.heatmaplayer image, .heatmaplayer .hm')].map((n) =>
        shrink(n.getBoundingClientRect(), 1));
    for (const [node, r] of texts.filter(([n]) => n.closest('.ytick')))
        for (const cell of cells)
            if (overlap(r, cell)) found.push(`chart ${index}: tick "${node.textContent}" lies on a panel's cells`);
    return found;
})"""


@contextlib.contextmanager
def app_tab(browser, server, path: str, width: int, height: int = 4000):
    """A page of the app at ``width`` px, its charts drawn (at 390 px the sidebar starts collapsed: the page is
    waited for, not the sidebar)."""
    tab = new_tab(browser, width, height)
    try:
        tab.goto(f"{server}/{path}")
        wait_idle(tab)
        wait_for_charts(tab)
        yield tab
    finally:
        close_tab(tab)


def text_collisions(page) -> list:
    """One line per text of a chart that runs into another or onto a panel's cells (`TEXT_COLLISIONS`)."""
    return page.evaluate(TEXT_COLLISIONS, PLOT)


def press_train(page, server, steps: int) -> None:
    """On the Train page, the default job with ``steps`` steps, Train pressed."""
    open_page(page, server, "train")
    field = page.get_by_label("Steps")
    field.fill(str(steps))
    field.press("Enter")
    wait_idle(page)
    page.get_by_role("button", name="Train", exact=True).click()


def press_train_task(page, server, task: str, steps: int) -> None:
    """On the Train page, ``task`` chosen and ``steps`` steps typed (no Enter: in the form it would submit the form
    with the old value), Train pressed."""
    open_page(page, server, "train")
    open_select(page.get_by_test_id("stSelectbox").filter(has_text="Task"))
    page.get_by_role("option", name=task, exact=False).click()
    wait_idle(page)
    page.get_by_label("Steps").fill(str(steps))
    page.get_by_role("button", name="Train", exact=True).click()


def _saying_what_the_page_shows(page, failure: str, wait) -> None:
    """``wait()``; on Playwright's timeout an AssertionError with ``failure``, the address and the page's text."""
    try:
        wait()
    except Exception as error:
        raise AssertionError(f"{failure} at {page.url}; the page says: {page.inner_text('body')[-1500:]}") from error


def explore(page) -> str:
    """Wait for the job to end, open its model on the Attention page; the link."""
    button = page.get_by_role("button", name="Explore this model's attention")
    button.wait_for(timeout=180_000)
    button.click()
    _saying_what_the_page_shows(page, "Explore did not open the Attention page",
                                lambda: page.wait_for_url("**/attention?**", timeout=60_000))
    wait_idle(page, timeout=120_000)
    _saying_what_the_page_shows(page, "no chart",  # a model's first run traces it: slow on a busy machine
                                lambda: page.wait_for_selector(PLOT, timeout=120_000))
    return page.url
