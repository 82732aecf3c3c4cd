"""A server's first visit while the engine still imports (TensorFlow: ~5 s on 2 quiet cores, more on a busy host):
the page's own title and plain opening at once, and a line that counts the seconds, instead of a blank page. Imports
no TensorFlow (app.py calls it before ``preload.wait``)."""

from __future__ import annotations

import time
from urllib.parse import urlparse

import streamlit as st

from ui import openings, preload
from ui.pages import PAGES

TICK_SECONDS = 0.25


def page_of(url: str) -> str:
    """The page a URL asks for: its path's last part when that names a page, else Home."""
    asked = urlparse(url or "").path.rstrip("/").rsplit("/", 1)[-1]
    return asked if any(name == asked for name, *_ in PAGES[1:]) else "home"


def while_the_engine_loads():
    """Until the background import is over: the asked page's title and opening, and the seconds waited so far.
    Returns their slot, for the page to clear once it draws. The slot is drawn on every run, empty once the engine
    is loaded: Streamlit matches a rerun's elements with the page's by their place, and a slot in the first run
    alone moved every chart of the next one (each was built again)."""
    slot = st.empty()
    if preload.wait(timeout=0):
        return slot
    with slot.container():
        openings.show(page_of(st.context.url))
        line = st.empty()
    began = time.monotonic()
    while not preload.wait(timeout=TICK_SECONDS):
        line.caption(f":material/hourglass_top: Starting the engine (TensorFlow is loading): "
                     f"{time.monotonic() - began:.0f} s so far; a server's first visit takes a few seconds.")
    line.caption(":material/hourglass_bottom: The engine is ready: drawing the page…")
    return slot
