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

import numpy as np
import tensorflow as tf

from transformer.core.patching import SIDES, PatchHook, Recorder
from transformer.core.residual_parts import input_parts, receiver_stream

DIRECTIONS = ("denoise", "noise")
METRICS = ("logprob", "logit_diff", "attention")
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


@dataclass(frozen=True)
class StreamSite:
    stack: str  # "encoder" | "decoder"
    layer: int  # 0 … L: the stream entering block ``layer``; L: the stack's output
    position: int

    @property
    def label(self) -> str:
        return f"{self.stack} stream entering L{self.layer}, position {self.position}"


LAYER_NORMS = ("held", "recomputed")  # a path's receiver LayerNorm: at the base run's scale, or on the patched sum


@dataclass(frozen=True)
class PathSite:
    """Senders' parts of the residual stream added to receivers' inputs. ``layer_norm``: "held", each LayerNorm's
    scale at its own run's value (the parts add up linearly); "recomputed", the receiver's own LayerNorm (pre-norm)
    run again on the base stream plus the senders' change, as path patching does in Wang et al. (2022)."""

    senders: tuple  # part names, as `transformer.core.residual_parts` names them
    receivers: tuple  # ((stack, layer, head, side), …), side in SIDES
    layer_norm: str = "held"
    position: int | None = None  # the senders' parts at this stream position alone (None: every position)

    @property
    def label(self) -> str:
        into = ", ".join(f"{stack} L{layer} H{head} {side.upper()}" for stack, layer, head, side in self.receivers)
        at = "" if self.position is None else f" at position {self.position}"
        return f"{' + '.join(self.senders)}{at} → {into}" + (" (LayerNorm recomputed)" if self.layer_norm != "held"
                                                              else "")


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
        rows = list(self.positions)
        if self.kind == "attention":
            weights = np.asarray(attention[self.stack][self.layer], np.float64)  # (B, H, N_q, N_k)
            picked = weights[:, list(self.heads)][:, :, rows, list(self.keys)]  # (B, heads, P)
            return picked.mean(axis=(1, 2))
        logits = np.asarray(logits, np.float64)[:, rows]  # (B, P, V)
        index = np.arange(len(rows))
        if self.kind == "logprob":
            top = logits.max(-1, keepdims=True)  # (B, P, 1)
            log_probs = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))  # (B, P, V)
            return log_probs[:, index, list(self.clean)].mean(-1)
        return (logits[:, index, list(self.clean)] - logits[:, index, list(self.corrupt)]).mean(-1)


def check_metric(metric: Metric, model, inputs: Inputs) -> None:
    """ValueError naming what ``metric`` asks of ``model`` on lines of ``inputs``' shape that it cannot give."""
    if metric.kind not in METRICS:
        raise ValueError(f"The metric must be one of {METRICS}. Received: {metric.kind!r}")
    side = inputs.tgt if model.has_decoder else inputs.src
    length = np.shape(side)[1]
    if not metric.positions or any(not 0 <= p < length for p in metric.positions):
        raise ValueError(f"A metric's positions run from 0 to {length - 1}. Received: {metric.positions!r}")
    if metric.kind == "attention":
        _check_attention_metric(metric, model)
        return
    ids = metric.clean + (metric.corrupt if metric.kind == "logit_diff" else ())
    wanted = len(metric.positions) * (2 if metric.kind == "logit_diff" else 1)
    if len(ids) != wanted or any(not 0 <= i < model.output_vocab_size for i in ids):
        raise ValueError(f"A {metric.kind} metric names one answer id (0 to {model.output_vocab_size - 1}) a "
                         f"position{' on each side' if metric.kind == 'logit_diff' else ''}. Received: clean="
                         f"{metric.clean!r}, corrupt={metric.corrupt!r}")


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
    wrong = [site for site in sites if not _has(model, inputs, site)]
    if wrong:
        raise ValueError(f"This {model.architecture} model ({model.num_layers} layers of {model.num_heads} heads) "
                         f"has no such site: {', '.join(_said(site) for site in wrong[:6])}")


def _said(site) -> str:
    """A site as an error names it: its label, or as given when it is not even well formed."""
    if isinstance(site, PathSite) and not all(_receiver_shaped(r) for r in site.receivers):
        return repr(site)
    return site.label if hasattr(site, "label") else repr(site)


def _receiver_shaped(receiver) -> bool:
    return isinstance(receiver, tuple) and len(receiver) == 4


def _has(model, inputs: Inputs, site) -> bool:
    if isinstance(site, HeadSite):
        return site.stack in model.stacks and _index(site.layer, model.num_layers) and _index(
            site.head, model.num_heads) and (site.position is None or _index(site.position, _length(inputs, site.stack,
                                                                                                    "q")))
    if isinstance(site, StreamSite):
        if site.stack not in stream_stacks(model):
            return False
        length = np.shape(inputs.src if site.stack == "encoder" else inputs.tgt)[1]
        return _index(site.layer, model.num_layers + 1) and _index(site.position, length)
    if isinstance(site, PathSite):
        return bool(site.senders) and bool(site.receivers) and site.layer_norm in LAYER_NORMS and all(
            _receiver_shaped(r) and r[3] in SIDES and _has(model, inputs, HeadSite(*r[:3]))
            and (site.position is None or _index(site.position, _length(inputs, r[0], r[3])))
            for r in site.receivers)
    return False


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


def _parts(model, recorded: _Source, base: Inputs, source: Inputs, site: tuple) -> tuple:
    if site not in recorded.parts:
        recorded.parts[site] = tuple(input_parts(model, *site, *inputs.rows(1)) for inputs in (source, base))
    return recorded.parts[site]


def _entering(model, recorded: _Source, base: Inputs, source: Inputs, site: tuple) -> tuple:
    if site not in recorded.entering:
        recorded.entering[site] = tuple(receiver_stream(model, *site, *inputs.rows(1)) for inputs in (source, base))
    return recorded.entering[site]


def _recomputed(model, recorded: _Source, base: Inputs, source: Inputs, site: tuple, *, group: str,
                senders: tuple, held):
    """The change to ``site``'s ``group`` input with its LayerNorm run again on the patched stream: ``LN(base +
    Σ senders' (source − base) parts) − LN(base)``, ``(N, D)``; ``held`` (the held-scale change) where no LayerNorm
    of this block stands between the stream and that input (post-norm; cross-attention's key and value)."""
    source_stream, base_stream = _entering(model, recorded, base, source, site)
    if base_stream.layer_norm is None or (group == "kv" and not base_stream.self_attention):
        return held
    stream = tf.add_n(list(base_stream.parts.values()))  # (1, N, D)
    delta = tf.add_n([source_stream.parts[name] - base_stream.parts[name] for name in senders])  # (1, N, D)
    norm = base_stream.layer_norm
    return (norm(stream + delta) - norm(stream))[0]  # (N, D)


def _path_changes(model, recorded: _Source, base: Inputs, source: Inputs, path: PathSite) -> dict:
    """``{(stack, layer): {"q" | "kv": (change (N, D), {(head, side)})}}`` of one path: the change to the query
    input or to the key and value input of each receiver's layer, and the receivers that take it."""
    changes = {}
    for stack, layer, head, side in path.receivers:
        (source_q, source_kv), (base_q, base_kv) = _parts(model, recorded, base, source, (stack, layer))
        group, base_parts, source_parts = ("q", base_q, source_q) if side == "q" else ("kv", base_kv, source_kv)
        missing = [name for name in path.senders if name not in base_parts]
        if missing:
            raise ValueError(f"{stack} L{layer} H{head}'s {side.upper()} input is the sum of "
                             f"{', '.join(base_parts)}: no {', '.join(missing)} (a sender must come before its "
                             "receiver)")
        if group not in changes.setdefault((stack, layer), {}):
            change = tf.add_n([source_parts[name][0] - base_parts[name][0] for name in path.senders])  # (N, D)
            if path.layer_norm == "recomputed":
                change = _recomputed(model, recorded, base, source, (stack, layer), group=group,
                                     senders=path.senders, held=change)
            if path.position is not None:  # one position's row of the change (a LayerNorm works row by row)
                change = change * tf.one_hot(path.position, change.shape[0], dtype=change.dtype)[:, None]
            changes[stack, layer][group] = (change, set())
        changes[stack, layer][group][1].add((head, side))
    return changes


def _hook(model, recorded: _Source, base: Inputs, source: Inputs, patches: list) -> PatchHook:
    """One `PatchHook` whose row b carries ``patches[b]`` (a tuple of sites)."""
    rows, heads, positions, inputs = len(patches), {}, {}, {}
    for row, patch in enumerate(patches):
        senders_here = {}  # (stack, layer, "q" | "kv") -> the senders of the path that changes it
        for site in patch:
            if isinstance(site, HeadSite):
                key = (site.stack, site.layer)
                n_q = int(recorded.contexts[key].shape[2])
                chosen = heads.setdefault(key, np.zeros((rows, model.num_heads, n_q), np.float32))  # (B, H, N_q)
                chosen[row, site.head, slice(None) if site.position is None else site.position] = 1.0
            elif isinstance(site, StreamSite):
                key = (site.stack, site.layer)
                length = int(recorded.streams[key].shape[1])
                positions.setdefault(key, np.zeros((rows, length), np.float32))[row, site.position] = 1.0
            else:
                for key, groups in _path_changes(model, recorded, base, source, site).items():
                    for group, change in groups.items():
                        if senders_here.setdefault((*key, group), site.senders) != site.senders:
                            raise ValueError(f"Paths into one layer's {group.upper()} input ({key[0]} L{key[1]}) "
                                             f"share their senders in one patch. Received: "
                                             f"{senders_here[(*key, group)]} and {site.senders}")
                        sizes = _parts(model, recorded, base, source, key)[1]  # the base's (q, kv) parts
                        _add_path(inputs, key, group, change, row, rows, sizes, model)
    return PatchHook(heads={k: tf.constant(v) for k, v in heads.items()},
                     contexts={k: recorded.contexts[k] for k in heads},
                     positions={k: tf.constant(v) for k, v in positions.items()},
                     streams={k: recorded.streams[k] for k in positions},
                     inputs={k: (tf.constant(q), tf.constant(kv), tf.constant(sides))
                             for k, (q, kv, sides) in inputs.items()})


def _add_path(inputs: dict, key: tuple, group: str, change: tuple, row: int, rows: int, parts: tuple,
              model) -> None:
    """Row ``row``'s change to ``key``'s query (``group`` "q") or key and value ("kv") input, and its receivers;
    ``parts``: the layer's (query, key) parts in the base run, whose lengths the inputs take."""
    if key not in inputs:
        n_q, n_k = (int(next(iter(side.values())).shape[1]) for side in parts)
        inputs[key] = (np.zeros((rows, n_q, model.d_model), np.float32),
                       np.zeros((rows, n_k, model.d_model), np.float32),
                       np.zeros((len(SIDES), rows, model.num_heads), np.float32))
    values, receivers = change
    inputs[key][0 if group == "q" else 1][row] = values.numpy()
    for head, side in receivers:
        inputs[key][2][SIDES.index(side), row, head] = 1.0


def patched_values(model, clean: Inputs, corrupt: Inputs, patches: list, metric: Metric,
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
