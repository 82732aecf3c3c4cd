"""Dot-product lab: one head step by step, why 1/sqrt(d_k), how masks are filled, stable softmax."""

import numpy as np
import streamlit as st

from transformer import masked_softmax
from transformer.service import logsumexp_softmax, mask_fills, naive_softmax, stable_softmax
from ui import choices, data, model_config, openings, state
from ui.controls import (
    PERSIST,
    STACK_NAMES,
    carried_over,
    clamp,
    element_picker,
    fit_px,
    head_picker,
    layer_picker,
    not_for_external_model,
    plot,
    stack_picker,
)
from ui.state import F
from viz.lab import bars_figure, dimension_labels, scaling_figure, stages_figure
from viz.labels import position_labels

openings.show("dot_product_lab")
not_for_external_model("This page opens one attention layer of the lab's own model step by step.")
st.markdown("softmax(Q·Kᵀ / √d_k + mask) · V for one head of the live model, one stage at a time.")
config = model_config.live_config()
carried_over(config, "dot_product_lab")
result = data.run_live(config)
layers, batch, heads = result.layers, result.source_ids.shape[0], result.heads
top = st.columns(4)
with top[0]:
    stack = stack_picker()
with top[1]:
    layer = layer_picker(layers)
with top[2]:
    element = element_picker(batch)
with top[3]:
    head = head_picker(heads)

walk = data.attention_walkthrough(config, stack, layer)
t = {name: array[element] for name, array in walk.tensors.items()}
query_labels, key_labels = (position_labels(tokens) for tokens in result.tokens_of(stack, element))
mask = walk.mask[element]  # (N_q, N_k)
d_k = t["query_heads"].shape[-1]
dims = dimension_labels(d_k)

st.subheader(f"{STACK_NAMES[stack]}, layer {layer}, head {head}: d_k = {d_k}")
stage = {name: t[name][head] for name in ("query_heads", "key_heads", "value_heads", "scores", "scaled", "masked",
                                         "weights", "context")}
plot(stages_figure([
    dict(values=stage["query_heads"], rows=query_labels, columns=dims, title="Q"),
    dict(values=stage["key_heads"], rows=key_labels, columns=dims, title="K"),
    dict(values=stage["value_heads"], rows=key_labels, columns=dims, title="V"),
    dict(values=stage["scores"], rows=query_labels, columns=key_labels, title="Q·Kᵀ"),
    dict(values=stage["scaled"], rows=query_labels, columns=key_labels, title=f"÷ √d_k (√{d_k} = {np.sqrt(d_k):.3g})"),
    dict(values=stage["masked"], rows=query_labels, columns=key_labels, title="+ mask: −∞ if blocked", mask=mask),
    dict(values=stage["weights"], rows=query_labels, columns=key_labels, title="softmax", mask=mask, weights=True),
    dict(values=stage["context"], rows=query_labels, columns=dims, title="· V"),
], fit_px=fit_px("lab_stages")), "lab_stages")

st.subheader("Why divide by √d_k")
st.markdown("For q, k with independent N(0, 1) entries, q·k has variance d_k: the softmax saturates (its entropy "
            "collapses) as d_k grows. Dividing by √d_k brings the variance back to 1. Measured now on random "
            "vectors:")
plot(scaling_figure(data.scaling_experiment(), fit_px=fit_px("lab_scaling")), "lab_scaling")



# The two sections below are fragments: a move of their own controls reruns the section alone (three or four
# bar charts), not the page's stages and the sidebar (docs/performance.md: the browser redraws what a rerun sends).
@st.fragment
def mask_fill_section(scaled, mask, key_labels) -> None:
    """How each way of filling the mask treats one query row of ``scaled`` ``(N_q, N_k)`` (``mask``: True = may
    attend), and this engine's masked softmax of it."""
    st.subheader("Filling the mask: select, add −1e9, or −∞")
    last_row = len(scaled) - 1
    clamp(F.row, last_row)
    scores_row_index = st.slider("Query row", 0, last_row, key=F.row, **PERSIST) if last_row else 0  # 0..0: none
    scores_row = scaled[scores_row_index]
    row_mask = mask[scores_row_index].copy()
    if st.toggle("Block every key of this row", key=F.block_row, **PERSIST):
        row_mask[:] = False
    fills = mask_fills(scores_row, row_mask)
    engine = np.asarray(masked_softmax(scores_row[None].astype(np.float32), row_mask[None]))[0]
    cols = st.columns(4)
    for col, (name, values) in zip(cols, list(fills.items()) + [("this engine", engine)]):
        with col:
            plot(bars_figure(key_labels, values, name), f"lab_fill_{name}")
    st.caption("With no allowed key, −∞ gives 0/0 = NaN and −1e9 spreads the weight evenly over blocked keys; "
               "this engine gives every weight exactly 0.")
    state.write_url()  # a fragment's rerun does not reach app.py, which writes the link after a whole run


@st.fragment
def stable_softmax_section() -> None:
    """Three softmaxes of five logits of the chosen size: the naive one overflows."""
    st.subheader("A stable softmax")
    scale = st.select_slider("Logit size", options=list(choices.LOGIT_SIZES), key=F.logit_size, **PERSIST)
    logits = np.linspace(-1.0, 1.0, 5) * scale
    cols = st.columns(3)
    for col, name, fn in zip(cols, ("naive exp(x)/Σexp(x)", "exp(x − max)", "exp(x − logsumexp)"),
                             (naive_softmax, stable_softmax, logsumexp_softmax)):
        with col:
            plot(bars_figure([f"{v:g}" for v in logits], fn(logits), name), f"lab_softmax_{name}")
    state.write_url()


mask_fill_section(t["scaled"][head], mask, key_labels)
stable_softmax_section()
