"""The Patching page on a real language model: two typed lines of as many pieces and their answers
(indirect-object identification's by default), a heads, stream or path map (`transformer.service.real_patch_map`)."""

from __future__ import annotations

import streamlit as st

from transformer.service import IOI, PATCHING, RealPair, RealPatchRequest
from ui import choices, data, state
from ui.controls import PERSIST, plot, toggle_patch_cell
from ui.state import F
from ui.text import as_text
from viz.patching import patch_map_figure, three_runs_figure

REAL_MAPS = {"heads": "each head's output", "stream": "the residual stream (layer × piece)",
             "path": "paths into one head (sender → receiver)"}


def draw(weights: str, device: str, shape) -> None:
    """The lines, answers and map controls, then the map (after a press: it runs the whole model hundreds of
    times) and its opened cell; ``shape``: the model's own (its layers and heads for the pickers)."""
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
    direction = how[0].radio("Direction", PATCHING.directions, key=F.pt_dir,
                             format_func=choices.PATCH_DIRECTION_LABELS.get, **PERSIST)
    kind = how[1].radio("Map", tuple(REAL_MAPS), key=F.pt_map, format_func=REAL_MAPS.get, **PERSIST)
    receiver, layer_norm = _receiver(shape.num_layers, shape.num_heads) if kind == "path" else ((), "held")
    request = RealPatchRequest(weights, pair, kind, direction, receiver, layer_norm, device)
    found = data.real_patch_map(request)
    cells = [[site.label for site in row] for row in found.sites]
    what = (f"each sender's path into L{receiver[0]} H{receiver[1]} {receiver[2].upper()}" if receiver
            else REAL_MAPS[kind])
    title = f"{as_text(weights)}: {what} patched alone ({direction})"
    chosen = (state.value(F.pt_row), state.value(F.pt_col))
    inside = 0 <= chosen[0] < len(found.rows) and 0 <= chosen[1] < len(found.columns)
    plot(patch_map_figure(found.values, found.raw, found.rows, found.columns, cells,
                          metric=PATCHING.metric_labels["logit_diff"], title=title, chosen=chosen if inside else None,
                          gap=(found.clean_value, found.corrupt_value)), "real_patch_map", on_click=toggle_patch_cell)
    st.caption("Red: the patch brings the clean answer back (1 = all of it); blue: it pushes it further away. Click "
               "a cell to open its run between the clean and the corrupted one; click it again to close it.")
    if inside:
        _cell(request, found.sites[chosen[0]][chosen[1]], chosen, shape)


def _cell(request: RealPatchRequest, site, chosen: tuple, shape) -> None:
    """The opened cell's three runs: one head of the layer it patches (a path: its receiver's), the clean run's
    pieces on the axes, each run's next piece after the last."""
    receiver = request.receiver
    layer = receiver[0] if receiver else min(site.layer, shape.num_layers - 1)
    head = state.value(F.pt_head)
    head = (receiver[1] if receiver else getattr(site, "head", 0)) if not 0 <= head < shape.num_heads else head
    shown = st.selectbox("Head drawn in the three runs", list(range(shape.num_heads)), index=head,
                         format_func=lambda h: f"L{layer} H{h}", key="pt_head_pick")
    if shown != head:
        state.put(F.pt_head, shown)
    opened = data.real_patch_cell(request, chosen, layer)
    three = opened.runs
    st.markdown(f"**{as_text(site.label)}** patched ({request.direction})")
    plot(three_runs_figure(three.attention, opened.pieces, opened.pieces, three.runs, three.values, shown, f"L{layer}"),
         "patch_runs")
    written = st.columns(3)
    for column, run, pieces in zip(written, three.runs, three.predictions):
        column.caption(as_text(f"{run}: after the last piece the model writes {pieces[-1]!r}"))


def _receiver(layers: int, heads: int) -> tuple[tuple, str]:
    """The path's receiver ``(layer, head, side)`` and its norm, from the page's pickers (the link's fields)."""
    picks = st.columns(3)
    if state.value(F.pt_rlayer) >= layers:
        state.put(F.pt_rlayer, -1)
    layer = picks[0].selectbox("Receiver's layer", [-1, *range(layers)], key=F.pt_rlayer, **PERSIST,
                               format_func=lambda n: f"L{layers - 1} (the last)" if n < 0 else f"L{n}")
    if state.value(F.pt_rhead) >= heads:
        state.put(F.pt_rhead, 0)
    head = picks[1].selectbox("Receiver head", list(range(heads)), key=F.pt_rhead, format_func=lambda h: f"H{h}",
                              **PERSIST)
    side = picks[2].radio("Its input", PATCHING.sides, key=F.pt_rside, horizontal=True,
                          format_func=choices.PATCH_SIDE_LABELS.get, **PERSIST)
    layer_norm = st.radio("The receiver's RMSNorm", PATCHING.layer_norms, key=F.pt_ln, horizontal=True,
                          format_func=choices.PATCH_NORM_LABELS.get, **PERSIST,
                          help="Held: every norm at its own run's scale, so the senders' parts add up exactly. "
                               "Recomputed: the receiver's norm run again on the patched stream, as path patching "
                               "does in Wang et al. (2022).")
    return (layers - 1 if layer < 0 else layer, head, side), layer_norm
