"""Patching on a real language model (SmolLM2): two typed lines of as many pieces, each with the piece that should
come next, measured by the logit difference at the last position (Wang et al. 2022's indirect-object
identification is the example: `IOI`). The maps are `transformer.analysis.patch_maps`', on the lab's own model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.analysis.patch_maps import MAP_KINDS, PatchMap, map_grid, patch_map
from transformer.analysis.patching import DIRECTIONS, LAYER_NORMS, Inputs, Metric, ends
from transformer.core.masks import target_mask
from transformer.core.patching import SIDES
from transformer.live.loading import load_model
from transformer.live.model_cache import MODELS
from transformer.live.patching import ThreeRuns, cell_runs
from transformer.live.real_lines import PieceVocabulary
from transformer.live.sources import source_of
from transformer.runtime.device import resolve_device

MAX_PIECES = 32  # a line patched here: every head or position a patched run of the whole model


@dataclass(frozen=True)
class RealPair:
    """A clean line and its corrupted twin, each with the piece its model should write next."""

    clean: str
    corrupt: str
    clean_answer: str
    corrupt_answer: str


# Indirect-object identification (Wang et al. 2022): the clean line's answer is the name said once (" Mary"); the
# corrupted line repeats the other name as the subject, so its answer is " John".
IOI = RealPair("When Mary and John went to the store, John gave a drink to",
               "When Mary and John went to the store, Mary gave a drink to", " Mary", " John")


def _one_piece(vocabulary, text: str, what: str) -> int:
    ids = vocabulary.encode(text)
    if len(ids) != 1:
        raise ValueError(f"The {what} is one piece of the model's vocabulary. Received: {text!r} "
                         f"({len(ids)} pieces)")
    return ids[0]


def real_pair_inputs(weights: str, pair: RealPair) -> tuple[Inputs, Inputs, Metric]:
    """``pair`` as the model reads it: the two lines' `Inputs` and the logit difference (clean − corrupted answer)
    at the last position. ValueError for lines of different piece counts, too long, or answers of several pieces."""
    source = source_of(weights)
    if not source.supports.language:
        raise ValueError(f"Typed lines are patched on a real language model. Received: weights={weights!r}")
    vocabulary = source.vocabulary()
    lines = [vocabulary.encode(text) for text in (pair.clean, pair.corrupt)]
    if len(lines[0]) != len(lines[1]) or not 1 <= len(lines[0]) <= MAX_PIECES:
        raise ValueError(f"Patching copies position by position: the two lines are 1 to {MAX_PIECES} pieces each, as "
                         f"many in both. Received: clean {len(lines[0])}, corrupted {len(lines[1])}")
    answers = (_one_piece(vocabulary, pair.clean_answer, "clean answer"),
               _one_piece(vocabulary, pair.corrupt_answer, "corrupted answer"))
    inputs = [Inputs(None, np.array([ids], np.int32), None, target_mask(np.array([ids]), -1).numpy())
              for ids in lines]  # (1, N) each, nothing padded
    return inputs[0], inputs[1], Metric("logit_diff", (len(lines[0]) - 1,), answers[:1], answers[1:])


@dataclass(frozen=True)
class RealPatchRequest:
    """One patching map asked of the real language model ``weights``, from the page to the engine as one value
    (hashable: the cache's key): the typed ``pair``, which map (`MAP_KINDS`) and its direction, a path map's
    ``receiver`` ``(layer, head, side)`` of its one stack and the receiver's norm (`LAYER_NORMS`: held at each run's
    scale, or recomputed on the patched stream)."""

    weights: str
    pair: RealPair = IOI
    kind: str = "heads"
    direction: str = "denoise"
    receiver: tuple = ()
    layer_norm: str = "held"
    device: str = "auto"

    def __post_init__(self):
        path = self.kind == "path"
        object.__setattr__(self, "receiver", tuple(self.receiver) if path else ())
        object.__setattr__(self, "layer_norm", self.layer_norm if path else "held")

    def checked(self) -> tuple[Inputs, Inputs, Metric, tuple]:
        """The pair's two `Inputs`, its metric and the receiver as the maps name it (``()``: not a path map);
        ValueError naming what the model cannot map (nothing is loaded)."""
        if self.kind not in MAP_KINDS or self.direction not in DIRECTIONS or self.layer_norm not in LAYER_NORMS:
            raise ValueError(f"A real model's map is one of {MAP_KINDS}, {DIRECTIONS}, its norm one of "
                             f"{LAYER_NORMS}. Received: kind={self.kind!r}, direction={self.direction!r}, "
                             f"layer_norm={self.layer_norm!r}")
        clean, corrupt, metric = real_pair_inputs(self.weights, self.pair)
        return clean, corrupt, metric, path_receiver(self.weights, self.receiver) if self.kind == "path" else ()


def real_patch_map(request: RealPatchRequest) -> PatchMap:
    """``request``'s map on its real model (each head's output, the residual stream at each layer and position, or
    each sender's path into its receiver), normalised 0 = the corrupted run, 1 = the clean one."""
    clean, corrupt, metric, into = request.checked()
    return patch_map(_model(request.weights, request.device), clean, corrupt, metric, request.kind,
                     direction=request.direction, stack="decoder", receiver=into, layer_norm=request.layer_norm)


@dataclass(frozen=True)
class RealCell:
    """One cell's three runs (`ThreeRuns`: each run's attention of the asked-for layer, its next piece at every
    position, the logit difference normalised) and the clean line's pieces, as the model read them."""

    runs: ThreeRuns
    pieces: tuple


def real_patch_cell(request: RealPatchRequest, cell: tuple, layer: int) -> RealCell:
    """The cell ``(row, column)`` of ``request``'s map patched alone, beside the clean and the corrupted run, with
    the attention of layer ``layer`` (`RealCell`). The map is not run: its grid and its two ends are. ValueError for
    a cell or layer it lacks."""
    clean, corrupt, metric, into = request.checked()
    model = _model(request.weights, request.device)
    _, _, sites = map_grid(model, clean, request.kind, stack="decoder", receiver=into,
                           layer_norm=request.layer_norm)
    row, column = cell
    if not (0 <= row < len(sites) and 0 <= column < len(sites[0])):
        raise ValueError(f"The map has {len(sites)} rows and {len(sites[0])} columns. Received: cell {cell!r}")
    vocabulary = PieceVocabulary(source_of(request.weights).vocabulary())
    with tf.device(resolve_device(request.device)):
        runs = cell_runs(model, clean, corrupt, metric, site=sites[row][column], direction=request.direction,
                         ends=ends(model, clean, corrupt, metric), stack="decoder", layer=layer, vocab=vocabulary)
    return RealCell(runs, tuple(vocabulary.decode(clean.tgt[0])))


def _model(weights: str, device: str):
    """``weights``' model, loaded (once a process) and held by the model cache."""
    resolved = resolve_device(device)
    load_model(weights, device)
    source = source_of(weights)
    return MODELS.entry(source.model_key(None, resolved), load=source.loader(resolved),
                        load_bytes=source.load_bytes).model


def path_receiver(weights: str, receiver: tuple) -> tuple:
    """``receiver`` ``(layer, head, side)`` as the maps name it, ``("decoder", layer, head, side)`` (a real model's
    one causal stack); ValueError naming a layer, head or side it does not have."""
    shape = source_of(weights).own_shape()
    if len(receiver) != 3:
        raise ValueError(f"A path's receiver is (layer, head, side). Received: receiver={receiver!r}")
    layer, head, side = receiver
    if not (isinstance(layer, int) and 0 <= layer < shape.num_layers and isinstance(head, int)
            and 0 <= head < shape.num_heads and side in SIDES):
        raise ValueError(f"A path's receiver is a layer from 0 to {shape.num_layers - 1}, "
                         f"a head from 0 to {shape.num_heads - 1} and one of {SIDES}. Received: layer={layer!r}, "
                         f"head={head!r}, side={side!r}")
    return ("decoder", layer, head, side)
