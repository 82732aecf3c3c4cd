"""Built models, kept per architecture and bounded by count and weight bytes, with their functions.

A random-weights model is built once per key (its sizes, options and device: `transformer.live.sources`) and its
weights are re-drawn in place for a new seed; a trained model is the one its source loads. Each model's functions
(`ModelFunction`s) are made on first use and traced later by the idle engine.
"""

from __future__ import annotations

import collections
import gc
import threading
from dataclasses import fields

import numpy as np
import tensorflow as tf

from transformer.core.ablation import HeadAblation, active_heads
from transformer.core.blockwise import pooled_maps
from transformer.core.linear import zero_kernels
from transformer.core.model import Transformer
from transformer.core.shape import STACKS, ModelShape
from transformer.core.weight_init import seed_weights
from transformer.live.config import MAX_SEQ_LEN, VOCAB_SIZE
from transformer.runtime.engine_thread import when_idle
from transformer.runtime.model_function import ModelFunction
from transformer.runtime.tf_patches import clear_kernel_cache

MODEL_CACHE_SIZE = 4
MODEL_CACHE_BYTES = 1536 * 2**20  # the cached models' weights: two of the largest (d_model 1024, d_ff 4096, 6 layers)
RELEASE_AFTER_EVICTED_BYTES = 256 * 2**20  # evicted weights that are collected at once (see collect_evicted)


class CachedModel:
    """A built model and its `ModelFunction`s (``functions``: key -> function), each made on first use:
    the idle engine traces only functions some page has asked for."""

    def __init__(self, model, device: str, seed: int | None = None):
        self.model = model
        self.device = device
        self.seed = seed  # the seed the random weights were last drawn from (None: trained weights)
        self.functions = {}
        self._active = None  # `_active_heads`, made on first use
        self._means = None  # `_head_means`, made on first use
        self.weight_bytes = sum(int(np.prod(weight.shape)) * np.dtype(weight.dtype).itemsize
                                for weight in model.weights)

    def attention_function(self, stacks: tuple, ablate: tuple = (), kind: str = "zero",
                           means=None, pool: int = 1) -> ModelFunction:
        """``f(src, tgt, src_mask, tgt_mask) -> {stack: (L, B, H, N_q, N_k)}`` for ``stacks`` (in `STACKS`
        order) only: the decoder does not run for the encoder alone. With ``ablate`` (checked ``(stack, layer,
        head)`` triples) those heads are ablated (``kind``; "mean" replaces them by ``means`` ``(stacks, L, H,
        d_v)``): one function per kind, the heads and means set before each call. ``pool > 1``: each map
        max-pooled ``pool × pool`` on the model's device (`transformer.core.blockwise.pooled_maps`)."""
        kind = kind if ablate else None
        if ablate:
            self._set_active(ablate, means)
        key = ("attention", stacks, *([kind] if kind else []), *([("pool", pool)] if pool > 1 else []))
        return self.function(key, lambda: self._attention(stacks, kind, pool))

    def function(self, key, make_function) -> ModelFunction:
        """The `ModelFunction` of ``make_function()`` stored under ``key`` (made on first use)."""
        if key not in self.functions:
            self.functions[key] = ModelFunction(make_function(), self.device)
        return self.functions[key]

    def pending(self) -> list:
        """Functions still running eagerly."""
        return [function for function in self.functions.values() if not function.traced]

    def _active_heads(self) -> tf.Variable:
        """The heads an ablated function keeps, ``(stacks, L, H)``: set before each call (on the engine thread)."""
        if self._active is None:
            with tf.device(self.device):
                self._active = tf.Variable(active_heads((), self.model.num_layers, self.model.num_heads),
                                         trainable=False)
        return self._active

    def _head_means(self) -> tf.Variable:
        """Mean-ablation's means, ``(stacks, L, H, d_v)``: set before each call, as the active heads."""
        if self._means is None:
            model = self.model
            with tf.device(self.device):
                self._means = tf.Variable(tf.zeros((len(STACKS), model.num_layers, model.num_heads,
                                                    model.d_model // model.num_heads)), trainable=False)
        return self._means

    def ablation_hook(self, ablate: tuple, kind: str, means=None):
        """None without ablated heads; else a `HeadAblation` reading the active heads (and ``means`` for "mean"), set
        to ``ablate`` now: a function made with it serves every set of heads of ``kind``."""
        if not ablate:
            return None
        active = self._set_active(ablate, means)
        return HeadAblation.of_active(active, kind, self._head_means() if kind == "mean" else None)

    def _set_active(self, ablate: tuple, means=None) -> tf.Variable:
        """The active-heads variable, every head active but ``ablate``'s; the means variable set to ``means``."""
        active = self._active_heads()
        active.assign(active_heads(ablate, self.model.num_layers, self.model.num_heads))
        if means is not None:
            self._head_means().assign(means)
        return active

    def _attention(self, stacks: tuple, kind: str | None = None, pool: int = 1):
        active = self._active_heads() if kind else None
        means = self._head_means() if kind == "mean" else None

        def attention(src, tgt, src_mask, tgt_mask):
            hook = HeadAblation.of_active(active, kind, means) if kind else None
            weights = self.model.attention_maps(stacks, src, tgt, src_mask, tgt_mask, hook=hook)
            return {name: pooled_maps(tf.stack(weights[name]), pool) for name in stacks}  # (L, B, H, N_q/p, N_k/p)
        return attention


def shape_key(shape: ModelShape, device: str) -> tuple:
    """A random-weights model's key: ``(its ModelShape, device)``, the shape read from ``shape`` (a `LiveConfig`'s
    shape fields, by `dataclasses.fields`) with its key/value heads counted, so that None and the head count are one
    model (`build_cached_model` builds it; `model_bytes` sizes it)."""
    own = {field.name: getattr(shape, field.name) for field in fields(ModelShape)}
    return ModelShape(**{**own, "num_kv_heads": shape.kv_heads}), device


def build_cached_model(key, seed: int = 0, load=None) -> CachedModel:
    """A built model for a random-weights key (`shape_key`) with the weights of ``seed``,
    or, with ``load``, the model ``load()`` returns (a trained one's: its source loads it)."""
    device = key[-1]  # a source's key ends with the device (random weights: `shape_key`'s (shape, device))
    if load is not None:
        return CachedModel(load(), device)
    with tf.device(device), zero_kernels():  # seed_weights draws every weight: Keras's draws would be lost
        model = Transformer.from_shape(key[0], VOCAB_SIZE, VOCAB_SIZE, dropout=0.0, max_len=MAX_SEQ_LEN)
        model.build((None, None), (None, None))  # every weight, before tracing
        seed_weights(model, seed)
    return CachedModel(model, device, seed)


def model_bytes(key) -> int:
    """Bytes of the float32 weights `build_cached_model` makes for a random-weights key (`shape_key`). Known
    before building, so that the cache makes room first."""
    shape = key[0]
    d_model, d_ff, layers, architecture = shape.d_model, shape.d_ff, shape.num_layers, shape.architecture
    kv_width = d_model // shape.num_heads * shape.kv_heads  # the key and value projections' outputs
    attention = 2 * (d_model * d_model + d_model) + 2 * (d_model * kv_width + kv_width)  # kernels and biases
    feed_forward = 2 * d_model * d_ff + d_ff + d_model if d_ff else 0
    norm = 2 * d_model  # gamma, beta
    sublayers = 2 if d_ff else 1
    encoder_layer = attention + feed_forward + sublayers * norm
    decoder_layer = 2 * attention + feed_forward + (sublayers + 1) * norm
    sides = 2 if architecture == "encoder-decoder" else 1
    if architecture == "decoder-only":
        encoder_layer, decoder_layer = 0, attention + feed_forward + sublayers * norm  # no cross-attention
    elif architecture == "encoder-only":
        decoder_layer = 0
    final_norms = sides * norm if shape.norm == "pre" else 0
    embeddings_and_output = sides * VOCAB_SIZE * d_model + d_model * VOCAB_SIZE + VOCAB_SIZE
    learned = sides * MAX_SEQ_LEN * d_model if shape.positions == "learned" else 0
    return 4 * (layers * (encoder_layer + decoder_layer) + embeddings_and_output + learned + final_norms)


def shape_bytes(shape: ModelShape) -> int:
    """Bytes of the float32 weights of a random-weights model of ``shape`` (`model_bytes`), on any device."""
    return model_bytes(shape_key(shape, "/CPU:0"))


def release_kernels() -> None:
    """Drop the kernels TensorFlow keeps for every op and graph run so far, also for models long gone.
    The cached models make theirs again on their next run (~0.2 s once for a traced graph)."""
    clear_kernel_cache()


def collect_evicted() -> None:
    """Free evicted models now: a Keras model is a web of reference cycles, so an evicted one otherwise
    waits for the collector's next full pass, which comes rarely in this server (docs/performance.md)."""
    gc.collect()


class ModelCache:
    """At most ``size`` built models whose weights take at most ``budget_bytes`` together (the newest is
    kept whatever its size), least recently used evicted before a new one is built; thread-safe.

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

    def get(self, key, seed: int = 0, load=None, load_bytes: int = 0) -> CachedModel:
        """The model of ``key`` (`transformer.live.sources.ModelSource.model_key`), unless cached: random weights
        drawn from ``seed``, or, with ``load``, the model it returns (``load_bytes``: the room it needs; 0 for a
        trained model's, small: no room made)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
            self._make_room(load_bytes if load else model_bytes(key))
            entry = build_cached_model(key, seed, load)
            self.builds += 1
            self._entries[key] = entry
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

    def holds(self, key) -> bool:
        """Whether the model of ``key`` is built and kept (no build, no wait for one)."""
        with self._lock:
            return key in self._entries

    def entry(self, key, seed: int = 0, load=None, load_bytes: int = 0) -> CachedModel:
        """`get`, with random weights re-drawn in place when the seed changed (no rebuild, no retrace); a loaded
        model keeps its weights, asked for with its ``load`` or by its key alone (its ``seed`` is None). Call on
        the engine thread (`transformer.live.plan.Plan.model`)."""
        entry = self.get(key, seed, load, load_bytes)  # a new model is drawn from the seed as it is built
        if load is None and entry.seed is not None and entry.seed != seed:
            with tf.device(entry.device):
                seed_weights(entry.model, seed)
            entry.seed = seed
        return entry

    def trace_pending(self, limit: int | None = None) -> int:
        """Trace the functions of the cached models still running eagerly (at most ``limit``), most
        recently used model first; returns how many. Call on the engine thread (the idle tracer does)."""
        with self._lock:
            pending = [function for entry in reversed(self._entries.values())
                       for function in entry.pending()][:limit]
        for function in pending:
            function.trace()
        return len(pending)

    def weight_bytes(self) -> int:
        """Bytes of the cached models' weights."""
        return sum(entry.weight_bytes for entry in self._entries.values())

    def __len__(self):
        return len(self._entries)


MODELS = ModelCache()
when_idle(lambda: MODELS.trace_pending(limit=1))  # the engine traces one pending function at a time when idle
