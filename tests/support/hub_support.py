"""Tiny keras-hub presets built here with random weights (nothing downloads): a BERT and a GPT-2 with their
tokenizers, saved with ``save_to_preset`` and read through the same path a downloaded preset takes."""

from __future__ import annotations

import string

import keras
import keras_hub


def bert_preset(folder):
    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "a"]
    keras.utils.set_random_seed(1)
    keras_hub.models.BertBackbone(vocabulary_size=len(vocabulary), num_layers=2, num_heads=2, hidden_dim=8,
                                  intermediate_dim=16, max_sequence_length=16).save_to_preset(folder)
    keras_hub.models.BertTokenizer(vocabulary=vocabulary, lowercase=True).save_to_preset(folder)
    return folder


def gpt2_preset(folder, letters: bool = False):
    """A 2-layer GPT-2 reading ``a b c`` (``letters``: 4 layers reading every ASCII letter, a piece each)."""
    vocabulary = {"<|endoftext|>": 0, "a": 1, "b": 2, "c": 3, "Ġ": 4, "Ġa": 5, "Ġb": 6, "Ġc": 7}
    if letters:
        for letter in string.ascii_letters:
            for piece in (letter, "Ġ" + letter):
                vocabulary.setdefault(piece, len(vocabulary))
    keras.utils.set_random_seed(2)
    keras_hub.models.GPT2Backbone(vocabulary_size=len(vocabulary), num_layers=4 if letters else 2, num_heads=2,
                                  hidden_dim=8, intermediate_dim=16,
                                  max_sequence_length=64 if letters else 16).save_to_preset(folder)
    keras_hub.models.GPT2Tokenizer(vocabulary=vocabulary, merges=["Ġ a", "Ġ b", "Ġ c"]).save_to_preset(folder)
    return folder


def functional_model(length: int | None = None):
    """A functional Keras model over 20 ids with two 2-head `MultiHeadAttention` layers; ``length``: its input's
    declared length (None: any)."""
    keras.utils.set_random_seed(0)
    ids = keras.Input((length,), dtype="int32")
    x = keras.layers.Embedding(20, 16)(ids)
    first = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="first")
    x = first(x, x)
    second = keras.layers.MultiHeadAttention(num_heads=2, key_dim=8, name="second")
    out = keras.layers.Dense(20)(second(x, x))
    return keras.Model(ids, out)
