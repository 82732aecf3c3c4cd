"""Masks: padding, look-ahead and combined target masks of the current batch, and how they broadcast."""

import numpy as np
import streamlit as st

from ui import data, state
from ui.controls import Download, downloads, plot
from viz.export import arrays_npz, matrix_csv
from viz.masks import broadcast_table, fully_masked_rows, mask_grid

st.title("Masks")
st.caption("Blue: the query may attend to the key (True). Grey: blocked (False). Rows are queries, columns keys.")
result = data.live(state.live_config())
batch, length = result.source_ids.shape
titles = [f"line {b + 1}" for b in range(batch)]

st.subheader("Padding mask (source)")
st.markdown(f"Shape `{result.source_padding_mask.shape}` = (B, 1, 1, N): one row per sequence, repeated for every "
            "query when it meets the attention logits. Padded keys are blocked for every query.")
source_padding = np.broadcast_to(result.source_padding_mask[:, 0], (batch, length, length))
plot(mask_grid(source_padding, result.source_tokens, result.source_tokens, titles), "padding")

st.subheader("Look-ahead mask, and the target mask = padding AND look-ahead")
n_target = result.subsequent_mask.shape[0]
st.markdown(f"Look-ahead (subsequent) mask: shape `{result.subsequent_mask.shape}` = (N, N), lower triangular: "
            "query *i* may attend to keys *j ≤ i* only, the same for every sequence and head. "
            f"Target mask: shape `{result.target_mask.shape}` = (B, 1, N, N), the target's padding mask AND the "
            "look-ahead mask: what masked decoder self-attention uses.")
positions = [""] * n_target
plot(mask_grid(np.concatenate([result.subsequent_mask[None], result.target_mask[:, 0]]),
               [positions, *result.target_tokens], [positions, *result.target_tokens],
               ["look-ahead", *(f"target, {title}" for title in titles)],  # short: four fit 540 px (1000 px window)
               columns=min(batch + 1, 4)), "target")  # more lines wrap: four panels to a row at most

st.subheader("How the masks broadcast")
# A Markdown table, not st.table: on every slider move the browser redraws st.table for ~26 ms, this for ~6.
st.markdown(broadcast_table(batch, result.heads, length))
empty = fully_masked_rows(result.target_mask[:, 0])
source_empty = fully_masked_rows(source_padding)
if source_empty or empty:
    listed = [f"source line {b + 1}, query {q}" for b, q in source_empty[:20]]
    listed += [f"target line {b + 1}, query {q}" for b, q in empty[:20]]
    st.warning("Fully masked rows (every key blocked, so these queries get zero weight): " + "; ".join(listed))
else:
    st.success("No query row is fully masked: every query has at least one key it may attend to.")

downloads(
    Download("Download all masks (NPZ)", lambda: arrays_npz(
        source_padding_mask=result.source_padding_mask, target_padding_mask=result.target_padding_mask,
        subsequent_mask=result.subsequent_mask, target_mask=result.target_mask,
    ), "masks.npz"),
    Download("Download the look-ahead mask (CSV)", lambda: matrix_csv(result.subsequent_mask.astype(int)),
             "subsequent_mask.csv", "text/csv"),
)
