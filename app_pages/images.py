"""Images: a Vision Transformer trained here reads an 8×8 image; every head's attention from CLS or a patch drawn
over the image, rollout and flow, the positions it learned, and pixels a click flips."""

import numpy as np
import streamlit as st

from transformer.service import IMAGE_MODELS, vision_label
from ui import data, openings, sidebar, state
from ui.controls import PERSIST, clamp, fit_px, options_follow, plot
from ui.state import F
from ui.text import as_text, count
from viz.images import (
    distance_figure,
    head_overlays,
    image_and_prediction,
    overlay_patch,
    position_similarity_figure,
    rollout_and_flow,
    token_name,
)

MODEL_LABELS = {"match": "match (which patch does the corner repeat?)", "digits": "digits (scikit-learn's 8×8)"}
DIGITS_TEST = 300

openings.show("images")
openings.how(
    "A **Vision Transformer** (Dosovitskiy et al. 2021) reads an image as a sequence: here an 8×8 image is cut into "
    "16 patches of 2×2 pixels, each linearly embedded, with a learned **CLS** token in front and learned positions; "
    "pre-norm encoder layers follow (how many, and their heads, under the model's name: each model has its own), and "
    "CLS's final state is classified. In **match**, patches 1–15 "
    "carry 15 different patterns and the top-left corner (patch 0) repeats one of them: the answer is the patch it "
    "repeats, so something must look from the corner to its match. **Click a pixel** to flip it and watch the "
    "attention move; click a patch in the heads' panels to look from it. Both models were trained here "
    "(docs/images.md says how, and what they show); the Train page trains others, of your own sizes, in seconds.")


def _new_image() -> None:
    state.put(F.img_flip, [])  # edits belong to the image they were made on


def _flip(cell: dict) -> None:
    if "query" in cell and "key" in cell:
        pixel = int(cell["query"]) * 8 + int(cell["key"])
        state.put(F.img_flip, sorted(set(state.read(F.img_flip)) ^ {pixel}))


def _look_from(cell: dict) -> None:
    if "query" in cell and "key" in cell and overlay_patch(int(cell["query"]), int(cell["key"])) is not None:
        state.put(F.img_from, 1 + overlay_patch(int(cell["query"]), int(cell["key"])))


def edited(image: np.ndarray, flips) -> np.ndarray:
    """``image`` with each pixel of ``flips`` flipped: a dark one (< 0.5) becomes 1, a light one 0."""
    image = image.copy().ravel()
    for pixel in flips:
        image[pixel] = 0.0 if image[pixel] >= 0.5 else 1.0
    return image.reshape(8, 8)


def model_labels() -> dict[str, str]:
    """``{img_model: label}`` the Model radio offers: the shipped models, then those trained in this session or
    opened by a link (kept by the server). A link to one the server no longer keeps falls back to match."""
    mine, current = state.setdefault(state.MY_IMAGES, {}), state.read(F.img_model)
    if current not in IMAGE_MODELS and current not in mine:
        label = vision_label(current)
        if label is None:
            st.warning(f"This server keeps no image model {as_text(current)} (it may have restarted, or dropped it "
                       "to make room): showing match. The Train page trains one in seconds.", icon=":material/warning:")
            state.put(F.img_model, "match")
        else:
            mine[current] = label
    return {**MODEL_LABELS, **{name: f"Trained here: {label}" for name, label in mine.items()}}


@st.fragment
def _image_controls() -> tuple[str, str, int, int]:
    """The Model, image and "Attention from" controls: the model's name, its task, the image and the query."""
    labels = model_labels()
    options_follow(F.img_model, labels.values())
    controls = st.columns([3, 2, 2])
    name = controls[0].radio("Model", list(labels), key=F.img_model, format_func=labels.get, horizontal=True,
                             on_change=_new_image, **PERSIST)
    task = data.image_task(name)
    if task == "digits":
        if state.read(F.img_pick) >= DIGITS_TEST:
            st.warning(f"The digits have test images 0–{DIGITS_TEST - 1}: showing image 0.", icon=":material/warning:")
            clamp(F.img_pick, 0)
        pick = controls[1].number_input("Test image", min_value=0, max_value=DIGITS_TEST - 1, key=F.img_pick,
                                        on_change=_new_image, help="One of the 300 digits the model never trained on.",
                                        **PERSIST)
    else:
        pick = controls[1].number_input("Fresh image (seed)", min_value=0, max_value=2**31 - 1, key=F.img_pick,
                                        on_change=_new_image, help="A new match image is drawn from this seed.",
                                        **PERSIST)
    token = controls[2].selectbox("Attention from", list(range(17)), key=F.img_from, format_func=token_name,
                                  help="The query whose attention is drawn: CLS (what the classifier reads) or a "
                                       "patch.", **PERSIST)
    return name, task, int(pick), token


def _reading_caption(reading, task: str, label: int, flips: list) -> None:
    """What to look at: the flips made, or where match's corner and CLS look, or how to edit."""
    if flips:
        st.caption(f"{len(flips)} pixels flipped: the prediction and every head's attention are the edited image's. "
                   "Click a flipped pixel again to flip it back.")
    elif task == "match":
        corner = reading.weights[0, :, 1, label + 2]  # layer 0, every head: the corner's weight on its match
        last = reading.weights[-1, :, 0, label + 2].max()  # the last layer, every head: CLS's weight on it
        st.caption(f"Layer 0: the corner (patch 0) puts {corner.max():.2f} of head {int(corner.argmax())}'s "
                   f"attention on its match, patch {label + 1} (uniform would be {1 / 17:.2f}); layer "
                   f"{reading.weights.shape[0] - 1}: CLS puts {last:.2f} on it.")
    else:
        st.caption("Click a pixel to flip it and watch the prediction and the attention move.")


def images_view() -> None:
    """Everything below the introduction: a click on a pixel or a patch, or a control, reruns this alone, not the
    sidebar (docs/performance.md)."""
    name, task, pick, token = _image_controls()
    original, label = data.example_image(name, pick)
    flips = state.read(F.img_flip)
    image = edited(original, flips)
    reading = data.read_image(name, image, sidebar.session_device())
    layers, heads = reading.weights.shape[:2]  # (L, H, 17, 17): the shape is the model's own, as it ran
    st.caption(f"This model: {count(layers, 'pre-norm encoder layer')} of {count(heads, 'head')}, read off its "
               "attention.")
    right = None if flips else label
    title = f"{'Edited: ' if flips else ''}{'match image' if task == 'match' else 'test digit'} {pick}" + (
        f" · right answer: {reading.classes[label]}" if not flips else f" · {len(flips)} pixels flipped")
    plot(image_and_prediction(image, title, reading.probabilities, reading.classes, token, right, fit_px("img_image")),
         "img_image", on_click=_flip)
    # the same elements flipped or not, so that a click leaves the charts below where they are
    st.button("Undo every edit", on_click=_new_image, icon=":material/undo:", disabled=not flips)
    _reading_caption(reading, task, label, flips)
    plot(head_overlays(reading.weights, image, token, fit_px("img_heads")), "img_heads", on_click=_look_from)
    layers = reading.weights.shape[0]
    columns = st.columns(2)
    with columns[0]:
        plot(rollout_and_flow(reading.rollout[token], reading.flow(token), token, layers, fit_px("img_flow")),
             "img_flow")
    with columns[1]:
        plot(distance_figure(reading.distance, fit_px("img_distance")), "img_distance")
    plot(position_similarity_figure(reading.positions, fit_px("img_positions")), "img_positions")
    st.caption("Rollout multiplies each layer's heads' mean, half kept for the residual; flow is the maximum flow "
               "through the same graph (Abnar & Zuidema 2020). The positions were learned from nothing: a patch's "
               "position is most like its own row's and column's, as the paper's Figure 7 shows.")
    state.write_url()  # a fragment's rerun does not reach app.py, which writes the link after a whole run


images_view()
