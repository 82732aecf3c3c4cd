"""The model controls every page shares, drawn in the sidebar."""

from __future__ import annotations

import streamlit as st

from transformer.service import (
    ARCHITECTURE_STACKS,
    DEVICE_CHOICES,
    MAX_LAYERS,
    MAX_SEQ_LEN,
    RANDOM,
    accuracy_of,
    resolve_device,
    shape_bytes,
    spec_of,
)
from ui import choices, external_model, model_config, state, training, weights
from ui.ablation_controls import ablation_controls
from ui.controls import PERSIST, options_follow
from ui.pages import Page
from ui.state import F
from ui.text import count

POSITION_LABELS = {"sinusoidal": "Sinusoidal (the paper)", "learned": "Learned table", "rope": "Rotary (RoPE)",
                   "alibi": "Linear biases (ALiBi)", "none": "None"}
ARCHITECTURE_LABELS = {"encoder-decoder": "Encoder-decoder (the paper)", "decoder-only": "Decoder-only (GPT)",
                       "encoder-only": "Encoder-only (BERT)"}
NORM_LABELS = {"post": "Post-norm (the paper)", "pre": "Pre-norm (GPT-2)"}


def _fix_shape() -> None:
    """After d_model or the heads change: keep the heads a divisor of d_model and the key/value heads a divisor of
    the heads (`state.normalise`, as a link's values are), and say so when one moves."""
    values, changes = state.normalise(state.current_values())
    for key, was, now in changes:
        state.put(key, now)
        state.notify(f"{was} heads do not divide d_model={values['d_model']}; heads is now {now}, the nearest "
                     "divisor." if key == "heads" else
                     f"{count(was, 'key/value head')} do not divide {count(values['heads'], 'head')}; there is one "
                     "per head again.")


def kv_label(heads: int, kv_heads: int) -> str:
    return f"{heads} (the paper)" if kv_heads == 0 else ("1 (multi-query)" if kv_heads == 1 else str(kv_heads))


def model_size_text(config) -> str:
    """The parameter count and the key/value cache per decoded token of ``config``'s random-weights model
    (float32)."""
    parameters = shape_bytes(config) // 4
    cache = 2 * config.num_layers * config.kv_heads * (config.d_model // config.num_heads) * 4  # K and V a layer
    return (f"{parameters / 1e6:,.2f} M parameters · key/value cache {cache:,} bytes a token "
            f"({config.kv_heads} of {count(config.num_heads, 'head')} keep{'s' if config.kv_heads == 1 else ''} keys "
            "and values)")


def session_device() -> str:
    """The device this session's computations run on (its Device control)."""
    return resolve_device(state.value(F.device))


def _retrain_offer(bar) -> None:
    """The button that trains a dropped model of a link again (same settings and seed), then opens the Train
    page."""
    spec = state.get(state.RETRAIN)
    if spec is None or not model_config.supports(state.value(F.weights)).shape:
        return
    if not bar.button("Train it again", icon=":material/replay:", help=f"{spec.task}: {spec.options}"):
        return
    state.drop(state.RETRAIN)
    try:
        training.submit(spec)
    except ValueError as error:  # this session's job is still running, or the queue is full
        state.notify(str(error))
        return
    st.switch_page(Page.TRAIN.file)


def _locked_caption(bar, name: str) -> None:
    if model_config.source(name).task() is None:
        _real_caption(bar, name)
        return
    spec = spec_of(name)  # read, not loaded
    bar.caption(
        f"**Locked by the trained model:** an {spec.architecture}, {spec.norm}-norm, d_model={spec.d_model}, "
        f"{count(spec.num_heads, 'head')}, d_ff={spec.d_ff}, "
        f"{count(spec.num_layers, 'layer')}, {spec.positions} positions, a key/value head per head, trained on "
        f"lengths {spec.min_len}–{spec.max_len} ("
        + (f"next-token accuracy on a repeated segment {accuracy_of(name):.1%}). " if
           spec.architecture == "decoder-only" else
           f"exact-sequence accuracy {accuracy_of(name):.1%}). ")
        + "The greyed controls show its own sizes, which cannot change; seeded random weights bring back yours. "
        "Pads are `<pad>`, and " + ("it reads the source lines, predicting each next token." if
                                    spec.architecture == "decoder-only" else
                                    "the decoder reads `<s>` + the model's own prediction, so the target text is "
                                    "not used.")
    )


def _real_caption(bar, name: str) -> None:
    """A real language model's own shape, said once above its greyed controls."""
    source = model_config.source(name)
    shape, vocabulary = source.priced_shape(None)
    bar.caption(
        f"**Locked by the model:** {source.title()}, read from its own file (docs/real_model.md): a "
        f"{shape.architecture} with {shape.norm}-norm (RMSNorm), d_model={shape.d_model}, "
        f"{count(shape.num_heads, 'head')} sharing {count(shape.kv_heads, 'key/value head')}, a SwiGLU "
        f"feed-forward of {shape.d_ff}, {count(shape.num_layers, 'layer')}, rotary positions and {vocabulary:,} "
        "byte-level BPE pieces. The greyed controls show its own sizes, which cannot change. It reads the **target** "
        "lines, any text, in its own pieces (a leading space is part of a piece).")


def _with(choices, value) -> list:
    """``choices`` with ``value`` among them (a trained model's own size); ``choices`` for None."""
    return sorted({*choices, value}) if value else list(choices)


class _ModelControls:
    """The controls a trained model fixes: bound to their URL fields for random weights; for a trained model drawn
    greyed with the model's own values (its `TrainSpec`), so that a slider never shows a size the model has not."""

    def __init__(self, spec, weights: str):
        self.spec, self.weights = spec, weights

    def control(self, widget, label: str, key: str, model_value, value_argument: str = "value", **options):
        if self.spec is None:
            return widget(label, key=key, **options, **PERSIST)
        options.pop("on_change", None)
        return widget(label, key=f"_shown_{key}_{self.weights}", disabled=True,
                      **{value_argument: model_value(self.spec)}, **options)


def reset_all() -> None:
    """Every setting back to its default (random weights, the paper's model and masks, the seed lines; the link
    follows), said in a notice."""
    state.update({key: field.default for key, field in state.FIELDS.items()})
    state.notify("Every setting is back at its default, and the link with it.")


# Pages that run a model of their own: the sidebar's model (the other pages') would show values they never run with,
# so there it says which model the page reads, and shows the device.
OWN_MODEL_PAGES = {"images": "This page reads a Vision Transformer chosen on the page (its Model picker).",
                   "induction": "This page reads the shipped induction model (two attention-only layers) on fresh "
                                "lines of its own.",
                   "glossary": "This page reads no model: it explains the lab's words."}
KEPT_FOR_OTHERS = " The model and lines set here belong to the other pages, and are kept for them."


def render(page_path: str = "") -> None:
    """The shared controls: the session's model state settled first (`settle`), then drawn; their values live in
    the session under the field names (`ui.state`). ``page_path``: the page drawn (`OWN_MODEL_PAGES` get no model
    controls)."""
    bar = st.sidebar
    bar.button("Reset every setting", key="reset_all", on_click=reset_all, icon=":material/restart_alt:",
               help="Random weights, the paper's sizes and masks, the seed lines, every page's controls at their "
               "defaults: the link becomes the app's own address.")
    bar.subheader("Model")
    if page_path in OWN_MODEL_PAGES:
        bar.caption(OWN_MODEL_PAGES[page_path] + KEPT_FOR_OTHERS)
    else:
        weight_options, info, spec = settle()
        _draw_weights(bar, weight_options)
        if info is not None:
            external_model.sidebar(bar, info)
        else:
            _draw_shape(bar, spec)
            _draw_input(bar, spec)
    _device_and_status(bar)


def settle() -> tuple[list, object, object]:
    """Before anything is drawn: a linked model opened, a model this server lacks replaced by random weights (and
    said), every dependent control's options followed (`options_follow`) and a KV-heads value its heads cannot
    take reset. Returns the Weights options, the model from outside in use (None when the sidebar's model is the
    lab's) and the shape a trained or real model has of its own (None for random weights)."""
    weights.open_linked_model()
    info = external_model.opened()
    weight_options = weights.weight_choices()
    if state.get(F.weights) not in weight_options:
        state.notify(f"The model {state.get(F.weights)!r} is not available here; using random weights.")
        state.put(F.weights, RANDOM)
    options_follow(F.weights, weight_options)
    chosen = state.read(F.weights)
    state.put(state.LAST_WEIGHTS, chosen)
    if info is not None and model_config.supports(chosen).outside:  # its own shape: none of the sidebar's
        return weight_options, info, None
    info = None
    spec = None if model_config.supports(chosen).shape else model_config.source(chosen).own_shape()
    if not spec:
        options_follow(F.heads, [str(h) for h in choices.head_choices(state.read(F.d_model))])
    heads = spec.num_heads if spec else state.read(F.heads)
    if state.value(F.kv_heads) not in choices.kv_head_choices(state.read(F.heads)):
        state.put(F.kv_heads, 0)
    if heads > 1 and not spec:
        options_follow(F.kv_heads, [kv_label(heads, k) for k in choices.kv_head_choices(heads)])
    options_follow(F.seq_len, choices.seq_len_choices(state.read(F.seq_len)))
    return weight_options, info, spec


def _draw_weights(bar, weight_options: list) -> None:
    """The Weights box, the offer to train a dropped model again, and the Your model box."""
    labels = {name: weights.weights_label(name) for name in weight_options}  # read once, as drawn (not re-read)
    bar.selectbox("Weights", weight_options, key=F.weights, format_func=labels.__getitem__,
                  on_change=weights.after_change, help="Seeded random weights show the mechanism; trained models "
                  "show learned attention; your model (below) a model from outside.", **PERSIST)
    _retrain_offer(bar)
    external_model.controls(bar)


def _draw_shape(bar, spec) -> None:
    """The model's shape: the sidebar's own for random weights, a trained model's greyed (``spec``)."""
    chosen = state.read(F.weights)
    if spec:
        _locked_caption(bar, chosen)
    shown = _ModelControls(spec, chosen)
    shown.control(bar.selectbox, "Architecture", F.arch, lambda s: list(ARCHITECTURE_LABELS).index(s.architecture),
                  options=list(ARCHITECTURE_LABELS),
                  format_func=ARCHITECTURE_LABELS.get, value_argument="index",
                  help="Encoder-decoder: the paper's two stacks and cross-attention. Decoder-only: one causal stack "
                  "over the target lines, next-token logits (GPT, Llama). Encoder-only: one bidirectional stack over "
                  "the source lines (BERT).")
    shown.control(bar.radio, "Norm", F.norm, lambda s: list(NORM_LABELS).index(s.norm), options=list(NORM_LABELS),
                  format_func=NORM_LABELS.get, value_argument="index", horizontal=True,
                  help="Post-norm: LayerNorm(x + Sublayer(x)), as in the paper. Pre-norm: x + Sublayer(LayerNorm(x)) "
                  "and a final LayerNorm on each stack, as GPT-2 and most models since.")
    shown.control(bar.select_slider, "d_model", F.d_model, lambda s: s.d_model,
                  options=_with(choices.D_MODEL_CHOICES, spec and spec.d_model), on_change=_fix_shape,
                  help="Width of every token vector.")
    shown.control(bar.select_slider, "Heads (h)", F.heads, lambda s: s.num_heads,
                  options=choices.head_choices(spec.d_model if spec else state.read(F.d_model)), on_change=_fix_shape,
                  help="Only divisors of d_model: each head gets d_k = d_model / h dimensions.")
    heads = spec.num_heads if spec else state.read(F.heads)
    if heads > 1:
        shown.control(bar.select_slider, "KV heads", F.kv_heads, lambda s: s.num_kv_heads or 0,
                      options=choices.kv_head_choices(heads),
                      format_func=lambda k: kv_label(heads, k),
                      help="Key/value heads (grouped-query attention): each serves heads / KV heads query "
                      "heads. Fewer means a smaller key/value cache when decoding.")
    shown.control(bar.selectbox, "Positions", F.positions, lambda s: list(POSITION_LABELS).index(s.positions),
                  options=list(POSITION_LABELS),
                  format_func=POSITION_LABELS.get, value_argument="index",
                  help="How the model knows where a token is: added to the embeddings (sinusoidal, learned) or "
                  "inside self-attention (RoPE rotates queries and keys; ALiBi adds −slope·|i − j| to the "
                  "logits); none: attention alone cannot tell positions apart.")
    if not spec:
        bar.caption(model_size_text(model_config.live_config()))
    shown.control(bar.select_slider, "d_ff", F.d_ff, lambda s: s.d_ff,
                  options=_with(choices.D_FF_CHOICES, spec and spec.d_ff),
                  format_func=lambda width: "0 (none)" if width == 0 else str(width),
                  help="Inner width of the position-wise feed-forward network; 0: no feed-forward sublayer (an "
                  "attention-only model, as in the interpretability papers).")
    shown.control(bar.slider, "Layers (N)", F.layers, lambda s: s.num_layers, min_value=1,
                  max_value=max(MAX_LAYERS, spec.num_layers if spec else 0),
                  help="Layers of each stack (encoder layers = decoder layers).")
    ablation_controls(bar, spec)


def _draw_input(bar, own) -> None:
    """The length, the seed, the pads and the lines: which boxes the model reads said on them. ``own``: the shape
    a trained or real model has of its own (its pads are its own; a trained model's seed and lines too)."""
    spec = model_config.source().spec()  # a trained model's: its seed, and the decoder reading its own prediction
    shown = _ModelControls(spec, state.read(F.weights))
    bar.select_slider("Sequence length", options=choices.seq_len_choices(state.read(F.seq_len)), key=F.seq_len,
                      help="Every line is right-padded with the first pad symbol or cut to this length. The slider "
                      f"stops at every length up to 32, then at 36, 40 … {MAX_SEQ_LEN}; a link may hold any "
                      f"length from 1 to {MAX_SEQ_LEN}.", **PERSIST)
    shown.control(bar.number_input, "Random seed", F.seed, lambda s: s.seed, min_value=0, max_value=2**31 - 1,
                  step=1, help="Seeds the random weights: the same seed gives the same pictures. Each weight is "
                  "drawn from the seed and its place in the model: changing the heads keeps every weight, and adding "
                  "a layer or changing d_ff keeps the ones the two models share (a trained model: its training's).")
    bar.subheader("Input")
    _ModelControls(own, state.read(F.weights)).control(
        bar.text_input, "Pad symbols", F.pads, lambda s: "<pad>", max_chars=200,
        help="One or several, separated by spaces. The first one pads short lines.")
    stacks = ARCHITECTURE_STACKS[model_config.architecture()]
    # which text boxes the model reads (a trained model reads the source lines, whatever its stacks)
    reads_source, reads_target = "encoder" in stacks or spec is not None, "decoder" in stacks
    bar.text_area("Source sequences", key=F.src, height=110, max_chars=state.MAX_TEXT_CHARS,
                  help="One sequence per line, tokens separated by spaces (the encoder's input)." if reads_source
                  else "A decoder-only model has no encoder: it reads the target lines alone.", **PERSIST)
    shown.control(bar.text_area, "Target sequences", F.tgt, lambda s: "", height=110, max_chars=state.MAX_TEXT_CHARS,
                  placeholder="A trained model's decoder reads <s> and its own prediction.",
                  help="One line per source line (the decoder's input)." if reads_target
                  else "An encoder-only model has no decoder: it reads the source lines alone.")
    if not (reads_source and reads_target) and own is None:
        bar.caption(f"A {state.read(F.arch)} model reads the **{'target' if reads_target else 'source'}** lines "
                    "only; the other box keeps its lines for the other architectures.")


def _device_and_status(bar) -> None:
    """The Device control, and the slot the status line fills once the page has run (`draw_status`)."""
    bar.radio("Device", DEVICE_CHOICES, key=F.device, horizontal=True,
              format_func=lambda choice: {"auto": "Automatic (GPU if present)", "cpu": "CPU"}[choice], **PERSIST)
    state.put(state.STATUS_SLOT, bar.empty())


def draw_status() -> None:
    """The status line (device, TensorFlow, timings) the page's engine calls recorded (`ui.data`), in the slot
    `render` left for it; the last one where this run recorded none."""
    slot = state.get(state.STATUS_SLOT)
    if slot is not None and state.has(state.LAST_STATUS):
        slot.caption(state.read(state.LAST_STATUS))
