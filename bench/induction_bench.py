"""Benchmark rows of the induction issue: training the induction task as the Train page does (with its timeline),
and a head change of the Heads page's query–key space in Chromium against the framework's floor, same sitting."""

from __future__ import annotations

import time

import numpy as np
from moves import move_control
from report import percentile, row


def live_induction_training(quick: bool) -> None:
    """The Train page's induction job (its form's settings: 1,500 steps, a snapshot every 50) on this machine's
    CPU: seconds, accuracy on fresh lines, and the step where a head's induction score first reached 0.5."""
    from transformer.training.saved_model import TrainSpec
    from transformer.training.train import train
    from ui.training_timeline import formed_at

    steps = 300 if quick else 1500
    spec = TrainSpec.for_task("induction", steps=steps, warmup=100)
    started = time.perf_counter()
    result = train(spec, device="/CPU:0", timeline_every=max(1, steps // 30), log_every=max(1, steps // 50))
    seconds = time.perf_counter() - started
    shots = result.timeline
    formed = formed_at([shot.step for shot in shots],
                       np.stack([shot.scores["decoder"]["induction"] for shot in shots]))
    row("train", f"the induction task live, Train page settings ({steps} steps, {len(shots)} snapshots), CPU",
        f"{seconds:.0f} s, {result.accuracy:.1%} on the repeat; induction ≥ 0.5 at step {formed}",
        "≥ 85 % within 180 s on 2 cores")


def query_key_head_change(quick: bool) -> None:
    """The Query–key page at its defaults (the sidebar's three lines, encoder layer 0): the head slider
    moved between heads 0 and 1, each move timed to the redrawn scatter; the floor's slider in the same sitting,
    moves alternating."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server, wait_idle
    from playwright.sync_api import sync_playwright

    count = 6 if quick else 20
    floor_times, head_times = [], []
    with (sync_playwright() as playwright, streamlit_server("bench/trivial_app.py") as floor_url,
          streamlit_server() as url):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        floor = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        floor.goto(f"{floor_url}/?chart=component")
        wait_idle(floor)
        heads = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        heads.goto(f"{url}/query_key")
        wait_idle(heads)
        heads.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some("
                                "p => (p.layout.title?.text || '').includes('queries and'))", timeout=120_000)
        heads.wait_for_timeout(2_500)  # looked at first, as a person would (the engine traces meanwhile)
        for index in range(count):
            floor.bring_to_front()
            floor_times += move_control(floor, "seq_len", 1, first=index)
            heads.bring_to_front()
            head = 1 if index % 2 == 0 else 0  # back and forth between heads 0 and 1
            thumb = heads.locator("input[aria-label=\"Head\"]")
            thumb.focus()
            started = time.perf_counter()
            thumb.press("ArrowRight" if head else "ArrowLeft")
            heads.wait_for_function(f"""() => [...document.querySelectorAll('.js-plotly-plot')].some(
                p => (p.layout.title?.text || '').includes('head {head}:'))""", timeout=60_000)
            heads.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
            head_times.append(time.perf_counter() - started)
            wait_idle(heads)
        browser.close()
    floor_p50 = percentile(floor_times, 50)
    p50, p90 = percentile(head_times, 50), percentile(head_times, 90)
    row("slider", f"query–key page: head changes ({count}), default lines p50 / p90 ms",
        f"{p50 * 1e3:.0f} / {p90 * 1e3:.0f} ({p50 / floor_p50:.1f}× the component's floor, "
        f"{floor_p50 * 1e3:.0f} ms)", "≤ 1.3× floor")
