"""Your model in the sidebar: a keras-hub preset by name or an uploaded .keras file, opened on the engine (shared by
the server's sessions, transformer.external.registry), and the few controls that apply to it."""

from __future__ import annotations

import streamlit as st

from transformer.service import (
    EXTERNAL,
    EXTERNAL_EXAMPLE,
    EXTERNAL_IDS_EXAMPLE,
    EXTERNAL_LENGTH,
    MAX_TOKENS,
    RANDOM,
    describe,
    preset_key,
    upload,
    upload_limit_bytes,
)
from ui import choices, model_config, state
from ui.controls import PERSIST, options_follow
from ui.state import F
from ui.text import as_text, count

EXTERNAL_MODELS = state.EXTERNAL_MODELS


def label(name: str) -> str:
    """How the Weights box names a model from outside."""
    return f"Your model: {state.get(EXTERNAL_MODELS, {}).get(name, name.partition(':')[2][:24])}"


def _remember(info) -> None:
    """This session knows the model of ``info``: its label and its one stack's architecture."""
    state.setdefault(EXTERNAL_MODELS, {})[info.key] = info.name
    state.setdefault(state.EXTERNAL_ARCHITECTURES, {})[info.key] = info.architecture


def starting_lines(info) -> tuple[str, int]:
    """``(lines, sequence length)`` a model from outside opens on: sentences for its tokenizer, else token ids;
    a model declared for one length gets lines of exactly that many ids, at that length."""
    if info.tokenizer:
        return EXTERNAL_EXAMPLE, max(EXTERNAL_LENGTH, info.length or 0)
    if info.length is None:
        return EXTERNAL_IDS_EXAMPLE, EXTERNAL_LENGTH
    ids = EXTERNAL_IDS_EXAMPLE.split()  # cycled to the declared length, two lines
    lines = (" ".join(ids[(start + i) % len(ids)] for i in range(info.length)) for start in (0, 3))
    return "\n".join(lines), info.length


def _use(info) -> None:
    """Make the model from outside described by ``info`` the sidebar's model."""
    _remember(info)
    state.update(weights=info.key, arch=info.architecture, ablate=[])
    if (not model_config.supports(state.get(state.LAST_WEIGHTS, "")).outside or not info.tokenizer
            or info.length):
        lines, length = starting_lines(info)
        state.update(src=lines, seq_len=length)


def _load_preset() -> None:
    name = state.get(state.PRESET_NAME, "").strip()
    try:
        _use(describe(preset_key(name)))
    except ValueError as error:
        state.notify(f"The preset {name[:60]!r} could not be opened: {error}")


def _load_upload() -> None:
    uploaded = state.get(state.UPLOAD)
    if uploaded is None:
        return
    try:
        _use(upload(uploaded.getvalue(), uploaded.name))
    except ValueError as error:
        state.notify(f"The file {uploaded.name[:60]!r} could not be opened: {error}")


def controls(bar) -> None:
    """A keras-hub preset by name, or a .keras file: loaded on the engine, shared by the server's sessions."""
    with bar.expander("Your model", expanded=model_config.supports().outside):
        st.text_input("keras-hub preset", key=state.PRESET_NAME, placeholder="bert_tiny_en_uncased",
                      help="A keras-hub preset name (downloaded to keras-hub's cache the first time, on a server "
                      "online; a server's ATTENTION_LAB_PRESETS_DIR is looked in first). Read: BERT, RoBERTa, "
                      "DistilBERT, GPT-2, Llama, Mistral, Gemma, Qwen and any model built on Keras's "
                      "MultiHeadAttention.")
        st.button("Open the preset", on_click=_load_preset, key="_open_preset")
        st.file_uploader("… or a .keras file", type=["keras"], key=state.UPLOAD, on_change=_load_upload,
                         help=f"Read as untrusted: at most {upload_limit_bytes() / 2**20:,.0f} MB, Keras's safe "
                         "mode (no Python code in the file). The link names its hash: only a link shares it.")


def opened():
    """The sidebar's model from outside, described (loaded on the engine), or None: not one, or it cannot be opened
    (the weights go back to random, with a notice). Before the Weights box is drawn."""
    key = state.value(F.weights)
    if not model_config.supports(key).outside:
        return None
    if key in EXTERNAL.evicted:
        state.notify(f"{label(key)} was unloaded to make room for other models on this server (it holds "
                     f"{EXTERNAL.budget_bytes / 2**20:,.0f} MB of them): it is loaded again.")
    try:
        return describe(key)
    except ValueError as error:
        state.notify(f"The model {key[:80]!r} could not be opened: {error} Using random weights.")
        state.update(weights=RANDOM, arch="encoder-decoder", src=state.FIELDS[F.src].default,
                                seq_len=state.FIELDS[F.seq_len].default)
        return None


def sidebar(bar, info) -> None:
    """A model from outside: its description, and the controls that apply (the lab's sizes do not)."""
    _remember(info)
    state.put(F.arch, info.architecture)  # its one stack, whatever the link said
    bar.caption(f"**Your model:** {as_text(info.name)}, {info.masks_text}, "  # the name is the upload's: untrusted
                f"{count(info.layers, 'layer')} of {count(info.heads, 'head')}, width {info.width}. It reads its "
                "own tokens" + ("" if info.tokenizer else " (no tokenizer: type token ids separated by spaces)")
                + (f", lines of exactly {info.length} (its input is declared so)" if info.length else "")
                + "; its sizes, positions and masks are its own, so the lab's controls for them are not shown.")
    lengths = [n for n in choices.seq_len_choices(state.read(F.seq_len)) if n <= MAX_TOKENS]
    options_follow(F.seq_len, lengths)
    bar.select_slider("Sequence length", options=lengths, key=F.seq_len, **PERSIST)
    bar.text_area("Sentences", key=F.src, height=110, max_chars=state.MAX_TEXT_CHARS,
                  help="One per line, in the model's own words: its tokenizer splits them.", **PERSIST)
