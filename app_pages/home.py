"""Home: attention that means something first (the dates model reading today's date), then every page."""

import numpy as np
import streamlit as st

from transformer.service import available, get_task, spec_of
from ui import class_views, data, openings, state
from ui.controls import fit_px, plot
from ui.lessons import LESSONS, open_view
from ui.pages import PAGES, Page
from ui.state import F
from ui.weights import use_weights, weights_label
from viz.attention import head_grid

openings.show("home")


def _decode(source: str) -> None:
    """Open the Decode page on the dates model writing ``source`` as an ISO date, from its first step."""
    use_weights("dates")
    state.open_page(Page.DECODE.file, dec_src=source, dec_step=0, dec_mode="greedy", dec_play=False)


def _open(weights: str, source: str, page: str, layer: int) -> None:
    """Select a trained model with ``source`` as its input, the cross-attention of ``layer`` on view (the picture
    drawn here), no token focused; then open ``page``."""
    state.open_page(page, weights=weights, src=source, stack="cross", layer=layer, element=0, focus=-1,
                    seq_len=max(state.value(F.seq_len), state.default_of(F.seq_len, weights)))


if "dates" in available():
    config, stacks = data.todays_date(device=state.current_values()["device"])
    TODAY = config.source_text
    st.subheader(f"The dates model reads “{TODAY}”")
    st.caption(f"This picture: the trained **dates** model. Every other page draws the sidebar's model "
               f"(now: **{weights_label(state.current_values()['weights'])}**); the buttons below make it the "
               "dates, translate or reverse model.")
    result = data.run_live(config, stacks=stacks, notices=False)
    layer = result.layers - 1
    weights = result.attention["cross"][layer, 0]  # (H, N_t, N_s): each output character's view of the source
    mean = weights.mean(axis=0, keepdims=True)  # (1, N_t, N_s)
    mask = result.applied_masks["cross"][0]  # (N_t, N_s)
    plot(head_grid(np.concatenate([weights, mean]), mask, result.target_tokens[0], result.source_tokens[0],
                   title=f"cross-attention, layer {layer}: rows are the characters written, columns those read",
                   names=[f"head {h}" for h in range(result.heads)] + ["mean of heads"], columns=result.heads + 1,
                   fit_px=fit_px("home_dates")),
         "home_dates")
    st.caption("Each row is one character the model writes; the dark cells are where it reads from: the year's "
               "digits read the year, the month's digits the month's name, the day's digits the day, and nothing "
               "reads the weekday.")
    columns = st.columns(4)
    columns[3].button("Decode today's date", on_click=_decode, args=(TODAY,), key="open_decode",
                      help="Step through the dates model writing it, token by token.")
    links = (("Dates model → Attention", "dates", TODAY, Page.ATTENTION.file),
             ("Translate model → Attention", "translate", get_task("translate").example, Page.ATTENTION.file),
             ("Reverse model → Attention", "reverse", get_task("reverse").example, Page.ATTENTION.file))
    for column, (label, weights_name, source, page) in zip(columns, links):
        if weights_name in available():  # the last layer, as drawn above (each shipped model's own count)
            last = spec_of(weights_name).num_layers - 1
            column.button(label, on_click=_open, args=(weights_name, source, page, last), key=f"open_{weights_name}",
                          help=f"Cross-attention, layer {last}, on the Attention page.")
    state.follow_open_page()

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
a trained model learned, pick one under **Weights** (small models trained to normalise dates, translate a
toy language, and copy, reverse or sort a sequence ship with the app) or train your own on the Train page.
Every view is in the URL — copy the link to share exactly what you see.
"""
)
st.subheader("Lessons")
for number, lesson in enumerate(LESSONS, start=1):  # a button: the lesson opens here, in this session (a link's
    # new tab was a new session, 74 s for a first lesson under load)
    st.button(f"{number}. {lesson.title}", key=f"home_lesson_{number}", on_click=open_view, args=(lesson,))
    st.caption(f"{lesson.says} Its address, to share: `{lesson.address}`")
state.follow_open_page()  # a lesson's button (the one above runs only with the dates model shipped)
st.subheader("In a class?")
class_views.home_box()
st.subheader("Every page")
for name, title, icon, says in PAGES[1:]:  # a page link keeps to one line: the title, and what it shows below it
    st.page_link(Page(name).file, label=title, icon=f":material/{icon}:")
    st.caption(says)
