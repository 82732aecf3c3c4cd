"""Which heads a trained model needs: each head ablated in turn, and the change in its task's loss (teacher forced)
and exact accuracy (greedy decoding) on fresh examples of the task.

One traced loss function and one pair of traced decoding functions per model and ablation kind serve every head
(the active heads are an argument: `transformer.core.ablation.active_heads`).
"""

from __future__ import annotations

import collections
import functools
import hashlib
import json
import time
from dataclasses import dataclass

import keras
import numpy as np
import tensorflow as tf

from transformer.core.ablation import ABLATIONS, HeadAblation, active_heads, check_ablation, head_means
from transformer.core.masks import padding_mask, target_mask
from transformer.core.shape import STACKS
from transformer.decoding.search import greedy_decode, strip
from transformer.live.sources import source_of
from transformer.runtime.stored_results import recall, remember
from transformer.tasks import PAD_ID, make_batch
from transformer.training.pretrained import load_pretrained
from transformer.training.saved_model import CONFIG_FILE, PRETRAINED_DIR

MAX_EXAMPLES = 1000


@dataclass(frozen=True)
class Importance:
    """A trained model's heads by what ablating each one costs. ``loss``, ``accuracy``: the model's own, on
    ``count`` fresh examples; ``loss_change``, ``accuracy_change``: ``(stacks, L, H)`` (`STACKS` order), the
    ablated model's minus the model's own (an accuracy change of −0.4: 40 points fewer lines right)."""

    name: str
    kind: str
    count: int
    loss: float
    accuracy: float
    loss_change: np.ndarray
    accuracy_change: np.ndarray
    seconds: float

    def ranked(self, limit: int = 5) -> list[tuple[tuple, float, float]]:
        """The ``limit`` heads whose ablation costs the most: ``((stack, layer, head), accuracy change, loss
        change)``, the largest accuracy drop first (the loss rise breaks ties)."""
        stacks, layers, heads = self.accuracy_change.shape
        triples = [(STACKS[s], layer, head) for s in range(stacks) for layer in range(layers) for head in range(heads)]
        order = sorted(triples, key=lambda t: (self.accuracy_change[STACKS.index(t[0]), t[1], t[2]],
                                               -self.loss_change[STACKS.index(t[0]), t[1], t[2]]))
        return [(t, float(self.accuracy_change[STACKS.index(t[0]), t[1], t[2]]),
                 float(self.loss_change[STACKS.index(t[0]), t[1], t[2]])) for t in order[:limit]]


def ablated_loss(model, kind: str):
    """Traced ``loss(src, decoder_input, labels, active, means)``: mean cross-entropy over the labels that are not
    padding, teacher forced, with the heads ``active`` (``(stacks, L, H)``) lets through and the others replaced by
    zeros or by ``means`` ``(stacks, L, H, d_v)``."""
    name = f"_importance_loss_{kind}"
    if not hasattr(model, name):
        ids = tf.TensorSpec((None, None), tf.int32)
        active = tf.TensorSpec((len(STACKS), model.num_layers, model.num_heads), tf.float32)
        means = tf.TensorSpec((len(STACKS), model.num_layers, model.num_heads, model.d_model // model.num_heads),
                              tf.float32)

        @tf.function(input_signature=[ids, ids, ids, active, means], autograph=False)
        def loss(src, decoder_input, labels, heads, head_means):
            logits, _ = model(src, decoder_input, padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID),
                              hook=HeadAblation.of_active(heads, kind, head_means))  # (B, N_t, V)
            per_token = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)  # (B, N_t)
            real = tf.cast(labels != PAD_ID, tf.float32)  # (B, N_t)
            return tf.reduce_sum(per_token * real) / tf.reduce_sum(real)

        setattr(model, name, loss)
    return getattr(model, name)


def _check(count, kind: str) -> None:
    if kind not in ABLATIONS:
        raise ValueError(f"kind must be one of {ABLATIONS}. Received: kind={kind!r}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_EXAMPLES:
        raise ValueError(f"count must be a whole number from 1 to {MAX_EXAMPLES}. Received: count={count!r}")


@dataclass(frozen=True)
class _Examples:
    """``count`` fresh examples of a trained model's task, as teacher-forcing arrays and the right answers."""

    src: np.ndarray  # (B, N_s)
    decoder_input: np.ndarray  # (B, T + 1)
    labels: np.ndarray  # (B, T + 1)
    answers: list
    steps: int  # greedy steps: the longest target and </s>


@functools.lru_cache(maxsize=8)
def _examples(name: str, count: int, seed: int, device: str) -> _Examples:
    pretrained = load_pretrained(name, device)
    task, vocab = pretrained.rules, pretrained.vocab
    rng = np.random.default_rng(seed)
    sources = [task.sample(rng, pretrained.lengths) for _ in range(count)]
    src, decoder_input, labels = make_batch(task, vocab, sources, pretrained.lengths[1])
    answers = [vocab.encode(task.solve(source)) for source in sources]
    return _Examples(src, decoder_input, labels, answers, task.target_length(pretrained.lengths[1]) + 1)


@functools.lru_cache(maxsize=8)
def _example_means(name: str, count: int, seed: int, device: str) -> np.ndarray:
    """Mean-ablation's means for a study on these examples: each head's context over their real positions, the
    model without ablation, teacher forced on the right answers (`head_means`), ``(stacks, L, H, d_v)``."""
    model, examples = load_pretrained(name, device).model, _examples(name, count, seed, device)
    with tf.device(device):
        return head_means(model, examples.src, examples.decoder_input, padding_mask(examples.src, PAD_ID),
                          target_mask(examples.decoder_input, PAD_ID), (PAD_ID,))


_MEASURED: collections.OrderedDict = collections.OrderedDict()  # (name, ablate, count, kind, seed, device) -> ...
MEASURES_KEPT = 2048


def _keys(name: str, ablate: tuple, count: int, kind: str, seed: int, device: str) -> tuple[tuple, str]:
    """A measure's key in this process and in the data directory, ``ablate`` checked against the model."""
    model = load_pretrained(name, device).model
    ablate = check_ablation(ablate, kind, model.stacks, model.num_layers, model.num_heads)
    kept_key = json.dumps([model_identity(name), [list(triple) for triple in ablate], count, kind, seed, device])
    return (name, ablate, count, kind, seed, device), kept_key


def _recalled(key: tuple, kept_key: str) -> bool:
    """Whether the measure of ``key`` is in this process, after looking in the data directory."""
    if key not in _MEASURED and (found := recall("measures", kept_key)) is not None:
        _MEASURED[key] = tuple(found)  # measured before this server (re)started: kept in the data directory
    return key in _MEASURED


def _keep(key: tuple, kept_key: str, value: tuple) -> None:
    _MEASURED[key] = value
    remember("measures", kept_key, list(value))
    while len(_MEASURED) > MEASURES_KEPT:
        _MEASURED.popitem(last=False)


def is_kept(name: str, ablate: tuple = (), count: int = 200, kind: str = "zero", seed: int = 0,
            device: str = "/CPU:0") -> bool:
    """Whether `measure_ablation` of these is kept (this process or the data directory): it then costs nothing."""
    _check(count, kind)
    return _recalled(*_keys(name, ablate, count, kind, seed, device))


def keep_measure(value: tuple, name: str, ablate: tuple = (), count: int = 200, kind: str = "zero", seed: int = 0,
                 device: str = "/CPU:0") -> None:
    """Keep ``value``, a `measure_ablation` made elsewhere (the background lane's process), as if measured here."""
    _keep(*_keys(name, ablate, count, kind, seed, device), tuple(value))


def measure_ablation(name: str, ablate: tuple = (), count: int = 200, kind: str = "zero", seed: int = 0,
            device: str = "/CPU:0") -> tuple[float, float]:
    """``(loss, exact accuracy)`` of the trained model ``name`` with the heads ``ablate`` (``(stack, layer, head)``
    triples) ablated, on ``count`` fresh examples of its task drawn from ``seed``; remembered. ValueError for an
    unknown model, kind, count or head."""
    _check(count, kind)
    model = load_pretrained(name, device).model
    key, kept_key = _keys(name, ablate, count, kind, seed, device)
    ablate = key[1]
    if not _recalled(key, kept_key):
        examples = _examples(name, count, seed, device)
        active = active_heads(ablate, model.num_layers, model.num_heads)  # (S, L, H)
        means = _example_means(name, count, seed, device)  # (S, L, H, d_v)
        with tf.device(device):
            value = float(ablated_loss(model, kind)(examples.src, examples.decoder_input, examples.labels,
                                                      tf.constant(active), tf.constant(means)))
            predicted = greedy_decode(model, examples.src, examples.steps, (active, kind, means))
        right = [strip(row) == answer for row, answer in zip(predicted, examples.answers)]
        _keep(key, kept_key, (value, float(np.mean(right))))
    return _MEASURED[key]


def model_identity(name: str) -> str:
    """What a measure's result depends on of the model: a kept model's name is its own (a training job's key); a
    shipped one's weights may change with a new version: its model.json's hash goes with its name."""
    if source_of(name).trained_here:
        return name
    return f"{name}:{hashlib.sha256((PRETRAINED_DIR / name / CONFIG_FILE).read_bytes()).hexdigest()[:16]}"


def measured(name: str, count: int = 200, kind: str = "zero", seed: int = 0, device: str = "/CPU:0") -> bool:
    """Whether every head of ``name`` has been measured with these settings, in this process or the data directory
    (`head_importance` is then quick)."""
    return all(is_kept(name, ablate, count, kind, seed, device) for ablate in [(), *(((t),) for t in heads_of(name))])


def heads_of(name: str) -> list[tuple[str, int, int]]:
    """Every head of the trained model ``name``: ``(stack, layer, head)``, stack by stack, layer by layer."""
    model = load_pretrained(name).model
    return [(stack, layer, head) for stack in model.stacks for layer in range(model.num_layers)
            for head in range(model.num_heads)]


def head_importance(name: str, count: int = 200, kind: str = "zero", seed: int = 0, device: str = "/CPU:0",
                    on_progress=None) -> Importance:
    """Every head of the trained model ``name`` ablated in turn (``kind``: "zero" or "mean") on ``count`` fresh
    examples of its task drawn from ``seed`` (`measure_ablation`, remembered). ``on_progress(done, total)`` after each
    head. ValueError for an unknown model, kind or count."""
    _check(count, kind)
    started = time.perf_counter()
    base_loss, base_accuracy = measure_ablation(name, (), count, kind, seed, device)
    triples = heads_of(name)
    _, layers, heads = triples[-1]
    loss_change = np.full((len(STACKS), layers + 1, heads + 1), np.nan)
    accuracy_change = np.full((len(STACKS), layers + 1, heads + 1), np.nan)
    for done, (stack, layer, head) in enumerate(triples, start=1):
        value, accuracy = measure_ablation(name, ((stack, layer, head),), count, kind, seed, device)
        loss_change[STACKS.index(stack), layer, head] = value - base_loss
        accuracy_change[STACKS.index(stack), layer, head] = accuracy - base_accuracy
        if on_progress:
            on_progress(done, len(triples))
    return Importance(name, kind, count, base_loss, base_accuracy, loss_change, accuracy_change,
                      time.perf_counter() - started)


__all__ = ["MAX_EXAMPLES", "Importance", "head_importance", "heads_of", "is_kept", "keep_measure", "measure_ablation",
           "measured"]
