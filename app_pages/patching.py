"""Patching: a trained model on a clean line and on a corrupted one; copy one activation (a head's output, the
residual stream at one position, a path into one head's query, key or value) from one run into the other and
measure how much of the answer comes back. A click on a map's cell opens its patched run between the two."""

import streamlit as st

from transformer.service import (
    ARCHITECTURE_STACKS,
    CORRUPTIONS,
    DATE_PARTS,
    PATCHING,
    PatchRequest,
    get_task,
    spec_of,
)
from ui import choices, data, model_config, openings, real_patching_view, state
from ui.controls import PERSIST, options_follow, plot, toggle_patch_cell
from ui.state import F
from ui.text import as_text
from ui.weights import use_weights, weight_choices, weights_label
from viz.labels import position_labels, written_labels
from viz.patching import patch_map_figure, three_runs_figure

MAP_LABELS = {"heads": "each head's output", "stream": "the residual stream (layer × position)",
              "path": "paths into one head (sender → receiver)"}

openings.show("patching")
openings.how("Two runs of one trained model: on a **clean** line and on a **corrupted** one of the same length whose "
             "right answer differs (another day of a date, one symbol, one word; for the induction model, the first "
             "occurrence of the repeated segment replaced by fresh syllables). A sequence-to-sequence model is fed "
             "the clean answer in both runs, so only the source differs. **Activation patching** copies one "
             "activation of one run into the other and measures the answer: 0 = the corrupted run's, 1 = the clean "
             "run's (Heimersheim and Nanda, 2024). **Denoising** copies clean into corrupted: a site that brings the "
             "answer back carries it. **Noising** copies corrupted into clean: a site that destroys it is needed. "
             "**Path patching** (Wang et al., 2022) changes only one head's query, key or value input by one "
             "sender's part of the residual stream (a head, the token embedding, the positions, a feed-forward): "
             "what flows through that one path. Every run is the model's own forward pass with a hook "
             "(docs/patching.md).")


def _patchable(name: str) -> bool:
    """A trained model (shipped or trained here) of a task whose right answer and corruption are known."""
    return model_config.source(name).patchable()


model = state.read(F.weights)  # the sidebar's model, as on every page
if model_config.supports(model).language:
    real_patching_view.draw(model, state.value(F.device), model_config.source(model).own_shape())
    st.stop()
if not _patchable(model):
    models = sorted((name for name in weight_choices() if _patchable(name)),
                    key=lambda name: (name not in choices.PATCH_MODELS, name))
    st.info("Patching needs a trained model whose task says what the right answer is and how to corrupt a line "
            f"({', '.join(sorted(CORRUPTIONS))}): the sidebar's **Weights** are "
            f"{'seeded random weights' if model_config.supports(model).shape else as_text(weights_label(model))}. "
            "A model from outside runs without the lab's hook, so it cannot be patched. Choose one here or under "
            "Weights.", icon=":material/call_split:")
    with st.container(horizontal=True):
        for name in models:
            st.button(f"Patch {weights_label(name).removeprefix('Trained: ')}", key=f"patch_with_{name}",
                      on_click=use_weights, args=(name,))
    st.stop()
spec = spec_of(model)
stacks = ARCHITECTURE_STACKS[spec.architecture]
st.caption(f"The sidebar's model: **{weights_label(model)}** (change it in the sidebar).")
top = st.columns([1, 2])
seed = int(top[0].number_input("Line (seed)", min_value=0, max_value=2**31 - 1, key=F.pt_seed, **PERSIST,
                               help="Draws the clean line (when none is typed) and the corruption."))
metrics = PATCHING.metrics_of(spec.task)
if state.value(F.pt_metric) not in ("", *metrics):  # another model's metric: this one's first
    state.put(F.pt_metric, "")
options_follow(F.pt_metric, metrics)
metric = top[1].selectbox("Metric", ("", *metrics), key=F.pt_metric, **PERSIST,
                          format_func=lambda m: PATCHING.metric_labels[m] if m else
                          f"{PATCHING.metric_labels[metrics[0]]} (the model's first)")
metric = metric or metrics[0]
device = state.value(F.device)
drawn = data.patching_line(model, seed, device)
lines = st.columns(2)
clean = lines[0].text_input("Clean line", key=F.pt_clean, **PERSIST, placeholder=drawn,
                            help="Empty: the line drawn from the seed (shown faintly).").strip() or drawn
corrupt = lines[1].text_input("Corrupted line", key=F.pt_corrupt, **PERSIST,
                              placeholder=f"made from the clean line: {', '.join(CORRUPTIONS[spec.task])} changed",
                              help="Empty: the task's corruption of the clean line. It must be as long.").strip()
part = ""
if spec.task == "dates":
    part = st.radio("Corrupt the date's", ("", *DATE_PARTS), key=F.pt_part, horizontal=True, **PERSIST,
                    format_func=lambda p: p or "any part", help="Which field the corruption changes.")
elif state.value(F.pt_part):
    state.put(F.pt_part, "")
how = st.columns(2)
direction = how[0].radio("Direction", PATCHING.directions, key=F.pt_dir, format_func=choices.PATCH_DIRECTION_LABELS.get,
                         **PERSIST)
kind = how[1].radio("Map", PATCHING.maps, key=F.pt_map, format_func=MAP_LABELS.get, **PERSIST)
streams = tuple(stack for stack in ("encoder", "decoder") if stack in stacks)
stream, receiver, layer_norm = "", (), PATCHING.layer_norms[0]
by_position = kind != "stream" and st.toggle(
    "By position", key=F.pt_bypos, **PERSIST,
    help="Each site at one position alone, a column a position (TransformerLens's …_by_pos patchers): a head's "
         "output at one query position, or a sender's part at one position of the stream.")
if kind == "heads" and by_position:
    if state.value(F.pt_rstack) not in ("", *stacks):
        state.put(F.pt_rstack, "")
    options_follow(F.pt_rstack, stacks)
    stream = st.selectbox("Attention", ("", *stacks), key=F.pt_rstack, **PERSIST,
                          format_func=lambda s: s or f"{stacks[-1]} (the last)") or stacks[-1]
if kind == "stream":
    if state.value(F.pt_stack) not in ("", *streams):
        state.put(F.pt_stack, "")
    options_follow(F.pt_stack, streams)
    stream = st.radio("Stream", ("", *streams), key=F.pt_stack, horizontal=True, **PERSIST,
                      format_func=lambda s: f"{s} stream" if s else f"{streams[0]} stream (the first)") or streams[0]
if kind == "path":
    picks = st.columns(4)
    if state.value(F.pt_rstack) not in ("", *stacks):
        state.put(F.pt_rstack, "")
    options_follow(F.pt_rstack, stacks)
    receiver_stack = picks[0].selectbox("Receiver's attention", ("", *stacks), key=F.pt_rstack, **PERSIST,
                                        format_func=lambda s: s or f"{stacks[-1]} (the last)") or stacks[-1]
    layers = list(range(spec.num_layers))
    if state.value(F.pt_rlayer) not in (-1, *layers):
        state.put(F.pt_rlayer, -1)
    options_follow(F.pt_rlayer, layers)
    layer = picks[1].selectbox("Receiver's layer", [-1, *layers], key=F.pt_rlayer, **PERSIST,
                               format_func=lambda n: f"L{layers[-1]} (the last)" if n < 0 else f"L{n}")
    if state.value(F.pt_rhead) >= spec.num_heads:
        state.put(F.pt_rhead, 0)
    options_follow(F.pt_rhead, range(spec.num_heads))
    head = picks[2].selectbox("Receiver head", list(range(spec.num_heads)), key=F.pt_rhead, **PERSIST,
                              format_func=lambda h: f"H{h}")
    side = picks[3].radio("Its input", PATCHING.sides, key=F.pt_rside, horizontal=True,
                          format_func=choices.PATCH_SIDE_LABELS.get, **PERSIST)
    receiver = (receiver_stack, layers[-1] if layer < 0 else layer, head, side)
    layer_norm = st.radio("The receiver's LayerNorm", PATCHING.layer_norms, key=F.pt_ln, horizontal=True,
                          format_func=choices.PATCH_NORM_LABELS.get, **PERSIST,
                          help="Held: every LayerNorm at its own run's scale, so the senders' parts add up exactly. "
                               "Recomputed: the receiver's LayerNorm run again on the patched stream, as path "
                               "patching does in Wang et al. (2022).")
    if spec.norm != "pre":
        st.caption("This model is post-norm: no LayerNorm stands between the stream and the receiver's "
                   "projections, so the two readings are one.")
request = PatchRequest(model, clean, corrupt, seed=seed, part=part, metric=metric, kind=kind, direction=direction,
                       stack=stream, receiver=receiver, device=device, layer_norm=layer_norm, by_position=by_position)
study = data.patching_study(request)
found, said = study.map, study.lines
measured = found.metric
metric_label = (f"L{measured.layer} H{measured.heads[0]}'s weight on the token after the earlier occurrence"
                if measured.kind == "attention" and len(measured.heads) == 1 else PATCHING.metric_labels[metric])


def _text(tokens) -> str:
    return get_task(spec.task).source_text(tokens)


answer_positions = ", ".join(str(p) for p in said.positions[:12]) + (" …" if len(said.positions) > 12 else "")
runs = st.columns(2)
for column, title, tokens, answer, predicted, value in (
        (runs[0], "Clean", said.clean, said.answer, study.predictions[0], found.clean_value),
        (runs[1], "Corrupted", said.corrupt, said.corrupt_answer, study.predictions[1], found.corrupt_value)):
    with column.container(border=True):
        st.markdown(f"**{title}** · {metric_label}: `{value:.3f}`")
        st.code(as_text(_text(tokens)), language=None, wrap_lines=True)
        if said.decoder_only:
            shown = [predicted[p] for p in said.positions]
            st.caption(as_text(f"The rule's next tokens at positions {answer_positions}: "
                               f"{' '.join(answer[p] for p in said.positions)} · the model's: {' '.join(shown)}"))
        else:
            st.caption(as_text(f"Right answer: {_text(answer)} · the model's (fed the clean answer): "
                               f"{_text(predicted[:len(answer)])}"))
st.caption(f"Measured at the output positions {answer_positions}, where the two answers differ.")


chosen = (state.value(F.pt_row), state.value(F.pt_col))
inside = 0 <= chosen[0] < len(found.rows) and 0 <= chosen[1] < len(found.columns)
columns = found.columns
if kind == "stream":
    # a position as every page names it (the token it reads), and on the output side what it writes
    columns = tuple(position_labels(said.clean) if stream == "encoder" else written_labels(said.outputs,
                                                                                            said.written))
elif by_position:  # the positions of the heads' queries, or of the receiver's input
    attention, side = (stream, "q") if kind == "heads" else (receiver[0], receiver[3])
    read_source = attention == "encoder" or (attention == "cross" and side != "q")
    columns = tuple(position_labels(said.clean if read_source or said.decoder_only else said.outputs))
title = {"heads": f"each {stream} head's output<br>at one query position" if by_position
         else "each head's output<br>patched alone",  # two lines: a phone's 390 px
         "stream": f"the {stream} stream<br>patched at one position",
         "path": ("each sender at one position<br>" if by_position else "each sender alone<br>")
         + f"into {receiver[0]} L{receiver[1]} H{receiver[2]} {receiver[3].upper()}" if receiver else ""}[kind]
ends = (found.clean_value, found.corrupt_value)
small = PATCHING.gap_too_small(*ends)
if small:
    st.warning(f"Clean − corrupted is {ends[0] - ends[1]:+.4f}, under {PATCHING.min_gap}: too small to normalise (a "
               "patch's float noise would read as tens of percent of it). The map draws each patched run's raw "
               "change from the corrupted run instead, in the measure's own units. Another line, part or measure "
               "may give a wider gap.", icon=":material/straighten:")
plot(patch_map_figure(found.values, found.raw, found.rows, columns,
                      [[site.label for site in row] for row in found.sites], metric=metric_label,
                      title=f"{direction}: {title}", chosen=chosen if inside else None, gap=ends, normalise=not small),
     "patch_map", on_click=toggle_patch_cell)
st.caption("Red: the patch brings the clean answer back (1 = all of it); blue: it pushes the answer further from "
           "the clean one; white: nothing changes. Click a cell to open its run between the clean and the corrupted "
           "one; click it again to close it.")
if inside:
    site = found.sites[chosen[0]][chosen[1]]
    if kind == "stream":
        view = (site.stack, min(site.layer, spec.num_layers - 1), 0)
    else:
        view = site.receivers[0][:3] if kind == "path" else (site.stack, site.layer, site.head)
    view_head = state.value(F.pt_head)
    view_head = view[2] if not 0 <= view_head < spec.num_heads else view_head
    shown = st.selectbox("Head drawn in the three runs", list(range(spec.num_heads)), index=view_head,
                         format_func=lambda h: f"{view[0]} L{view[1]} H{h}", key="pt_head_pick")
    if shown != view_head:
        state.put(F.pt_head, shown)
    three = data.patching_cell(request, chosen[0], chosen[1], view[0], view[1])
    query_tokens = said.clean if view[0] == "encoder" else said.outputs
    key_tokens = said.clean if view[0] in ("encoder", "cross") else said.outputs
    st.markdown(f"**{as_text(site.label)}** patched ({direction})")
    plot(three_runs_figure(three.attention, query_tokens, key_tokens, three.runs, three.values, shown,
                           f"{view[0]} L{view[1]}"), "patch_runs")
    predicted = st.columns(3)
    for column, run, tokens in zip(predicted, three.runs, three.predictions):
        picked = [tokens[p] for p in said.positions]
        column.caption(as_text(f"{run}: at the measured positions the model writes {' '.join(picked)}"))
