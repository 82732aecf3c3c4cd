"""The Patching page on a real language model: two typed lines of as many pieces and their answers
(indirect-object identification's by default), a heads or stream map (`transformer.service.real_patch_map`)."""

from __future__ import annotations

import streamlit as st

from transformer.service import IOI, PATCHING, RealPair
from ui import data, state
from ui.controls import PERSIST, plot
from ui.state import F
from ui.text import as_text
from viz.patching import patch_map_figure

REAL_MAPS = {"heads": "each head's output", "stream": "the residual stream (layer × piece)"}


def draw(weights: str, device: str, direction_labels: dict) -> None:
    """The lines, answers and map controls, then the map (after a press: it runs the whole model hundreds of
    times)."""
    st.markdown("A real language model's lines are typed: a **clean** line and a **corrupted** one of as many "
                "pieces, each with the piece it should be followed by. The measure is the logit difference, clean − "
                "corrupted answer, at the last piece. The example is indirect-object identification (Wang et al. "
                "2022): the answer is the name said once.")
    lines, answers = st.columns(2), st.columns(2)
    pair = RealPair(
        lines[0].text_input("Clean line", key=F.pt_clean, placeholder=IOI.clean, **PERSIST) or IOI.clean,
        lines[1].text_input("Corrupted line", key=F.pt_corrupt, placeholder=IOI.corrupt, **PERSIST) or IOI.corrupt,
        answers[0].text_input("Its answer (one piece)", key=F.pt_answer, placeholder=IOI.clean_answer,
                              **PERSIST) or IOI.clean_answer,
        answers[1].text_input("The corrupted line's answer", key=F.pt_canswer, placeholder=IOI.corrupt_answer,
                              **PERSIST) or IOI.corrupt_answer)
    how = st.columns(2)
    direction = how[0].radio("Direction", PATCHING.directions, key=F.pt_dir, format_func=direction_labels.get,
                             **PERSIST)
    if state.value(F.pt_map) not in REAL_MAPS:  # paths are not offered on it
        state.put(F.pt_map, "heads")
    kind = how[1].radio("Map", tuple(REAL_MAPS), key=F.pt_map, format_func=REAL_MAPS.get, **PERSIST)
    found = data.real_patch_map(weights, pair, kind, direction, device)
    cells = [[site.label for site in row] for row in found.sites]
    plot(patch_map_figure(found.values, found.raw, found.rows, found.columns, cells,
                          PATCHING.metric_labels["logit_diff"],
                          f"{as_text(weights)}: {REAL_MAPS[kind]} patched alone ({direction})",
                          gap=(found.clean_value, found.corrupt_value)), "real_patch_map")
