"""First moves: what a new user meets before any sweep does — the first move of a control on a server that has never
built the shape it asks for (a model, a traced function, a cached figure), against the same move made again. Each
lane opens on a fresh server; a page's first visit (its link in the navigation clicked) on a server that has drawn
Home, against a second visit."""

from __future__ import annotations

from moves import move_and_wait
from report import row
from sweep import Lane, move_lane

TARGET = "≤ 1 s"
LANES = (
    Lane("attention", "attention", "d_model"),
    Lane("attention", "attention", "Heads (h)"),
    Lane("heads", "heads", "Heads (h)"),
    Lane("induction", "induction?ind_count=50", "Ablate (zero) in the loss chart",
         options=("the induction heads", "none")),
)
FIRST_VISITS = ("Dot-product lab", "Attention", "Heads", "Positional encoding")


def first_moves(quick: bool) -> None:
    """One row a lane: its first move, and its second and third (back, and to the first move's stop again)."""
    from browser_support import CHROMIUM, CHROMIUM_ARGS, streamlit_server, wait_idle
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for lane in LANES[:2] if quick else LANES:
            with streamlit_server() as url:
                page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                page.goto(f"{url}/{lane.path}")
                wait_idle(page, timeout=300_000)
                page.wait_for_function("() => document.querySelector('.js-plotly-plot')?._fullData", timeout=300_000)
                page.wait_for_timeout(2_500)
                seconds = []
                for index in range(3):
                    seconds.append(move_lane(page, lane, index))
                    wait_idle(page)
                page.context.close()
            row("first", f"first move on a fresh server · {lane.page} · {lane.label}: s; then back, again: ms",
                f"{seconds[0]:.2f}; {seconds[1] * 1e3:.0f}, {seconds[2] * 1e3:.0f}", TARGET)
        with streamlit_server() as url:
            page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
            page.goto(url)
            wait_idle(page, timeout=300_000)
            page.wait_for_timeout(2_500)
            for title in FIRST_VISITS[:1] if quick else FIRST_VISITS:
                visits = []
                for _ in range(2):
                    visits.append(_visit(page, title))
                    wait_idle(page)
                    _visit(page, "Home")
                    wait_idle(page)
                row("first", f"first visit on a server that has drawn Home · {title}: s; a second visit: s",
                    f"{visits[0]:.2f}; {visits[1]:.2f}", TARGET)
        browser.close()


def _visit(page, title: str) -> float:
    """Seconds from a click on ``title`` in the navigation to its page's script's end, painted."""
    link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True)
    return move_and_wait(page, link.click, what=f"to {title}")


__all__ = ["first_moves"]
