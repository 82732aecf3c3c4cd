"""Positional encoding: the paper's sinusoids for the current d_model and sequence length; RoPE's rotations
and ALiBi's biases for the current heads."""

import streamlit as st

from ui import data, model_config, openings, state
from ui.controls import PERSIST, Download, downloads, fit_px, not_for_external_model, parse_indices, plot
from ui.state import F
from viz import positional
from viz.export import arrays_npz, matrix_csv

openings.show("positional_encoding")
not_for_external_model("This page draws the lab's own positional encodings; a model from outside has positions of its "
                   "own (learned, rotary …).")
result = data.run_live(model_config.live_config())
encoding = result.positional_encoding
length, d_model = encoding.shape
d_k = d_model // result.heads
PICTURED = 256  # positions in the RoPE and ALiBi pictures: a (N, N) picture a head at N = 4096 is 64 MB of JSON
rope_base = model_config.source().rope_base()  # RoFormer's 10,000, or a real model's own
views = data.position_views(min(length, PICTURED), d_k, result.heads, rope_base)
chosen = state.current_values()["positions"]
ALIBI_PICTURED = 64  # positions a side of each head's bias (eight heads of 256 × 256 were 2.9 MB of JSON)


def section_header(title: str, kind: str) -> None:
    """A kind of positions' header, saying so when the model uses it."""
    st.header(title + (" — the model's positions now" if chosen == kind else ""), divider="gray")


def sinusoid_section() -> None:
    """The paper's encoding: its heatmap, chosen dimensions and positions, wavelengths, similarity."""
    section_header("Sinusoidal encoding (the paper)", "sinusoidal")
    st.markdown("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). "
                "It is added to the scaled embeddings at the bottom of the encoder and decoder.")

    st.subheader(f"Encoding: {length} positions × {d_model} dimensions")
    plot(positional.encoding_heatmap(encoding), "pe_heatmap")

    left, right = st.columns(2)
    dims_text = left.text_input("Dimensions to plot", key=F.pe_dims, help="Space-separated, e.g. 4 5 6 7.", **PERSIST)
    first_positions = list(range(min(8, length)))  # empty box: these, shown greyed, whatever the length
    positions_text = right.text_input("Positions to plot", key=F.pe_positions, placeholder=" ".join(
        map(str, first_positions)), help="Space-separated. Empty: the first 8.", **PERSIST)
    dims = parse_indices(dims_text, d_model, "dimensions") or list(range(min(4, d_model)))
    positions = parse_indices(positions_text, length, "positions") or first_positions

    st.subheader("Chosen dimensions against position")
    plot(positional.dimension_lines(encoding, dims), "pe_lines")
    left, right = st.columns(2)
    with left:
        st.markdown("**Every chosen dimension, offset** (curves over position)")
        plot(positional.dimensions_offset(encoding, dims), "pe_dims_offset")
    with right:
        st.markdown("**Every chosen position, offset** (curves over dimension)")
        plot(positional.positions_offset(encoding, positions), "pe_positions_offset")

    left, right = st.columns(2)
    with left:
        st.subheader("Wavelength of each dimension pair")
        st.caption("A geometric progression from 2π to 10000·2π positions.")
        plot(positional.wavelength_figure(d_model), "pe_wavelengths")
    with right:
        st.subheader("Similarity between positions")
        st.caption("PE(p)·PE(q) depends on p − q only: nearby positions look alike, and a fixed offset is a fixed "
                   "rotation of each sin/cos pair — which is why relative positions are recoverable.")
        plot(positional.similarity_figure(encoding), "pe_similarity")


def rope_section() -> None:
    section_header("Rotary positions (RoPE)", "rope")
    st.markdown("RoFormer rotates each pair of dimensions (2i, 2i+1) of every query and key in every head by the angle "
                f"m·θ_i, θ_i = {rope_base:,.0f}^(−2i/d_k), m the position"
                + (" (this model's own base; RoFormer's is 10,000)" if rope_base != 10000 else "")
                + ". Nothing is added to the embeddings; the dot product of a query at m and a key at n then depends "
                "on m − n only.")
    if length > PICTURED:
        st.caption(f"The first {PICTURED} of {length} positions.")
    if views.rope_angles is None:
        st.info(f"RoPE needs an even d_k; d_k = d_model / heads = {d_k} here.", icon=":material/info:")
    else:
        left, right = st.columns(2)
        with left:
            plot(positional.rope_angles_figure(views.rope_angles, rope_base), "rope_angles")
        with right:
            plot(positional.rope_offset_figure(views.rope_dots), "rope_offsets")


def alibi_section() -> None:
    section_header("Linear biases (ALiBi)", "alibi")
    st.markdown("ALiBi adds −slope·|i − j| to head h's logits before the softmax: far keys are penalised, each head "
                "with its own slope (2^(−8/H), 2^(−16/H) … for H a power of two; in each panel's title). Nothing is "
                "added to the embeddings.")
    plot(positional.alibi_figure(views.alibi_bias[:8, :ALIBI_PICTURED, :ALIBI_PICTURED], views.alibi_slopes[:8],
                                 fit_px=fit_px("alibi")),
         "alibi")
    st.caption(f"The first {min(length, ALIBI_PICTURED)} positions" + (
        f"; the first 8 of {result.heads} heads, slopes of all: " + ", ".join(f"{slope:.3g}" for slope in
                                                                           views.alibi_slopes)
        if result.heads > 8 else "."))


# What the sidebar chose comes first: the model's own positions, then the others (the paper's first when the model's
# own are not drawn here: a learned table, or none).
SECTIONS = {"rope": rope_section, "alibi": alibi_section, "sinusoidal": sinusoid_section}
if chosen not in SECTIONS:
    st.info(("This model's positions are a learned table, one vector a position added to the embeddings (trained, or "
             "random until then), not drawn here." if chosen == "learned" else
             "This model has no positions: attention alone cannot tell where a token is.")
            + " Below, for comparison: the paper's encoding, and the two kinds that act inside attention.",
            icon=":material/info:")
first = chosen if chosen in SECTIONS else "sinusoidal"
for position in sorted(SECTIONS, key=lambda name: name != first):
    SECTIONS[position]()

downloads(
    Download("Download the encoding (CSV)", lambda: matrix_csv(encoding, [str(p) for p in range(length)]),
             f"positional_encoding_{length}x{d_model}.csv", "text/csv"),
    Download("Download encoding, wavelengths and similarity (NPZ)", lambda: arrays_npz(
        encoding=encoding, wavelengths=positional.wavelengths(d_model), similarity=positional.similarity(encoding),
    ), f"positional_encoding_{length}x{d_model}.npz"),
)
