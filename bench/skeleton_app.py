"""A page of the app's shape with no engine: the second reference of the sweep (bench/sweep.py).

What every page of the app draws around its own content, built from Streamlit's elements alone: the same
navigation (one entry per page of ``ui.pages``), a sidebar of the same controls (kinds, count and help texts as
``ui.sidebar`` draws them), a title, captions, a row of buttons, a paragraph, the link kept in step with the
controls, and one chart drawn by the app's chart component. Its Sequence length slider redraws the chart, as the
trivial floor's does, so a sweep row set beside this one says how much of a move is the page's shape (the
framework drawing ~45 elements) and how much is the page's own work.
"""

from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from ui.chart import chart, publish_plotly_js
from ui.pages import PAGES

ROOT = Path(__file__).resolve().parents[1]
HELP = ("A help text of the length the app's controls have: what the control changes, and which convention of the "
        "paper it follows.")
st.set_page_config(page_title="Skeleton", page_icon=str(ROOT / "assets" / "icon.png"), layout="wide")


def sidebar() -> int:
    """The app's sidebar controls, by kind and count; returns the sequence length."""
    bar = st.sidebar
    bar.selectbox("Weights", ["Random (seeded)", "dates", "translate"], key="weights", help=HELP)
    bar.selectbox("Architecture", ["Encoder-decoder", "Decoder-only"], key="arch", help=HELP)
    bar.radio("Norm", ["Post-norm", "Pre-norm"], key="norm", horizontal=True, help=HELP)
    bar.select_slider("d_model", [32, 64, 128, 256, 512], value=64, key="d_model", help=HELP)
    bar.select_slider("Heads (h)", [1, 2, 4, 8], value=4, key="heads", help=HELP)
    bar.selectbox("Positions", ["Sinusoidal", "Learned", "RoPE", "ALiBi"], key="positions", help=HELP)
    bar.caption("12,345 weights (48 KB)")
    bar.select_slider("d_ff", [0, 64, 128, 256], value=128, key="d_ff", help=HELP)
    bar.slider("Layers (N)", 1, 6, 2, key="layers", help=HELP)
    seq_len = bar.slider("Sequence length", 1, 512, 7, key="seq_len", help=HELP)
    bar.number_input("Random seed", 0, 2**31 - 1, 0, key="seed", help=HELP)
    bar.text_input("Pad symbols", "0 <pad>", key="pads", help=HELP)
    bar.text_area("Source sequences", "a b c d\ne f g", key="src", height=110, help=HELP)
    bar.text_area("Target sequences", "1 2 3", key="tgt", height=110, help=HELP)
    bar.multiselect("Ablate heads", ["L0 H0", "L0 H1", "L1 H0"], key="ablate", help=HELP)
    bar.radio("Device", ["CPU", "GPU"], key="device", horizontal=True, help=HELP)
    bar.caption("Last engine call: 12 ms on CPU")
    return seq_len


def page() -> None:
    seq_len = sidebar()
    st.query_params.update({key: str(st.session_state[key]) for key in ("seq_len", "heads", "d_model", "pads")})
    st.title("Attention Lab")
    st.subheader("A page of the app's shape")
    st.caption("A caption above the chart, with **bold** words, as the app's pages have them.")
    publish_plotly_js()
    chart(go.Figure(go.Heatmap(z=np.eye(seq_len, dtype=np.float32))), key="skeleton")
    st.caption("A caption under the chart that says what its rows and columns are, and what the dark cells mean.")
    for column, label in zip(st.columns(4), ("One", "Two", "Three", "Four")):
        column.button(label, key=f"button_{label}", help=HELP)
    st.markdown("A paragraph of the home page's length, with **bold** words, *italics* and `code`. " * 6)
    for index in range(6):
        st.caption(f"Caption {index}: one of the short notes a page draws under its controls.")


def other() -> None:
    sidebar()
    st.title("Another page")


st.navigation([st.Page(page, title="Home", default=True)] +
              [st.Page(other, title=title, icon=f":material/{icon}:", url_path=name)
               for name, title, icon, _ in PAGES[1:]]).run()
