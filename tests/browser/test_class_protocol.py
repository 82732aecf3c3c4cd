"""The load tests' clients against the browser tier's server: what `make load-test` and `make load-test-browser`
measure is what a browser gets and shows. A protocol student (bench/student.py) that presses Train follows its job
as the browser does and explores the model; the run that a fragment's `st.rerun()` starts when the job ends stays on
the Train page (a student that named its page without the page's script hash was sent to the app's first page, and
the class-training table read 10 of 10 jobs failed). A Chromium session's move back to a figure seen before is over
when the figure's kept copy is on the screen, before Plotly draws it under the copy (bench/load_test.py counted up
to 0.5 s more)."""

import asyncio
import concurrent.futures
import random
import sys
from pathlib import Path

import pytest
from browser_support import close_tab, new_tab, wait_idle

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import load_test  # noqa: E402
import student  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_protocol_student_trains_follows_its_job_and_explores_the_model(server, monkeypatch):
    monkeypatch.setattr(student, "ANSWER_TIMEOUT", 60.0)  # a missing answer fails in a minute, not two

    async def train_and_explore():
        learner = student.Student(5, server, random.Random(5))
        await learner.connect()
        try:
            return learner, await learner.train_once(20, timeout=240)
        finally:
            await learner.close()

    # its own event loop on a thread of its own: the tier's shared Chromium (Playwright's sync API) may be running one
    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        learner, outcome = thread.submit(asyncio.run, train_and_explore()).result()
    assert outcome == "done" and learner.errors == [] and learner.leaks == 0
    explored = learner.answers[-1][1]  # Explore's answer: the model's attention on the Attention page
    assert explored.finished and explored.charts >= 1 and "Focus a query" in explored.widgets


# Press the slider's key, then resolve, at the first change of the page after which load_test.drawn holds, with
# whether Plotly had drawn the figure's rows by then.
MOVE_UNTIL_DRAWN = """([key, condition, rows]) => new Promise((resolve) => {
    const holds = new Function('return (' + condition + ')'), plotted = new Function('return (' + rows + ')');
    const observer = new MutationObserver(() => {
        if (holds()) { observer.disconnect(); resolve(plotted()); }
    });
    observer.observe(document.documentElement, {subtree: true, childList: true, attributes: true});
    document.activeElement.dispatchEvent(new KeyboardEvent('keydown', {key, bubbles: true}));
})"""


def test_a_load_test_session_counts_a_seen_figure_drawn_when_its_kept_copy_is_shown(browser, server):
    tab = new_tab(browser, 1300, 900)
    try:
        tab.goto(load_test.APP.url(server, "s1"))
        wait_idle(tab)
        tab.wait_for_function(f"() => {load_test.rows_are(6)}", timeout=60_000)
        # 6's copy is made when the browser is next idle after its drawing, and only if no other draw began by then: a
        # move made before that would leave 6 with no copy to show (the race a 2-core host lost on CI)
        tab.wait_for_function("() => document.querySelector('.al-chart')?.al.pictures?.size >= 1", timeout=30_000)
        thumb = tab.get_by_test_id("stSlider").filter(has_text="Sequence length").get_by_role("slider")
        thumb.focus()
        thumb.press("ArrowRight")  # 7: a new figure, then 6 again: the first one, whose copy was kept
        tab.wait_for_function(f"() => {load_test.rows_are(7)}", timeout=60_000)
        wait_idle(tab)
        # the first chart's copies of both figures, made when the browser was idle (on a 2-core host running two
        # workers' browsers, idle time can come late: a wait, not a speed target)
        tab.wait_for_function("() => document.querySelector('.al-chart')?.al.pictures?.size >= 2", timeout=30_000)
        copies = tab.evaluate(f"() => {load_test.COPIES_SHOWN}")
        thumb.focus()
        plotted = tab.evaluate(MOVE_UNTIL_DRAWN, ["ArrowLeft", load_test.drawn(6, copies), load_test.rows_are(6)])
        assert plotted is False  # the copy was on the screen first, and the move counted as drawn then
        tab.wait_for_function(f"() => {load_test.rows_are(6)}", timeout=10_000)  # Plotly's own drawing follows
    finally:
        close_tab(tab)
