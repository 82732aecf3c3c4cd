"""Page-level controls shared by several pages (their values are URL fields too)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import streamlit as st

from transformer.service import ARCHITECTURE_STACKS, SIZED_FAMILIES, source_of
from ui import choices, model_config, state
from ui.chart import chart, column_px, stepped_chart
from ui.state import F
from ui.text import as_text, count, percent

PERSIST = dict(persist_state="session")
STACK_NAMES = {
    "encoder": "Encoder self-attention",
    "decoder": "Masked decoder self-attention",
    "cross": "Cross-attention (decoder → encoder)",
}
# A check's mark, from Streamlit's bundled icon font: emoji showed as empty boxes in a browser without an emoji font.
PASSED, FAILED = ":green[:material/check_circle:]", ":red[:material/cancel:]"


def clamp(key: str, high: int) -> None:
    """Keep an index field within 0..high before its widget is drawn (a link's value past it gets the link's
    notice: `state.correct`)."""
    value = state.get(key, state.FIELDS[key].default)
    state.correct(key, min(max(0, value), max(0, high)), f"this view has 0 to {max(0, high)}")


def options_follow(key: str, labels) -> None:
    """Before a select slider, select box, radio or pills whose options depend on another control is drawn: when
    its option labels changed since the last run, give it its value again. The browser keeps such a widget's place
    among its options, not its value, so with new options it showed another value than the model ran (KV heads
    showed "1 (multi-query)" after Heads 4 -> 8; Focus showed "none" while row 6 stayed focused) and sent that one
    back on the next move."""
    drawn, labels = f"_options_of_{key}", [str(label) for label in labels]
    if state.has(drawn) and state.read(drawn) != labels and state.has(key):
        state.put(key, state.read(key))
    state.put(drawn, labels)


def element_picker(batch: int, column=st) -> int:
    """Which batch element (source/target line) to draw."""
    clamp(F.element, batch - 1)
    if batch == 1:
        return 0
    options_follow(F.element, range(batch))
    return column.selectbox("Sequence (batch element)", list(range(batch)), key=F.element,
                            format_func=lambda b: f"line {b + 1}", **PERSIST)


ABSENT = {  # what a single-stack architecture lacks, said where the stacks are picked
    "decoder-only": "A decoder-only model has no encoder and no cross-attention: one causal stack.",
    "encoder-only": "An encoder-only model has no decoder and no cross-attention: one bidirectional stack.",
}


def stack_picker(column=st) -> str:
    """The attention stack to draw, among those the sidebar's architecture has (the picked one kept if it can)."""
    architecture = model_config.architecture()
    available = ARCHITECTURE_STACKS[architecture]
    if state.get(F.stack) not in available:
        state.put(F.stack, available[0])
    options_follow(F.stack, available)
    stack = column.radio("Attention", available, key=F.stack, format_func=STACK_NAMES.get, horizontal=True,
                         **PERSIST)
    if architecture in ABSENT:
        column.caption(ABSENT[architecture])
    return stack


def layer_picker(layers: int, column=st) -> int:
    clamp(F.layer, layers - 1)
    if layers == 1:
        return 0
    return column.slider("Layer", 0, layers - 1, key=F.layer, **PERSIST)


def head_picker(heads: int, column=st, label="Head", key=F.head) -> int:
    clamp(key, heads - 1)
    if heads == 1:
        return 0
    return column.slider(label, 0, heads - 1, key=key, **PERSIST)


def window_start_picker(key: str, starts: list[int], label: str, column=st) -> int:
    """Where a cropped full-resolution window starts (snapped to one of ``starts``)."""
    value = state.get(key, state.FIELDS[key].default)
    state.put(key, min(starts, key=lambda start: abs(start - value)))
    if len(starts) == 1:
        return starts[0]
    options_follow(key, starts)
    return column.select_slider(label, starts, key=key, **PERSIST)


def view_picker(column=st) -> str:
    """Which of the Attention page's views (checks, statistics, model view) is shown under the heads."""
    return column.segmented_control("View", choices.ATTENTION_VIEWS, key=F.view, required=True,
                                    label_visibility="collapsed", **PERSIST)


def mask_toggles(stack: str, column=st) -> tuple[bool, bool]:
    """The two mask switches; the look-ahead one is greyed out on the encoder's view, which it cannot change (it
    changes cross-attention through the decoder's queries)."""
    if model_config.supports().outside:  # its masks are its own: switches that changed nothing would say untruths
        column.caption("Your model's masks are its own: padding (never run: each line runs at its own length) and, "
                       "for a causal model, the look-ahead mask.")
        return True, True
    if model_config.supports().own_masks:  # locked on, as it runs: the random-weights model's switches keep theirs
        why = ("The real language model runs with its own masks: causal, and padding." if
               model_config.supports().language else "The trained model runs with the masks it was trained with.")
        column.toggle("Padding mask", value=True, disabled=True, key="_own_pad_mask", help=why)
        column.toggle("Look-ahead mask", value=True, disabled=True, key="_own_future_mask", help=why)
        column.caption(f"Locked on. {why}")
        return True, True
    padding = column.toggle("Padding mask", key=F.pad_mask, help="Off: padded keys may be attended to.", **PERSIST)
    future = column.toggle("Look-ahead mask", key=F.future_mask, disabled=stack == "encoder",
                           help="Only the decoder's self-attention has one: the encoder sees every position."
                           if stack == "encoder" else "Off: the decoder may attend to later positions.", **PERSIST)
    return padding, future


def carried_over(config, page: str) -> None:
    """Name the settings chosen on another page that change what this page draws (the Masks page's family, for the
    random-weights model), each with a button back to its default."""
    if not source_of(config.weights).supports.masks or config.mask_family == "paper":
        return
    size = f" ({SIZED_FAMILIES[config.mask_family]} {config.mask_size})" if config.mask_family in SIZED_FAMILIES \
        else ""
    box = st.container(horizontal=True, vertical_alignment="center")
    box.info(f"From the Masks page: the self-attention mask is **{config.mask_family}**{size}, not the paper's; "
             "every self-attention here runs with it.", icon=":material/filter_alt:")
    box.button("Back to the paper's masks", key=f"carried_mask_family_{page}",
               on_click=lambda: state.update(mask_family="paper"))


def variant_note(config, kv_heads: int, heads: int) -> str:
    """What a configuration changes from the paper (key/value heads, positions, the mask family), in a line;
    "" for the paper's."""
    group = heads // kv_heads
    parts = []
    if group > 1:
        ranges = ", ".join(f"{g * group}–{g * group + group - 1}" for g in range(kv_heads))
        parts.append(f"{count(kv_heads, 'key/value head')}: heads {ranges} share theirs (a row each)")
    if config.architecture != "encoder-decoder":
        parts.append(config.architecture)
    if config.norm != "post":
        parts.append(f"{config.norm}-norm")
    if config.d_ff == 0 and source_of(config.weights).supports.shape:  # the sidebar's d_ff is the model's
        parts.append("attention only (d_ff 0)")
    if config.positions != "sinusoidal":
        parts.append(f"positions: {config.positions}")
    if config.mask_family != "paper":
        size = f" ({SIZED_FAMILIES[config.mask_family]} {config.mask_size})" \
            if config.mask_family in SIZED_FAMILIES else ""
        parts.append(f"self-attention mask: {config.mask_family}{size} (the Masks page)")
    return " · ".join(parts)


def check_lines(checks) -> list[str]:
    """Each `transformer.analysis.measures.Check` as a Markdown line: its mark, name, what is measured and the value."""
    return [f"{PASSED if check.passed else FAILED} **{check.name}** — {check.detail}: `{check.value:.3g}`"
            for check in checks]


def fit_px(key: str) -> int | None:
    """The width (px) to lay the figure of chart ``key`` out for: its column's on a phone, else None (any)."""
    return column_px(f"fig_{key}")


PADDING_WALL = 0.75  # above this share of padding (at N ≥ 64) every chart is mostly grey: say why


def padding_notice(result, container=st) -> None:
    """When the lines are much shorter than the sequence length (a grey wall of padding in every chart), say so,
    and for random weights offer lines that fill the length."""
    share = float(np.isin(result.source_ids, result.pad_ids).mean())
    length = result.source_ids.shape[1]
    if length < 64 or share < PADDING_WALL:
        return
    values = state.current_values()
    said = (f"**{percent(share)} of every source line is padding** (sand): the lines hold a few tokens and the "
            f"sequence length is N = {length}, so each is padded to it.")
    if not model_config.supports(values["weights"]).shape:
        container.info(said + " A trained model reads its own task's lines: a shorter length shows more.",
                       icon=":material/density_small:")
        return
    box = container.container(border=True)
    box.markdown(said)
    box.button(f"Fill N = {length}: repeat each line's own tokens", key="fill_length", on_click=_fill_length,
               args=(length,), help="Source and target lines become their own tokens repeated to the sequence "
               "length (as many lines as fit in a text box).")


def filled_text(text: str, length: int, pads, limit: int = state.MAX_TEXT_CHARS) -> str:
    """Each line's own tokens (its pad symbols left out) repeated to ``length`` tokens, as many lines as fit in
    ``limit`` characters (one at least): inputs that fill a long sequence instead of padding it."""
    lines = []
    for line in text.splitlines():
        tokens = [token for token in line.split() if token not in set(pads)]
        if not tokens:
            continue
        filled = " ".join(tokens[index % len(tokens)] for index in range(length))
        if lines and sum(len(kept) + 1 for kept in lines) + len(filled) > limit:
            break
        lines.append(filled[:limit])
    return "\n".join(lines) or text


def _fill_length(length: int) -> None:
    pads = state.pad_symbols(state.value(F.pads))
    for key in (F.src, F.tgt):
        state.put(key, filled_text(state.value(key), length, pads))


def not_for_external_model(what: str) -> None:
    """On a page that draws the lab's own model only: with a model it cannot open (from outside), say why and stop
    the page."""
    if not model_config.supports().inside:
        st.info(f"{what} A model from outside is read through its attention weights: the Attention and Heads pages "
                "draw it. Pick seeded random or trained weights in the sidebar to see this page.",
                icon=":material/info:")
        st.stop()


def plot(fig, key: str, *, on_click=None, hidden=None, on_hide=None, on_cells=None) -> None:
    """Draw ``fig`` with ui.chart under a page-wide key (Streamlit's theme is not applied: our colours stay);
    ``on_click``, ``hidden``, ``on_hide``, ``on_cells``: see `ui.chart.chart`."""
    chart(fig, key=f"fig_{key}", on_click=on_click, hidden=hidden, on_hide=on_hide,
          column=column_px(f"fig_{key}") or 0, on_cells=on_cells)


def plot_steps(key: str, group: str, index: int, count: int, identity, figure_of) -> None:
    """Draw step ``index`` of a step group's chart under a page-wide key: see `ui.chart.stepped_chart`."""
    stepped_chart(f"fig_{key}", group, index, count, identity, figure_of, column_px(f"fig_{key}") or 0)


@dataclass(frozen=True)
class Download:
    label: str
    make: Callable[[], bytes]  # called only when the button is clicked
    file_name: str
    mime: str = "application/octet-stream"


def downloads(*buttons: Download) -> None:
    """Download buttons side by side; each file is made when its button is clicked, not on every rerun.

    (The NPZ of one stack's weights at N=512 is ~45 MB and took ~1.8 s to compress.)
    """
    with st.container(horizontal=True):
        for button in buttons:
            st.download_button(button.label, button.make, file_name=button.file_name, mime=button.mime,
                               on_click="ignore")


def stat_columns(n_keys: int) -> dict:
    """Per-head statistics as bars in the table, each on its full possible range."""
    def bar(label, high, fmt="%.3f", help=None):
        return st.column_config.ProgressColumn(label, min_value=0.0, max_value=max(float(high), 1e-9), format=fmt,
                                               help=help)
    return {
        "entropy": bar("mean entropy (bits)", np.log2(max(n_keys, 2)),
                       help="Of each query's weights, averaged over queries: 0 = one key only; log₂ N_k = uniform"),
        "max_weight": bar("largest weight", 1.0, help="The head's single largest weight, over every query and key"),
        "mean_distance": bar("mean distance", max(n_keys - 1, 1), "%.2f",
                             help="Σ weight·|query − key| in positions, averaged over queries"),
        "padding_share": bar("mean weight on padding", 1.0,
                             help="Of each query's weights, averaged over queries: 0 with the padding mask on"),
        "role": st.column_config.TextColumn("strongest role (this line)",
                                            help="The role the head scores highest on, on this line, and its score "
                                            "(the Heads page scores roles over many lines)"),
    }


def parse_indices(text: str, limit: int, what: str) -> list[int]:
    """Space-separated integers in 0..limit-1; a clear message for anything else."""
    values, bad = [], []
    for part in text.replace(",", " ").split():
        if part.isdigit() and int(part) < limit:
            values.append(int(part))
        else:
            bad.append(part)
    if bad:
        st.warning(f"Ignored {what} {as_text(' '.join(bad[:5]))}: use whole numbers from 0 to {limit - 1}.",
                   icon=":material/warning:")
    return sorted(set(values))[:64]


def toggle_patch_cell(cell: dict) -> None:
    """A click on a patching map's cell (``query``: its row, ``key``: its column): it opens that cell's runs, or
    closes them when it is the cell already open; the head drawn goes back to the cell's own."""
    row, column = int(cell.get("query", -1)), int(cell.get("key", -1))
    same = (state.value(F.pt_row), state.value(F.pt_col)) == (row, column)
    state.update(pt_row=-1 if same else row, pt_col=-1 if same else column, pt_head=-1)

