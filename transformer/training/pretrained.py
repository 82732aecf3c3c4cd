"""Trained models: the shipped ones (``transformer/pretrained/<task>/``) and ones trained in a session.

Weights load with Keras's ``load_weights`` from ``.weights.h5`` (HDF5 arrays, no
pickle); the architecture and vocabulary come from a JSON file.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

from transformer.core import residual_parts
from transformer.core.ablation import check_ablation
from transformer.core.masks import padding_mask, target_mask
from transformer.core.tokens import Vocabulary
from transformer.decoding.search import greedy_decode, strip
from transformer.runtime.device import resolve_device
from transformer.tasks import Task, get_task
from transformer.tasks.base import PAD_ID, START_ID
from transformer.tasks.images import IMAGE_TASKS
from transformer.tasks.induction import line_ids
from transformer.training import kept_on_disk
from transformer.training.kept_limits import kept_limits
from transformer.training.next_token import read_ids
from transformer.training.saved_model import (
    MAX_TRAIN_LEN,
    PRETRAINED_DIR,
    WEIGHTS_FILE,
    TrainSpec,
    read_meta,
    save,
    spec_from,
)
from transformer.training.saved_model import load_folder as read_folder
from transformer.training.timeline import load_timeline, save_timeline
from transformer.training.vision import PretrainedVision, shipped_vision

_LOGGER = logging.getLogger(__name__)
SHIPPED = ("copy", "reverse", "sort", "dates", "translate", "induction")
SESSION_PREFIX = "session:"
DROPPED_REMEMBERED = 256  # dropped models whose spec a link can still train again


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
    predictions: collections.OrderedDict = field(default_factory=collections.OrderedDict, repr=False)  # remembered
    # greedy predictions per batch of source lines (transformer.decoding.predictions)

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

    @property
    def decoder_only(self) -> bool:
        """A next-token model (one causal stack over a line) rather than an encoder-decoder."""
        return self.spec.architecture == "decoder-only"

    @property
    def longest(self) -> int:
        """The most tokens a line may have: its learned position table's rows, else any length."""
        return MAX_TRAIN_LEN if self.spec.positions == "learned" else 4096

    def read(self, text: str, ablate=()) -> tuple[np.ndarray, dict]:
        """A decoder-only model reads one line of its tokens (space-separated) with the ``(layer, head)`` pairs of
        ``ablate`` zero-ablated: ``(probabilities (N, V) of the next token after each position, {"decoder":
        (L, H, N, N)})``. ValueError naming tokens it does not know, heads it lacks, or a line too long."""
        if not self.decoder_only:
            raise ValueError(f"read() is for a decoder-only model; {self.name!r} is an encoder-decoder: use the "
                             "Attention page or transformer.training.answers.translate.")
        line = self.source_tokens(text)
        if len(line) > self.longest:
            raise ValueError(f"The {self.name} model reads up to {self.longest} tokens. Received: {len(line)} tokens")
        triples = check_ablation([("decoder", *pair) for pair in ablate], "zero", ("decoder",),
                                 self.model.num_layers, self.model.num_heads)
        ids = np.array([self.vocab.encode(line)], np.int32)  # (1, N)
        with tf.device(self.device):
            logits, attention = read_ids(self.model, ids, [triple[1:] for triple in triples])
        shifted = np.exp(logits[0] - logits[0].max(-1, keepdims=True))  # (N, V)
        return shifted / shifted.sum(-1, keepdims=True), {"decoder": attention[:, 0]}

    def score_terms(self, text: str, layer: int, head: int, stack: str = "decoder") -> tuple[tuple, np.ndarray]:
        """Why head ``head`` of ``stack``'s layer ``layer`` attends where it does on one line: ``(parts, terms)``,
        ``terms (P_q, P_k, N_q, N_k)`` whose sum over the first two axes is the head's scaled scores (NaN where
        masked), ``parts`` the residual stream's ("token", "position", "L0H0", …, "bias";
        `transformer.core.residual_parts`) — for cross-attention a pair, the query side's and the key side's (the
        encoder's, "enc token", …). A decoder-only model reads ``text``; an encoder-decoder reads it as its source
        and its decoder reads ``<s>`` and its own greedy answer (as `transformer.training.answers.translate`).
        ValueError naming a stack, layer or head the model lacks, unknown tokens, or a line too long."""
        if stack not in self.model.stacks or not (0 <= layer < self.model.num_layers
                                                   and 0 <= head < self.model.num_heads):
            raise ValueError(f"The {self.name} model has the stacks {self.model.stacks}, layers 0–"
                             f"{self.model.num_layers - 1} and heads 0–{self.model.num_heads - 1}. Received: "
                             f"stack={stack!r}, layer={layer!r}, head={head!r}")
        if self.decoder_only:
            self.read(text)  # its checks: known tokens, the length
            src, tgt = None, tf.constant([self.vocab.encode(self.source_tokens(text))], tf.int32)  # (1, N)
        else:
            line = self.source_tokens(text)
            src = tf.constant([self.vocab.encode(line)], tf.int32)  # (1, N_s)
            with tf.device(self.device):
                answer = strip(greedy_decode(self.model, src, self.rules.target_length(len(line)) + 1)[0])
            tgt = tf.constant([[START_ID, *answer]], tf.int32)  # (1, N_t): <s> and its own answer
        with tf.device(self.device):
            split = residual_parts.score_terms(self.model, stack, layer, head, src, tgt,
                                               None if src is None else padding_mask(src, PAD_ID),
                                               target_mask(tgt, PAD_ID))
        parts = (split.query_parts, split.key_parts) if stack == "cross" else split.query_parts
        return parts, split.terms

    def next_tokens(self, lines: list[list[str]], ablate: tuple = (), kind: str = "zero",
                    means=None) -> list[list[str]]:
        """A decoder-only model's most probable next token after each position of each line (``ablate``: ``(stack,
        layer, head)`` triples, ``kind`` "zero" or "mean" with the heads' ``means``, `read_ids`)."""
        length = max(len(line) for line in lines)
        ids = line_ids(self.vocab, lines, length)  # (B, N)
        with tf.device(self.device):
            logits, _ = read_ids(self.model, ids, [triple[1:] for triple in ablate], kind,
                                            means)  # (B, N, V)
        best = logits.argmax(-1)  # (B, N)
        return [self.vocab.decode(best[row, : len(line)]) for row, line in enumerate(lines)]

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


def from_result(name: str, result) -> Pretrained:
    """A `transformer.training.train.TrainResult` as a `Pretrained` called ``name``."""
    return Pretrained(name, result.spec, result.model, result.vocab, result.accuracy, result.device)


def load_folder(folder: Path, name: str, device: str = "/CPU:0") -> Pretrained:
    """The saved model in ``folder`` (`transformer.training.saved_model`), its weights on ``device``."""
    return Pretrained(name, *read_folder(folder, device), device)


_lock = threading.Lock()
_shipped: dict[tuple, Pretrained] = {}  # (name, device) -> model
_session: collections.OrderedDict = collections.OrderedDict()
_labels: dict[str, str] = {}  # a kept session model's name -> its label
_dropped: collections.OrderedDict = collections.OrderedDict()  # a dropped one's name -> (label, spec)


def available() -> list[str]:
    """Names of the shipped models present on disk."""
    return [name for name in SHIPPED if (PRETRAINED_DIR / name / WEIGHTS_FILE).exists()]


def check_name(name: str) -> None:
    """ValueError unless ``name`` is a shipped model whose weights are on disk or a kept session model (nothing
    is loaded)."""
    if not isinstance(name, str):
        raise ValueError(f"Unknown trained model. Choose one of {list(SHIPPED)}. Received: {name!r}")
    if name.startswith(SESSION_PREFIX):
        with _lock:
            if name not in _session and not _on_disk(name):
                raise ValueError(_not_kept(name))
        return
    if name not in SHIPPED:
        raise ValueError(f"Unknown trained model. Choose one of {list(SHIPPED)}. Received: {name!r}")
    if not (PRETRAINED_DIR / name / WEIGHTS_FILE).exists():
        raise ValueError(f"The weights of {name!r} are missing: run `python -m transformer.training.train --task "
                         f"{name}`.")


def _not_kept(name: str) -> str:
    """Why a session model's name opens nothing (called under the lock)."""
    return _missing_reason(name)


def missing_reason(name: str) -> str:
    """Why the model a link names (``session:<key>``) is not kept, in words: found damaged and set aside, removed
    from disk by the data budget, dropped from memory by the memory limits (no data directory), or unknown."""
    with _lock:
        return _missing_reason(name)


def _missing_reason(name: str) -> str:
    key = _key(name) if name.startswith(SESSION_PREFIX) else ""
    aside = kept_on_disk.set_aside_note(key) if key else None
    if aside is not None:
        return kept_on_disk.damaged_message(key, *aside)
    on_disk = kept_on_disk.dropped(key) if key else None
    if on_disk is not None:
        models, megabytes = kept_on_disk.data_budget()
        return (f"This link's model ({on_disk[0]}) was removed from this server's disk to make room: it keeps the "
                f"{models} model{'s' * (models != 1)} trained here that were opened last on disk, {megabytes:,.0f} MB "
                "at most: train it again on the Train page.")
    if name in _dropped:
        models, megabytes = kept_limits()
        return (f"This link's model ({_dropped[name][0]}) was dropped to make room: this server keeps the {models} "
                f"models trained here that were used last in memory, {megabytes:,.0f} MB of weights at most, and has "
                "no data directory to keep them on disk: train it again on the Train page.")
    return (f"No model trained on this server is called {name!r} (it may have restarted without its data "
            "directory, or the link is mistyped): train it again on the Train page.")


def check_config(config) -> None:
    """ValueError naming the values, unless a `LiveConfig` whose weights name a trained model names a kept one and
    asks for the options it was trained with (read from its model.json: nothing is loaded)."""
    check_name(config.weights)
    spec = spec_of(config.weights)
    if config.positions != spec.positions or config.num_kv_heads not in (None, config.num_heads) \
            or config.architecture != spec.architecture or config.norm != spec.norm:
        raise ValueError(
            f"The trained model {config.weights!r} is a{'n' * (spec.architecture[0] == 'e')} {spec.architecture} with "
            f"{spec.norm}-norm, {spec.positions} "
            "positions and one key/value head per query head; pick random weights for others. Received: "
            f"architecture={config.architecture!r}, norm={config.norm!r}, positions={config.positions!r}, "
            f"num_kv_heads={config.num_kv_heads!r}")
    if config.mask_family != "paper" or not config.padding_masks or not config.look_ahead_mask:
        raise ValueError(
            f"The trained model {config.weights!r} runs with the masks it was trained with (the paper's, padding and "
            "look-ahead on): a mask family or a switched-off mask is for random weights. Received: "
            f"mask_family={config.mask_family!r}, padding_masks={config.padding_masks}, "
            f"look_ahead_mask={config.look_ahead_mask}")
    if spec.positions == "learned" and config.seq_len > MAX_TRAIN_LEN:
        raise ValueError(f"The trained model {config.weights!r} learned {MAX_TRAIN_LEN} positions. Received: "
                         f"seq_len={config.seq_len}")


def load_pretrained(name: str, device: str | None = None) -> Pretrained | PretrainedVision:
    """A shipped model (``"copy"``, ``"reverse"``, ``"sort"``; the Vision Transformers ``"match"`` and
    ``"digits"``), loaded once per device (None: the GPU when there is one), or one registered by `register` (it
    stays on the device it was trained on). An image model trained here (``image:<key>``):
    `transformer.training.vision_kept.vision_model`."""
    device = device or resolve_device("auto")
    if name in IMAGE_TASKS:
        return shipped_vision(PRETRAINED_DIR / name, name, device)
    check_name(name)
    with _lock:
        if name.startswith(SESSION_PREFIX):
            if name not in _session and _on_disk(name):  # after a restart, or dropped from memory: read it again
                folder, label = kept_on_disk.verified(_key(name))
                spec, model, vocab, accuracy = read_folder(folder, device)
                _keep_in_memory(Pretrained(name, spec, model, vocab, accuracy, device), label)
            if name not in _session:  # dropped since check_name
                raise ValueError(_not_kept(name))
            _session.move_to_end(name)
            return _session[name]
        if (name, device) not in _shipped:
            _shipped[name, device] = load_folder(PRETRAINED_DIR / name, name, device)
        return _shipped[name, device]


def spec_of(name: str) -> TrainSpec | None:
    """The architecture and training of a shipped or kept model, read without loading its weights; None for an
    unknown name."""
    if name in SHIPPED:
        return spec_from(_shipped_meta(name))
    with _lock:
        if name in _session:
            return _session[name].spec
    on_disk = _disk_meta(name)
    return None if on_disk is None else spec_from(on_disk[0])


def accuracy_of(name: str) -> float | None:
    """The exact-sequence accuracy measured after training, read without loading the weights; None for an unknown
    name."""
    if name in SHIPPED:
        return float(_shipped_meta(name)["exact_accuracy"])
    with _lock:
        if name in _session:
            return _session[name].accuracy
    on_disk = _disk_meta(name)
    return None if on_disk is None else float(on_disk[0]["exact_accuracy"])


@functools.cache
def _shipped_meta(name: str) -> dict:
    """A shipped model's model.json, read once (the sidebar asks for its spec and accuracy on every rerun)."""
    return read_meta(PRETRAINED_DIR / name)


def task_of(name: str) -> str | None:
    """The task of a shipped or registered model, without loading it; None for an unknown name."""
    if name in SHIPPED:
        return name
    with _lock:
        if name in _session:
            return _session[name].task
    on_disk = _disk_meta(name)
    return None if on_disk is None else spec_from(on_disk[0]).task


def weight_bytes(model) -> int:
    """What a model's weights take (float32)."""
    return int(model.count_params()) * 4


def register(result, key: str, label: str = "") -> str:
    """Keep a model trained in a session for every session of this server (its link opens it in another); returns
    its name. The kept models stay under `kept_limits` (count and MB of weights): the least recently used go
    first, and a link to one says what it was (`dropped`). ValueError when ``key`` names a kept model: one
    session never replaces another's. ``label``: what a picker calls it (default: its name)."""
    name = session_name(key)
    with _lock:
        if name in _session:
            raise ValueError(f"A model called {name!r} is kept already; a new one needs a name of its own.")
        _keep_in_memory(from_result(name, result), label or name)
    try:  # on disk too (the data directory): a restart, or another replica, opens its link
        kept_on_disk.keep(lambda folder: (save(result, folder), save_timeline(result.timeline, folder)), key,
                          label or name, {"spec": asdict(result.spec)})
    except OSError as error:
        _LOGGER.warning("The model %s could not be kept on disk (%s): it lasts as long as this server.", name, error)
    return name


def _keep_in_memory(model: Pretrained, label: str) -> None:
    """Hold ``model`` among the kept ones (called under the lock), the least recently used dropped from memory past
    `kept_limits` (a model on disk is read again when asked for)."""
    most, megabytes = kept_limits()
    _session[model.name] = model
    _labels[model.name] = label
    _dropped.pop(model.name, None)
    while len(_session) > 1 and (len(_session) > most or _kept_bytes() > megabytes * 1e6):
        _drop(next(iter(_session)))


def _key(name: str) -> str:
    return name[len(SESSION_PREFIX):]


def timeline_of(name: str) -> list:
    """The attention-over-training snapshots a model trained here was kept with (`transformer.training.timeline`),
    read from the data directory, each file checked against its hash; [] when there are none."""
    if not _on_disk(name):
        return []
    try:
        folder, _ = kept_on_disk.verified(_key(name))
    except kept_on_disk.Removed:
        return []
    return load_timeline(folder)


def _on_disk(name: str) -> bool:
    return name.startswith(SESSION_PREFIX) and kept_on_disk.kept(_key(name))


def _disk_meta(name: str) -> tuple[dict, str] | None:
    """``(model.json, label)`` of a session model kept on disk only; None when it is not there."""
    if not _on_disk(name):
        return None
    try:
        return kept_on_disk.described(_key(name))  # its description and model.json checked, never raised raw
    except ValueError:  # removed meanwhile, or damaged and set aside: `missing_reason` says which
        return None


def session_name(key: str) -> str:
    """The name a model trained in a session is kept under: ``session:<key>``."""
    return f"{SESSION_PREFIX}{key}"


def _kept_bytes() -> int:
    return sum(weight_bytes(model.model) for model in _session.values())


def _drop(name: str) -> None:
    """Forget ``name``'s weights; remember what it was (its label and spec), for a link to it."""
    model = _session.pop(name)
    _dropped[name] = (_labels.pop(name, name), model.spec)
    while len(_dropped) > DROPPED_REMEMBERED:
        _dropped.popitem(last=False)


def dropped(name: str) -> tuple[str, TrainSpec] | None:
    """``(label, spec)`` of a model trained on this server and dropped since (to make room) from memory and disk;
    None otherwise (a model on disk is not dropped: its link reads it again)."""
    with _lock:
        if _on_disk(name):
            return None
        if name in _dropped:
            return _dropped[name]
    on_disk = kept_on_disk.dropped(_key(name)) if name.startswith(SESSION_PREFIX) else None
    return None if on_disk is None else (on_disk[0], spec_from(on_disk[1]))


def kept_label(name: str) -> str | None:
    """The label of a model trained on this server and still kept (any session's); None when it is not."""
    with _lock:
        if name in _session:
            return _labels.get(name)
    on_disk = _disk_meta(name)
    return None if on_disk is None else on_disk[1]
