"""Attention Lab: the entry file. Runs on every rerun: page config, shared sidebar, navigation, URL."""

import streamlit as st

st.set_page_config(page_title="Attention Lab", page_icon="🔍", layout="wide")

from ui import sidebar, state  # noqa: E402  (after set_page_config)

PAGES = [
    st.Page("pages/home.py", title="Home", icon="🏠", default=True),
    st.Page("pages/masks.py", title="Masks", icon="🎭", url_path="masks"),
    st.Page("pages/positional_encoding.py", title="Positional encoding", icon="〰️", url_path="positional-encoding"),
    st.Page("pages/attention.py", title="Attention", icon="🔍", url_path="attention"),
    st.Page("pages/dot_product_lab.py", title="Dot-product lab", icon="🧪", url_path="dot-product-lab"),
    st.Page("pages/shapes.py", title="Shapes", icon="📐", url_path="shapes"),
]

state.load_url_once()
page = st.navigation(PAGES)
sidebar.render()
for notice in st.session_state.pop(state.NOTICES, []):
    st.warning(notice, icon="⚠️")
left_out = state.write_url()
if left_out:
    st.caption(f"The link does not carry {', '.join(left_out)}: too long for a URL.")
page.run()
