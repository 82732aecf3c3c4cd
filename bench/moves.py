"""Moving the app's controls in Chromium and waiting until the rerun a move starts has been drawn: the tools
the slider benchmark, the induction part and the sweep share."""

from __future__ import annotations

import re
import time

CHART = "document.querySelector('.js-plotly-plot')"  # the app's ui.chart and st.plotly_chart (the floor) both
IDLE = "document.querySelector('[data-testid=\"stApp\"]').getAttribute('data-test-script-state') === 'notRunning'"


# The move's rerun is over: it was seen running, or it changed the first chart, and the app is idle; or the
# address changed and the app has been idle for three polls (animation frames) since, so a 'running' that
# React has yet to commit would have shown.
RERUN_OVER = f"""(() => {{
    const idle = {IDLE};
    window.__idleFrames = idle && location.href !== window.__address ? (window.__idleFrames || 0) + 1 : 0;
    return idle && (window.__ran || ({CHART} && {CHART}._fullData !== window.__before) || window.__idleFrames >= 3);
}})()"""


def move_and_wait(page, act, prepare=None, what="a move"):
    """Press, then wait until the rerun it starts has finished and the browser has painted.

    ``prepare`` runs before the clock starts (typing into a text box reruns nothing: the
    key press that commits it, Enter, does).

    A MutationObserver notes the app entering the running state, so a rerun that
    leaves a chart unchanged (masks do not depend on heads) is still timed; so does a new
    address (every move changes a control that the URL mirrors): a rerun can go running →
    notRunning within one of React's commits, which no observer sees (a Masks d_model move
    once waited out the 60 s that way).
    """
    page.evaluate("""() => {
        const app = document.querySelector('[data-testid="stApp"]');
        const chart = document.querySelector('.js-plotly-plot');
        window.__before = chart && chart._fullData;
        window.__address = location.href;
        window.__idleFrames = 0;
        window.__ran = false;
        window.__observer && window.__observer.disconnect();
        // A short rerun can go running → notRunning within one task: the records' old values still show it.
        window.__observer = new MutationObserver((records) => {
            if (app.getAttribute('data-test-script-state') === 'running' ||
                records.some(record => record.oldValue === 'running')) window.__ran = true;
        });
        window.__observer.observe(app, {attributes: true, attributeFilter: ['data-test-script-state'],
                                        attributeOldValue: true});
    }""")
    if prepare:
        prepare()
    started = time.perf_counter()
    act()
    try:
        page.wait_for_function(f"() => {RERUN_OVER}", timeout=60_000)
        page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    except Exception:  # counted as a 60 s move, never silently dropped
        print(f"  {what} was not redrawn within 60 s ({page.url})", flush=True)
    return time.perf_counter() - started


# A step control's move (ui/stepper.py) is drawn in the browser: every chart of its group that is in view shows the
# control's step (ui/frontend/chart.js sets alDrawnStep once Plotly has drawn it).
STEP_DRAWN = """(group) => {
    const charts = [...document.querySelectorAll('.al-chart')]
        .filter((node) => node.al.parsed && node.al.parsed.group === group);
    return charts.some((node) => !node.al.stale)  // one in view at least: a move that draws nothing is no move
        && charts.every((node) => node.al.stale || node.al.drawnStep === window.alSteps[group]);
}"""
# Plotly's draws counted, but those that make a kept step's copy live again when the browser is idle (chart.js's
# alDrawingKept: the step was on the screen before them), counted apart.
COUNT_DRAWS = """() => {
    if (!window.Plotly.__counted) {
        for (const name of ['react', 'relayout']) {
            const original = window.Plotly[name];
            window.Plotly[name] = (node, ...rest) => {
                if (node.al.drawingKept) window.__keptDrawn = (window.__keptDrawn || 0) + 1;
                else window.__draws = (window.__draws || 0) + 1;
                return original(node, ...rest);
            };
        }
        window.Plotly.__counted = true;
    }
    window.__draws = 0;
    window.__keptDrawn = 0;
}"""
# A move drawn in the browser is timed in the page, from its press to the end of the frame that paints it
# (Playwright's own polling runs on the page's main thread, where the server's run that follows is drawn meanwhile,
# so it would time that too). PAINTED(pressed) records the time and the charts drawn by then.
PAINTED = """(pressed) => requestAnimationFrame(() => setTimeout(() => {  // the frame's paint is done
    window.__drawsAtView = window.__draws;
    window.__viewSeconds = (performance.now() - pressed) / 1e3;
}, 0))"""
# A step control's move: every chart of its group in view shows the step (chart.js's alDrawnStep), and one is in view.
TIME_STEP = f"""(group) => {{
    window.__viewSeconds = null;
    window.addEventListener('keydown', () => {{
        const pressed = performance.now(), drawn = {STEP_DRAWN}, painted = {PAINTED};
        const poll = () => drawn(group) ? painted(pressed) : setTimeout(poll, 0);
        setTimeout(poll, 0);
    }}, {{capture: true, once: true}});
}}"""
# A legend toggle of a chart whose groups the page keeps (the head view's heads): chart.js counts alHiddenDrawn.
TIME_TOGGLE = f"""(group) => {{
    window.__viewSeconds = null;
    const node = [...document.querySelectorAll('.al-chart')]
        .find((chart) => (chart.data || []).some((trace) => trace.legendgroup === group));
    const before = node.al.hiddenDrawn || 0;
    window.addEventListener('mousedown', () => {{
        const pressed = performance.now(), painted = {PAINTED};
        const poll = () => (node.al.hiddenDrawn || 0) > before ? painted(pressed) : setTimeout(poll, 0);
        setTimeout(poll, 0);
    }}, {{capture: true, once: true}});
}}"""
# A click on a cell of a grid whose focus the browser draws (viz/panels.js): chart.js keeps the shapes it drew as text
# (alShapes); timed until they change and are painted.
TIME_FOCUS = f"""(index) => {{
    window.__viewSeconds = null;
    const node = document.querySelectorAll('.al-chart')[index], before = node.al.shapes;
    window.addEventListener('mousedown', () => {{
        const pressed = performance.now(), painted = {PAINTED};
        const poll = () => node.al.shapes !== before ? painted(pressed) : setTimeout(poll, 0);
        setTimeout(poll, 0);
    }}, {{capture: true, once: true}});
}}"""


def _timed_in_page(page, timer: str, arg, act, what: str) -> tuple[float, int]:
    """Arm ``timer`` (TIME_STEP, TIME_TOGGLE or TIME_FOCUS, given ``arg``), then ``act``: the seconds it measured and
    the charts drawn by then (Plotly.react and relayout calls; `redraws_after` counts the server's run's)."""
    page.evaluate(COUNT_DRAWS)
    page.evaluate(timer, arg)
    act()
    try:
        page.wait_for_function("() => window.__viewSeconds !== null", timeout=60_000)
    except Exception:  # counted as a 60 s move, never silently dropped
        print(f"  {what} was not drawn within 60 s ({page.url})", flush=True)
        return 60.0, page.evaluate("() => window.__draws")
    return page.evaluate("() => [window.__viewSeconds, window.__drawsAtView]")


def step_and_wait(page, act, group: str, what="a step") -> tuple[float, int]:
    """Move a step control in the browser by a key (``act``): until its group's charts are drawn and painted."""
    return _timed_in_page(page, TIME_STEP, group, act, what)


def legend_toggle_and_wait(page, group: str, what="a legend toggle") -> tuple[float, int]:
    """Click legend entry ``group`` of the chart that has it: until the chart is updated and painted."""
    entry = page.locator(".al-chart .legend .traces").filter(has_text=re.compile(f"^{re.escape(group)}$"))
    return _timed_in_page(page, TIME_TOGGLE, group, entry.first.locator(".legendtoggle").click, what)


def focus_click_and_wait(page, chart: int, x: float, y: float, what="a focus click") -> tuple[float, int]:
    """Click cell ``(x, y)`` (data coordinates) of chart ``chart``, a grid whose focus the browser draws: until its
    outlines are painted."""
    from chart_support import click_chart  # noqa: PLC0415  (bench's path; as sweep's)

    return _timed_in_page(page, TIME_FOCUS, chart, lambda: click_chart(page, chart, x, y), what)


def redraws_after(page, drawn: int) -> int:
    """The charts drawn since `step_and_wait` beyond the ``drawn`` of the move itself (call once the app is idle)."""
    return page.evaluate("() => window.__draws") - drawn


def kept_drawn(page) -> int:
    """Charts Plotly drew when idle under their kept copies (drawing_copies.js) since `step_and_wait`."""
    return page.evaluate("() => window.__keptDrawn")


def slider(page, label):
    return page.get_by_test_id("stSlider").filter(has_text=label).get_by_role("slider")


PAD_SETS = ["<pad>", "0", "<pad> 0", "0 9", "9", "9 <pad>", "<pad> 9 0"]  # none is the default, "0 <pad>"


def pad_set(index: int) -> str:
    """The pad symbols of a lane's pad move ``index``: new on every move (the default is "0 <pad>")."""
    return PAD_SETS[index] if index < len(PAD_SETS) else f"<pad> p{index}"


def move_control(page, kind, count, first=0):
    """``count`` moves of one control, the lane's moves ``first``, ``first + 1`` … of that kind. Sequence length
    (one stop right) and pad symbols take a new value on every move, so the engine computes each (nothing
    cached); heads and d_model go back and forth between two architectures, both built (what the model
    cache is for)."""
    from browser_support import wait_idle

    times = []
    for index in range(count):
        if kind == "focus":  # the Attention page's focused query: one step along its slider
            thumb = slider(page, "Focus a query")
            thumb.focus()
            times.append(move_and_wait(page, lambda: thumb.press("ArrowRight"), what="focus"))
        elif kind == "head_toggle":  # the head view's head 1 in its legend: hidden, shown, hidden … in the browser
            times.append(legend_toggle_and_wait(page, "head 1", what="head toggle")[0])
        elif kind == "pads":
            box = page.get_by_test_id("stSidebar").get_by_role("textbox", name="Pad symbols")
            value = pad_set(first + index)
            times.append(move_and_wait(page, lambda: box.press("Enter"), prepare=lambda: box.fill(value),
                                        what=f"pad symbols {value!r}"))
        else:
            label = {"seq_len": "Sequence length", "heads": "Heads (h)", "d_model": "d_model"}[kind]
            thumb = slider(page, label)
            key = "ArrowRight" if kind == "seq_len" or index % 2 == 0 else "ArrowLeft"
            thumb.focus()
            times.append(move_and_wait(page, lambda: thumb.press(key), what=f"{kind} {key}"))
        wait_idle(page)
    return times
