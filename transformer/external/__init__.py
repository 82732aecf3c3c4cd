"""Models from outside the lab: a keras-hub preset (by name, or a local preset folder), a ``.keras`` file or a
``keras.Model``, read through the attention layers Keras itself provides.

    from transformer.external import load
    model = load("path/to/preset")            # or "bert_tiny_en_uncased", "model.keras", a keras.Model
    tokens, weights = model.attention("The cat sat on the mat")   # weights (L, H, N, N) float32
    model.next_token_probabilities("The cat")                     # (N, V), causal language models only

Read: models whose attention layers are ``keras.layers.MultiHeadAttention`` or its subclasses (any functional
Keras model; keras-hub's BERT, RoBERTa, DistilBERT, GPT-2 and the other families built on its TransformerEncoder
and TransformerDecoder), and keras-hub's families with attention layers of their own that hold a Softmax (Llama,
Mistral, Gemma, Qwen: rotary positions, grouped-query heads expanded to the query heads). Any other model gets a
ValueError naming what was found.
"""

from __future__ import annotations

import functools
import gc
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from transformer.core.shape import MAX_HEADS
from transformer.external.untrusted import check_archive, check_declared_weights
from transformer.runtime.tf_patches import all_sublayers, attention_sublayers, own_attention_layers, recording_attention

PRESETS_DIR_ENV = "ATTENTION_LAB_PRESETS_DIR"  # a folder of preset folders served by name first (offline classes)
UPLOAD_LIMIT_ENV = "ATTENTION_LAB_UPLOAD_MB"  # the largest .keras file read, in MB (default 500)
PRESET_NAME = re.compile(r"^[a-z0-9][a-z0-9_.\-]{0,99}$")  # keras-hub's preset names; no path, no URL
MAX_TOKENS = 512


def upload_limit_bytes() -> int:
    """The largest model file read: ``ATTENTION_LAB_UPLOAD_MB`` MB (500 by default)."""
    raw = os.environ.get(UPLOAD_LIMIT_ENV, "500")
    try:
        return int(float(raw) * 2**20)
    except ValueError:
        raise ValueError(f"{UPLOAD_LIMIT_ENV} must be a number of MB. Received: {raw!r}") from None


@dataclass
class ExternalModel:
    """A model from outside, its tokenizer (None: the text is token ids separated by spaces) and its attention
    layers. ``causal``: a language model whose next-token probabilities can be read."""

    name: str
    model: keras.Model
    tokenizer: object | None
    layers: list
    causal: bool

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def num_heads(self) -> int:
        """Query heads (a grouped-query layer's key/value heads are shared among them)."""
        return _heads_of(self.layers[0])

    def token_ids(self, text: str) -> np.ndarray:
        """``text`` as the model's ids ``(N,)``; ValueError for an empty text, ids the model lacks or more than
        `MAX_TOKENS` tokens."""
        if self.tokenizer is None:
            parts = text.split()
            if not parts or not all(part.isdigit() for part in parts):
                raise ValueError("This model has no tokenizer: give its input as token ids separated by spaces. "
                                 f"Received: {text[:60]!r}")
            ids = np.array([int(part) for part in parts], np.int32)
        else:
            ids = np.asarray(self.tokenizer.tokenize(text), np.int32).reshape(-1)
            if not len(ids):
                raise ValueError(f"The text has no tokens. Received: {text[:60]!r}")
        if len(ids) > min(MAX_TOKENS, self._context()):
            raise ValueError(f"The text has {len(ids)} tokens; this model reads at most "
                             f"{min(MAX_TOKENS, self._context())}. Received: {text[:60]!r}…")
        vocabulary = self._vocabulary_size()
        if vocabulary and ids.max() >= vocabulary:
            raise ValueError(f"Token ids must be below the model's vocabulary of {vocabulary}. Received: "
                             f"{int(ids.max())}")
        return ids

    def pieces(self, ids) -> list[str]:
        """Ids as the pieces the charts label: the tokenizer's own, or the ids as text."""
        if self.tokenizer is None:
            return [str(int(i)) for i in ids]
        return [self.tokenizer.id_to_token(int(i)) for i in ids]

    def tokens(self, text: str) -> list[str]:
        """``text``'s pieces (`pieces` of `token_ids`)."""
        return self.pieces(self.token_ids(text))

    def attention(self, text: str) -> tuple[list[str], np.ndarray]:
        """``(tokens, weights (L, H, N, N) float32)``: every attention layer's weights on ``text``, in the order the
        model runs them."""
        ids = self.token_ids(text)
        return self.pieces(ids), self.weights_of_ids(ids)

    def logits_and_weights(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """A causal language model's ``(logits (N, V), weights (L, H, N, N))`` on ``ids`` ``(N,)``, one run."""
        if not self.causal:
            raise ValueError(f"{self.name} is not a causal language model: it gives no next-token probabilities.")
        weights, hidden = self._run_ids(np.asarray(ids, np.int32).reshape(-1))
        logits = self.model.token_embedding(hidden, reverse=True)[0]  # (N, V)
        return np.asarray(tf.cast(logits, tf.float32)), weights

    def next_token_probabilities(self, text: str) -> np.ndarray:
        """``(N, V)``: after each position, the probability of every next token (causal language models)."""
        logits, _ = self.logits_and_weights(self.token_ids(text))  # (N, V)
        return np.asarray(tf.nn.softmax(logits, axis=-1))

    @property
    def hidden_size(self) -> int:
        """The model's width: keras-hub's ``hidden_dim``, else its first Embedding's (0 when neither says)."""
        width = getattr(self.model, "hidden_dim", None)
        if width:
            return int(width)
        embeddings = [layer for layer in all_sublayers(self.model) if isinstance(layer, keras.layers.Embedding)]
        return int(embeddings[0].output_dim) if embeddings else 0

    def weights_of_ids(self, ids) -> np.ndarray:
        """``(L, H, N, N)``: every attention layer's weights on ``ids`` ``(N,)`` (ids the tokenizer made)."""
        return self._run_ids(np.asarray(ids, np.int32).reshape(-1))[0]

    @functools.cached_property
    def fixed_length(self) -> int | None:
        """The one line length the model's token input is declared with (``keras.Input((8,))``: 8); None when it
        reads any length (its input is declared ``(None,)``)."""
        inputs = keras.tree.flatten(self.model.input)
        named = [tensor for tensor in inputs if "token_ids" in tensor.name] or inputs[:1]
        shape = tuple(named[0].shape) if named else ()
        return int(shape[1]) if len(shape) > 1 and shape[1] is not None else None

    @functools.cached_property
    def layer_causal(self) -> tuple:
        """Per attention layer, whether it is causal (its query i sees keys j ≤ i only): read off the mask each
        layer is given (``use_causal_mask``) or, for a layer with its own Softmax, off its weights above the
        diagonal, on a probe of three tokens (of its declared length, if it has one)."""
        length = self.fixed_length or 3
        ids = np.zeros(length, np.int32)  # (N,): id 0 is in every vocabulary
        weights, _, masks = self._recorded(ids)
        above = ~np.tril(np.ones((length, length), bool))  # (N, N)
        return tuple(bool(not mask[above].any()) if mask is not None else bool(np.abs(w[:, above]).max() == 0)
                     for w, mask in zip(weights, masks))

    def layer_masks(self, length: int) -> np.ndarray:
        """``(L, N, N)`` bool, True = may attend: each layer's own mask over ``length`` real positions."""
        causal = np.tril(np.ones((length, length), bool))  # (N, N)
        return np.stack([causal if flag else np.ones_like(causal) for flag in self.layer_causal])

    def _run_ids(self, ids: np.ndarray):
        weights, hidden, _ = self._recorded(ids)
        return weights, hidden  # (L, H, N, N)

    def _recorded(self, ids: np.ndarray):
        """``(weights (L, H, N, N), hidden, masks: per layer (N, N) bool or None)`` of one run on ``ids (N,)``."""
        if self.fixed_length is not None and len(ids) != self.fixed_length:
            raise ValueError(f"{self.name} reads lines of exactly {self.fixed_length} tokens (its input is declared "
                             f"so); this line has {len(ids)}. Give each line {self.fixed_length} tokens.")
        ids = ids[None]  # (1, N)
        with recording_attention(self.layers) as recorded:
            output = self.model(self._inputs(ids), training=False)
        if len(recorded) != len(self.layers):
            raise ValueError(f"{self.name}'s attention layers ran {len(recorded)} times for {len(self.layers)} "
                             "layers: a layer used twice or not at all is not read yet.")
        recorded = sorted(recorded, key=lambda r: r[0])
        weights = np.stack([np.asarray(w, np.float32)[0] for _, w, _ in recorded])  # (L, H, N, N)
        masks = [None if mask is None else _square(mask, weights.shape[-1]) for _, _, mask in recorded]  # (N, N)
        hidden = output["sequence_output"] if isinstance(output, dict) else output
        return weights, hidden, masks

    def _inputs(self, ids: np.ndarray):
        names = [tensor.name for tensor in keras.tree.flatten(self.model.input)] if self._dict_input() else []
        if not names:
            return ids
        inputs = {"token_ids": ids, "padding_mask": np.ones_like(ids)}
        if "segment_ids" in names:
            inputs["segment_ids"] = np.zeros_like(ids)
        unknown = sorted(set(names) - set(inputs))
        if unknown:
            raise ValueError(f"{self.name} asks for inputs this lab does not make: {unknown}")
        return {name: inputs[name] for name in names}

    def _dict_input(self) -> bool:
        return isinstance(self.model.input, dict)

    def _context(self) -> int:
        length = getattr(self.model, "max_sequence_length", None)
        return int(length) if length else MAX_TOKENS

    def _vocabulary_size(self) -> int | None:
        """keras-hub's ``vocabulary_size``, else the first Embedding's rows; None when neither says."""
        size = getattr(self.model, "vocabulary_size", None)
        if size:
            return int(size)
        embeddings = [layer for layer in all_sublayers(self.model) if isinstance(layer, keras.layers.Embedding)]
        return int(embeddings[0].input_dim) if embeddings else None


def load(source, name: str | None = None) -> ExternalModel:
    """A model from ``source``: a ``keras.Model``, a path to a ``.keras`` file, a local keras-hub preset folder or
    a keras-hub preset name (downloaded to keras-hub's cache the first time, on a machine online). ValueError
    naming the problem for anything that cannot be read."""
    if isinstance(source, keras.Model):
        return _wrap(source, None, name or source.name)
    if not isinstance(source, (str, os.PathLike)):
        raise ValueError(f"A model is a keras.Model, a .keras file or a keras-hub preset. Received: {type(source)}")
    if not str(source).strip():
        raise ValueError("Give a keras-hub preset name, a local preset folder or a .keras file. Received: ''")
    path = Path(source)
    if path.suffix == ".keras":
        return _wrap(load_keras_file(path), None, name or path.stem)
    if path.is_dir():
        return _from_preset(str(path), name or path.name)
    text = str(source)
    if not PRESET_NAME.match(text):
        raise ValueError("A keras-hub preset name has lowercase letters, digits, '_', '.' and '-' only (a local "
                         f"preset is a folder that exists). Received: {text[:80]!r}")
    served = os.environ.get(PRESETS_DIR_ENV)
    if served and (Path(served) / text).is_dir():  # a class's server offline: the folder first, by name
        return _from_preset(str(Path(served) / text), name or text)
    return _from_preset(text, name or text)


def load_preset(name: str) -> ExternalModel:
    """The preset called ``name``: a folder of that name inside ``ATTENTION_LAB_PRESETS_DIR``, else one of
    keras-hub's registered presets (downloaded to its cache once, on a machine online). A name, never a path: a
    link cannot reach a file or folder of the server's own. ValueError naming it else."""
    if not isinstance(name, str) or not PRESET_NAME.match(name):
        raise ValueError("A keras-hub preset name has lowercase letters, digits, '_', '.' and '-' only. "
                         f"Received: {str(name)[:80]!r}")
    served = os.environ.get(PRESETS_DIR_ENV)
    if served and (Path(served) / name).is_dir():  # a class's server offline: the folder first, by name
        return _from_preset(str(Path(served) / name), name)
    import keras_hub  # noqa: PLC0415  (heavy: imported only when a preset is read)

    if name not in keras_hub.models.Backbone.presets:  # keras-hub would try an unknown name as a local path
        where = f" nor a folder inside {PRESETS_DIR_ENV}" if served else f" (and {PRESETS_DIR_ENV} is not set)"
        raise ValueError(f"{name!r} is not a keras-hub preset{where}. Received: hub:{name}")
    return _from_preset(name, name)


def load_keras_file(path: Path) -> keras.Model:
    """A ``.keras`` file read as untrusted: its size, what its members inflate to and the weights its config
    declares, each under `upload_limit_bytes` (`transformer.external.untrusted`), before Keras reads it in safe mode
    (no Python code in the file). ValueError naming the problem."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"No such file: {path.name}")
    size, limit = path.stat().st_size, upload_limit_bytes()
    if size > limit:
        raise ValueError(f"{path.name} is {size / 2**20:,.1f} MB; the limit is {limit / 2**20:,.0f} MB "
                         f"({UPLOAD_LIMIT_ENV}).")
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{path.name} is not a .keras file (a .keras file is a zip archive saved by "
                         "model.save('name.keras')): it may be truncated or of another format.")
    try:
        members = check_archive(path, limit)  # what it inflates to, before anything is read
    except zipfile.BadZipFile as error:
        raise ValueError(f"{path.name} is a damaged zip archive ({error}).") from None
    check_declared_weights(path, members, limit)  # what its model would allocate, before it is built
    try:
        return keras.saving.load_model(path, compile=False, safe_mode=True)
    except Exception as error:  # a corrupt archive, a layer Keras does not know, code refused by safe mode
        raise ValueError(f"{path.name} could not be read as a Keras model ({type(error).__name__}: "
                         f"{str(error)[:300]})") from None
    finally:
        gc.collect()  # a load that failed half-way leaves its variables in cycles: freed now, not at the next pass


def _from_preset(preset: str, name: str) -> ExternalModel:
    import keras_hub  # noqa: PLC0415  (heavy: imported only when a preset is read)

    try:
        backbone = keras_hub.models.Backbone.from_preset(preset)
    except OSError as error:  # requests' ConnectionError and its kin: the download, not the preset
        if not isinstance(error, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise ValueError(_not_downloaded(name)) from None
        raise ValueError(f"The preset {name!r} could not be read: {error.strerror or error}") from None
    except Exception as error:
        raise ValueError(f"The preset {name!r} could not be read as a keras-hub backbone ({type(error).__name__}: "
                         f"{str(error)[:300]})") from None
    try:
        tokenizer = keras_hub.tokenizers.Tokenizer.from_preset(preset)
    except Exception:  # a backbone without a tokenizer: ids typed by hand
        tokenizer = None
    return _wrap(backbone, tokenizer, name)


def _square(mask, length: int) -> np.ndarray:
    """A layer's attention mask of the batch's first line, ``(B, [1,] N_q or 1, N_k)``, as ``(N, N)`` bool."""
    mask = np.asarray(mask, bool)
    return np.broadcast_to(mask.reshape(mask.shape[0], -1, mask.shape[-1])[0], (length, length))


def _not_downloaded(name: str) -> str:
    return (f"The preset {name!r} could not be downloaded: this machine cannot reach keras-hub's model hub. Open it "
            "once on a machine online (it is kept in keras-hub's cache there), or serve it offline: save the preset "
            f"folder as {name} inside a folder named by {PRESETS_DIR_ENV}.")


def _heads_of(layer) -> int | None:
    """An attention layer's query heads: its configuration's ``num_heads`` (or keras-hub's ``num_query_heads``),
    else the attribute of that name (some keras-hub layers' ``get_config`` fails before they are called)."""
    try:
        config = layer.get_config()
    except Exception:  # keras-hub's own: some fail before the layer is called, or cannot serialise
        config = {}
    for name in ("num_heads", "num_query_heads"):
        heads = config.get(name) or getattr(layer, name, None) or getattr(layer, f"_{name}", None)
        if heads:
            return int(heads)
    return None


def _wrap(model: keras.Model, tokenizer, name: str) -> ExternalModel:
    layers = attention_sublayers(model) or own_attention_layers(model)
    if not layers:
        found = sorted({type(layer).__name__ for layer in all_sublayers(model)
                        if "attention" in type(layer).__name__.lower()})
        raise ValueError(f"{name} has no attention layer this lab reads (keras.layers.MultiHeadAttention, or one "
                         "with a Softmax of its own): "
                         + (f"its attention layers ({', '.join(found)}) are not read yet." if found
                            else "no attention layer was found."))
    heads = {_heads_of(layer) for layer in layers}
    if len(heads) > 1 or None in heads:
        counts = ", ".join("unknown" if count is None else str(count) for count in sorted(heads, key=str))
        raise ValueError(f"{name}'s attention layers have different or unknown head counts ({counts}): the lab reads "
                         "models whose attention layers all have the same number of heads.")
    if max(heads) > MAX_HEADS:  # each head is drawn: 4,096 of them at N = 128 were 268 MB of maps a layer
        raise ValueError(f"{name} has {max(heads):,} heads a layer; the lab draws each head and reads models of at "
                         f"most {MAX_HEADS} heads a layer.")
    causal = hasattr(model, "token_embedding") and any("Decoder" in type(layer).__name__
                                                       for layer in all_sublayers(model))
    return ExternalModel(name, model, tokenizer, layers, causal)


__all__ = ["MAX_TOKENS", "PRESETS_DIR_ENV", "UPLOAD_LIMIT_ENV", "ExternalModel", "load", "load_keras_file",
           "load_preset",
           "upload_limit_bytes"]
