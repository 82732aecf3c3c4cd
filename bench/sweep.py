"""The sweep: every page × its sidebar sliders, its main slider and its main choices, each moved in Chromium,
against the framework's floor measured in the same sitting (the floor moves between every page's moves).

A lane is one page and one control (found by its exact label). The sequence length moves one stop right each time
(a new length: the engine computes it); every other slider goes back and forth between two stops (the second visit
is what a person scrubbing sees); a choice (a radio or a segmented control) is clicked to one option and back.
Pages are opened one at a time (the floor stays open), each looked at for 2.5 s first, as in the slider benchmark.
Each row also splits a move: the browser's main-thread time (Chromium's own TaskDuration over the move, through the
DevTools protocol: Streamlit's frontend, Plotly, layout and paint) and the rest (the server's run and the wire,
while the browser waits).

The first lane is a second reference: a page of the app's shape with no engine (bench/skeleton_app.py: the app's
navigation, sidebar controls, captions and one chart), so a row beside it says how much of a move is the page's
shape and how much the page's own work.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, field

from browser_pages import open_select
from chart_support import click_chart
from moves import focus_click_and_wait, kept_drawn, legend_toggle_and_wait, move_and_wait, redraws_after, step_and_wait
from report import percentile, row

SIDEBAR = ("Sequence length", "Heads (h)", "d_model")
CHARTLESS = ("cost", "train", "explanations (copy)")  # pages that draw no chart until a button is pressed: their lanes
# wait for none
TARGET = "≤ 1.3× skeleton"  # the target: the page skeleton's lane (the first) in the same sitting
LINE_64 = "+".join(str(i % 10) for i in range(64))  # 64 tokens: no padding (the slider benchmark's head view line)
VIEW_TARGET = "≤ 0.5× floor"  # a move drawn in the browser (a step, a legend toggle): half the trivial page's
TIMELINE_KEY = "sweeptl01"  # the model trained here whose attention over training the Train page scrubs
TIMELINE_MODEL = "session:" + TIMELINE_KEY  # its name (transformer.training.pretrained.session_name)


@dataclass
class Lane:
    """One page (``path``, with its query) and one slider (``label``, exact)."""

    page: str
    path: str
    label: str
    server: str = "app"  # or "skeleton": bench/skeleton_app.py
    options: tuple[str, str] = ()  # a choice (radio, segmented control): the option moved to, then the one back
    select: bool = False  # the choice is a select box (opened before the clock starts; the click on an option is timed)
    point: tuple = ()  # (chart index, x, y): a click on that chart at those data coordinates (the Images page's pixel)
    fresh: bool = False  # with a point: each move clicks another pixel of row y (a figure never drawn before)
    step_group: str = ""  # a step control's group (ui/stepper.py): timed until its charts are drawn in the browser
    legend_group: str = ""  # a legend entry the page keeps (the head view's heads): timed until drawn in the browser
    focus_cell: tuple = ()  # (chart index, x, y): a cell whose focus the browser draws (viz/panels.js), clicked
    trained_here: bool = False  # the page opens TIMELINE_MODEL, kept in the server's data directory (`keep_model`)
    times: list = field(default_factory=list)
    redraws: list = field(default_factory=list)  # a step move's charts drawn again by the server's run that follows
    kept: list = field(default_factory=list)  # kept copies Plotly drew live once the browser was idle
    browser: list = field(default_factory=list)  # the browser's main-thread seconds of each move

    @property
    def chart(self) -> bool:
        return self.page not in CHARTLESS

    @property
    def in_browser(self) -> bool:
        """A move drawn in the browser first: timed until painted there, the server's run after it counted apart."""
        return bool(self.step_group or self.legend_group or self.focus_cell)


def _busy_seconds(devtools) -> float:
    """Chromium's main-thread task time so far (DevTools Performance.getMetrics, seconds)."""
    metrics = devtools.send("Performance.getMetrics")["metrics"]
    return next(metric["value"] for metric in metrics if metric["name"] == "TaskDuration")


UNSWEPT = {"glossary": "text and links only: no control to move, no chart",  # pages without a lane, and why
           "class_room": "no model control: its moves are a class's answers (make load-test measures those)"}


def lanes() -> list[Lane]:
    """Every page × its sliders (sidebar and page), at each page's defaults unless a page needs a model or lines."""
    pages = {
        "home": ("", ()), "masks": ("masks?mask_family=window", ("Window",)),
        "positional encoding": ("positional_encoding", ()), "attention": ("attention", ("Layer",)),
        "heads": ("heads?roles_lines=repeated&roles_count=8", ("How many lines",)),
        "query–key": ("query_key", ("Head", "Layer")), "dot-product lab": ("dot_product_lab", ("Logit size",)),
        "shapes": ("shapes", ("Step",)), "cost": ("cost", ("Longest N",)), "train": ("train", ()),
    }
    found = [Lane("page skeleton (no engine)", "", "Sequence length", server="skeleton")]
    found += [Lane(name, path, label) for name, (path, own) in pages.items() for label in SIDEBAR + own]
    found += [Lane("induction", "induction?ind_count=50", "How many lines"),
              Lane("explanations (copy)", "explanations?weights=copy&ex_count=10", "Examples"),
              Lane("images (match)", "images", "a pixel flipped", point=(0, 5, 2)),
              Lane("images (match)", "images", "a new pixel flipped each move", point=(0, 0, 6), fresh=True),
              Lane("attention, score terms", "attention?view=Score+terms&focus=3", "Focus a query"),
              Lane("attention, score terms", "attention?view=Score+terms&focus=3", "Key"),
              Lane("decode (dates)", "decode?weights=dates", "Step"),
              Lane("decode (dates), in the browser", "decode?weights=dates", "Step", step_group="dec"),
              Lane("attention, head view N=64, in the browser", f"attention?seq_len=64&view=Head+view&src={LINE_64}",
                   "head 1", legend_group="head 1"),
              Lane("attention, in the browser", "attention", "a cell clicked (focus)", focus_cell=(0, 1, 3)),
              Lane("train, a model's timeline, in the browser", f"train?weights={TIMELINE_MODEL}&tl_step=0", "Step",
                   step_group="tl", trained_here=True)]
    return found + choice_lanes()


def keep_model() -> str:
    """Train a small reverse model with its attention over training (a snapshot every 2 of 30 steps) and keep it in
    the data directory that ``ATTENTION_LAB_DATA_DIR`` names, as the Train page keeps a student's; its name."""
    from transformer.service import TrainSpec, register  # noqa: PLC0415  (the engine: only for this lane)
    from transformer.training.train import train  # noqa: PLC0415

    spec = TrainSpec(task="reverse", d_model=16, num_heads=2, d_ff=32, num_layers=1, steps=30, batch=16, max_len=6)
    return register(train(spec, log_every=30, device="/CPU:0", timeline_every=2), TIMELINE_KEY, "the sweep's model")


@contextlib.contextmanager
def data_dir_with_model():
    """A temporary data directory holding `keep_model`'s model, named in this process's environment meanwhile."""
    before = os.environ.get("ATTENTION_LAB_DATA_DIR")
    with tempfile.TemporaryDirectory(prefix="sweep-data-") as folder:
        os.environ["ATTENTION_LAB_DATA_DIR"] = folder
        try:
            keep_model()
            yield folder
        finally:
            if before is None:
                os.environ.pop("ATTENTION_LAB_DATA_DIR", None)
            else:
                os.environ["ATTENTION_LAB_DATA_DIR"] = before


def choice_lanes() -> list[Lane]:
    """Each page's main choices (and the sidebar's Norm), between two options: a move is a click."""
    return [
        Lane("attention", "attention", "Weights", options=("Trained: dates", "Seeded random weights"), select=True),
        Lane("attention", "attention", "Norm", options=("Pre-norm (GPT-2)", "Post-norm (the paper)")),
        Lane("attention", "attention", "View", options=("Model view", "Checks")),
        Lane("attention", "attention", "Attention",
             options=("Masked decoder self-attention", "Encoder self-attention")),
        Lane("masks", "masks", "Self-attention mask", options=("causal", "paper")),
        Lane("heads", "heads?roles_lines=repeated&roles_count=8", "Lines",
             options=("The sidebar's lines", "Repeated random tokens")),
        Lane("query–key", "query_key", "Colour by", options=("token", "position")),
        Lane("induction", "induction?ind_count=50", "Ablate (zero) in the loss chart",
             options=("the induction heads", "none")),
        Lane("decode (dates)", "decode?weights=dates", "Choice", options=("sampled", "greedy")),
        Lane("patching (dates)", "patching?weights=dates", "Map",
             options=("the residual stream (layer × position)", "each head's output")),
        Lane("train", "train", "Task", options=(
            "reverse — Reverse the source: cross-attention should be anti-diagonal.",
            "copy — Copy the source: cross-attention should be diagonal."), select=True),
    ]


def _thumb(page, label: str):
    return page.locator(f'input[type="range"][aria-label="{label}"]').first


def move_lane(page, lane: Lane, index: int) -> float:
    option = lane.options[index % 2] if lane.options else None
    if lane.in_browser:  # timed until drawn in the browser; the server's run after it is
        from browser_support import wait_idle  # noqa: PLC0415  (waited for, not timed; as in sweep: Playwright late)

        if lane.legend_group:
            seconds, drawn = legend_toggle_and_wait(page, lane.legend_group, f"{lane.page} {lane.label}")
        elif lane.focus_cell:  # the same cell each time: focused, then not, …
            seconds, drawn = focus_click_and_wait(page, *lane.focus_cell, what=f"{lane.page} {lane.label}")
        else:
            thumb = _thumb(page, lane.label)
            thumb.focus()
            key = "ArrowRight" if index % 2 == 0 else "ArrowLeft"
            seconds, drawn = step_and_wait(page, lambda: thumb.press(key), lane.step_group, f"{lane.page} {key}")
        wait_idle(page)
        lane.redraws.append(redraws_after(page, drawn))
        lane.kept.append(kept_drawn(page))
        return seconds
    if lane.point:
        chart, x, y = lane.point
        if lane.fresh:  # pixels (x, y), (x + 1, y), … then the next row: each move's image is new
            x, y = (x + index) % 8, (y + (x + index) // 8) % 8
        return move_and_wait(page, lambda: click_chart(page, chart, x, y), what=f"{lane.page} · {lane.label}")
    if lane.select:
        box = page.get_by_test_id("stSelectbox").filter(has_text=lane.label).first
        return move_and_wait(page, lambda: page.get_by_role("option", name=option, exact=True).click(),
                             prepare=lambda: open_select(box), what=f"{lane.page} · {lane.label} → {option}")
    if lane.options:
        radio = page.get_by_role("radiogroup", name=lane.label).get_by_role("radio", name=option, exact=True)
        # force: Streamlit's radio draws its own circle over the input, which a plain click waits on forever
        return move_and_wait(page, lambda: radio.click(force=True), what=f"{lane.page} · {lane.label} → {option}")
    thumb = _thumb(page, lane.label)
    thumb.focus()
    key = "ArrowRight" if lane.label == "Sequence length" or index % 2 == 0 else "ArrowLeft"
    return move_and_wait(page, lambda: thumb.press(key), what=f"{lane.page} · {lane.label} {key}")


def _floor_move(page, index: int) -> float:
    thumb = _thumb(page, "Sequence length")
    thumb.focus()
    return move_and_wait(page, lambda: thumb.press("ArrowRight" if index % 2 == 0 else "ArrowLeft"), what="floor")


def sweep(quick: bool) -> None:
    """Every lane moved ``moves`` times, each move followed by one of the floor's; one row per lane."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server, wait_idle
    from playwright.sync_api import sync_playwright

    moves = 4 if quick else 15
    floor_times, all_lanes = [], lanes()
    with (sync_playwright() as playwright, data_dir_with_model() as data_dir,
          streamlit_server("bench/trivial_app.py") as floor_url,
          streamlit_server("bench/skeleton_app.py") as skeleton_url,
          streamlit_server(env={"ATTENTION_LAB_DATA_DIR": data_dir}) as url):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        floor = context.new_page()
        floor.goto(f"{floor_url}/?chart=component")
        wait_idle(floor)
        floor_devtools = context.new_cdp_session(floor)
        floor_devtools.send("Performance.enable")
        floor_browser = []
        for lane in all_lanes:
            page = context.new_page()
            page.goto(f"{skeleton_url if lane.server == 'skeleton' else url}/{lane.path}")
            wait_idle(page)
            if lane.chart:
                page.wait_for_function("() => document.querySelector('.js-plotly-plot')?._fullData", timeout=120_000)
            if lane.step_group:  # its charts in view (the Train page's timeline is below the training form)
                _thumb(page, lane.label).scroll_into_view_if_needed()
            page.wait_for_timeout(2_500)
            devtools = context.new_cdp_session(page)
            devtools.send("Performance.enable")
            for index in range(moves):
                page.bring_to_front()
                busy = _busy_seconds(devtools)
                lane.times.append(move_lane(page, lane, index))
                lane.browser.append(_busy_seconds(devtools) - busy)
                wait_idle(page)
                floor.bring_to_front()
                busy = _busy_seconds(floor_devtools)
                floor_times.append(_floor_move(floor, len(floor_times)))
                floor_browser.append(_busy_seconds(floor_devtools) - busy)
                wait_idle(floor)
            page.close()
        browser.close()
    floor_p50 = percentile(floor_times, 50)
    floor_busy = percentile(floor_browser, 50)
    row("sweep", f"trivial one-chart page, this app's chart component ({len(floor_times)} moves) p50 / p90 ms; "
        "browser / rest", f"{floor_p50 * 1e3:.0f} / {percentile(floor_times, 90) * 1e3:.0f}; {floor_busy * 1e3:.0f} / "
        f"{max(0.0, floor_p50 - floor_busy) * 1e3:.0f}")
    skeleton_p50 = percentile(all_lanes[0].times, 50)
    for lane in all_lanes:
        p50, p90, browser = percentile(lane.times, 50), percentile(lane.times, 90), percentile(lane.browser, 50)
        if lane.in_browser:
            row("sweep", f"{lane.page} · {lane.label} ({len(lane.times)} moves) p50 / p90 ms until drawn; charts the "
                "server's run drew again; kept copies drawn live when idle", f"{p50 * 1e3:.0f} / {p90 * 1e3:.0f} "
                f"({p50 / floor_p50:.2f}× floor); {sum(lane.redraws)}; {sum(lane.kept)}", VIEW_TARGET)
            continue
        row("sweep", f"{lane.page} · {lane.label} ({len(lane.times)} moves) p50 / p90 ms; browser / rest",
            f"{p50 * 1e3:.0f} / {p90 * 1e3:.0f} ({p50 / floor_p50:.1f}× floor, {p50 / skeleton_p50:.2f}× skeleton); "
            f"{browser * 1e3:.0f} / {max(0.0, p50 - browser) * 1e3:.0f}", "" if lane is all_lanes[0] else TARGET)
