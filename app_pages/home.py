"""Home: what Attention Lab is, and a link to each page."""

import streamlit as st

st.title("Attention Lab")
st.markdown(
    """
A live laboratory for the Transformer of *Attention Is All You Need*. Change **d_model**, the number of
**heads**, the **sequence length**, the **pad symbols** and the **input sequences** in the sidebar: the
model's own components (TensorFlow / Keras) run again and every picture is redrawn.

The conventions are the paper's: attention is scaled by **1/√d_k**, a mask's **True means "may attend"**,
the look-ahead mask is **lower triangular**, and a query with no allowed key gets **zero weight** (never NaN).
By default the weights are seeded random weights: the pictures show what the *mechanism* does. Each weight
is drawn from the seed and its place in the model, so a slider changes only what it is about: more heads
split the same projections differently, and another layer keeps the weights of the layers before it. To see what
a trained model learned, pick one under **Weights** (small models trained to copy, reverse or sort a
sequence ship with the app) or train your own on the Train page. Every view is in the URL — copy the link
to share exactly what you see.
"""
)
st.page_link("app_pages/masks.py", label="Masks — padding, look-ahead and target masks, and how they broadcast",
             icon=":material/grid_on:")
st.page_link("app_pages/positional_encoding.py", label="Positional encoding — sinusoids, wavelengths, similarity",
             icon=":material/waves:")
st.page_link("app_pages/attention.py", label="Attention — every head of every layer, with statistics and checks",
             icon=":material/visibility:")
st.page_link("app_pages/dot_product_lab.py", label="Dot-product lab — one head step by step, why scale, mask fills",
             icon=":material/science:")
st.page_link("app_pages/shapes.py", label="Shapes — the tensor shapes of multi-head attention, step by step",
             icon=":material/straighten:")
st.page_link("app_pages/train.py", label="Train — train a small model in the background, then look at its attention",
             icon=":material/model_training:")
