"""Training a Vision Transformer (`transformer.core.vision`) on an image task (`transformer.tasks.images`), saving it
and reading images with it: ``python -m transformer.training.train --task match`` (or ``digits``)."""

from __future__ import annotations

import functools
import json
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import ClassVar

import keras
import numpy as np
import tensorflow as tf

from transformer.core.shape import ModelShape
from transformer.core.vision import VisionTransformer
from transformer.runtime.device import resolve_device
from transformer.tasks.images import IMAGE, check_image, get_image_task

WEIGHTS_FILE, CONFIG_FILE = "weights.weights.h5", "model.json"


@dataclass(frozen=True)
class VisionSpec(ModelShape):
    """One training run of a Vision Transformer: its shape (a `ModelShape`: a pre-norm encoder with learned
    positions, its own defaults) and how it is trained (Adam at ``learning_rate``, fresh images each step for match,
    shifted training digits for digits)."""

    reads_images: ClassVar[bool] = True

    d_ff: int = 0  # attention-only unless asked
    positions: str = "learned"
    norm: str = "pre"
    architecture: str = "encoder-only"
    task: str = "match"
    dropout: float = 0.0
    steps: int = 1500
    batch: int = 128
    learning_rate: float = 1e-3
    seed: int = 0

    def validate(self) -> None:
        get_image_task(self.task)
        self.check_shape()
        if self.num_layers < 1 or self.d_ff < 0:
            raise ValueError(f"num_layers must be positive and d_ff 0 or more. Received: num_layers="
                             f"{self.num_layers}, d_ff={self.d_ff}")
        vit = (self.positions, self.norm, self.architecture, self.num_kv_heads)
        if vit != ("learned", "pre", "encoder-only", None):
            raise ValueError(f"A Vision Transformer here is a pre-norm encoder with learned positions and a key/value "
                             f"head per head. Received: positions={self.positions!r}, norm={self.norm!r}, "
                             f"architecture={self.architecture!r}, num_kv_heads={self.num_kv_heads}")
        if self.steps < 1 or self.batch < 1 or self.learning_rate <= 0:
            raise ValueError(f"steps, batch and learning_rate must be positive. Received: steps={self.steps}, "
                             f"batch={self.batch}, learning_rate={self.learning_rate}")


# How the shipped models were trained (docs/trained_models.md): match attention-only, as measured before the
# issue was filed; digits with feed-forward layers and dropout.
VISION_DEFAULTS = {
    "match": VisionSpec(task="match", steps=600, seed=0),
    "digits": VisionSpec(task="digits", d_ff=128, dropout=0.1, steps=2000, seed=0),
}


@dataclass
class VisionResult:
    spec: VisionSpec
    model: VisionTransformer
    accuracy: float  # on images it never trained on (`ImageTask.evaluation`)
    seconds: float
    history: list  # (step, loss, batch accuracy)


def build_vision(spec: VisionSpec) -> VisionTransformer:
    model = VisionTransformer(len(get_image_task(spec.task).classes), spec.d_model, spec.num_heads, spec.num_layers,
                              spec.d_ff, spec.dropout)
    model.build((None, 8, 8))
    return model


def accuracy_of(model: VisionTransformer, task: str, count: int = 1000) -> float:
    """The share of ``count`` evaluation images (digits: the 300 held out) that ``model`` classifies right."""
    images, labels = get_image_task(task).evaluation(count)
    logits, _ = model(images)
    return float(np.mean(np.argmax(logits, -1) == labels))


def vision_step(model: VisionTransformer, optimizer):
    """One traced training step ``step(images (B, 8, 8), labels (B,)) -> (loss, batch accuracy)``."""
    optimizer.build(model.trainable_variables)  # its slots made now: made in the first call, they traced it twice

    @tf.function(autograph=False)
    def step(images, labels):
        with tf.GradientTape() as tape:
            logits, _ = model(images, training=True)  # (B, C)
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss, tf.reduce_mean(tf.cast(tf.argmax(logits, -1, output_type=tf.int32) == labels, tf.float32))

    return step


def train_vision(spec: VisionSpec, on_progress=None, log_every: int = 100, should_stop=None,
                 device: str | None = None) -> VisionResult:
    """Train a Vision Transformer as ``spec`` says on ``device`` (None: the GPU when there is one);
    ``on_progress(step, loss, accuracy)`` every ``log_every`` steps; ``should_stop()`` ends it early, keeping what
    it learned."""
    spec.validate()
    keras.utils.set_random_seed(spec.seed)
    task, rng = get_image_task(spec.task), np.random.default_rng(spec.seed)
    with tf.device(device or resolve_device("auto")):
        model = build_vision(spec)
        step = vision_step(model, keras.optimizers.Adam(spec.learning_rate))
        started, history = time.perf_counter(), []
        for number in range(1, spec.steps + 1):
            images, labels = task.sample(rng, spec.batch)
            loss, accuracy = step(tf.constant(images), tf.constant(labels))
            stopping = should_stop is not None and should_stop()
            if number % log_every == 0 or number == spec.steps or stopping:
                history.append((number, float(loss), float(accuracy)))
                if on_progress:
                    on_progress(*history[-1])
            if stopping:
                break
        seconds = time.perf_counter() - started
        return VisionResult(spec, model, accuracy_of(model, spec.task), seconds, history)


def rebuild_vision(spec: VisionSpec, weights: list, device: str) -> VisionTransformer:
    """A model of ``spec`` with ``weights`` (Keras's order, as `get_weights` gives them) on ``device``."""
    with tf.device(device):
        model = build_vision(spec)
        model.set_weights(weights)
    return model


def save_vision(result: VisionResult, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    result.model.save_weights(folder / WEIGHTS_FILE)
    meta = {"kind": "vision", "spec": asdict(result.spec), "classes": list(get_image_task(result.spec.task).classes),
            "accuracy": result.accuracy, "train_seconds": round(result.seconds, 1),
            "final_loss": result.history[-1][1] if result.history else None,
            "tensorflow": tf.__version__, "keras": keras.__version__}
    (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return folder


@dataclass
class PretrainedVision:
    """A trained Vision Transformer: ``read_image`` classifies one image and returns its attention."""

    name: str
    spec: VisionSpec
    model: VisionTransformer
    classes: tuple
    accuracy: float
    device: str
    reads: int = field(default=0, init=False, compare=False)  # images read so far
    _graph: tf.types.experimental.GenericFunction | None = field(default=None, init=False, repr=False, compare=False)

    def read_image(self, image) -> tuple[np.ndarray, dict]:
        """``image (8, 8)`` in [0, 1] -> ``(probabilities (C,), {"encoder": (L, H, 17, 17)})``: token 0 is CLS,
        token ``1 + p`` patch p. ValueError naming a wrong shape or a pixel outside [0, 1]."""
        image = check_image(image)
        with tf.device(self.device):
            logits, weights = self._forward()(image[None])  # (1, C), L × (1, H, 17, 17)
        probabilities = tf.nn.softmax(logits[0]).numpy()
        return probabilities, {"encoder": np.stack([layer[0].numpy() for layer in weights])}

    def _forward(self):
        """The model's call: eager for the first image read (a page's first visit traces nothing), then one graph
        for any batch, traced on the second (an edit of the image): ~0.2 s once, then ~2 ms a read against ~34 ms
        eager (2 cores; docs/performance.md)."""
        self.reads += 1
        if self.reads == 1:
            return self.model
        if self._graph is None:
            self._graph = tf.function(lambda images: self.model(images), autograph=False,
                                      input_signature=[tf.TensorSpec((None, IMAGE, IMAGE), tf.float32)])
        return self._graph

    @property
    def positions(self) -> np.ndarray:
        """The learned position table ``(17, d_model)``: row 0 CLS's, row ``1 + p`` patch p's."""
        return self.model.positions.table.numpy()


@functools.lru_cache(maxsize=8)
def shipped_vision(folder: Path, name: str, device: str) -> PretrainedVision:
    """The shipped Vision Transformer ``name`` (``"match"``, ``"digits"``) in ``folder``, loaded once per device;
    ValueError when its weights are missing."""
    if not (folder / WEIGHTS_FILE).exists():
        raise ValueError(f"The weights of {name!r} are missing: run `python -m transformer.training.train --task "
                         f"{name}`.")
    return load_vision(folder, name, device)


def read_vision_meta(folder: Path) -> tuple[VisionSpec, dict]:
    """A saved Vision Transformer's spec and its whole ``model.json``, without its weights."""
    meta = json.loads((folder / CONFIG_FILE).read_text())
    known = {field.name for field in fields(VisionSpec)}
    return VisionSpec(**{key: value for key, value in meta["spec"].items() if key in known}), meta


def load_vision(folder: Path, name: str, device: str = "/CPU:0") -> PretrainedVision:
    spec, meta = read_vision_meta(folder)
    with tf.device(device):
        model = build_vision(spec)
        model.load_weights(folder / WEIGHTS_FILE)
    return PretrainedVision(name, spec, model, tuple(meta["classes"]), float(meta["accuracy"]), device)
