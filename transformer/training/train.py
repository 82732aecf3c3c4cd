"""Train a small Transformer on a synthetic task, as the paper trains (at this size).

    python -m transformer.training.train --task reverse [--steps 3000] [--seed 0] [--d-model 64] ...
    python -m transformer.training.train --task dates       # or translate: each task has its own defaults

Adam (β1 0.9, β2 0.98, ε 1e-9) with the warm-up schedule
lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5), label smoothing 0.1,
teacher forcing (the decoder reads <s> + target), padding left out of the loss,
greedy decoding for predictions. Writes ``<out>/<task>/weights.weights.h5`` and
``<out>/<task>/model.json`` (architecture, vocabulary, lengths, metrics).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from transformer.core.masks import padding_mask, target_mask
from transformer.core.model import Transformer
from transformer.core.tokens import Vocabulary
from transformer.decoding.search import greedy_decode, strip
from transformer.runtime.device import resolve_device
from transformer.tasks import PAD_ID, TASKS, get_task, make_batch
from transformer.tasks.images import IMAGE_TASKS
from transformer.training import next_token, timeline
from transformer.training.saved_model import PRETRAINED_DIR, TrainSpec, build_model, save
from transformer.training.vision import VISION_DEFAULTS, VisionSpec, save_vision, train_vision


@dataclass
class TrainResult:
    spec: TrainSpec
    model: Transformer
    vocab: Vocabulary
    history: list = field(default_factory=list)  # (step, loss, token accuracy)
    timeline: list = field(default_factory=list)  # transformer.training.timeline.Snapshot every timeline_every steps
    accuracy: float = float("nan")  # exact-sequence accuracy of greedy decoding on fresh inputs
    seconds: float = 0.0
    device: str = "/CPU:0"  # where it was trained (and its weights live)


class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) (paper, section 5.3)."""

    def __init__(self, d_model: int, warmup: int):
        self.d_model, self.warmup = d_model, warmup

    def __call__(self, step):
        step = tf.cast(step, tf.float32) + 1.0
        return self.d_model ** -0.5 * tf.minimum(step ** -0.5, step * self.warmup ** -1.5)

    def get_config(self):
        return {"d_model": self.d_model, "warmup": self.warmup}


def masks_for(src, decoder_input):
    return padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID)


def training_step(model, optimizer, vocab_size: int, smoothing: float, forward):
    """One traced training step: ``forward(*batch) -> (logits (B, N, V), labels (B, N))`` under the tape; the
    label-smoothed cross-entropy over the real labels (padding left out). Returns (loss, token accuracy)."""
    loss_fn = keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=smoothing, reduction=None)
    optimizer.build(model.trainable_variables)  # its slots made now: made in the first call, they traced it twice

    @tf.function(reduce_retracing=True, autograph=False)
    def step(*batch):
        with tf.GradientTape() as tape:
            logits, labels = forward(*batch)  # (B, N, V), (B, N)
            real = tf.cast(labels != PAD_ID, tf.float32)  # (B, N) padding left out of the loss
            per_token = loss_fn(tf.one_hot(labels, vocab_size), logits)  # (B, N)
            loss = tf.reduce_sum(per_token * real) / tf.reduce_sum(real)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        hits = tf.cast(tf.argmax(logits, -1, output_type=tf.int32) == labels, tf.float32)
        return loss, tf.reduce_sum(hits * real) / tf.reduce_sum(real)

    return step


def teacher_forcing(model):
    """``forward(src, decoder_input, labels)`` of an encoder-decoder: the decoder reads ``<s>`` + target."""
    def forward(src, decoder_input, labels):
        logits, _ = model(src, decoder_input, *masks_for(src, decoder_input), training=True)  # (B, N_t, V)
        return logits, labels
    return forward


def sources_of(task, rng: np.random.Generator, count: int, lengths) -> list[list[str]]:
    """``count`` random sources of ``task`` (a symbol task's lengths drawn from ``lengths``)."""
    return [task.sample(rng, lengths) for _ in range(count)]


def exact_accuracy(model, task_name: str, vocab: Vocabulary, lengths, count: int = 500, seed: int = 12345) -> float:
    """Share of fresh random sources whose greedy prediction equals the task's answer."""
    task = get_task(task_name)
    sources = sources_of(task, np.random.default_rng(seed), count, lengths)
    src, _, _ = make_batch(task, vocab, sources, lengths[1])
    predicted = greedy_decode(model, src, task.target_length(lengths[1]) + 1)
    right = [strip(row) == vocab.encode(task.solve(source)) for row, source in zip(predicted, sources)]
    return float(np.mean(right))


def _optimizer(spec: TrainSpec):
    """Adam with the paper's settings and warm-up schedule, or (``learning_rate`` above 0) at a constant rate."""
    if spec.learning_rate > 0:
        return keras.optimizers.Adam(spec.learning_rate)
    return keras.optimizers.Adam(WarmupSchedule(spec.d_model, spec.warmup), beta_1=0.9, beta_2=0.98, epsilon=1e-9)


def _batches(spec: TrainSpec, task, vocab, rng):
    """The step function's arguments for one batch: (src, decoder input, labels), or (ids,) for a decoder-only
    task."""
    lengths = (spec.min_len, spec.max_len)
    if task.decoder_only:
        return (next_token.line_batch(task, vocab, rng, spec.batch, lengths),)
    return make_batch(task, vocab, sources_of(task, rng, spec.batch, lengths), spec.max_len)


def final_accuracy(model, spec: TrainSpec, vocab) -> float:
    """Exact-sequence accuracy on fresh sources; a decoder-only task: next-token accuracy on the repeated
    segment's second occurrence (its 2nd token on)."""
    if get_task(spec.task).decoder_only:
        return next_token.induction_accuracy(model, vocab)["second"]
    return exact_accuracy(model, spec.task, vocab, (spec.min_len, spec.max_len))


def train(spec: TrainSpec, on_progress=None, should_stop=None, log_every: int = 100,
          device: str | None = None, timeline_every: int = 0, on_snapshot=None) -> TrainResult:
    """Train from scratch on ``device`` (None: the GPU when there is one). ``on_progress(step, loss, accuracy)``
    is called every ``log_every`` steps; ``should_stop()`` returning True ends training early. With
    ``timeline_every`` K > 0, a `timeline.Snapshot` of a fixed probe batch is taken at step 0 and every K steps
    (``result.timeline``; ``on_snapshot(snapshot)`` as each is taken)."""
    spec.validate()
    device = device or resolve_device("auto")
    with tf.device(device):
        result = _train(spec, on_progress, should_stop, log_every, (timeline_every, on_snapshot))
    result.device = device
    return result


def _train(spec: TrainSpec, on_progress, should_stop, log_every: int, recording) -> TrainResult:
    keras.utils.set_random_seed(spec.seed)
    task = get_task(spec.task)
    vocab = task.vocabulary()
    model = build_model(spec, len(vocab))
    optimizer = _optimizer(spec)
    forward = next_token.forward(model) if task.decoder_only else teacher_forcing(model)
    step_fn = training_step(model, optimizer, len(vocab), spec.label_smoothing, forward)
    rng = np.random.default_rng(spec.seed)
    result, started = TrainResult(spec, model, vocab), time.perf_counter()
    record = _recorder(result, *recording)
    record(0, float("nan"))
    for step in range(1, spec.steps + 1):
        loss, accuracy = step_fn(*_batches(spec, task, vocab, rng))
        record(step, loss)
        if step % log_every == 0 or step == spec.steps:
            result.history.append((step, float(loss), float(accuracy)))
            if on_progress:
                on_progress(step, float(loss), float(accuracy))
        if should_stop and should_stop():
            break
    result.seconds = time.perf_counter() - started
    result.accuracy = final_accuracy(model, spec, vocab)
    return result


def _recorder(result: TrainResult, every: int, on_snapshot):
    """``record(step, loss)``: a `timeline.Snapshot` into ``result.timeline`` at step 0, every ``every`` steps and
    the last (nothing when ``every`` is 0)."""
    spec = result.spec
    probe = timeline.make_probe(spec.task, result.vocab, lengths=(spec.min_len, spec.max_len)) if every > 0 else None

    def record(step: int, loss) -> None:
        if probe is None or (step % every and step != result.spec.steps):
            return
        shot = timeline.snapshot(result.model, probe, result.vocab, step, float(loss))
        result.timeline.append(shot)
        if on_snapshot:
            on_snapshot(shot)

    return record


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default=TrainSpec.task, help=f"one of {', '.join([*TASKS, *IMAGE_TASKS])}")
    task = parser.parse_known_args(argv)[0].task
    if task in IMAGE_TASKS:  # a Vision Transformer (transformer.training.vision)
        _main_vision(parser, argv)
        return
    for name, value in asdict(TrainSpec.for_task(task)).items():  # the task's own defaults (TASK_DEFAULTS)
        if name != "task":
            parser.add_argument(f"--{name.replace('_', '-')}", type=int if value is None else type(value),
                                default=value)  # None: num_kv_heads, one per query head
    parser.add_argument("--out", type=Path, default=PRETRAINED_DIR, help="folder that receives <task>/")
    args = vars(parser.parse_args(argv))
    out = args.pop("out")
    spec = TrainSpec(**args)

    def report(step, loss, accuracy):
        print(f"step {step:5d}/{spec.steps}  loss {loss:.4f}  token accuracy {accuracy:.3f}", flush=True)

    result = train(spec, on_progress=report)
    folder = save(result, out / spec.task)
    measure = "next-token accuracy on repeated segments" if spec.architecture == "decoder-only" else \
        "exact-sequence accuracy"
    print(f"{measure} {result.accuracy:.4f} on fresh inputs; {result.seconds:.0f} s; wrote {folder}")


def _main_vision(parser, argv) -> None:
    for name, value in asdict(VISION_DEFAULTS[parser.parse_known_args(argv)[0].task]).items():
        if name != "task":
            parser.add_argument(f"--{name.replace('_', '-')}", type=int if value is None else type(value),
                                default=value)
    parser.add_argument("--out", type=Path, default=PRETRAINED_DIR, help="folder that receives <task>/")
    args = vars(parser.parse_args(argv))
    out = args.pop("out")
    spec = VisionSpec(**args)
    result = train_vision(spec, on_progress=lambda step, loss, accuracy: print(
        f"step {step:5d}/{spec.steps}  loss {loss:.4f}  batch accuracy {accuracy:.3f}", flush=True))
    folder = save_vision(result, out / spec.task)
    print(f"accuracy {result.accuracy:.4f} on images it never trained on; {result.seconds:.0f} s; wrote {folder}")


if __name__ == "__main__":
    main()
