"""The model controls every page shares, drawn in the sidebar."""

from __future__ import annotations

import streamlit as st

from transformer.live import MAX_LAYERS, MAX_SEQ_LEN
from ui import state

PERSIST = dict(persist_state="session")


def _fix_heads() -> None:
    """After d_model changes: keep heads a divisor of d_model, and say so when it moves."""
    d_model, heads = st.session_state["d_model"], st.session_state["heads"]
    if d_model % heads:
        fixed = state.nearest_heads(d_model, heads)
        st.session_state["heads"] = fixed
        state.notify(f"{heads} heads do not divide d_model={d_model}; heads is now {fixed}, the nearest divisor.")


def render() -> None:
    """Draw the shared controls; their values live in ``st.session_state`` under the field names."""
    bar = st.sidebar
    bar.subheader("Model")
    bar.select_slider("d_model", options=state.D_MODEL_CHOICES, key="d_model", on_change=_fix_heads,
                      help="Width of every token vector.", **PERSIST)
    bar.select_slider("Heads (h)", options=state.head_choices(st.session_state["d_model"]), key="heads",
                      help="Only divisors of d_model: each head gets d_k = d_model / h dimensions.", **PERSIST)
    bar.select_slider("d_ff", options=state.D_FF_CHOICES, key="d_ff",
                      help="Inner width of the position-wise feed-forward network.", **PERSIST)
    bar.slider("Layers (N)", 1, MAX_LAYERS, key="layers", help="Encoder layers = decoder layers.", **PERSIST)
    bar.slider("Sequence length", 1, MAX_SEQ_LEN, key="seq_len",
               help="Every line is right-padded with the first pad symbol or cut to this length.", **PERSIST)
    bar.number_input("Random seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                     help="Seeds the random weights: the same seed gives the same pictures.", **PERSIST)
    bar.subheader("Input")
    bar.text_input("Pad symbols", key="pads", max_chars=200,
                   help="One or several, separated by spaces. The first one pads short lines.", **PERSIST)
    bar.text_area("Source sequences", key="src", height=110, max_chars=state.MAX_TEXT_CHARS,
                  help="One sequence per line, tokens separated by spaces.", **PERSIST)
    bar.text_area("Target sequences", key="tgt", height=110, max_chars=state.MAX_TEXT_CHARS,
                  help="One line per source line (the decoder's input).", **PERSIST)
    bar.radio("Device", state.DEVICE_CHOICES, key="device", horizontal=True,
              format_func=lambda choice: {"auto": "Automatic (GPU if present)", "cpu": "CPU"}[choice], **PERSIST)
    st.session_state["_status_slot"] = bar.empty()
    if "_last_status" in st.session_state:
        st.session_state["_status_slot"].caption(st.session_state["_last_status"])
