"""Activation patching and path patching on a model of this package (conventions of Heimersheim and Nanda, 2024).

Two runs of equal shape, clean and corrupted. A patch copies activations of one run (the source) into the other
(the base) and measures the answer: **denoising** copies clean into corrupted (how much of the answer a site
restores), **noising** corrupted into clean (how much it destroys). A metric's value is normalised 0 = the
corrupted run's, 1 = the clean run's, in both directions. Sites:

* `HeadSite` a head's output (its context before the heads are merged),
* `StreamSite` the residual stream at one position, entering a layer (layer L: the stack's output),
* `PathSite` senders' outputs (a head ``"L0H1"``, ``"token"``, ``"position"``, a feed-forward ``"L0FF"``, ``"bias"``;
  the encoder's begin ``"enc "``) into receiver heads' query, key or value input only: the receiver's input becomes
  the base's plus each sender's part in the source minus its part in the base, its parts as
  `transformer.core.residual_parts` splits the stream (LayerNorms' scales held at each run's own). Every later
  layer runs as it does on the changed input; nothing else is changed.

Every patched run is the model's own forward pass with a `PatchHook`; the patches of a map run as rows of a batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import tensorflow as tf

from transformer.core.patching import SIDES, PatchHook, Recorder
from transformer.core.residual_parts import input_parts, receiver_stream

DIRECTIONS = ("denoise", "noise")
ROWS = 64  # patched runs in one batch


@dataclass(frozen=True)
class HeadSite:
    """A head's output (its context before the heads are merged): at every query position, or at ``position``
    alone (TransformerLens's ``…_by_pos`` patchers)."""

    stack: str  # "encoder" | "decoder" | "cross"
    layer: int
    head: int
    position: int | None = None

    @property
    def label(self) -> str:
        return f"{self.stack} L{self.layer} H{self.head}" + ("" if self.position is None
                                                             else f" at position {self.position}")

    said = label  # as an error names it

    def fits(self, model, inputs: Inputs) -> bool:
        """Whether ``model``, on lines of ``inputs``' shape, has this site."""
        return self.stack in model.stacks and _index(self.layer, model.num_layers) and _index(
            self.head, model.num_heads) and (self.position is None
                                             or _index(self.position, _length(inputs, self.stack, "q")))

    def add_to(self, build: _PatchBuild, row: int) -> None:
        """Row ``row`` of the hook takes the source run's output of this head (at its position, or every one)."""
        key = (self.stack, self.layer)
        n_q = int(build.recorded.contexts[key].shape[2])
        chosen = build.heads.setdefault(key, np.zeros((build.rows, build.model.num_heads, n_q), np.float32))
        chosen[row, self.head, slice(None) if self.position is None else self.position] = 1.0  # (B, H, N_q)


@dataclass(frozen=True)
class StreamSite:
    stack: str  # "encoder" | "decoder"
    layer: int  # 0 … L: the stream entering block ``layer``; L: the stack's output
    position: int

    @property
    def label(self) -> str:
        return f"{self.stack} stream entering L{self.layer}, position {self.position}"

    said = label

    def fits(self, model, inputs: Inputs) -> bool:
        if self.stack not in stream_stacks(model):
            return False
        length = np.shape(inputs.src if self.stack == "encoder" else inputs.tgt)[1]
        return _index(self.layer, model.num_layers + 1) and _index(self.position, length)

    def add_to(self, build: _PatchBuild, row: int) -> None:
        """Row ``row`` of the hook takes the source run's stream at this layer and position."""
        key = (self.stack, self.layer)
        length = int(build.recorded.streams[key].shape[1])
        build.positions.setdefault(key, np.zeros((build.rows, length), np.float32))[row, self.position] = 1.0


LAYER_NORMS = ("held", "recomputed")  # a path's receiver LayerNorm: at the base run's scale, or on the patched sum


class Receiver(NamedTuple):
    """A path's receiver: one head's query, key or value input (``side`` in SIDES)."""

    stack: str
    layer: int
    head: int
    side: str

    @property
    def label(self) -> str:
        return f"{self.stack} L{self.layer} H{self.head} {self.side.upper()}"

    def fits(self, model, inputs: Inputs, position: int | None) -> bool:
        """Whether ``model`` has this head and input (and, for one position's path, that position on its side)."""
        return self.side in SIDES and HeadSite(self.stack, self.layer, self.head).fits(model, inputs) and (
            position is None or _index(position, _length(inputs, self.stack, self.side)))


@dataclass(frozen=True)
class PathSite:
    """Senders' parts of the residual stream added to receivers' inputs. ``layer_norm``: "held", each LayerNorm's
    scale at its own run's value (the parts add up linearly); "recomputed", the receiver's own LayerNorm (pre-norm)
    run again on the base stream plus the senders' change, as path patching does in Wang et al. (2022)."""

    senders: tuple  # part names, as `transformer.core.residual_parts` names them
    receivers: tuple  # `Receiver`s (a 4-tuple (stack, layer, head, side) given is made one)
    layer_norm: str = "held"
    position: int | None = None  # the senders' parts at this stream position alone (None: every position)

    def __post_init__(self):
        object.__setattr__(self, "receivers", tuple(Receiver(*r) if _receiver_shaped(r) else r
                                                    for r in self.receivers))

    @property
    def label(self) -> str:
        into = ", ".join(receiver.label for receiver in self.receivers)
        at = "" if self.position is None else f" at position {self.position}"
        senders = (" + ".join(self.senders) if len(self.senders) <= 3
                   else f"all {len(self.senders)} senders together ({self.senders[0]} … {self.senders[-1]})")
        return f"{senders}{at} → {into}" + (" (LayerNorm recomputed)" if self.layer_norm != "held" else "")

    @property
    def said(self) -> str:
        """As an error names it: its label, or as given where a receiver is not even well formed."""
        return self.label if all(isinstance(r, Receiver) for r in self.receivers) else repr(self)

    def fits(self, model, inputs: Inputs) -> bool:
        return bool(self.senders) and bool(self.receivers) and self.layer_norm in LAYER_NORMS and all(
            isinstance(r, Receiver) and r.fits(model, inputs, self.position) for r in self.receivers)

    def add_to(self, build: _PatchBuild, row: int) -> None:
        """Row ``row`` of the hook adds this path's change to each receiver layer's query or key and value input."""
        for key, groups in _path_changes(build, self).items():
            for group, change in groups.items():
                first = build.senders.setdefault((row, *key, group), self.senders)
                if first != self.senders:
                    raise ValueError(f"Paths into one layer's {group.upper()} input ({key[0]} L{key[1]}) share "
                                     f"their senders in one patch. Received: {first} and {self.senders}")
                build.add_input_change(key, group, change, row)


@dataclass(frozen=True)
class Inputs:
    """One line as the model takes it: ids ``(1, N_s)``, ``(1, N_t)`` (None where the model has no such side) and
    the masks it runs with."""

    src: np.ndarray | None
    tgt: np.ndarray | None
    src_mask: np.ndarray | None = None
    tgt_mask: np.ndarray | None = None

    def rows(self, count: int) -> tuple:
        """The four arguments of `Transformer.call`, the line repeated ``count`` times."""
        return tuple(None if array is None else np.repeat(array, count, axis=0)
                     for array in (self.src, self.tgt, self.src_mask, self.tgt_mask))

    def shapes(self) -> tuple:
        return tuple(None if array is None else np.shape(array) for array in (self.src, self.tgt))


@dataclass(frozen=True)
class Metric:
    """What a run is measured by, one number a row.

    ``logprob``: the mean over ``positions`` (the logits' axis 1) of log p(the clean answer's id ``clean[i]``);
    ``logit_diff``: the mean of logit(``clean[i]``) − logit(``corrupt[i]``); ``attention``: the mean weight of the
    ``heads`` of attention layer ``(stack, layer)`` from query ``positions[i]`` on key ``keys[i]``.
    """

    kind: str
    positions: tuple
    clean: tuple = ()
    corrupt: tuple = ()
    stack: str = ""
    layer: int = 0
    heads: tuple = ()
    keys: tuple = ()

    def value(self, logits, attention: dict) -> np.ndarray:
        """``(B,)`` float64 from a run's ``logits (B, N, V)`` and ``attention`` (`Transformer.call`'s)."""
        return _METRIC_KINDS[self.kind].value(self, logits, attention)


def _logits_at(metric: Metric, logits) -> tuple:
    """``(logits at the metric's positions (B, P, V) float64, the positions' index (P,))``."""
    return np.asarray(logits, np.float64)[:, list(metric.positions)], np.arange(len(metric.positions))


def _logprob(metric: Metric, logits, attention: dict) -> np.ndarray:
    logits, index = _logits_at(metric, logits)  # (B, P, V)
    top = logits.max(-1, keepdims=True)  # (B, P, 1)
    log_probs = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))  # (B, P, V)
    return log_probs[:, index, list(metric.clean)].mean(-1)


def _logit_diff(metric: Metric, logits, attention: dict) -> np.ndarray:
    logits, index = _logits_at(metric, logits)  # (B, P, V)
    return (logits[:, index, list(metric.clean)] - logits[:, index, list(metric.corrupt)]).mean(-1)


def _attention_weight(metric: Metric, logits, attention: dict) -> np.ndarray:
    weights = np.asarray(attention[metric.stack][metric.layer], np.float64)  # (B, H, N_q, N_k)
    picked = weights[:, list(metric.heads)][:, :, list(metric.positions), list(metric.keys)]  # (B, heads, P)
    return picked.mean(axis=(1, 2))


def _check_answer_ids(metric: Metric, model, sides: int) -> None:
    """ValueError unless the metric names one answer id a position on each of its ``sides`` (clean, corrupted)."""
    ids = metric.clean + (metric.corrupt if sides == 2 else ())
    if len(ids) != len(metric.positions) * sides or any(not 0 <= i < model.output_vocab_size for i in ids):
        raise ValueError(f"A {metric.kind} metric names one answer id (0 to {model.output_vocab_size - 1}) a "
                         f"position{' on each side' if sides == 2 else ''}. Received: clean="
                         f"{metric.clean!r}, corrupt={metric.corrupt!r}")


@dataclass(frozen=True)
class _MetricKind:
    """How a kind of metric reads a run (``value(metric, logits, attention)``, ``(B,)``) and what it asks of the
    model (``check(metric, model)``: ValueError naming it)."""

    value: Callable
    check: Callable


_METRIC_KINDS = {
    "logprob": _MetricKind(_logprob, lambda metric, model: _check_answer_ids(metric, model, 1)),
    "logit_diff": _MetricKind(_logit_diff, lambda metric, model: _check_answer_ids(metric, model, 2)),
    "attention": _MetricKind(_attention_weight, lambda metric, model: _check_attention_metric(metric, model)),
}
METRICS = tuple(_METRIC_KINDS)  # ("logprob", "logit_diff", "attention")


def check_metric(metric: Metric, model, inputs: Inputs) -> None:
    """ValueError naming what ``metric`` asks of ``model`` on lines of ``inputs``' shape that it cannot give."""
    if metric.kind not in _METRIC_KINDS:
        raise ValueError(f"The metric must be one of {METRICS}. Received: {metric.kind!r}")
    side = inputs.tgt if model.has_decoder else inputs.src
    length = np.shape(side)[1]
    if not metric.positions or any(not 0 <= p < length for p in metric.positions):
        raise ValueError(f"A metric's positions run from 0 to {length - 1}. Received: {metric.positions!r}")
    _METRIC_KINDS[metric.kind].check(metric, model)


def _check_attention_metric(metric: Metric, model) -> None:
    if metric.stack not in model.stacks or not 0 <= metric.layer < model.num_layers:
        raise ValueError(f"This model's attention layers are {model.stacks} × 0 to {model.num_layers - 1}. "
                         f"Received: {metric.stack!r} L{metric.layer}")
    if not metric.heads or any(not 0 <= h < model.num_heads for h in metric.heads):
        raise ValueError(f"Heads run from 0 to {model.num_heads - 1}. Received: heads={metric.heads!r}")
    if len(metric.keys) != len(metric.positions):
        raise ValueError(f"An attention metric names one key a query. Received: {len(metric.positions)} queries, "
                         f"{len(metric.keys)} keys")


def check_pair(clean: Inputs, corrupt: Inputs) -> None:
    """ValueError unless the two lines have the same shapes (a patch copies position by position)."""
    if clean.shapes() != corrupt.shapes():
        raise ValueError("Patching copies position by position: the clean and corrupted lines must be of equal "
                         f"length. Received: clean {_lengths(clean)}, corrupted {_lengths(corrupt)}")


def _lengths(inputs: Inputs) -> str:
    return " and ".join(f"{name} {np.shape(array)[1]} tokens" for name, array in (("source", inputs.src),
                                                                                 ("target", inputs.tgt))
                        if array is not None)


def stream_stacks(model) -> tuple:
    """The residual streams a patch may touch: ``("encoder",)``, ``("decoder",)`` or both."""
    return tuple(stack for stack, has in (("encoder", model.has_encoder), ("decoder", model.has_decoder)) if has)


def check_sites(model, inputs: Inputs, sites) -> None:
    """ValueError naming each site the model (on lines of ``inputs``' shape) has not."""
    wrong = [site for site in sites if not _fits(site, model, inputs)]
    if wrong:
        raise ValueError(f"This {model.architecture} model ({model.num_layers} layers of {model.num_heads} heads) "
                         f"has no such site: {', '.join(getattr(site, 'said', repr(site)) for site in wrong[:6])}")


def _fits(site, model, inputs: Inputs) -> bool:
    """A site the model has; anything that is not a site (a caller's mistake) has none."""
    fits = getattr(site, "fits", None)
    return callable(fits) and fits(model, inputs)


def _receiver_shaped(receiver) -> bool:
    return isinstance(receiver, tuple) and len(receiver) == 4


def _length(inputs: Inputs, stack: str, side: str) -> int:
    """How many positions ``stack``'s attention reads on ``side`` ("q": its queries; "k", "v": its keys)."""
    source = stack == "encoder" or (stack == "cross" and side != "q")
    return int(np.shape(inputs.src if source else inputs.tgt)[1])


def _index(value, size: int) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value < size


@dataclass
class _Source:
    """What patches copy, recorded once: the source run's contexts and streams, and both runs' parts at the
    receivers' layers (for paths)."""

    contexts: dict
    streams: dict
    parts: dict = field(default_factory=dict)  # (stack, layer) -> (source (q, kv), base (q, kv)) parts
    entering: dict = field(default_factory=dict)  # (stack, layer) -> (source, base) `ReceiverStream`s


def _record(model, source: Inputs) -> _Source:
    recorder = Recorder()
    model(*source.rows(1), hook=recorder)
    return _Source(recorder.contexts, recorder.streams)


@dataclass
class _PatchBuild:
    """One `PatchHook` under construction, a row a patch: each site adds itself (``add_to``) to its row."""

    model: object
    recorded: _Source
    base: Inputs
    source: Inputs
    rows: int
    heads: dict = field(default_factory=dict)  # (stack, layer) -> (B, H, N_q) 1 where a head is patched
    positions: dict = field(default_factory=dict)  # (stack, layer) -> (B, N) 1 where the stream is patched
    inputs: dict = field(default_factory=dict)  # (stack, layer) -> (q (B, N_q, D), kv (B, N_k, D), sides (3, B, H))
    senders: dict = field(default_factory=dict)  # (row, stack, layer, "q" | "kv") -> the senders changing it

    def parts(self, key: tuple) -> tuple:
        """``(source (q, kv), base (q, kv))`` parts of the input of ``key``'s attention (recorded once)."""
        if key not in self.recorded.parts:
            self.recorded.parts[key] = tuple(input_parts(self.model, *key, *inputs.rows(1))
                                             for inputs in (self.source, self.base))
        return self.recorded.parts[key]

    def entering(self, key: tuple) -> tuple:
        """``(source, base)`` `ReceiverStream`s entering ``key``'s block (recorded once)."""
        if key not in self.recorded.entering:
            self.recorded.entering[key] = tuple(receiver_stream(self.model, *key, *inputs.rows(1))
                                                for inputs in (self.source, self.base))
        return self.recorded.entering[key]

    def add_input_change(self, key: tuple, group: str, change: tuple, row: int) -> None:
        """Row ``row``'s change to ``key``'s query (``group`` "q") or key and value ("kv") input, and its
        receivers (``change``: ``(values (N, D), {(head, side)})``)."""
        if key not in self.inputs:
            n_q, n_k = (int(next(iter(side.values())).shape[1]) for side in self.parts(key)[1])  # the base's
            self.inputs[key] = (np.zeros((self.rows, n_q, self.model.d_model), np.float32),
                                np.zeros((self.rows, n_k, self.model.d_model), np.float32),
                                np.zeros((len(SIDES), self.rows, self.model.num_heads), np.float32))
        values, receivers = change
        self.inputs[key][0 if group == "q" else 1][row] = values.numpy()
        for head, side in receivers:
            self.inputs[key][2][SIDES.index(side), row, head] = 1.0

    def hook(self) -> PatchHook:
        recorded = self.recorded
        return PatchHook(heads={k: tf.constant(v) for k, v in self.heads.items()},
                         contexts={k: recorded.contexts[k] for k in self.heads},
                         positions={k: tf.constant(v) for k, v in self.positions.items()},
                         streams={k: recorded.streams[k] for k in self.positions},
                         inputs={k: (tf.constant(q), tf.constant(kv), tf.constant(sides))
                                 for k, (q, kv, sides) in self.inputs.items()})


def _recomputed(build: _PatchBuild, key: tuple, *, group: str, senders: tuple, held):
    """The change to ``key``'s ``group`` input with its LayerNorm run again on the patched stream: ``LN(base +
    Σ senders' (source − base) parts) − LN(base)``, ``(N, D)``; ``held`` (the held-scale change) where no LayerNorm
    of this block stands between the stream and that input (post-norm; cross-attention's key and value)."""
    source_stream, base_stream = build.entering(key)
    if base_stream.layer_norm is None or (group == "kv" and not base_stream.self_attention):
        return held
    stream = tf.add_n(list(base_stream.parts.values()))  # (1, N, D)
    delta = tf.add_n([source_stream.parts[name] - base_stream.parts[name] for name in senders])  # (1, N, D)
    norm = base_stream.layer_norm
    return (norm(stream + delta) - norm(stream))[0]  # (N, D)


def _path_changes(build: _PatchBuild, path: PathSite) -> dict:
    """``{(stack, layer): {"q" | "kv": (change (N, D), {(head, side)})}}`` of one path: the change to the query
    input or to the key and value input of each receiver's layer, and the receivers that take it."""
    changes = {}
    for receiver in path.receivers:
        key = (receiver.stack, receiver.layer)
        (source_q, source_kv), (base_q, base_kv) = build.parts(key)
        group, base_parts, source_parts = ("q", base_q, source_q) if receiver.side == "q" else \
            ("kv", base_kv, source_kv)
        missing = [name for name in path.senders if name not in base_parts]
        if missing:
            raise ValueError(f"{receiver.stack} L{receiver.layer} H{receiver.head}'s {receiver.side.upper()} input "
                             f"is the sum of {', '.join(base_parts)}: no {', '.join(missing)} (a sender must come "
                             "before its receiver)")
        if group not in changes.setdefault(key, {}):
            change = tf.add_n([source_parts[name][0] - base_parts[name][0] for name in path.senders])  # (N, D)
            if path.layer_norm == "recomputed":
                change = _recomputed(build, key, group=group, senders=path.senders, held=change)
            if path.position is not None:  # one position's row of the change (a LayerNorm works row by row)
                change = change * tf.one_hot(path.position, change.shape[0], dtype=change.dtype)[:, None]
            changes[key][group] = (change, set())
        changes[key][group][1].add((receiver.head, receiver.side))
    return changes


def _hook(model, recorded: _Source, base: Inputs, source: Inputs, patches: list) -> PatchHook:
    """One `PatchHook` whose row b carries ``patches[b]`` (a tuple of sites)."""
    build = _PatchBuild(model, recorded, base, source, len(patches))
    for row, patch in enumerate(patches):
        for site in patch:
            site.add_to(build, row)
    return build.hook()


def patched_values(model, clean: Inputs, corrupt: Inputs, patches: list, metric: Metric, *,
                   direction: str = "denoise", rows: int = ROWS,
                   progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """The metric of each patched run, ``(len(patches),)`` float64 (not normalised): ``patches`` is a list of
    tuples of sites; ``()`` patches nothing. Runs ``rows`` patches a batch; ``progress(done, total)`` after
    each."""
    check_metric(metric, model, clean)
    base, source = _base_and_source(model, clean, corrupt, patches, direction)
    recorded = _record(model, source)
    values = []
    for start in range(0, len(patches), rows):
        chunk = patches[start: start + rows]
        hook = _hook(model, recorded, base, source, chunk)
        logits, attention = model(*base.rows(len(chunk)), hook=hook)  # (B, N, V), {stack: [(B, H, N_q, N_k)]}
        values.append(metric.value(logits, attention))
        if progress is not None:
            progress(min(start + rows, len(patches)), len(patches))
    return np.concatenate(values) if values else np.zeros(0)


def _base_and_source(model, clean, corrupt, patches, direction) -> tuple[Inputs, Inputs]:
    """``(base, source)``: the run patched and the run its activations come from (denoising: the corrupted run and
    the clean one); ValueError for a direction, a pair of lines or a site that will not do."""
    if direction not in DIRECTIONS:
        raise ValueError(f"The direction must be one of {DIRECTIONS}. Received: {direction!r}")
    check_pair(clean, corrupt)
    check_sites(model, clean, [site for patch in patches for site in patch])
    return (corrupt, clean) if direction == "denoise" else (clean, corrupt)


def patched_run(model, clean: Inputs, corrupt: Inputs, patch: tuple, direction: str = "denoise") -> tuple:
    """One patched run as NumPy: ``(logits (N, V), {stack: [(H, N_q, N_k)] a layer})``."""
    base, source = _base_and_source(model, clean, corrupt, [patch], direction)
    hook = _hook(model, _record(model, source), base, source, [patch])
    return _first_row(*model(*base.rows(1), hook=hook))


def plain_run(model, inputs: Inputs) -> tuple:
    """One line run as it is, as NumPy: ``(logits (N, V), {stack: [(H, N_q, N_k)] a layer})``."""
    return _first_row(*model(*inputs.rows(1)))


def _first_row(logits, attention) -> tuple:
    return logits.numpy()[0], {stack: [w.numpy()[0] for w in layers] for stack, layers in attention.items()}


def ends(model, clean: Inputs, corrupt: Inputs, metric: Metric) -> tuple[float, float]:
    """The metric on the clean and on the corrupted run, nothing patched; ValueError when they are equal (no gap
    for a patch to restore: the two lines give the same answer)."""
    check_pair(clean, corrupt)
    check_metric(metric, model, clean)
    values = [float(metric.value(*model(*inputs.rows(1)))[0]) for inputs in (clean, corrupt)]
    if abs(values[0] - values[1]) < 1e-6:
        raise ValueError(f"The clean and the corrupted line give the same {metric.kind} ({values[0]:.6g}): there "
                         "is no difference for a patch to restore. Corrupt what the answer depends on.")
    return values[0], values[1]


MIN_PATCH_GAP = 0.05  # a clean − corrupted gap (the metric's own units) below which a share of it is noise


def gap_too_small(clean_value: float, corrupt_value: float) -> bool:
    """Whether the clean − corrupted gap is too small to normalise by: under `MIN_PATCH_GAP`, a patch's float noise
    or a tiny real change would read as tens of percent of it."""
    return abs(clean_value - corrupt_value) < MIN_PATCH_GAP


def normalised(values, clean_value: float, corrupt_value: float) -> np.ndarray:
    """0 = the corrupted run's value, 1 = the clean run's."""
    return (np.asarray(values, np.float64) - corrupt_value) / (clean_value - corrupt_value)
