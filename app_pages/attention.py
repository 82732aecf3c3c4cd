"""Attention: per-head heatmaps for encoder, masked decoder and cross-attention, with statistics and checks."""

import numpy as np
import streamlit as st

from transformer import stack_sides
from transformer.service import (
    FULL_ATTENTION_MAX,
    QUERY_BLOCK,
    attention_checks,
    has_position_axis,
    head_statistics,
    line_top_roles,
    measured_checks,
    role_text,
)
from ui import choices, data, model_config, openings, state, token_views
from ui.controls import (
    PERSIST,
    STACK_NAMES,
    Download,
    carried_over,
    check_lines,
    downloads,
    element_picker,
    fit_px,
    head_picker,
    layer_picker,
    mask_toggles,
    padding_notice,
    plot,
    stack_picker,
    stat_columns,
    variant_note,
    view_picker,
    window_start_picker,
)
from ui.pages import Page
from ui.state import F
from ui.text import count
from viz.attention import head_grid, model_view, single_head, window_starts
from viz.export import arrays_npz, matrix_csv
from viz.pooling import FULL_RESOLUTION, FULL_RESOLUTION_WINDOW

openings.show("attention")
controls = st.columns([3, 2, 3])  # the toggles' labels fit whole from a 1000 px window up
with controls[0]:
    stack = stack_picker()
with controls[2]:
    padding_on, future_on = mask_toggles(stack)
config = model_config.live_config(padding_masks=padding_on, look_ahead_mask=future_on)
inside = model_config.source().supports.inside  # the lab's own model: its intermediates are read (not from outside)
carried_over(config, "attention")
text = data.read_lines(config)  # the lines' tokens, masks and the model's sizes: no attention computed yet; a bad
batch = len(text.source_tokens)  # configuration's message goes full width, under the controls
with controls[1]:
    element = element_picker(batch)
layers, heads = text.layers, text.heads
n_q, n_k = (len(tokens) for tokens in text.tokens_of(stack, element))
blockwise = config.seq_len > FULL_ATTENTION_MAX
with controls[1]:
    layer = layer_picker(layers)


def _continue_on_decode(read: str) -> None:
    """Open Decode on the line as the model read it, greedy, from its first step."""
    state.open_page(Page.DECODE.file, dec_src=read, dec_step=0, dec_mode="greedy", dec_play=False)


if model_config.supports(config.weights).language:  # a real language model: what it writes next is on Decode
    read = "".join(piece for piece, real in zip(text.tokens_of(stack, element)[0], text.real_queries(stack, element))
                   if real)
    st.button(f"What does it write after line {element + 1}? Continue it on Decode", key="continue_on_decode",
              on_click=_continue_on_decode, args=(read,), icon=":material/play_arrow:",
              help="Decode continues the line as the model read it, one piece a step, each step's attention and "
                   "its next pieces' probabilities beside it.")
    state.follow_open_page()

# Every control that decides what is computed comes first (the focus, the full-resolution window, the view);
# the charts fill the places kept for them once the model has run with those values.
query_lines, key_lines = stack_sides(stack, text.source_tokens, text.target_tokens)  # every line's tokens
focus_row = st.columns([3, 2, 3])
hide_specials = focus_row[2].toggle("Hide `<s>`, `</s>` and padding", key=F.specials, help="Takes those keys' columns "
                                    "out and renormalises each row over the rest (attention sinks hide the rest "
                                    "of a row). Up to N = 512.", disabled=blockwise, **PERSIST) and not blockwise
cells_off = "" if inside and not (config.ablate or blockwise) else (
    "a model from outside's norms are not read here" if not inside else
    "norms are measured in the whole model: clear the ablated heads" if config.ablate else
    f"norms need whole maps: up to N = {FULL_ATTENTION_MAX}")
cells = focus_row[2].segmented_control(
    "Cells", choices.CELLS, key=F.cells, required=True, disabled=bool(cells_off), label_visibility="collapsed",
    format_func={"weights": "Weights α", "norms": "Norms ‖α·f(x)‖"}.get,
    help="Weights: how much each key is looked at. Norms (Kobayashi et al. 2020): how much each key moves the "
         "query's output, ‖α·f(x)‖ with f(x) = (x·W_V + b_V)·W_O for the head: a key looked at but carrying a small "
         "vector moves little.", **PERSIST)
norms_on = cells == "norms" and not cells_off
line_tokens = token_views.line_tokens(text, stack, element, hide_specials)
focus = token_views.focus_controls(line_tokens, focus_row)
switched_off = st.container()  # always drawn: the note coming or going must not rebuild the charts (ui.data)
if not (padding_on and future_on):
    switched_off.info("A mask is switched off: the weights below are what attention does without it.",
                      icon=":material/lock_open:")
heads_part = st.container()  # the line's notices, the head grid and its captions
full_resolution, start = None, (0, 0)
if max(n_q, n_k) > FULL_RESOLUTION:
    head = head_picker(heads, label="Open one head at full resolution")
    full_resolution = st.expander(f"Head {head} at full resolution ({n_q}×{n_k})", key=F.full_res,
                                  on_change="rerun")
    shown_k = n_k if blockwise else len(line_tokens.key_positions)
    if full_resolution.open and max(n_q, shown_k) > FULL_RESOLUTION_WINDOW:
        with full_resolution:
            st.caption(f"Every cell exact, in a window of at most {FULL_RESOLUTION_WINDOW} × "
                       f"{FULL_RESOLUTION_WINDOW} positions (to keep the page fast): move it here.")
            left, right = st.columns(2)
            start = (window_start_picker("crop_q", window_starts(n_q), "First query", left),
                     window_start_picker("crop_k", window_starts(shown_k), "First key", right))
MODEL_VIEW_HEADS = 16
# One view at a time, picked with a segmented control: only the chosen view is computed and sent. (Lazy tabs did
# the same, but the browser re-renders Streamlit's tabs on every update of the page: ~30 ms of a slider move.)
view = view_picker()


def line_roles():
    """Each head's strongest role on this line: ``(names (L, H), scores (L, H))`` (self-attention, full maps)."""
    query_ids = stack_sides(stack, result.source_ids, result.target_ids)[0][element]  # (N_q,)
    return line_top_roles(line_maps, query_ids, ~np.isin(query_ids, result.pad_ids))



windows = token_views.exact_windows(  # {name: window} a block-wise run (N > 512) keeps exact
    config.seq_len, n_q, n_k, full_res=start if full_resolution is not None and full_resolution.open else None,
    head_view=view == "Head view", focus=focus)

with heads_part:
    result = data.run_live(config, stacks=(stack,), lines=(element,), windows=tuple(windows.values()))  # stack, line
exact_maps = {name: maps[:, 0] for name, maps in zip(windows, result.window_weights.get(stack, ()))}  # (L, H, r, c)
line_maps = result.attention[stack][:, 0]  # (L, H, N_q, N_k), max-pooled by result.attention_factor above 512
mask = result.mask_of(stack, element, layer)  # (N_q, N_k): this layer's
view_of_line = token_views.line_view(result, stack, element, hide_specials, layer)
drawn_focus = token_views.drawn_focus(view_of_line, focus)
on_click = token_views.on_chart_click(view_of_line)
click_side = token_views.click_side()  # a click's focus is drawn in the browser at once, then sent (viz/panels.js)
weights = view_of_line.weights[layer]  # (H, N_q, N_k'), specials' columns out when hidden
with_mean = np.concatenate([weights, weights.mean(0, keepdims=True)])  # (H + 1, N_q, N_k')
norms = data.value_norms(config, stack, line=element) if norms_on else None  # (L, H, N_q, N_k)
if norms is not None:
    shown_norms = np.take(norms[layer], view_of_line.key_positions, axis=-1)  # (H, N_q, N_k'): not renormalised
    grid_cells = np.concatenate([shown_norms, shown_norms.mean(0, keepdims=True)])  # (H + 1, N_q, N_k')
    cells_scale = dict(value_name="‖α·f(x)‖", value_max=float(max(grid_cells.max(), 1e-6)))
else:
    grid_cells, cells_scale = with_mean, {}

with heads_part:
    st.subheader(f"{STACK_NAMES[stack]} — layer {layer}, line {element + 1}")
    padding_notice(result)
    d_k = result.positional_encoding.shape[1] // heads  # each head's share of d_model (a trained model's own)
    title = "<br>".join(filter(None, (f"{count(heads, 'head')} (d_k = {d_k}) and "
                                      f"{'its' if heads == 1 else 'their'} mean"
                                      + (": value-weighted norms ‖α·f(x)‖" if norms is not None else ""),
                                      view_of_line.note if norms is None else
                                      view_of_line.note.replace(", rows renormalised", ""))))
    spec = model_config.source().spec()  # a trained model: its own key/value heads, not the sidebar's
    kv_heads = spec.kv_heads if spec else config.kv_heads
    group = heads // kv_heads  # query heads that share one key/value head
    names = [f"head {h}" + (f" · kv {h // group}" if group > 1 else "") for h in range(heads)]
    columns = group if 1 < group <= 8 and heads > group else (5 if heads < 5 else 4)  # a row a key/value group
    plot(head_grid(grid_cells, view_of_line.mask, view_of_line.query_tokens, view_of_line.key_tokens, title=title,
                   names=[*names, "mean of heads"], columns=columns, focus=drawn_focus, click_side=click_side,
                   pooled=result.attention_factor, key_positions=view_of_line.key_positions,
                   fit_px=fit_px("heads"), padded_keys=view_of_line.padded_keys, **cells_scale),
         "heads", on_click=on_click)
    if norms is not None:
        st.caption(token_views.norms_caption(weights, shown_norms, result.special_keys(stack, element)[
            view_of_line.key_positions], view_of_line.mask, result.real_queries(stack, element)))
    elif cells == "norms" and cells_off:
        st.caption(f"Weights drawn: {cells_off}.")
    if blockwise:
        st.caption(f"N = {n_q} > {FULL_ATTENTION_MAX}: attention ran block-wise, {QUERY_BLOCK} queries at a time; "
                   f"each block's weights were max-pooled {result.attention_factor}×{result.attention_factor} as "
                   "they were made, so no layer's H·N² weights were ever held whole. The full-resolution window "
                   "below is exact.")
    note = variant_note(config, kv_heads, heads)
    if note:
        st.caption(note)
if full_resolution is not None and full_resolution.open:  # computed and sent only while open
    with full_resolution:
        exact = exact_maps["full_res"][layer, head] if blockwise else weights[head]  # the window, or the head
        one_scale = {}
        if norms is not None:  # the Norms switch: the head's ‖α·f(x)‖ on its own scale
            exact = shown_norms[head]  # (N_q, N_k')
            one_scale = dict(value_name="‖α·f(x)‖", value_max=float(max(exact.max(), 1e-6)))
        plot(single_head(exact, view_of_line.mask, view_of_line.query_tokens, view_of_line.key_tokens,
                         title=f"head {head}" + (": ‖α·f(x)‖" if norms is not None else ""), start=start,
                         focus=drawn_focus, window=blockwise, click_side=click_side,
                         padded_keys=view_of_line.padded_keys, **one_scale),
             "single_head", on_click=on_click)

openings.show_view(view)  # what the view shows, in plain words (issue 78, item 11)
if blockwise and view in token_views.WHOLE_MAP_VIEWS:
    st.info(f"The {view.lower()} needs every weight of a layer at once: up to N = {FULL_ATTENTION_MAX} (N = {n_q} "
            "runs block-wise). The heads above, the head view, the model view and the checks work at every length.",
            icon=":material/info:")
elif view == "Checks" and blockwise:
    totals = result.block_checks[stack]
    checks = measured_checks(totals.non_finite, totals.row_gap, totals.masked_max, totals.empty_gap)
    st.markdown("\n\n".join([
        f"Every layer and head of line {element + 1}, measured block by block as the weights were made:",
        *check_lines(checks),
        *([f"Keys that no query of a block of {QUERY_BLOCK} may attend (padding, or the look-ahead mask's future) "
           f"were left out of the run, up to {totals.keys_left_out} a block: their weights are 0 by construction, "
           "not measured."] if totals.keys_left_out else []),
        *([f"{totals.compiled_blocks} blocks ran as one compiled function (XLA, a layer this large on the CPU): "
           "their weights were normalised in it and their row sums measured there; their masked weights are 0 by "
           "construction, not measured."]
          if totals.compiled_blocks else []),
        f"Keras's layers hold the whole (B, H, N, N) weights: compared up to N = {FULL_ATTENTION_MAX}."]))
elif view == "Checks":
    gaps = data.keras_difference(config, stack, layer, line=element) if inside else {}  # {}: RoPE, ALiBi (no Keras)
    checks = attention_checks(line_maps, result.masks_of(stack, element), gaps)  # each layer with its own mask
    st.markdown("\n\n".join([  # one element: each element costs the browser ~2 ms per rerun
        f"Every layer and head of line {element + 1}:",
        *check_lines(checks),
        *([] if gaps or not inside else [
            "No Keras layer has rotary or ALiBi positions: this engine's are checked against their papers' "
            "definitions in NumPy in the tests (tests/unit/test_variants.py)."]),
        *(["Your model's weights are its own layers' (read with Keras's `return_attention_scores`): the "
           "comparison with Keras is for the lab's own model."] if not inside else [])]))
elif view == "Statistics":
    pads = np.isin(stack_sides(stack, result.source_ids, result.target_ids)[1][element], result.pad_ids)
    stats = head_statistics(line_maps[layer], mask, pads)
    if not has_position_axis(stack):  # a decoder position and an encoder position are not on one axis
        del stats["mean_distance"]
    else:  # its strongest role on this line (the Heads page scores roles over many lines)
        stats["role"] = [role_text(*pair) for pair in zip(*(part[layer] for part in line_roles()))]
    st.dataframe({"head": list(range(heads)), **stats}, hide_index=True, column_config=stat_columns(n_k))
    st.caption("Per head of layer " + str(layer) + ": entropy" + (", distance" if has_position_axis(stack) else "")
               + " and weight on padding are means over the query rows that have an allowed key; the largest "
               "weight is the head's single largest cell. Bars run from 0 to the largest possible value: entropy "
               "up to log₂ N_k bits (uniform attention)"
               + (", distance up to N_k − 1 positions." if has_position_axis(stack) else
                  ". Cross-attention has no distance: its queries are decoder positions, its keys the encoder's."))
elif view == "Head view":
    token_views.head_view_section(view_of_line, layer, focus,
                                  exact=(windows["head_view"][:2], exact_maps["head_view"]) if blockwise else None)
elif view == "Rollout":
    token_views.rollout_section(view_of_line, stack, focus)
elif view == "Neuron view" and not inside:
    st.info("The neuron view reads the queries and keys inside the lab's own model; a model from outside is read "
            "through its weights.", icon=":material/info:")
elif view == "Neuron view":
    token_views.neuron_section(result, config, stack=stack, layer=layer, line=element, focus=focus)
elif view == "Score terms" and not inside:
    st.info("The score is split inside the lab's own models; a model from outside is read through its weights.",
            icon=":material/info:")
elif view == "Score terms" and config.ablate:
    st.info("The score is split in the whole model: clear the ablated heads in the sidebar to see why a head "
            "attends.", icon=":material/info:")
elif view == "Score terms":
    token_views.terms_section(result, config, stack=stack, layer=layer, line=element, focus=focus)
else:  # "Model view"
    shown_heads = min(heads, MODEL_VIEW_HEADS)
    st.caption(f"Every layer × head of the {STACK_NAMES[stack].lower()}, line {element + 1}, each max-pooled to "
               "at most 32 × 32 cells" + (f"; the first {shown_heads} of {heads} heads." if shown_heads < heads
                                          else "."))
    all_layers = view_of_line.weights[:, :shown_heads]  # (L, H', N_q, N_k')
    model_scale = {}
    if norms is not None:  # every layer's value-weighted norms, on one scale from 0 to the largest
        all_layers = np.take(norms, view_of_line.key_positions, axis=-1)[:, :shown_heads]  # (L, H', N_q, N_k')
        model_scale = dict(value_name="‖α·f(x)‖", value_max=float(max(all_layers.max(), 1e-6)))
    names, scores = line_roles() if stack != "cross" and not blockwise else (None, None)
    roles = None if names is None else [[role_text(n, s) for n, s in zip(*row)] for row in zip(names, scores)]
    plot(model_view(all_layers, view_of_line.mask, STACK_NAMES[stack] + (": value-weighted norms ‖α·f(x)‖"
                                                                         if model_scale else ""),
                    focus=drawn_focus, pooled=result.attention_factor, roles=roles, click_side=click_side,
                    padded_keys=view_of_line.padded_keys, fit_px=fit_px("model_view"), **model_scale),
         "model_view", on_click=on_click)
    if roles is not None:
        st.caption("Hover a head for its strongest role on this line; the Heads page scores them over many lines.")

downloads(
    Download("Download this stack's weights, every line (NPZ)", lambda: arrays_npz(
        weights=data.every_line(config, stack), mask=result.applied_masks[stack],
        query_tokens=np.array(query_lines), key_tokens=np.array(key_lines),  # (B, N_q), (B, N_k)
    ), f"attention_{stack}.npz"),
    Download("Download the head average (CSV)", lambda: matrix_csv(with_mean[-1], view_of_line.query_tokens,
                                                                      view_of_line.key_tokens),
             f"attention_{stack}_layer{layer}_average.csv", "text/csv"),
)
