"""Attention Lab in a notebook: a model from outside and the app's own figures, in two lines.

    from attention_lab import load
    m = load("bert_tiny_en_uncased")            # a keras-hub preset, a preset folder, a .keras file or a keras.Model
    m.figure("head_view", "The cat sat on the mat").show()
    m.figure("heads", "The cat sat on the mat", layer=1).write_html("heads.html")   # works offline: Plotly inside

Figures (`FIGURES`): ``heads`` (one layer's heads and their mean), ``model_view`` (every layer × head),
``head_view`` (lines from queries to keys), ``rollout`` (attention rollout), ``roles`` (each head's role scores
on the line), ``next_token`` (a causal language model's most probable next tokens). The builders are the app's
(`viz`); the weights come from `transformer.external`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from transformer.analysis.heads import role_scores
from transformer.analysis.measures import attention_rollout
from transformer.external import ExternalModel
from transformer.external import load as load_external
from viz.attention import head_grid, model_view
from viz.decoding import distribution
from viz.head_view import head_view
from viz.heads import role_grid

FIGURES = ("heads", "model_view", "head_view", "rollout", "roles", "next_token")


@dataclass
class NotebookModel:
    """`transformer.external.ExternalModel` with the app's figures (`figure`); ``external`` holds the model."""

    external: ExternalModel

    def attention(self, text: str) -> tuple[list[str], np.ndarray]:
        """``(tokens, weights (L, H, N, N))``: `ExternalModel.attention`."""
        return self.external.attention(text)

    def figure(self, kind: str, text: str, layer: int | None = None, top: int = 10) -> go.Figure:
        """The app's ``kind`` figure (`FIGURES`) of ``text``: ``layer`` (default the last) for ``heads`` and
        ``head_view``; ``top`` tokens for ``next_token``. ValueError for another kind or layer."""
        if kind not in FIGURES:
            raise ValueError(f"kind must be one of {FIGURES}. Received: kind={kind!r}")
        if kind == "next_token":
            return self._next_token(text, top)
        tokens, weights = self.attention(text)  # (L, H, N, N)
        layer = weights.shape[0] - 1 if layer is None else layer
        if not isinstance(layer, int) or not 0 <= layer < weights.shape[0]:
            raise ValueError(f"layer must be from 0 to {weights.shape[0] - 1}. Received: layer={layer!r}")
        labels = tokens  # the builders label them by position ("0·the", "4·the": repeated tokens stay apart)
        mask = np.ones(weights.shape[-2:], bool)
        name = self.external.name
        if kind == "heads":
            with_mean = np.concatenate([weights[layer], weights[layer].mean(0, keepdims=True)])
            names = [f"head {h}" for h in range(weights.shape[1])] + ["mean of heads"]
            return head_grid(with_mean, mask, labels, labels, title=f"{name}: layer {layer}", names=names)
        if kind == "model_view":
            return model_view(weights, mask, f"{name}: every layer × head")
        if kind == "head_view":
            return head_view(weights[layer], mask, labels, labels, title=f"{name}: layer {layer}")
        if kind == "rollout":
            return head_grid(attention_rollout(weights)[None].astype(np.float32), mask, labels, labels,
                             title=f"{name}: attention rollout over {weights.shape[0]} layers", names=["rollout"],
                             columns=1)
        scores = role_scores(weights, self.external.token_ids(text))
        return role_grid(scores, 1, f"{name}: role scores on this line")

    def _next_token(self, text: str, top: int) -> go.Figure:
        probabilities = self.external.next_token_probabilities(text)[-1]  # (V,)
        best = np.argsort(probabilities)[::-1][:top]
        tokens = [self._token(int(i)) for i in best]
        pairs = [(token, float(probabilities[i])) for token, i in zip(tokens, best)]
        return distribution(pairs, tokens[0], f"{self.external.name}: the next token after {text[-40:]!r}")

    def _token(self, token_id: int) -> str:
        tokenizer = self.external.tokenizer
        return str(token_id) if tokenizer is None else tokenizer.id_to_token(token_id)


def load(source, name: str | None = None) -> NotebookModel:
    """`transformer.external.load`, with the app's figures: a keras-hub preset name or folder, a ``.keras`` file or
    a ``keras.Model``. ValueError naming the problem."""
    return NotebookModel(load_external(source, name))


__all__ = ["FIGURES", "NotebookModel", "load"]
