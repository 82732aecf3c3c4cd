"""Trained models: the shipped ones (``transformer/pretrained/<task>/``) and ones trained in a session.

Weights load with Keras's ``load_weights`` from ``.weights.h5`` (HDF5 arrays, no
pickle); the architecture and vocabulary come from a JSON file.
"""

from __future__ import annotations

import collections
import functools
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

from transformer.device import resolve_device
from transformer.masks import padding_mask, target_mask
from transformer.tasks import PAD_ID, START_ID, Task, get_task, task_vocabulary
from transformer.tokens import Vocabulary
from transformer.train import (
    CONFIG_FILE,
    PRETRAINED_DIR,
    WEIGHTS_FILE,
    TrainResult,
    TrainSpec,
    build_model,
    greedy_decode,
    strip,
)

SHIPPED = ("copy", "reverse", "sort", "dates", "translate")
SESSION_PREFIX = "session:"
SESSION_MODELS_KEPT = 8
PREDICTIONS_KEPT = 256  # batches of source lines whose greedy predictions are remembered per model


@dataclass
class Pretrained:
    """A trained encoder-decoder and what it knows.

    rules: its `Task` (how text becomes tokens and back, and the right answers); lengths: (min, max)
    source lengths it was trained on; accuracy: exact-sequence accuracy measured after training.
    """

    name: str
    spec: TrainSpec
    model: object
    vocab: Vocabulary
    accuracy: float
    device: str = "/CPU:0"  # where its weights live and everything it computes runs
    _predictions: collections.OrderedDict = field(default_factory=collections.OrderedDict, repr=False)

    @property
    def task(self) -> str:
        return self.spec.task

    @property
    def rules(self) -> Task:
        return get_task(self.task)

    @property
    def lengths(self) -> tuple[int, int]:
        return (self.spec.min_len, self.spec.max_len)

    def expected(self, source_text: str) -> str | None:
        """The right answer to ``source_text``, as text; None when it is not of the task's form."""
        return self.rules.expected(source_text)

    def source_tokens(self, text: str) -> list[str]:
        """The tokens of a typed source line; ValueError naming those outside the vocabulary."""
        tokens = self.rules.source_tokens(text)
        if not tokens:
            raise ValueError(f"The source text is empty: type a line such as {self.rules.example.splitlines()[0]!r}.")
        try:
            self.vocab.encode(tokens)
        except ValueError as error:  # say what the model does know where the vocabulary itself is too long to list
            raise ValueError(" ".join(filter(None, (str(error), self.rules.vocabulary_hint)))) from None
        return tokens

    def predict_ids(self, sources: list[list[str]], extra_steps: int = 1) -> list[list[int]]:
        """Greedy predictions (ids, without </s>) for several token lists at once.

        Remembered per batch of lines, so the pages and the walkthrough of one
        configuration decode once.
        """
        key = (tuple(map(tuple, sources)), extra_steps)
        if key in self._predictions:
            self._predictions.move_to_end(key)
            return self._predictions[key]
        self._predictions[key] = self._decode(sources, extra_steps)
        while len(self._predictions) > PREDICTIONS_KEPT:
            self._predictions.popitem(last=False)
        return self._predictions[key]

    def _decode(self, sources, extra_steps):
        longest = max(len(s) for s in sources)
        src = np.zeros((len(sources), longest), np.int32)  # (B, N_s)
        for row, tokens in enumerate(sources):
            src[row, : len(tokens)] = self.vocab.encode(tokens)
        with tf.device(self.device):
            predicted = greedy_decode(self.model, src, self.rules.target_length(longest) + extra_steps)
        return [strip(row) for row in predicted]

    def translate(self, source_text: str):
        """``(prediction_text, attention)`` for one source line, the prediction written as a person writes it.

        ``attention`` maps "encoder", "decoder", "cross" to lists (one per layer) of
        ``(1, H, N_q, N_k)`` arrays computed on the decoder input ``<s> + prediction``:
        query ``i`` of the decoder is the step that predicts output token ``i``.
        """
        tokens = self.source_tokens(source_text)
        predicted = self.predict_ids([tokens])[0]
        src = np.array([self.vocab.encode(tokens)], np.int32)  # (1, N_s)
        decoder_input = np.array([[START_ID] + predicted], np.int32)  # (1, N_t)
        with tf.device(self.device):
            masks = padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID)
            _, attention = self.model(src, decoder_input, *masks)
        arrays = {name: [np.asarray(w) for w in weights] for name, weights in attention.items()}
        return self.rules.target_text(self.vocab.decode(predicted)), arrays


def from_result(name: str, result: TrainResult) -> Pretrained:
    return Pretrained(name, result.spec, result.model, result.vocab, result.accuracy, result.device)


def load_folder(folder: Path, name: str, device: str = "/CPU:0") -> Pretrained:
    """Build the model from ``model.json`` and load ``weights.weights.h5``, on ``device``."""
    meta = json.loads((folder / CONFIG_FILE).read_text())
    spec = TrainSpec(**meta["spec"])
    vocab = task_vocabulary(meta["vocabulary"])
    with tf.device(device):
        model = build_model(spec, len(vocab))
        model.load_weights(folder / WEIGHTS_FILE)
    return Pretrained(name, spec, model, vocab, float(meta["exact_accuracy"]), device)


_lock = threading.Lock()
_shipped: dict[tuple, Pretrained] = {}  # (name, device) -> model
_session: collections.OrderedDict = collections.OrderedDict()
_labels: dict[str, str] = {}  # a kept session model's name -> its label


def available() -> list[str]:
    """Names of the shipped models present on disk."""
    return [name for name in SHIPPED if (PRETRAINED_DIR / name / WEIGHTS_FILE).exists()]


def load_pretrained(name: str, device: str | None = None) -> Pretrained:
    """A shipped model (``"copy"``, ``"reverse"``, ``"sort"``), loaded once per device (None: the GPU when there
    is one), or one registered by `register` (it stays on the device it was trained on)."""
    device = device or resolve_device("auto")
    with _lock:
        if name.startswith(SESSION_PREFIX):
            if name not in _session:
                raise ValueError(f"No model trained in this session is called {name!r} (the server may have "
                                 "restarted): train it again on the Train page.")
            _session.move_to_end(name)
            return _session[name]
        if name not in SHIPPED:
            raise ValueError(f"Unknown trained model. Choose one of {list(SHIPPED)}. Received: {name!r}")
        if (name, device) not in _shipped:
            folder = PRETRAINED_DIR / name
            if not (folder / WEIGHTS_FILE).exists():
                raise ValueError(f"The weights of {name!r} are missing: run `python -m transformer.train "
                                 f"--task {name}`.")
            _shipped[name, device] = load_folder(folder, name, device)
        return _shipped[name, device]


def spec_of(name: str) -> TrainSpec | None:
    """The architecture and training of a shipped or kept model, read without loading its weights; None for an
    unknown name."""
    if name in SHIPPED:
        return _shipped_spec(name)
    with _lock:
        return _session[name].spec if name in _session else None


@functools.cache
def _shipped_spec(name: str) -> TrainSpec:
    return TrainSpec(**json.loads((PRETRAINED_DIR / name / CONFIG_FILE).read_text())["spec"])


def task_of(name: str) -> str | None:
    """The task of a shipped or registered model, without loading it; None for an unknown name."""
    if name in SHIPPED:
        return name
    with _lock:
        return _session[name].task if name in _session else None


def register(result: TrainResult, key: str, label: str = "") -> str:
    """Keep a model trained in a session (at most SESSION_MODELS_KEPT, for every session of this server: its
    link opens it in another); returns its name. ``label``: what a picker calls it (default: its name)."""
    name = f"{SESSION_PREFIX}{key}"
    with _lock:
        _session[name] = from_result(name, result)
        _labels[name] = label or name
        _session.move_to_end(name)
        while len(_session) > SESSION_MODELS_KEPT:
            dropped, _ = _session.popitem(last=False)
            _labels.pop(dropped, None)
    return name


def kept_label(name: str) -> str | None:
    """The label of a model trained on this server and still kept (any session's); None when it is not."""
    with _lock:
        return _labels.get(name) if name in _session else None
