"""Masks: padding, look-ahead and combined target masks of the current batch, and how they broadcast."""

import numpy as np
import streamlit as st

from transformer.service import MASK_FAMILIES, SIZED_FAMILIES, size_range
from ui import data, model_config, openings, state
from ui.controls import PERSIST, Download, downloads, fit_px, not_for_external_model, padding_notice, plot
from ui.state import F
from ui.text import percent
from viz.export import arrays_npz, matrix_csv
from viz.masks import broadcast_table, fully_masked_rows, mask_grid

openings.show("masks")
not_for_external_model("This page draws the lab's mask families and switches; a model from outside uses its own masks "
                   "(padding, and the look-ahead mask when causal), drawn on the Attention page (padding sand, the "
                   "look-ahead grey).")
st.caption("Blue: the query may attend to the key (True). Grey: blocked (False). Rows are queries, columns keys.")
FAMILY_NOTES = {
    "paper": "The paper: the encoder sees every key, the decoder the keys up to its own position.",
    "causal": "Every self-attention causal (a decoder-only model, GPT): query i sees keys j ≤ i.",
    "bidirectional": "Every self-attention sees every key (BERT); the decoder too, so it may read ahead.",
    "prefix": "Prefix LM (T5, UniLM): every query sees the first P keys (bidirectional there), later keys causally.",
    "window": "Sliding window (Longformer, Mistral): each query sees its last W keys, itself included.",
    "strided": "Strided (Sparse Transformer): the last s keys and every key a multiple of s back.",
    "block": "Block-local: queries see the keys of their own block of b positions, both ways.",
}
family_columns = st.columns([3, 2])
if model_config.supports().own_masks:  # the family is the random-weights model's: a trained model runs with its own
    family = family_columns[0].segmented_control("Self-attention mask", MASK_FAMILIES, default="paper",
                                                 key="_own_mask_family", disabled=True, required=True)
    family_columns[1].caption("**Locked by the sidebar's model:** it runs with its own masks on every page (a "
                              "trained model the paper's, as it was trained; a real language model causal, with "
                              "padding). Seeded random weights bring back your family "
                              f"({state.read(F.mask_family)}).")
else:
    family = family_columns[0].segmented_control("Self-attention mask", MASK_FAMILIES, key=F.mask_family,
                                                 required=True, help="Applied live to encoder and decoder "
                                                 "self-attention (with padding) on every page; cross-attention "
                                                 "keeps the padding mask.", **PERSIST)
if family in SIZED_FAMILIES:
    low, length = size_range(family, state.read(F.seq_len))
    size = state.value(F.mask_size)
    if not low <= size <= length:
        state.put(F.mask_size, min(max(low, size), length))
        st.warning(f"The {SIZED_FAMILIES[family]} {size} does not fit N = {length}; it is "
                   f"{state.read(F.mask_size)} now.", icon=":material/warning:")
    if length > low:  # a slider needs two stops
        family_columns[1].slider(SIZED_FAMILIES[family].capitalize(), low, length, key=F.mask_size, **PERSIST)
st.markdown(FAMILY_NOTES[family])  # what was just chosen comes first: its note, then its own chart
result = data.run_live(model_config.live_config())
batch, length = result.source_ids.shape
titles = [f"line {b + 1}" for b in range(batch)]
padding_notice(result)

if family != "paper":
    st.subheader(f"The {family} family, applied with padding")
    encoder, decoder = result.applied_masks["encoder"], result.applied_masks["decoder"]
    plot(mask_grid(np.concatenate([encoder[:1], decoder[:1]]), [result.source_tokens[0], result.target_tokens[0]],
                   [result.source_tokens[0], result.target_tokens[0]],
                   [f"encoder, line 1: {percent(encoder[0].mean())} allowed",
                    f"decoder, line 1: {percent(decoder[0].mean())} allowed"], columns=2, fit_px=fit_px("family")),
         "family")
    st.caption("Density (allowed share of the N² cells) of the encoder's self-attention, line by line: " + ", ".join(
        f"line {b + 1} {percent(mask.mean())}" for b, mask in enumerate(encoder)) + ". The look-ahead switch of the "
        "Attention page does nothing under a family: the family is the decoder's pattern.")

st.subheader("Padding mask (source)")
st.markdown(f"Shape `{result.source_padding_mask.shape}` = (B, 1, 1, N): one row per sequence, repeated for every "
            "query when it meets the attention logits. Padded keys are blocked for every query.")
source_padding = np.broadcast_to(result.source_padding_mask[:, 0], (batch, length, length))
plot(mask_grid(source_padding, result.source_tokens, result.source_tokens, titles, fit_px=fit_px("padding")),
     "padding")

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
               columns=min(batch + 1, 4), fit_px=fit_px("target")), "target")  # more lines: four to a row at most

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
