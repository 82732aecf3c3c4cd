"""The one plain-data entry point: a frozen configuration in, NumPy arrays out.

The app calls `run_live` (and `attention_walkthrough` for one layer's
intermediates); it never touches a tensor. Models are built once per
architecture, seeded, cached (bounded) and run through one `tf.function` whose
signature leaves batch and length free, so changing the text, the pad symbols
or the sequence length neither rebuilds nor retraces anything.
"""

from __future__ import annotations

import collections
import concurrent.futures
import functools
import gc
import hashlib
import threading
import time
from dataclasses import dataclass, field

import numpy as np
import tensorflow as tf

from transformer import tokens as tok
from transformer.attention import check_heads
from transformer.device import device_label, resolve_device
from transformer.linear import zero_kernels
from transformer.masks import padding_mask, subsequent_mask
from transformer.model import Transformer
from transformer.positional import positional_encoding
from transformer.pretrained import load_pretrained
from transformer.tasks import PAD, PAD_ID, START

VOCAB_SIZE = 1000  # ids 0..999; shared by source and target
MAX_SEQ_LEN = 512
MAX_D_MODEL = 1024
MAX_D_FF = 4096
MAX_LAYERS = 6
MAX_HEADS = 64
ATTENTION_BUDGET_BYTES = 256 * 2**20  # all attention weights of one run, float32
MODEL_CACHE_SIZE = 4
MODEL_CACHE_BYTES = 1536 * 2**20  # the cached models' weights: two of the largest (d_model 1024, d_ff 4096, 6 layers)
RELEASE_AFTER_EVICTED_BYTES = 256 * 2**20  # evicted weights that are collected at once (see collect_evicted)
STACKS = ("encoder", "decoder", "cross")

SEED_BATCH = "1 2 3 4 5 0 0\n1 2 0 0 0 0 0\n1 2 3 4 5 6 7"


@dataclass(frozen=True)
class LiveConfig:
    """Everything a view depends on; hashable, so it can key caches."""

    d_model: int = 64  # model width
    num_heads: int = 4  # H, divides d_model
    d_ff: int = 256  # feed-forward inner width
    num_layers: int = 2  # encoder layers = decoder layers
    seq_len: int = 7  # N: every line is padded or truncated to this
    pad_symbols: tuple = ("0", "<pad>")  # the first one pads short lines
    source_text: str = SEED_BATCH  # one sequence per line
    target_text: str = SEED_BATCH
    seed: int = 0  # seeds the random weights, each from the seed and its place in the model (seed_weights)
    device: str = "auto"  # "auto" (GPU when present) or "cpu"
    padding_masks: bool = True  # False: draw what attention does without padding masks
    look_ahead_mask: bool = True  # False: the decoder may look ahead
    weights: str = "random"  # "random" (seeded), a shipped model ("copy", ...) or "session:<key>"

    @property
    def trained(self) -> bool:
        return self.weights != "random"

    @property
    def architecture(self) -> tuple:
        """What a built (and traced) model depends on: not the seed, which is re-applied in place.

        A trained model: its name and the device.
        """
        if self.trained:
            return ("trained", self.weights, resolve_device(self.device))
        return (self.d_model, self.num_heads, self.d_ff, self.num_layers, resolve_device(self.device))


@dataclass(frozen=True)
class LiveResult:
    """Plain NumPy results of one configuration (B lines, N = seq_len, L layers, H heads).

    source_ids, target_ids: ``(B, N)`` int32; source_tokens, target_tokens: ``(B, N)`` text.
    source_padding_mask, target_padding_mask: ``(B, 1, 1, N)`` bool, True = may attend.
    subsequent_mask: ``(N, N)`` bool, lower triangular. target_mask: ``(B, 1, N, N)`` bool.
    positional_encoding: ``(N, d_model)`` float32.
    attention: ``{"encoder" | "decoder" | "cross": (L, B', H, N_q, N_k) float32}``, the stacks asked for,
      for the B' lines in ``lines`` (every line unless ``run_live`` was given some).
    lines: the 0-based lines (batch rows) ``attention`` holds, in its order. Every other field covers all B.
    layers, heads: the model's L and H (a trained model's own, whatever the config says).
    applied_masks: ``{stack: (B, N_q, N_k) bool}``, the mask each stack really used
      (all True where a toggle switched a mask off).
    With trained weights the target is ``<s>`` + the model's own prediction, so
    the decoder side has N_t = N + 1 positions.
    """

    config: LiveConfig
    source_tokens: tuple
    target_tokens: tuple
    source_ids: np.ndarray
    target_ids: np.ndarray
    source_truncated: tuple
    target_truncated: tuple
    pad_ids: tuple
    source_padding_mask: np.ndarray
    target_padding_mask: np.ndarray
    subsequent_mask: np.ndarray
    target_mask: np.ndarray
    positional_encoding: np.ndarray
    attention: dict
    applied_masks: dict
    layers: int
    heads: int
    device: str
    device_label: str
    tf_version: str
    compute_seconds: float
    traces: int
    builds: int
    notices: tuple = field(default=())
    predictions: tuple = field(default=())  # trained weights: {source, prediction, expected, correct} per line
    lines: tuple = field(default=())


# ---------------------------------------------------------------- validation


def _check_range(name, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}. Received: {name}={value!r}")


def attention_bytes(batch, heads, layers, length) -> int:
    """float32 bytes of every attention map of one run (3 stacks of L layers)."""
    return 4 * batch * heads * len(STACKS) * layers * length * length


def validate(config: LiveConfig) -> None:
    """Raise ValueError naming the offending values; return None when the config can run."""
    _check_range("seq_len", config.seq_len, 1, MAX_SEQ_LEN)
    resolve_device(config.device)
    if config.trained:
        load_pretrained(config.weights)  # ValueError for an unknown name
        return
    _check_range("d_model", config.d_model, 1, MAX_D_MODEL)
    _check_range("num_heads", config.num_heads, 1, MAX_HEADS)
    check_heads(config.d_model, config.num_heads)
    _check_range("d_ff", config.d_ff, 1, MAX_D_FF)
    _check_range("num_layers", config.num_layers, 1, MAX_LAYERS)
    _check_range("seed", config.seed, 0, 2**31 - 1)
    tok.check_pad_symbols(config.pad_symbols)


def check_budget(config: LiveConfig, batch: int) -> None:
    """Refuse, with the numbers, a run whose attention maps would not fit the budget."""
    needed = attention_bytes(batch, config.num_heads, config.num_layers, config.seq_len)
    if needed > ATTENTION_BUDGET_BYTES:
        raise ValueError(
            f"The attention maps would need {needed / 2**20:,.0f} MB "
            f"(B={batch} lines × H={config.num_heads} heads × 3 stacks × {config.num_layers} layers × "
            f"N²={config.seq_len}² × 4 bytes); the limit is {ATTENTION_BUDGET_BYTES / 2**20:,.0f} MB. "
            "Lower the heads, layers, sequence length or number of lines."
        )


# ---------------------------------------------------------------- tokens and masks


@dataclass(frozen=True)
class _Batches:
    source: tok.EncodedBatch
    target: tok.EncodedBatch
    pad_ids: tuple
    notices: tuple


def _lines_text(count: int) -> str:
    return f"{count} line" if count == 1 else f"{count} lines"


def encode_batches(config: LiveConfig) -> _Batches:
    """Source and target text -> padded id batches sharing one vocabulary."""
    pad_symbols = tok.check_pad_symbols(config.pad_symbols)
    source_lines = tok.split_lines(config.source_text, "source")
    target_lines = tok.split_lines(config.target_text, "target")
    if len(source_lines) != len(target_lines):
        raise ValueError(
            f"The source has {_lines_text(len(source_lines))} but the target has {len(target_lines)}: "
            "give one target line per source line."
        )
    vocabulary = tok.build_vocabulary(source_lines + target_lines, pad_symbols, VOCAB_SIZE)
    source = tok.encode_lines(source_lines, vocabulary, pad_symbols[0], config.seq_len)
    target = tok.encode_lines(target_lines, vocabulary, pad_symbols[0], config.seq_len)
    pads = tok.pad_ids(vocabulary, pad_symbols)
    return _Batches(source, target, pads, _notices(source, target, pads, config.seq_len))


def encode_trained(config: LiveConfig) -> tuple[_Batches, tuple]:
    """Source text in the trained model's vocabulary; the target is ``<s>`` + its greedy prediction."""
    model = load_pretrained(config.weights)
    lines = [line[: config.seq_len] for line in tok.split_lines(config.source_text, "source")]
    for line in lines:
        model.vocab.encode(line)  # ValueError naming tokens outside the vocabulary
    predicted = [model.vocab.decode(ids) for ids in model.predict_ids(lines)]
    vocabulary = tok.Vocabulary(dict(model.vocab.index), len(model.vocab))
    source = tok.encode_lines(lines, vocabulary, PAD, config.seq_len)
    target = tok.encode_lines([[START] + p for p in predicted], vocabulary, PAD, config.seq_len + 1)
    predictions = tuple(
        dict(source=" ".join(line), prediction=" ".join(p), expected=model.expected(" ".join(line)),
             correct=" ".join(p) == model.expected(" ".join(line)))
        for line, p in zip(lines, predicted)
    )
    notices = _notices(source, target, (PAD_ID,), config.seq_len)
    return _Batches(source, target, (PAD_ID,), notices), predictions


def _notices(source, target, pads, length) -> tuple:
    notices = []
    for name, batch in (("source", source), ("target", target)):
        for line, (count, cut) in enumerate(zip(batch.lengths, batch.truncated), start=1):
            if cut:
                notices.append(f"{name.capitalize()} line {line} has {count} tokens; it was cut to {length}.")
        for line in np.flatnonzero(np.isin(batch.ids, pads).all(axis=1)) + 1:
            notices.append(
                f"{name.capitalize()} line {line} is all padding: no key is allowed for it, "
                "so its attention weights are all zero."
            )
    if not np.isin(source.ids, pads).any() and not np.isin(target.ids, pads).any():
        notices.append("No pad symbol occurs in any sequence, so the padding masks block nothing.")
    return tuple(notices)


def _masks(config: LiveConfig, batches: _Batches) -> tuple:
    """The engine's masks of ``batches`` as NumPy (True = may attend), and the ones each stack runs with.

    Returns ``(source_padding (B, 1, 1, N_s), target_padding (B, 1, 1, N_t), future (N_t, N_t),
    target (B, 1, N_t, N_t), run_source (B, 1, 1, N_s), run_target (B, 1, N_t, N_t))``. ``target`` is
    padding AND look-ahead; the run masks are the same with a switched-off mask replaced by all True.
    The masks are TensorFlow's (`padding_mask`, `subsequent_mask`); only the switches are NumPy.
    All six are read-only: `prepared_inputs` caches them.
    """
    pads = list(batches.pad_ids) or [-1]  # -1 matches no id: nothing is padding
    source_padding = padding_mask(batches.source.ids, pads)  # (B, 1, 1, N_s)
    target_padding = padding_mask(batches.target.ids, pads)  # (B, 1, 1, N_t)
    future = subsequent_mask(batches.target.ids.shape[1])  # (N_t, N_t)
    target = tf.logical_and(target_padding, future).numpy()  # (B, 1, N_t, N_t)
    source_padding, target_padding, future = source_padding.numpy(), target_padding.numpy(), future.numpy()
    run_source = source_padding if config.padding_masks else np.ones_like(source_padding)  # (B, 1, 1, N_s)
    if config.padding_masks and config.look_ahead_mask:
        run_target = target  # (B, 1, N_t, N_t)
    else:
        run_target = np.logical_and(target_padding if config.padding_masks else True,
                                    future if config.look_ahead_mask else True)  # (B, 1, N_t, N_t)
        run_target = np.broadcast_to(run_target, target.shape)  # (B, 1, N_t, N_t), also with both off
    masks = source_padding, target_padding, future, target, run_source, run_target
    for mask in masks:  # cached and shared by every result of this configuration: nobody writes into them
        mask.flags.writeable = False
    return masks


@dataclass(frozen=True)
class _Inputs:
    """What every computation on ``config`` starts from: the id batches, a trained model's
    predictions, and `_masks`' six NumPy masks."""

    batches: _Batches
    predictions: tuple
    masks: tuple


@functools.lru_cache(maxsize=4)
def prepared_inputs(config: LiveConfig) -> _Inputs:
    """Batches and masks of ``config``, cached: a page's forward pass and its Keras check (one rerun)
    share them. ValueError on bad text or pads (not cached)."""
    batches, predictions = encode_trained(config) if config.trained else (encode_batches(config), ())
    with tf.device(resolve_device(config.device)):  # "cpu" means every op, the masks' too
        return _Inputs(batches, predictions, _masks(config, batches))


def _encoding(length: int, d_model: int) -> np.ndarray:
    """``positional_encoding(length, d_model)`` as a read-only ``(N, D)`` array."""
    encoding = positional_encoding(length, d_model).numpy()  # (N, D)
    encoding.flags.writeable = False
    return encoding


@functools.lru_cache(maxsize=8)
def _longest_encoding(d_model: int) -> np.ndarray:
    return _encoding(MAX_SEQ_LEN, d_model)  # (N_max, D), one per width


def encoding_array(length: int, d_model: int) -> np.ndarray:
    """``positional_encoding(length, d_model)`` as a read-only ``(N, D)`` array.

    Row ``pos`` does not depend on the length, so every length up to `MAX_SEQ_LEN` is a view of
    one encoding per width: a new sequence length costs no TensorFlow call (~2 ms of eager ops).
    The values are the same up to the last bit of float32 (TensorFlow's vectorised and scalar
    sin/cos can round differently)."""
    if length > MAX_SEQ_LEN:
        return _encoding(length, d_model)  # (N, D)
    return _longest_encoding(d_model)[:length]  # (N, D)


# ---------------------------------------------------------------- models


# The four model inputs every traced function of a model takes: free batch and lengths.
MODEL_INPUTS = (
    tf.TensorSpec((None, None), tf.int32),  # src (B, N_s)
    tf.TensorSpec((None, None), tf.int32),  # tgt (B, N_t)
    tf.TensorSpec((None, 1, None, None), tf.bool),  # src_mask (B, 1, 1, N_s)
    tf.TensorSpec((None, 1, None, None), tf.bool),  # tgt_mask (B, 1, N_t, N_t)
)


class Graph:
    """``function(src, tgt, src_mask, tgt_mask)`` run eagerly until traced, then one graph for every size.

    Tracing takes ~0.6 s on 2 cores and an eager run tens of milliseconds, so new
    functions run eagerly and the engine traces them once it has been idle for
    `TRACE_AFTER_IDLE_SECONDS` (see `ModelCache.trace_pending`). ``traces`` counts traces.
    """

    def __init__(self, function, device: str):
        self.function = function
        self.device = device
        self.traces = 0
        self.traced = False
        self._graph = tf.function(self._counted, autograph=False, input_signature=MODEL_INPUTS)
        # TensorFlow's "N out of the last N calls … triggered tf.function retracing" warning keys on the traced
        # code, `_counted`, which every Graph shares: six architectures traced once each looked like retracing in
        # the server's log. Each Graph counts its own traces (`traces`: 1 for any number of sizes).
        self._graph._omit_frequent_tracing_warning = True

    def __call__(self, src, tgt, src_mask, tgt_mask):
        if self.traced:
            return self._graph(src, tgt, src_mask, tgt_mask)
        return self.function(src, tgt, src_mask, tgt_mask)

    def trace(self) -> None:
        """Trace (and run once) with a tiny input; later calls of any size reuse the graph."""
        if self.traced:
            return
        ids, ones = tf.ones((1, 2), tf.int32), tf.ones((1, 1, 2, 2), tf.bool)  # (B=1, N=2)
        with tf.device(self.device):
            self._graph(ids, ids, ones[:, :, :1], ones)
        self.traced = True

    def _counted(self, *inputs):
        self.traces += 1  # runs only while tracing
        return self.function(*inputs)


class _Entry:
    """A built model and the graphs made from it (``graphs``: key -> `Graph`), each made on first use:
    the idle engine traces only graphs some page has asked for."""

    def __init__(self, model, device):
        self.model = model
        self.device = device
        self.seed = None  # the seed the random weights were last drawn from (None: trained weights)
        self.graphs = {}
        self.weight_bytes = sum(int(np.prod(weight.shape)) * np.dtype(weight.dtype).itemsize
                                for weight in model.weights)

    def attention_graph(self, stacks: tuple) -> Graph:
        """The `Graph` of ``attention_function(stacks)``; ``stacks`` in `STACKS` order."""
        return self.graph(("attention", stacks), lambda: self.attention_function(stacks))

    def graph(self, key, make_function) -> Graph:
        """The `Graph` of ``make_function()`` stored under ``key`` (made on first use)."""
        if key not in self.graphs:
            self.graphs[key] = Graph(make_function(), self.device)
        return self.graphs[key]

    def pending(self) -> list:
        """Graphs still running eagerly."""
        return [graph for graph in self.graphs.values() if not graph.traced]

    def attention_function(self, stacks: tuple):
        """``f(src, tgt, src_mask, tgt_mask) -> {stack: (L, B, H, N_q, N_k)}`` for ``stacks`` only: the
        decoder does not run for the encoder alone, and a graph computes only what it returns."""
        def attention(src, tgt, src_mask, tgt_mask):
            weights = {}
            memory, weights["encoder"] = self.model.encode(src, src_mask)  # (B, N_s, D), L × (B, H, N_s, N_s)
            if "decoder" in stacks or "cross" in stacks:
                _, weights["decoder"], weights["cross"] = self.model.decode(tgt, memory, src_mask, tgt_mask)
            return {name: tf.stack(weights[name]) for name in stacks}  # (L, B, H, N_q, N_k)
        return attention


def _build_entry(architecture, seed: int = 0) -> _Entry:
    """A built model for ``(d_model, heads, d_ff, layers, device)`` with the weights of ``seed``, or a trained one."""
    if architecture[0] == "trained":
        _, name, device = architecture
        return _Entry(load_pretrained(name).model, device)
    d_model, num_heads, d_ff, num_layers, device = architecture
    with tf.device(device), zero_kernels():  # seed_weights draws every weight: Keras's draws would be lost
        model = Transformer(
            VOCAB_SIZE, VOCAB_SIZE, d_model=d_model, num_heads=num_heads, d_ff=d_ff,
            num_encoder_layers=num_layers, num_decoder_layers=num_layers, dropout=0.0,
        )
        model.build((None, None), (None, None))  # every weight, before tracing
        seed_weights(model, seed)
    entry = _Entry(model, device)
    entry.seed = seed
    return entry


def architecture_bytes(architecture) -> int:
    """Bytes of the float32 weights `_build_entry` makes for ``(d_model, heads, d_ff, layers, device)``; 0 for a
    trained model (small: its weights are shipped or trained here). Known before building, so that the cache
    makes room first."""
    if architecture[0] == "trained":
        return 0
    d_model, _, d_ff, layers, _ = architecture
    attention = 4 * (d_model * d_model + d_model)  # four projections, kernels and biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model
    norm = 2 * d_model  # gamma, beta
    encoder_layer = attention + feed_forward + 2 * norm
    decoder_layer = 2 * attention + feed_forward + 3 * norm
    embeddings_and_output = 2 * VOCAB_SIZE * d_model + d_model * VOCAB_SIZE + VOCAB_SIZE
    return 4 * (layers * (encoder_layer + decoder_layer) + embeddings_and_output)


def seed_weights(model, seed: int) -> None:
    """Deterministic initial values from ``seed``, whatever Keras's global RNG did.

    Kernels: Glorot uniform; embeddings: U(-0.05, 0.05); biases and LayerNorm beta: 0;
    LayerNorm gamma: 1 (the Keras defaults). Each weight is drawn by a generator of its own
    (`weight_generator`), so its values depend on the seed, its place in the model and its shape,
    not on the other weights: models of the same seed share every weight they have in common.
    Changing the heads keeps every weight (the same projections, split into other heads); adding
    a layer keeps the layers there were; changing d_ff redraws the feed-forward weights only.
    """
    for variable in model.weights:
        shape, name = tuple(variable.shape), variable.path
        if name.endswith("gamma"):
            value = np.ones(shape, np.float32)
        elif name.endswith(("beta", "bias")):
            value = np.zeros(shape, np.float32)
        elif name.endswith("embeddings"):
            value = uniform(weight_generator(seed, name), 0.05, shape)
        else:
            value = uniform(weight_generator(seed, name), np.sqrt(6.0 / (shape[0] + shape[-1])), shape)
        variable.assign(value)


def uniform(generator: np.random.Generator, limit: float, shape) -> np.ndarray:
    """U(-limit, limit) float32 of ``shape``, drawn in float32 and scaled in place: a float64 draw cast to
    float32 took 2-5x as long and twice the memory (the largest model draws ~180 M values)."""
    values = generator.random(shape, dtype=np.float32)  # [0, 1)
    values *= np.float32(2 * limit)
    values -= np.float32(limit)
    return values  # [-limit, limit)


def weight_generator(seed: int, path: str) -> np.random.Generator:
    """The generator of the weight at ``path`` (``transformer/encoder/block_0/…/kernel``) for ``seed``: keyed on
    the seed and the path within the model (without the model's own name, which Keras numbers), not on the
    order in which the weights are drawn."""
    place = path.split("/", 1)[-1].encode()
    return np.random.default_rng([seed, int.from_bytes(hashlib.blake2b(place, digest_size=8).digest(), "little")])


def release_kernels() -> None:
    """Drop the kernels TensorFlow made for every op and traced graph run so far (its kernel cache).

    TensorFlow keeps them until the cache is cleared, also for models long gone: each architecture a
    user tried kept ~7 MB of the server's memory (a large one more). The models still cached make
    theirs again on their next run (~0.2 s once for a traced graph), so `ModelCache` calls this after
    every ``size`` evictions, not at each: eight users trying architectures at once evict on nearly
    every move.
    """
    from tensorflow.python.eager import context  # noqa: PLC0415  (no public API clears this cache)

    context.context().clear_kernel_cache()


def collect_evicted() -> None:
    """Free evicted models now: a Keras model is a web of reference cycles (and a cached entry's graphs
    point back at it), so an evicted one stays in memory until the garbage collector's next full pass,
    which comes rarely in a server that makes few Python objects. Seven of the largest models built one
    after the other left six alive with three cached, 4 GB of RSS and growing; collected, and with room
    made before each build, 2.4 GB. A collection holds the GIL for 70-190 ms in a server with eight
    sessions, so `ModelCache` collects once ``release_bytes`` of weights have been evicted, not at every
    eviction of a small model (the collector's own passes free those).
    """
    gc.collect()


class ModelCache:
    """At most ``size`` built models whose weights take at most ``budget_bytes`` together (the newest is
    kept whatever its size), least recently used evicted before a new one is built, so that the old and the
    new never exceed the budget together; thread-safe.

    After every ``size`` evictions it calls `release_kernels`, and once ``release_bytes`` of weights have
    been evicted, `collect_evicted`: not at every eviction, since eight users trying architectures at once
    evict on nearly every move.
    """

    def __init__(self, size: int = MODEL_CACHE_SIZE, budget_bytes: int = MODEL_CACHE_BYTES,
                 release_bytes: int = RELEASE_AFTER_EVICTED_BYTES):
        self.size = size
        self.budget_bytes = budget_bytes
        self.release_bytes = release_bytes
        self.builds = 0
        self._evicted = 0  # models evicted since the kernels were last released
        self._evicted_bytes = 0  # weights evicted since the last collection
        self._entries: collections.OrderedDict = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, architecture, seed: int = 0) -> _Entry:
        """The model of ``architecture``, built (random weights drawn from ``seed``) unless cached."""
        with self._lock:
            if architecture in self._entries:
                self._entries.move_to_end(architecture)
                return self._entries[architecture]
            self._make_room(architecture_bytes(architecture))
            entry = _build_entry(architecture, seed)
            self.builds += 1
            self._entries[architecture] = entry
            return entry

    def _make_room(self, incoming_bytes: int) -> None:
        """Evict the least recently used models until one more of ``incoming_bytes`` fits; free what enough
        evictions hold (before the new model takes its place)."""
        while self._entries and (len(self._entries) >= self.size
                                 or self.weight_bytes() + incoming_bytes > self.budget_bytes):
            self._evicted_bytes += self._entries.popitem(last=False)[1].weight_bytes  # no reference kept
            self._evicted += 1
        if self._evicted_bytes >= self.release_bytes:
            collect_evicted()
            self._evicted_bytes = 0
        if self._evicted >= self.size:
            release_kernels()
            self._evicted = 0

    def for_config(self, config: LiveConfig) -> _Entry:
        """The model of ``config``'s architecture; random weights re-drawn in place when the seed
        changed (no rebuild, no retrace). Call on the engine thread."""
        entry = self.get(config.architecture, config.seed)  # a new model is drawn from the seed as it is built
        if not config.trained and entry.seed != config.seed:
            with tf.device(entry.device):
                seed_weights(entry.model, config.seed)
            entry.seed = config.seed
        return entry

    def trace_pending(self, limit: int | None = None) -> int:
        """Trace the graphs of the cached models still running eagerly (at most ``limit``), most
        recently used model first; returns how many. Call on the engine thread (the idle tracer
        does), or from tests.
        """
        with self._lock:
            pending = [graph for entry in reversed(self._entries.values()) for graph in entry.pending()][:limit]
        for graph in pending:
            graph.trace()
        return len(pending)

    def weight_bytes(self) -> int:
        """Bytes of the cached models' weights."""
        return sum(entry.weight_bytes for entry in self._entries.values())

    def __len__(self):
        return len(self._entries)


MODELS = ModelCache()
TRACE_AFTER_IDLE_SECONDS = 1.0  # the engine traces new models after this long without a request


# ---------------------------------------------------------------- entry points


_ENGINE_THREAD = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine")


def on_engine_thread(function):
    """Run ``function`` on the one long-lived engine thread.

    Streamlit runs every session's reruns on threads of their own; the cached
    models are shared by all of them and called eagerly by the walkthrough, so one
    thread owns TensorFlow and sessions' computations never interleave on a model.
    """
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if threading.current_thread().name.startswith("engine"):
            return function(*args, **kwargs)
        _IDLE_TRACER.busy()
        try:
            return _ENGINE_THREAD.submit(function, *args, **kwargs).result()
        finally:
            _IDLE_TRACER.busy()
    return wrapper


class _IdleTracer:
    """Traces `MODELS`' new graphs on the engine thread once no request came for a while, one at a time.

    A request that arrives during a trace waits for that one trace (at most ~0.6 s at the sizes
    the app allows on 2 cores), not for every pending one; one that arrives before runs eagerly.
    """

    def __init__(self):
        self._last_use = time.monotonic()
        self._timer = None
        self._lock = threading.Lock()

    def busy(self) -> None:
        with self._lock:
            self._last_use = time.monotonic()
            if self._timer is None:
                self._arm(TRACE_AFTER_IDLE_SECONDS)

    def _arm(self, seconds: float) -> None:
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            waited = time.monotonic() - self._last_use
            if waited < TRACE_AFTER_IDLE_SECONDS:  # a request came meanwhile: wait the rest
                self._arm(TRACE_AFTER_IDLE_SECONDS - waited)
                return
            self._timer = None
        try:
            _ENGINE_THREAD.submit(self._trace_one)
        except RuntimeError:  # the interpreter is shutting down: nothing left to trace for
            pass

    def _trace_one(self) -> None:
        """Trace one graph; if it was one of several, look again right away (still idle?)."""
        if MODELS.trace_pending(limit=1):
            with self._lock:
                if self._timer is None:
                    self._arm(0.0)


_IDLE_TRACER = _IdleTracer()


def _stacks(stacks) -> tuple:
    """``stacks`` in `STACKS` order; ValueError naming any other name."""
    unknown = [stack for stack in stacks if stack not in STACKS]
    if unknown:
        raise ValueError(f"stacks must be among {STACKS}. Received: stacks={tuple(stacks)!r}")
    return tuple(stack for stack in STACKS if stack in stacks)


def _lines(lines, batch: int) -> tuple:
    """``lines`` as a tuple of row indices into a batch of ``batch`` lines (None: all); ValueError naming
    any line that does not exist."""
    if lines is None:
        return tuple(range(batch))
    lines = tuple(lines)
    missing = [line for line in lines if not isinstance(line, (int, np.integer)) or not 0 <= line < batch]
    if missing or not lines:
        raise ValueError(f"lines must name lines 0 to {batch - 1} (there are {batch}). Received: lines={lines!r}")
    return tuple(int(line) for line in lines)


@on_engine_thread  # its masks are TensorFlow tensors, made (and cached) where run_live makes them
def line_count(config: LiveConfig) -> int:
    """B, the number of source (= target) lines of ``config``; ValueError on bad input, as `run_live`."""
    validate(config)
    return prepared_inputs(config).batches.source.ids.shape[0]


def _dimensions(model, config: LiveConfig) -> tuple:
    """``(d_model, layers, heads)`` of ``model``, or of ``config`` when no model was built."""
    if model is None:
        return config.d_model, config.num_layers, config.num_heads
    return model.d_model, model.num_encoder_layers, model.num_heads


@on_engine_thread
def run_live(config: LiveConfig, cache: ModelCache = MODELS, *, stacks=STACKS, lines=None) -> LiveResult:
    """Compute what the pages draw for ``config``; ValueError on bad input.

    ``stacks``: the attention maps to compute (``result.attention`` has these keys only); a page
    that draws none passes ``()``: the model does not run, and a random-weights model is not even
    built (masks and positional encodings need only the configuration).
    ``lines``: the lines (0-based batch rows) whose attention maps are computed, in that order; None:
    every line. A line's maps do not depend on the other lines, so one line's are the same either way.
    """
    validate(config)
    stacks = _stacks(stacks)
    inputs = prepared_inputs(config)
    batches, predictions = inputs.batches, inputs.predictions
    check_budget(config, batches.source.ids.shape[0])
    rows = _lines(lines, batches.source.ids.shape[0])
    entry = cache.for_config(config) if stacks or config.trained else None  # masks need no model (~0.5 s build)
    device = entry.device if entry else resolve_device(config.device)
    d_model, layers, heads = _dimensions(entry.model if entry else None, config)
    graph = entry.attention_graph(stacks) if stacks else None
    source_padding, target_padding, future, target, run_source, run_target = inputs.masks
    with tf.device(device):
        started = time.perf_counter()
        attention = graph(*batch_rows(rows, batches.source.ids, batches.target.ids, run_source, run_target)) \
            if graph else {}
        attention = {name: weights.numpy() for name, weights in attention.items()}  # (L, B, H, N_q, N_k)
        seconds = time.perf_counter() - started
    encoding = encoding_array(config.seq_len, d_model)  # (N, D)
    (batch, n_source), n_target = batches.source.ids.shape, batches.target.ids.shape[1]
    applied = {
        "encoder": np.broadcast_to(run_source[:, 0], (batch, n_source, n_source)),
        "decoder": run_target[:, 0],
        "cross": np.broadcast_to(run_source[:, 0], (batch, n_target, n_source)),
    }
    return LiveResult(
        config=config,
        source_tokens=batches.source.tokens, target_tokens=batches.target.tokens,
        source_ids=batches.source.ids, target_ids=batches.target.ids,
        source_truncated=batches.source.truncated, target_truncated=batches.target.truncated,
        pad_ids=batches.pad_ids,
        source_padding_mask=source_padding, target_padding_mask=target_padding,
        subsequent_mask=future, target_mask=target,
        positional_encoding=encoding, attention=attention, applied_masks=applied,
        device=device, device_label=device_label(device), tf_version=tf.__version__,
        layers=layers, heads=heads,
        compute_seconds=seconds, traces=graph.traces if graph else 0, builds=cache.builds,
        notices=batches.notices,
        predictions=predictions,
        lines=rows,
    )


def batch_rows(rows: tuple, *batched) -> list:
    """Each of ``batched`` (NumPy, batch first: ids (B, N), masks (B, 1, N_q, N_k)) cut to ``rows``, as
    tensors. Used by `run_live` and by the walkthrough's Keras check. NumPy indexing, not ``tf.gather``:
    four eager gathers cost ~1 ms a call (the default forward pass itself takes ~7 ms)."""
    if rows == tuple(range(batched[0].shape[0])):
        return [tf.convert_to_tensor(values) for values in batched]
    return [tf.convert_to_tensor(values[list(rows)]) for values in batched]  # (B', ...)
