"""The Attention page's token-level views: a focused token, hidden specials, head view, rollout, neuron view.

`LineView` is one stack and line as drawn: its weights (specials' columns taken out when hidden), mask and
tokens, and where each drawn key sits in the sequence, so a click on a chart maps back to a position.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import streamlit as st

from transformer.service import (
    FLOW_MAX_POSITIONS,
    FULL_ATTENTION_MAX,
    attention_rollout,
    neuron_terms,
    preference_terms,
    score_bias,
    without_keys,
)
from ui import data, state
from ui.controls import PERSIST, clamp, fit_px, head_picker, options_follow, plot
from ui.state import F
from ui.text import count, percent
from viz.attention import head_grid
from viz.flow import flow_beside_rollout
from viz.head_view import MAX_POSITIONS, head_view, window
from viz.labels import escape, position_labels
from viz.neuron import neuron_view
from viz.pooling import FULL_RESOLUTION_WINDOW
from viz.score_terms import score_terms_view

NO_FOCUS = -1
WHOLE_MAP_VIEWS = ("Statistics", "Rollout", "Neuron view", "Score terms")  # up to N = 512
CAUTION = ("Attention weights say where a head looks, not why the model answers as it does: a token can be "
           "looked at and ignored (its value vector small), and rollout assumes heads and residual mix linearly "
           "(Jain & Wallace 2019; Abnar & Zuidema 2020).")


@dataclass(frozen=True)
class LineView:
    """One stack and line of a `LiveResult` as the page draws it.

    weights: ``(L, H, N_q, N_k')``; mask: ``(N_q, N_k')`` bool, True = may attend; key_positions: ``(N_k',)``
    each drawn key's position in the sequence (N_k' < N_k when the specials are hidden).
    all_weights, all_mask: ``(L, H, N_q, N_k)`` and ``(N_q, N_k)``, every key (what rollout runs on).
    padded_keys: ``(N_k',)`` bool, True for a drawn key that is padding (its blocked cells drawn apart).
    """

    weights: np.ndarray
    mask: np.ndarray
    all_weights: np.ndarray
    all_mask: np.ndarray
    query_tokens: tuple
    key_tokens: tuple
    key_positions: np.ndarray
    hidden: int  # how many key columns were taken out
    padded_keys: np.ndarray

    @property
    def note(self) -> str:
        """What a chart title says of the hidden keys (escaped: Plotly reads ``<s>`` as strike-through)."""
        return (f"{escape('<s>, </s>')} and padding hidden ({self.hidden} key{'s' if self.hidden > 1 else ''}), rows "
                f"renormalised" if self.hidden else "")

    def key_index(self, position: int) -> int | None:
        """Where key ``position`` is drawn, or None when it is hidden."""
        found = np.flatnonzero(self.key_positions == position)
        return int(found[0]) if len(found) else None


def widget_labels(tokens, positions=None) -> list[str]:
    """`position_labels` as a widget shows them: Streamlit's widgets show text, not Plotly's escaped HTML."""
    return [html.unescape(label) for label in position_labels(tokens, positions)]


@dataclass(frozen=True)
class LineTokens:
    """One line's tokens as a stack's view draws them: ``key_positions`` ``(N_k',)`` the keys kept (all but the
    specials' when they are hidden)."""

    query_tokens: tuple
    key_tokens: tuple
    key_positions: np.ndarray


def line_tokens(result, stack: str, line: int, hide_specials: bool) -> LineTokens:
    """``line``'s tokens in ``stack`` and the keys kept, from any `LiveResult` (no attention needed)."""
    query_tokens, key_tokens = result.tokens_of(stack, line)
    hidden = result.special_keys(stack, line) if hide_specials else np.zeros(len(key_tokens), bool)  # (N_k,)
    if hidden.all():  # nothing would be left to draw
        hidden = np.zeros_like(hidden)
    return LineTokens(query_tokens, key_tokens, np.flatnonzero(~hidden))


def line_view(result, stack: str, line: int, hide_specials: bool, layer: int = 0) -> LineView:
    """``result``'s maps of ``stack`` for ``line`` (its index in the batch), specials' keys hidden if asked; the mask
    is ``layer``'s (a model from outside's layers may differ)."""
    weights = result.attention[stack][:, result.lines.index(line) if result.lines else line]  # (L, H, N_q, N_k)
    mask = result.mask_of(stack, line, layer)  # (N_q, N_k)
    tokens = line_tokens(result, stack, line, hide_specials)
    query_tokens, key_tokens, kept = tokens.query_tokens, tokens.key_tokens, tokens.key_positions
    hidden = np.ones(len(key_tokens), bool)  # (N_k,)
    hidden[kept] = False
    shown = without_keys(weights, hidden) if hidden.any() else weights  # (L, H, N_q, N_k')
    # np.take keeps rows contiguous (mask[:, kept] is laid out by columns: pooling it at N = 4096 took ~120 ms)
    shown_mask = np.take(mask, kept, axis=1) if hidden.any() else mask  # (N_q, N_k')
    return LineView(shown, shown_mask, weights, mask, query_tokens, tuple(key_tokens[k] for k in kept), kept,
                    int(hidden.sum()), result.padding_keys(stack, line)[kept])


def exact_windows(seq_len: int, n_q: int, n_k: int, *, full_res: tuple | None, head_view: bool, focus) -> dict:
    """The windows a block-wise run (N > 512) keeps exact, ``{"full_res" | "head_view": (first query, first key,
    size)}``: the full-resolution head's (``full_res``: its pickers' first query and key, None while it is
    closed) and the head view's positions around ``focus`` while that view is on; empty at N ≤ 512."""
    if seq_len <= FULL_ATTENTION_MAX:
        return {}
    windows = {}
    if full_res is not None:
        windows["full_res"] = (*full_res, FULL_RESOLUTION_WINDOW)
    if head_view:
        around = None if focus is None else focus[1]
        windows["head_view"] = (window(n_q, around)[0], window(n_k, around)[0], MAX_POSITIONS)
    return windows


def focus_controls(view, columns) -> tuple[str, int] | None:
    """The focus picker, its "attended by" switch and the specials switch's neighbour; returns the focus as
    ``("query" | "key", position)`` or None."""
    by_key = columns[1].toggle("Attended by", key=F.focus_key, help="Focus a key (a column: who attends to it) "
                               "instead of a query (a row: what it attends to).", **PERSIST)
    tokens = view.key_tokens if by_key else view.query_tokens
    positions = view.key_positions.tolist() if by_key else list(range(len(tokens)))
    labels = dict(zip(positions, widget_labels(tokens, positions)))
    value = state.value(F.focus)
    if value != NO_FOCUS and value not in labels:
        state.correct(F.focus, NO_FOCUS, f"this line has positions 0 to {max(labels, default=0)}")
    options_follow(F.focus, ["none", *labels.values()])
    focus = columns[0].select_slider(
        "Focus a key" if by_key else "Focus a query", [NO_FOCUS, *positions], key=F.focus,
        format_func=lambda p: "none" if p == NO_FOCUS else labels[p],
        help="Outlined in every head and in the model view; or click a cell of a chart.", **PERSIST)
    return None if focus == NO_FOCUS else ("key" if by_key else "query", focus)


def click_side() -> str:
    """The side a click on a heatmap cell focuses: "key" with Attended by on, else "query" (`on_chart_click`)."""
    return "key" if state.value(F.focus_key) else "query"


def on_chart_click(view: LineView):
    """A click handler for `ui.chart.chart`: a clicked cell or token becomes the focus (again: no focus). A head-view
    token sets its side; a heatmap cell keeps the side the switch shows."""
    def clicked(cell: dict) -> None:
        by_key = "key" in cell and ("query" not in cell or click_side() == "key")
        if by_key:
            index = min(max(0, cell["key"]), len(view.key_positions) - 1)
            position = int(view.key_positions[index])
        else:
            position = int(cell.get("query", 0))
        same = state.get(F.focus) == position and state.value(F.focus_key) == by_key
        state.put(F.focus_key, by_key)
        state.put(F.focus, NO_FOCUS if same else position)
    return clicked


def drawn_focus(view: LineView, focus):
    """``focus`` in the drawn columns (a hidden key: None)."""
    if focus is None or focus[0] == "query":
        return focus
    index = view.key_index(focus[1])
    return None if index is None else ("key", index)


def head_view_section(view: LineView, layer: int, focus, exact=None) -> None:
    """The head view of ``layer``; ``exact``: a block-wise run's ``(first query, first key)`` and ``(L, H, rows,
    cols)`` weights of the window around the focus (`exact_windows`), drawn instead of the pooled maps."""
    heads = view.weights.shape[1]
    hidden = [h for h in state.value(F.hidden_heads) if h < heads]
    state.put(F.hidden_heads, hidden)
    st.caption("Queries on the left, keys on the right; a line for each weight, its opacity the weight "
               f"(0–1), one colour a head. Click a head in the legend to hide or show its lines (drawn in your "
               "browser, kept in the link); hover a token to keep only its lines; click it to focus it everywhere. "
               f"Above {MAX_POSITIONS} positions a window of {MAX_POSITIONS} is drawn around the focus"
               + (f" (N > {FULL_ATTENTION_MAX}: each new focus runs the model again, block-wise, to keep that window "
                  "exact)." if exact is not None else "."))
    start, weights = (None, view.weights[layer]) if exact is None else (exact[0], exact[1][layer])
    fig = head_view(weights, view.mask, view.query_tokens, view.key_tokens, start=start,
                    focus=drawn_focus(view, focus), title="<br>".join(filter(None, (f"layer {layer}", view.note))),
                    width_px=fit_px("head_view"))
    plot(fig, "head_view", on_click=on_chart_click(view), hidden=[f"head {h}" for h in hidden],
         on_hide=lambda groups: state.put(F.hidden_heads, head_numbers(groups, heads)))


def head_numbers(groups, heads: int) -> list[int]:
    """The heads of the legend groups ``["head 1", …]`` a browser reports (anything else ignored), below ``heads``,
    sorted."""
    found = {int(group[5:]) for group in groups
             if isinstance(group, str) and group.startswith("head ") and group[5:].isdigit()}
    return sorted(head for head in found if head < heads)


def rollout_section(view: LineView, stack: str, focus) -> None:
    """Attention rollout beside the last layer's raw mean over heads."""
    if stack == "cross":
        st.info("Rollout follows one stack's self-attention through its layers: pick encoder or decoder "
                "self-attention above.", icon=":material/info:")
        return
    layers = view.all_weights.shape[0]
    rolled = attention_rollout(view.all_weights)  # (N, N)
    last = view.all_weights[-1].mean(0)  # (N, N)
    mask = view.all_mask | np.eye(len(rolled), dtype=bool)  # the residual path reaches a query's own position
    kept = view.key_positions
    if view.hidden:
        hidden = ~np.isin(np.arange(len(rolled)), kept)
        rolled, last = without_keys(rolled, hidden), without_keys(last, hidden)
    st.caption(f"Rollout: each layer's mean over heads mixed with the identity for the residual path "
               f"(0.5·A + 0.5·I, rows renormalised), multiplied from layer 0 up to layer {layers - 1}. " + CAUTION)
    left, right = st.columns(2)
    focus = drawn_focus(view, focus)
    for column, matrix, shown_mask, name, key in (
            (left, rolled, mask[:, kept], f"rollout over {count(layers, 'layer')}", "rollout"),
            (right, last, view.mask, f"layer {layers - 1}, raw mean of heads", "rollout_raw")):
        with column:
            plot(head_grid(matrix[None], shown_mask, view.query_tokens, view.key_tokens, names=[name], columns=1,
                           title=view.note, focus=focus, key_positions=kept), key, on_click=on_chart_click(view))
    flow_part(view, rolled, focus, layers)


def flow_part(view: LineView, rolled: np.ndarray, focus, layers: int) -> None:
    """Attention flow (Abnar & Zuidema 2020) of the focused query beside its rollout row."""
    n = view.all_weights.shape[-1]
    if n > FLOW_MAX_POSITIONS:
        st.caption(f"Attention flow solves N maximum flows a query on a graph of L·N² edges: offered up to "
                   f"N = {FLOW_MAX_POSITIONS} (this line has {n}).")
        return
    if focus is None or focus[0] != "query":
        st.caption("Focus a query (above, or click a row) to see its attention flow beside its rollout.")
        return
    query = focus[1]
    flow = data.attention_flow(view.all_weights, query)  # (N,)
    if view.hidden:
        flow = without_keys(flow[None], ~np.isin(np.arange(n), view.key_positions))[0]  # (N_k',)
    plot(flow_beside_rollout(rolled[query], flow, view.key_tokens, position_labels(view.query_tokens)[query],
                             layers, width_px=fit_px("flow")), "flow")
    st.caption("Flow: the layers as a graph (each position a node in every layer, the edges rollout multiplies), "
               "the maximum flow from this query's output to each input token, the row normalised to 1 "
               "(SciPy's max-flow; two layers in closed form). Rollout adds every path's product; flow is limited "
               "by the narrowest cut, so it spreads wider where many paths share a bottleneck.")


def norms_caption(weights, norms, special, mask, real_queries=None) -> str:
    """What the norms say beside the weights for this layer: the share of each head's weight and of its norm that
    falls on ``<s>``, ``</s>`` and padding (``special (N_k',)``), over the real query rows (``real_queries (N_q,)``,
    not padding) with an allowed key. ``weights``, ``norms``: ``(H, N_q, N_k')``; ``mask``: ``(N_q, N_k')``."""
    text = ("Colour: each key's ‖α·f(x)‖, from 0 to the layer's largest (Kobayashi et al. 2020): how far it moves the "
            "query's output, not only how much it is looked at. The mean panel is the heads' norms averaged.")
    rows = mask.any(axis=1) & (True if real_queries is None else np.asarray(real_queries, bool))  # (N_q,)
    if not special.any() or not rows.any():
        return text
    share = [np.nanmean(values[:, rows][..., special].sum(-1) / np.maximum(values[:, rows].sum(-1), 1e-12), axis=1)
             for values in (weights, norms)]  # (H,) each
    worst = int(np.argmax(share[0] - share[1]))
    if share[0].max() < 0.01:  # nothing looks at them (masked padding): nothing to compare
        return text
    return (f"{text} On `<s>`, `</s>` and padding: head {worst} puts {percent(share[0][worst])} of its weight "
            f"but {percent(share[1][worst])} of its norm; every head: "
            + ", ".join(f"{percent(w)} / {percent(n)}" for w, n in zip(*share)) + " (weight / norm).")


def pair_picker(weights, query_tokens, key_tokens, focus) -> tuple[int, int, int]:
    """``(head, query, key)`` of the views that read one head's query–key pair (the neuron view, the score terms):
    the focused token and the other side's picked one (`nv_head`, `nv_other`). Until one is picked, the other side
    is the one the head's ``weights`` ``(H, N_q, N_k)`` tie most strongly to the focused token (its top key; a key
    focused: its top query), not position 0."""
    head = head_picker(weights.shape[0], key=F.nv_head)
    by_key = focus is not None and focus[0] == "key"
    other_count = len(query_tokens) if by_key else len(key_tokens)
    fixed = focus[1] if focus is not None else 0
    if state.value(F.nv_other) < 0:  # nothing picked yet: the strongest pair
        row = weights[head, :, fixed] if by_key else weights[head, fixed]  # (N_q,) or (N_k,)
        state.put(F.nv_other, int(np.argmax(row)) if len(row) == other_count else 0)
    clamp(F.nv_other, other_count - 1)
    other_labels = widget_labels(query_tokens if by_key else key_tokens)  # once, not once an option
    options_follow(F.nv_other, other_labels)
    other = st.select_slider("Query" if by_key else "Key", list(range(other_count)), key=F.nv_other,
                             format_func=other_labels.__getitem__, **PERSIST)
    if focus is None:
        st.caption("The query is the first token: focus another one above (or click a chart).")
    return (head, other, fixed) if by_key else (head, fixed, other)


def layer_weights(result, stack: str, layer: int, line: int) -> np.ndarray:
    """``(H, N_q, N_k)``: ``stack``'s weights on ``layer`` for batch line ``line``, as `line_view` finds them."""
    return result.attention[stack][layer, result.lines.index(line) if result.lines else line]


def terms_section(result, config, *, stack: str, layer: int, line: int, focus) -> None:
    """Why one head attends: the query–key pair's score split by the parts of the residual stream, and what in the
    key made it win against the other keys the query may see."""
    query_tokens, key_tokens = result.tokens_of(stack, line)
    head, query, key = pair_picker(layer_weights(result, stack, layer, line), query_tokens, key_tokens, focus)
    split = data.score_terms(config, stack, layer, head, line=line, query=query)
    if np.isnan(split.scores[0, key]):
        st.info("This key is masked for this query: it has no score to split. Pick another key.",
                icon=":material/info:")
        return
    grid = split.terms[:, :, 0, key]  # (P_q, P_k)
    preference = preference_terms(split.terms, 0, key).sum(axis=0)  # (P_k,)
    plot(score_terms_view(grid, preference, split.query_parts, split.key_parts, query_tokens, key_tokens,
                          head=head, query=query, key=key, score=float(split.scores[0, key]),
                          weight=float(split.weights[0, key]), width_px=fit_px("score_terms")), "score_terms")
    st.caption("Each score q·k/√d_k is a sum of terms, one for each pair of parts of the residual stream: the "
               "token embedding, the positions, every earlier head's output, every feed-forward's, and the biases "
               "(LayerNorm's scale held at its value for that position, as TransformerLens folds it). The bars: how "
               "much each part of the key raises this key's score above the mean of the keys the query may see. "
               "In the induction model, layer 1's induction heads find their key through layer 0's "
               "previous-token heads (K-composition).")


def neuron_section(result, config, *, stack: str, layer: int, line: int, focus) -> None:
    """q, k, q∘k, the logit and the softmax of one head's query–key pair, read off the live tensors."""
    walk = data.attention_walkthrough(config, stack, layer)
    q, k = walk.tensors["query_heads"][line], walk.tensors["key_heads"][line]  # (H, N_q, d_k), (H, N_k, d_k)
    mask = walk.mask[line]  # (N_q, N_k)
    query_tokens, key_tokens = result.tokens_of(stack, line)
    head, query, key = pair_picker(layer_weights(result, stack, layer, line), query_tokens, key_tokens, focus)
    bias = score_bias(walk.tensors["scores"][line], walk.tensors["scaled"][line], q.shape[-1])  # (H, N_q, N_k)
    terms = neuron_terms(q, k, mask, head, query, key, bias=bias)
    plot(neuron_view(terms, query_tokens, key_tokens, head, query, key), "neuron_view")
    st.caption("Read off the live tensors of this layer (the specials switch does not apply: this is the softmax "
               "the head computes" + (", ALiBi's bias −m·|i − j| added to each scaled logit as its own term)."
                                      if terms.has_bias else ")."))
