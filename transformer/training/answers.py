"""A trained model's greedy answers: several lines at once (remembered per batch, so that the pages and the
walkthrough of one configuration decode once), or one line with its attention. The decoding itself is
`transformer.decoding.search`'s; this module knows the trained model (a `transformer.training.pretrained.Pretrained`
comes in: this module loads none and imports nothing of it)."""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from transformer.core.ablation import active_heads
from transformer.core.masks import padding_mask, target_mask
from transformer.decoding.search import greedy_decode, strip
from transformer.tasks import PAD_ID, START_ID

PREDICTIONS_KEPT = 256  # batches of source lines whose greedy predictions are remembered per model


def predictions(pretrained, sources: list[list[str]], extra_steps: int = 1, ablate: tuple = (),
                kind: str = "zero", means=None) -> list[list[int]]:
    """A trained model's greedy predictions (ids, without </s>) for several token lists at once, remembered per
    batch of lines so that the pages and the walkthrough of one configuration decode once. ``ablate``: the
    ``(stack, layer, head)`` triples ablated (``kind``: "zero" or "mean", with the heads' ``means``)."""
    means_key = None if means is None or not ablate or kind != "mean" else np.asarray(means).tobytes()
    key = (tuple(map(tuple, sources)), extra_steps, tuple(ablate), kind if ablate else None, means_key)
    remembered = pretrained.predictions
    if key in remembered:
        remembered.move_to_end(key)
        return remembered[key]
    longest = max(len(s) for s in sources)
    src = np.zeros((len(sources), longest), np.int32)  # (B, N_s)
    for row, line in enumerate(sources):
        src[row, : len(line)] = pretrained.vocab.encode(line)
    with tf.device(pretrained.device):
        model = pretrained.model
        ablation = (active_heads(ablate, model.num_layers, model.num_heads), kind, means) if ablate else None
        predicted = greedy_decode(model, src, pretrained.rules.target_length(longest) + extra_steps, ablation)
    remembered[key] = [strip(row) for row in predicted]
    while len(remembered) > PREDICTIONS_KEPT:
        remembered.popitem(last=False)
    return remembered[key]


def translate(pretrained, source_text: str):
    """``(prediction_text, attention)`` for one source line, the prediction written as a person writes it.

    ``attention`` maps "encoder", "decoder", "cross" to lists (one per layer) of ``(1, H, N_q, N_k)`` arrays
    computed on the decoder input ``<s> + prediction``: query ``i`` of the decoder is the step that predicts
    output token ``i``.
    """
    line = pretrained.source_tokens(source_text)
    predicted = predictions(pretrained, [line])[0]
    src = np.array([pretrained.vocab.encode(line)], np.int32)  # (1, N_s)
    decoder_input = np.array([[START_ID] + predicted], np.int32)  # (1, N_t)
    with tf.device(pretrained.device):
        _, attention = pretrained.model(src, decoder_input, padding_mask(src, PAD_ID),
                                        target_mask(decoder_input, PAD_ID))
    arrays = {name: [np.asarray(w) for w in weights] for name, weights in attention.items()}
    return pretrained.rules.target_text(pretrained.vocab.decode(predicted)), arrays


__all__ = ["predictions", "translate"]
