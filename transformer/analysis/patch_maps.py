"""Patching maps: every site of one kind patched alone, in a grid (`transformer.analysis.patching` runs them) —
each head's output (layer × head), the residual stream (layer × position), or every sender into one receiver."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from transformer.analysis.patching import (
    HeadSite,
    Inputs,
    Metric,
    PathSite,
    StreamSite,
    check_sites,
    ends,
    normalised,
    patched_values,
    stream_stacks,
)
from transformer.core.residual_parts import input_parts

MAP_KINDS = ("heads", "stream", "path")
ALL_SENDERS = "all together"


@dataclass(frozen=True)
class PatchMap:
    """One map: ``values (R, C)`` normalised (0 = corrupted, 1 = clean), ``raw`` the metric's own values, ``sites``
    the site of each cell, the rows' and columns' labels."""

    kind: str
    direction: str
    metric: Metric
    rows: tuple
    columns: tuple
    sites: tuple
    values: np.ndarray
    raw: np.ndarray
    clean_value: float
    corrupt_value: float


def head_grid(model) -> tuple[tuple, tuple, tuple]:
    """Rows ``"encoder L0"`` … (every stack and layer), columns ``"H0"`` …, and each cell's `HeadSite`."""
    rows = tuple((stack, layer) for stack in model.stacks for layer in range(model.num_layers))
    sites = tuple(tuple(HeadSite(stack, layer, head) for head in range(model.num_heads)) for stack, layer in rows)
    return (tuple(f"{stack} L{layer}" for stack, layer in rows), tuple(f"H{h}" for h in range(model.num_heads)),
            sites)


def head_position_grid(model, inputs: Inputs, stack: str) -> tuple[tuple, tuple, tuple]:
    """Rows ``"L0 H0"`` … (every head of ``stack``'s attention), columns its query positions, each cell's `HeadSite`
    at that position alone (TransformerLens's ``get_act_patch_attn_head_out_by_pos``)."""
    if stack not in model.stacks:
        raise ValueError(f"This model's attention is {model.stacks}. Received: stack={stack!r}")
    length = np.shape(inputs.src if stack == "encoder" else inputs.tgt)[1]
    heads = [(layer, head) for layer in range(model.num_layers) for head in range(model.num_heads)]
    return (tuple(f"L{layer} H{head}" for layer, head in heads), tuple(str(p) for p in range(length)),
            tuple(tuple(HeadSite(stack, layer, head, p) for p in range(length)) for layer, head in heads))


def stream_grid(model, inputs: Inputs, stack: str) -> tuple[tuple, tuple, tuple]:
    """Rows ``"entering L0"`` … ``"output"``, columns the positions of ``stack``'s line, each cell's `StreamSite`."""
    if stack not in stream_stacks(model):
        raise ValueError(f"This model's streams are {stream_stacks(model)}. Received: stack={stack!r}")
    length = np.shape(inputs.src if stack == "encoder" else inputs.tgt)[1]
    rows = tuple(f"entering L{layer}" for layer in range(model.num_layers)) + ("output",)
    sites = tuple(tuple(StreamSite(stack, layer, p) for p in range(length)) for layer in range(model.num_layers + 1))
    return rows, tuple(str(p) for p in range(length)), sites


def senders(model, inputs: Inputs, receiver: tuple) -> tuple:
    """The part names a path into ``receiver`` ``(stack, layer, head, side)`` may come from, in the stream's order."""
    check_sites(model, inputs, [PathSite(("token",), (tuple(receiver),))])  # a receiver it has, before it is read
    stack, layer, head, side = receiver
    query_parts, key_parts = input_parts(model, stack, layer, *inputs.rows(1))
    return tuple(query_parts if side == "q" else key_parts)


def path_grid(model, inputs: Inputs, receiver: tuple, layer_norm: str = "held") -> tuple[tuple, tuple, tuple]:
    """One row (the receiver), a column a sender, each cell's `PathSite` (its receiver's LayerNorm ``layer_norm``);
    the last column every sender at once (what this one input can carry: the senders' parts add up before the
    softmax, so alone each shows less)."""
    names = senders(model, inputs, receiver)
    stack, layer, head, side = receiver
    return ((f"into {stack} L{layer} H{head} {side.upper()}",), (*names, ALL_SENDERS),
            (tuple(PathSite((name,), (receiver,), layer_norm) for name in names)
             + (PathSite(names, (receiver,), layer_norm),),))


def path_position_grid(model, inputs: Inputs, receiver: tuple, layer_norm: str = "held") -> tuple:
    """Rows every sender into ``receiver`` and all of them together, columns the positions of the receiver's input,
    each cell's `PathSite` of that sender at that position alone."""
    names = senders(model, inputs, receiver)
    stack, _, _, side = receiver
    source = stack == "encoder" or (stack == "cross" and side != "q")
    length = np.shape(inputs.src if source else inputs.tgt)[1]
    groups = [((name,), name) for name in names] + [(names, ALL_SENDERS)]
    return (tuple(label for _, label in groups), tuple(str(p) for p in range(length)),
            tuple(tuple(PathSite(group, (receiver,), layer_norm, p) for p in range(length)) for group, _ in groups))


def map_grid(model, inputs: Inputs, kind: str, *, stack: str = "", receiver: tuple = (), layer_norm: str = "held",
             by_position: bool = False) -> tuple[tuple, tuple, tuple]:
    """`patch_map`'s rows, columns and each cell's site for ``kind`` (`MAP_KINDS`), nothing patched yet."""
    if kind == "heads":
        return head_position_grid(model, inputs, stack) if by_position else head_grid(model)
    if kind == "stream":
        return stream_grid(model, inputs, stack)
    if by_position:
        return path_position_grid(model, inputs, tuple(receiver), layer_norm)
    return path_grid(model, inputs, tuple(receiver), layer_norm)


def patch_map(model, clean: Inputs, corrupt: Inputs, metric: Metric, kind: str, *, direction: str = "denoise",
              stack: str = "", receiver: tuple = (), progress=None, layer_norm: str = "held",
              by_position: bool = False) -> PatchMap:
    """Every site of ``kind`` (`MAP_KINDS`) patched alone: ``"heads"`` each head's output, ``"stream"`` the residual
    stream of ``stack`` at each layer and position, ``"path"`` each sender into ``receiver`` (its LayerNorm
    ``layer_norm``: `patching.LAYER_NORMS`). ``by_position``: a heads map of ``stack``'s attention, or a path map,
    at each position alone (a column a position)."""
    if kind not in MAP_KINDS:
        raise ValueError(f"The map must be one of {MAP_KINDS}. Received: {kind!r}")
    clean_value, corrupt_value = ends(model, clean, corrupt, metric)
    rows, columns, sites = map_grid(model, clean, kind, stack=stack, receiver=receiver, layer_norm=layer_norm,
                                   by_position=by_position)
    flat = [(site,) for row in sites for site in row]
    raw = patched_values(model, clean, corrupt, flat, metric, direction=direction, progress=progress)
    raw = raw.reshape(len(rows), len(columns))
    return PatchMap(kind, direction, metric, rows, columns, sites, normalised(raw, clean_value, corrupt_value), raw,
                    clean_value, corrupt_value)
