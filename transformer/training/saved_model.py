"""The saved-model format of a trained model: ``weights.weights.h5`` (Keras weights: HDF5 arrays, no pickle)
and ``model.json`` (its `TrainSpec`, vocabulary and metrics), and the model a spec describes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import keras
import tensorflow as tf

from transformer.core.model import Transformer
from transformer.core.shape import POSITIONS, ModelShape
from transformer.tasks import get_task, task_vocabulary

PRETRAINED_DIR = Path(__file__).resolve().parents[1] / "pretrained"  # transformer/pretrained/<task>/
WEIGHTS_FILE = "weights.weights.h5"
CONFIG_FILE = "model.json"


@dataclass(frozen=True)
class TrainSpec(ModelShape):
    """One training run: a model's shape (`ModelShape`) and how it is trained; every field has a command-line flag
    of the same name."""

    task: str = "reverse"
    dropout: float = 0.1
    steps: int = 3000
    batch: int = 64
    warmup: int = 400
    label_smoothing: float = 0.1
    min_len: int = 3
    max_len: int = 10
    seed: int = 0
    learning_rate: float = 0.0  # 0: the paper's warm-up schedule; above 0: Adam at this constant rate

    @property
    def options(self) -> str:
        """The architecture options it was trained with, as the sidebar names them."""
        per_head = "(one per query head)" if self.kv_heads == self.num_heads else f"(for {self.num_heads} query heads)"
        return (f"{self.architecture} · {self.norm}-norm · {self.positions} positions · {self.kv_heads} KV heads "
                f"{per_head} · d_ff {self.d_ff}")

    @classmethod
    def for_task(cls, task: str, **overrides) -> TrainSpec:
        """The settings the shipped model of ``task`` was trained with (`TASK_DEFAULTS`), then ``overrides``."""
        return cls(**{"task": task, **TASK_DEFAULTS.get(task, {}), **overrides})

    def validate(self) -> None:
        task = get_task(self.task)
        self.check_shape()
        wanted = "decoder-only" if task.decoder_only else "encoder-decoder"
        if self.architecture != wanted or self.positions not in POSITIONS or self.learning_rate < 0:
            raise ValueError(f"The {self.task} task trains a {wanted} model, positions one of {POSITIONS}, a learning "
                             f"rate of 0 (the warm-up schedule) or more. Received: architecture="
                             f"{self.architecture!r}, positions={self.positions!r}, learning_rate={self.learning_rate}")
        if not 1 <= self.min_len <= self.max_len <= MAX_TRAIN_LEN:
            raise ValueError(f"Need 1 <= min_len <= max_len <= {MAX_TRAIN_LEN}. Received: min_len={self.min_len}, "
                             f"max_len={self.max_len}")
        if task.own_lengths and self.max_len < task.lengths[1]:
            raise ValueError(f"The {self.task} task's sources have up to {task.lengths[1]} tokens: max_len must be "
                             f"at least that. Received: max_len={self.max_len}")
        if self.steps < 1 or self.batch < 1:
            raise ValueError(f"steps and batch must be positive. Received: steps={self.steps}, batch={self.batch}")


MAX_TRAIN_LEN = 64

# How the shipped models of the tasks with sources of their own were trained (the symbol tasks: the defaults).
TASK_DEFAULTS = {
    "dates": dict(steps=2500, min_len=8, max_len=28),  # the shape: ModelShape's defaults
    "translate": dict(steps=1500, min_len=5, max_len=12),
    # attention-only, as in Olsson et al. 2022: two layers, learned positions, no feed-forward, no dropout
    "induction": dict(d_ff=0, dropout=0.0, steps=3000, min_len=48, max_len=64, label_smoothing=0.0, norm="pre",
                      architecture="decoder-only", positions="learned", learning_rate=3e-3),
}


# What the Train page's form starts from: the symbol tasks learn in seconds at this size; dates and translate start
# from their shipped models' sizes, with fewer steps so that a class can watch one train.
QUICK_SYMBOLS = dict(d_model=32, num_heads=2, num_layers=1, d_ff=128, steps=600)
QUICK_STEPS = 1500


def quick_spec(task: str) -> TrainSpec:
    """A training run of ``task`` a class can watch finish: the Train page's form starts from it."""
    if not get_task(task).own_lengths:
        return TrainSpec.for_task(task, **QUICK_SYMBOLS)
    spec = TrainSpec.for_task(task)
    return replace(spec, steps=min(spec.steps, QUICK_STEPS))


def build_model(spec: TrainSpec, vocab_size: int) -> Transformer:
    """The paper's weight sharing: one embedding matrix (both sides of an encoder-decoder), reused by the output
    projection."""
    paired = spec.architecture == "encoder-decoder"
    model = Transformer.from_shape(spec, vocab_size, vocab_size, dropout=spec.dropout, share_embeddings=paired,
                                   share_output_weights=True,
                                   max_len=MAX_TRAIN_LEN if spec.positions == "learned" else 512)
    model.build((None, None), (None, None))
    return model


def read_meta(folder: Path) -> dict:
    """A saved model's ``model.json``: its spec, vocabulary and metrics, without its weights."""
    return json.loads((folder / CONFIG_FILE).read_text())


def spec_from(meta: dict) -> TrainSpec:
    """The `TrainSpec` in a saved model's ``model.json`` (fields a newer version added keep their defaults)."""
    known = {field.name for field in fields(TrainSpec)}
    return TrainSpec(**{name: value for name, value in meta["spec"].items() if name in known})


def load_folder(folder: Path, device: str = "/CPU:0"):
    """``(spec, model, vocabulary, exact accuracy)`` of the saved model in ``folder``, its weights on ``device``."""
    meta = read_meta(folder)
    spec = spec_from(meta)
    vocab = task_vocabulary(meta["vocabulary"])
    with tf.device(device):
        model = build_model(spec, len(vocab))
        model.load_weights(folder / WEIGHTS_FILE)
    return spec, model, vocab, float(meta["exact_accuracy"])


def save(result, folder: Path) -> Path:
    """A `transformer.training.train.TrainResult`'s weights (Keras .weights.h5, no pickle) and a JSON of its spec,
    vocabulary and metrics, in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    result.model.save_weights(folder / WEIGHTS_FILE)
    meta = {
        "spec": asdict(result.spec), "vocabulary": list(result.vocab.tokens),
        "exact_accuracy": result.accuracy, "train_seconds": round(result.seconds, 1),
        "final_loss": result.history[-1][1] if result.history else None,
        "tensorflow": tf.__version__, "keras": keras.__version__,
    }
    (folder / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return folder


