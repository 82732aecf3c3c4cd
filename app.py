"""Attention Lab: the entry file. Runs on every rerun: page config, shared sidebar, navigation, URL."""

from pathlib import Path

import streamlit as st

# A local icon: a Material icon here would make every browser fetch the favicon from Google's servers.
st.set_page_config(page_title="Attention Lab", page_icon=str(Path(__file__).parent / "assets" / "icon.png"),
                   layout="wide")

from ui import chart, preload, starting  # noqa: E402  (none imports TensorFlow)

chart.publish_plotly_js()
chart.load_plotly_early()  # the browser fetches and compiles Plotly.js while TensorFlow is still importing
# `make run` imports TensorFlow while the server starts: meanwhile the page's title and opening, then the import's end
first_words = starting.while_the_engine_loads()
preload.wait()
from transformer.service import missing_gpu_notice  # noqa: E402
from ui import class_room, pages, runtime, sidebar, state, streamlit_patches, training  # noqa: E402  (after set_page_config)
from ui.text import as_text  # noqa: E402

streamlit_patches.keep_tensorflow_warm()
runtime.freeze_startup_objects()  # after TensorFlow and Plotly are imported: no ~120 ms full collections

PAGES = {  # Home is the default page; each entry's help says what it shows
    name: st.Page(pages.Page(name).file, title=title, icon=f":material/{icon}:", help=says.capitalize() or None,
                  **(dict(default=True) if name == "home" else dict(url_path=name)))
    for name, title, icon, says in pages.PAGES
}

state.load_url_once()
state.apply_next_run()
page = st.navigation({header: [PAGES[name] for name in names] for header, names in pages.SECTIONS}, expanded=True)
st.set_page_config(page_title=f"{page.title} · Attention Lab")  # the browser tab names the page
sidebar.render(page.url_path)
class_room.ask_button(page.url_path)  # a teacher's Ask the class, on a page that asks
notices = st.container()  # always drawn: a notice coming or going must not shift the page's charts (ui.data)
for notice in state.pop(state.NOTICES, []):
    notices.warning(as_text(notice), icon=":material/warning:")  # a notice may quote a link's value
for problem in training.settings_problems():  # the server's own settings: whoever runs it must see them
    notices.warning(problem, icon=":material/settings:")
if missing_gpu_notice():
    notices.warning(missing_gpu_notice(), icon=":material/memory:")
left_out = state.write_url(page.url_path)
if left_out:
    notices.caption(f"The link does not carry {', '.join(left_out)}: too long for a URL.")
state.put(state.NOTICE_SLOT, notices)  # a link's value a page corrects is said there too (state.correct)
first_words.empty()  # the page draws its own title and opening, below the slot they were in
try:
    page.run()
finally:  # a page's own changes to the state (a clamped step, Play off at the end) reach the link on this run
    state.put(state.LINKED, set())  # past the first run, a correction is the user's own move, not the link's
    state.write_url(page.url_path)
    sidebar.draw_status()  # what the page's engine calls recorded
    class_room.ask_pending(page.url_path)  # a lesson's question, once its view has drawn
