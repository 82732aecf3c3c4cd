"""Attention Lab: the entry file. Runs on every rerun: page config, shared sidebar, navigation, URL."""

from pathlib import Path

import streamlit as st

# A local icon: a Material icon here would make every browser fetch the favicon from Google's servers.
st.set_page_config(page_title="Attention Lab", page_icon=str(Path(__file__).parent / "assets" / "icon.png"),
                   layout="wide")

from ui import chart, preload  # noqa: E402  (neither imports TensorFlow)

chart.publish_plotly_js()
chart.load_plotly_early()  # the browser fetches and compiles Plotly.js while TensorFlow is still importing
preload.wait()  # `make run` imports TensorFlow while the server starts: let that import finish first
from ui import runtime, sidebar, state, streamlit_patches  # noqa: E402  (after set_page_config)

streamlit_patches.keep_tensorflow_warm()
runtime.freeze_startup_objects()  # after TensorFlow and Plotly are imported: no ~120 ms full collections

PAGES = [
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/masks.py", title="Masks", icon=":material/grid_on:", url_path="masks"),
    st.Page("app_pages/positional_encoding.py", title="Positional encoding", icon=":material/waves:", url_path="positional_encoding"),
    st.Page("app_pages/attention.py", title="Attention", icon=":material/visibility:", url_path="attention"),
    st.Page("app_pages/dot_product_lab.py", title="Dot-product lab", icon=":material/science:", url_path="dot_product_lab"),
    st.Page("app_pages/shapes.py", title="Shapes", icon=":material/straighten:", url_path="shapes"),
    st.Page("app_pages/train.py", title="Train", icon=":material/model_training:", url_path="train"),
]

state.load_url_once()
page = st.navigation(PAGES)
sidebar.render()
notices = st.container()  # always drawn: a notice coming or going must not shift the page's charts (ui.data)
for notice in st.session_state.pop(state.NOTICES, []):
    notices.warning(notice, icon=":material/warning:")
left_out = state.write_url()
if left_out:
    notices.caption(f"The link does not carry {', '.join(left_out)}: too long for a URL.")
page.run()
