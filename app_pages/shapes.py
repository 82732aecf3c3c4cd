"""Shapes: the tensor shapes of multi-head attention, step by step, for the current configuration."""

import streamlit as st

from ui import data, model_config, openings
from ui.controls import PERSIST, STACK_NAMES, carried_over, not_for_external_model, plot
from ui.state import F
from viz.shapes import tensor_diagram

STEPS = [
    ("Inputs", ["query", "key", "value"], ("B", "N", "d_model"),
     "Query, key and value inputs (the same tensor in self-attention)."),
    ("Linear projections", ["query_projected", "key_projected", "value_projected"], ("B", "N", "·"),
     "Dense layers W_Q: d_model → H·d_k = d_model; W_K, W_V: d_model → H_kv·d_k."),
    ("Split heads", ["query_heads", "key_kv_heads", "value_kv_heads"], ("B", "H", "N", "d_k"),
     "Reshape the queries to (B, N, H, d_k) and the keys and values to (B, N, H_kv, d_k), then transpose: "
     "(B, H, N, d_k) and (B, H_kv, N, d_k). Decoding caches the keys and values here: fewer heads, a smaller "
     "cache."),
    ("Share key/value heads", ["key_heads", "value_heads"], ("B", "H", "N", "d_k"),
     "Grouped-query attention: each of the H_kv key/value heads is repeated for its group of H / H_kv query heads "
     "(H_kv = H is the paper: nothing is shared; 1 is multi-query)."),
    ("Q·Kᵀ", ["scores", "scaled"], ("B", "H", "N_q", "N_k"),
     "Transpose the keys, multiply with the queries, divide by √d_k."),
    ("softmax · V", ["weights", "context"], ("B", "H", "N_q", "·"),
     "Masked softmax over keys (B, H, N_q, N_k), then weights · V gives (B, H, N_q, d_k)."),
    ("Merge heads", ["merged"], ("B", "N", "d_model"), "Transpose back to (B, N, H, d_k), reshape to (B, N, d_model)."),
    ("Output projection", ["output"], ("B", "N", "d_model"), "Dense layer W_O: d_model → d_model."),
]
AXES = {
    "key_kv_heads": ("B", "H_kv", "N_k", "d_k"), "value_kv_heads": ("B", "H_kv", "N_k", "d_k"),
    "query_heads": ("B", "H", "N_q", "d_k"), "key_heads": ("B", "H", "N_k", "d_k"),
    "value_heads": ("B", "H", "N_k", "d_k"), "scores": ("B", "H", "N_q", "N_k"), "scaled": ("B", "H", "N_q", "N_k"),
    "weights": ("B", "H", "N_q", "N_k"), "context": ("B", "H", "N_q", "d_k"),
}

openings.show("shapes")
not_for_external_model("This page reads the tensors inside one attention layer of the lab's own model.")
config = model_config.live_config()
carried_over(config, "shapes")
stack = config.stacks[0]  # the encoder's self-attention; a decoder-only model's causal self-attention
walk = data.attention_walkthrough(config, stack, 0)
shapes = walk.shapes
B, N, d_model = shapes["query"]
H, d_k = shapes["query_heads"][1], shapes["query_heads"][3]
H_kv = shapes["key_kv_heads"][1]
st.markdown(f"{STACK_NAMES[stack]} of layer 0 with **B = {B}**, **N = {N}**, **d_model = {d_model}**, "
            f"**H = {H}**, **H_kv = {H_kv}**, **d_k = d_model / H = {d_k}** — the shapes below are read off the "
            "real tensors.")

step = st.select_slider("Step", options=list(range(len(STEPS))), key=F.step,
                        format_func=lambda i: f"{i + 1}. {STEPS[i][0]}", **PERSIST)
title, names, _, caption = STEPS[step]
st.subheader(f"{step + 1}. {title}")
st.markdown(caption)
cols = st.columns(len(names))
for col, name in zip(cols, names):
    axes = AXES.get(name, ("B", "N", "d_model"))
    with col:
        plot(tensor_diagram(shapes[name], axes, name), f"shape_{name}")

st.subheader("Every step")
st.table([{"step": f"{i + 1}. {t}", "tensors": ", ".join(f"{n} {shapes[n]}" for n in ns)}
          for i, (t, ns, _, _) in enumerate(STEPS)])
