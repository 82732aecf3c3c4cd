"""Greedy and sampled (temperature, top-k, top-p) decoding of a model, whole-model and cached.

- `greedy_decode`: a batch of source lines at once, the whole model per step (traced): training's evaluation
  and a trained model's predictions (`transformer.training.answers`).
- `run_steps`: one line step by step, each step computed by the whole model on the prefix (traced: what the
  pictures show), then the line through the key/value cache (`Transformer.decode` with `Transformer.new_cache`) to
  check it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core.ablation import HeadAblation
from transformer.core.masks import padding_mask, subsequent_mask, target_mask
from transformer.core.shape import STACKS
from transformer.tasks import END_ID, PAD_ID, START_ID

MAX_TOP_K = 50


# --- a batch at once: greedy, the whole model per step -------------------------------------------------------------

def _decoder_functions(model, kind=None):
    """Traced encode and next-token steps of an encoder-decoder ``model`` (once per model and ablation kind; batch
    and lengths free). With an ablation ``kind`` ("zero" or "mean") both take last arguments, the active heads
    ``(stacks, L, H)`` (`transformer.core.ablation.active_heads`) and, for "mean", the heads' means ``(stacks, L,
    H, d_v)`` (`head_means`): one graph for every set of ablated heads."""
    name = f"_greedy_functions_{kind or 'plain'}"
    if not hasattr(model, name):
        ids, mask = tf.TensorSpec((None, None), tf.int32), tf.TensorSpec((None, 1, 1, None), tf.bool)
        hidden = tf.TensorSpec((None, None, model.d_model), tf.float32)
        active = _ablation_specs(model, kind)

        @tf.function(input_signature=[ids, mask, *active], autograph=False)  # plain Python: AutoGraph cost ~1 s
        def encode(src, memory_mask, *heads):
            return model.encode(src, memory_mask, hook=_ablation(heads, kind))[0]  # (B, N_s, D)

        @tf.function(input_signature=[ids, hidden, mask, *active], autograph=False)
        def next_token(decoder_input, memory, memory_mask, *heads):
            hidden, _, _ = model.decode(decoder_input, memory, memory_mask, target_mask(decoder_input, PAD_ID),
                                        hook=_ablation(heads, kind))
            return tf.argmax(model.project_logits(hidden[:, -1]), -1, output_type=tf.int32)  # (B,)

        setattr(model, name, (encode, next_token))
    return getattr(model, name)


def _ablation_specs(model, kind) -> list:
    """The traced arguments of an ablation of ``kind``: none, the active heads ``(S, L, H)``, and for "mean" the
    heads' means ``(S, L, H, d_v)``."""
    if not kind:
        return []
    active = [tf.TensorSpec((len(STACKS), model.num_layers, model.num_heads), tf.float32)]
    depth = model.d_model // model.num_heads
    return active + ([tf.TensorSpec((len(STACKS), model.num_layers, model.num_heads, depth), tf.float32)]
                   if kind == "mean" else [])


def _ablation(heads: tuple, kind):
    """The `HeadAblation` of a traced function's ablation arguments (``heads``: (), ``(active,)`` or ``(active,
    means)``), or None."""
    return HeadAblation.of_active(heads[0], kind, heads[1] if len(heads) > 1 else None) if heads else None


def ablation_arguments(ablation) -> list:
    """``ablation`` (None, or ``(active, kind[, means])``) as the traced functions' last arguments."""
    if not ablation:
        return []
    active, kind, *means = ablation
    return [tf.constant(active, tf.float32)] + ([tf.constant(means[0], tf.float32)] if kind == "mean" else [])


def greedy_decode(model, src, max_steps: int, ablation=None):
    """Greedy decoding by an encoder-decoder: ``src (B, N_s)`` -> predicted ids ``(B, <= max_steps)``, stopping at
    </s>. ``ablation``: None, or ``(active (stacks, L, H), kind[, means (stacks, L, H, d_v)])``: those heads ablated
    (`HeadAblation.of_active`; the means for "mean")."""
    encode, next_token = _decoder_functions(model, ablation[1] if ablation else None)
    heads = ablation_arguments(ablation)  # (S, L, H)[, (S, L, H, d_v)]
    src = np.asarray(src, np.int32)
    decoder_input = np.full((src.shape[0], 1), START_ID, np.int32)  # (B, 1)
    finished = np.zeros(src.shape[0], bool)
    memory_mask = padding_mask(src, PAD_ID)  # (B, 1, 1, N_s)
    memory = encode(src, memory_mask, *heads)  # (B, N_s, D)
    for _ in range(max_steps):
        next_ids = next_token(decoder_input, memory, memory_mask, *heads).numpy()  # (B,)
        next_ids = np.where(finished, PAD_ID, next_ids)
        decoder_input = np.concatenate([decoder_input, next_ids[:, None]], axis=1)  # (B, t + 1)
        finished |= next_ids == END_ID
        if finished.all():
            break
    return decoder_input[:, 1:]


def strip(ids) -> list[int]:
    """Ids up to (not including) </s> or padding."""
    out = []
    for token in ids:
        if token in (END_ID, PAD_ID):
            break
        out.append(int(token))
    return out


# --- one line, step by step: whole model and cache --------------------------------------------------------------

@dataclass(frozen=True)
class Step:
    """Decoding step ``t``: the decoder has read ``prefix`` (``<s>`` or the prompt, and the tokens chosen so far)
    and chooses.

    self_attention: ``(L, H, len(prefix))`` the newest position's masked self-attention over the prefix;
    cross_attention: ``(L, H, N_s)`` its cross-attention over the source (None: a decoder-only model);
    probabilities: ``(V,)`` the next-token distribution at the temperature (top-k and top-p applied when
    sampling); chosen: the token chosen.
    """

    prefix: tuple
    self_attention: np.ndarray
    cross_attention: np.ndarray | None
    probabilities: np.ndarray
    chosen: str

    def top(self, vocabulary, k: int = 8) -> list[tuple[str, float]]:
        """The ``k`` most probable next tokens and their probabilities, most probable first."""
        order = np.argsort(-self.probabilities, kind="stable")[:k]
        return [(vocabulary.decode([i])[0], float(self.probabilities[i])) for i in order]


@dataclass(frozen=True)
class Decoding:
    """Every step of one line's decoding, and the cache's state and check at the end.

    model: the weights' name ("random" for a random decoder-only model continuing a prompt); source_tokens: the
    encoder's line (empty decoder-only); prompt: the tokens the decoder starts from (``("<s>",)`` for a trained
    model). cache: per decoder layer ``{"keys", "values"}`` ``(H_kv, T, d_k)`` (the decoded positions) and, with
    cross-attention, ``{"cross_keys", "cross_values"}`` ``(H_kv, N_s, d_k)``; cache_bytes: their memory;
    cache_gap: max |logits with the cache − logits of the whole model on the prefix| over every step.
    """

    model: str
    source_tokens: tuple
    steps: tuple
    prediction: str
    expected: str | None
    cache: tuple
    cache_bytes: int
    cache_gap: float
    vocabulary: object
    layers: int
    heads: int
    device_label: str
    prompt: tuple = ("<s>",)
    kv_heads: int = 0


def next_token_distribution(logits: np.ndarray, temperature: float, top_k: int = 0, top_p: float = 1.0) -> np.ndarray:
    """softmax(logits / temperature), kept to the ``top_k`` most probable tokens (0: all) and then to the fewest most
    probable tokens whose probabilities reach ``top_p`` (nucleus sampling, Holtzman et al. 2020; 1: all; a ``top_k``
    at or above V keeps all),
    renormalised: ``(V,)`` float32."""
    scaled = np.asarray(logits, np.float64) / temperature
    if 0 < top_k < scaled.size:  # top-k at or above the vocabulary keeps every token
        threshold = np.sort(scaled)[-top_k]
        scaled = np.where(scaled >= threshold, scaled, -np.inf)
    scaled -= scaled.max()
    weights = np.exp(scaled)
    weights /= weights.sum()
    if top_p < 1.0:
        order = np.argsort(-weights, kind="stable")
        before = np.cumsum(weights[order]) - weights[order]  # the mass of the more probable tokens
        kept = np.zeros_like(weights, bool)
        kept[order[before < top_p]] = True  # the smallest set whose mass reaches top_p
        weights = np.where(kept, weights, 0.0)
        weights /= weights.sum()
    return weights.astype(np.float32)


def check_settings(temperature, top_k, top_p, max_steps) -> None:
    """ValueError naming any sampling setting out of its range."""
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not 0.05 <= temperature <= 5:
        raise ValueError(f"temperature must be from 0.05 to 5. Received: temperature={temperature!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 0 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k must be from 0 (all) to {MAX_TOP_K}. Received: top_k={top_k!r}")
    if isinstance(top_p, bool) or not isinstance(top_p, (int, float)) or not 0 < top_p <= 1:
        raise ValueError(f"top_p must be above 0 and at most 1 (all). Received: top_p={top_p!r}")
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or not 1 <= max_steps <= 64:
        raise ValueError(f"max_steps must be from 1 to 64. Received: max_steps={max_steps!r}")


@dataclass(frozen=True)
class Line:
    """What `run_steps` decodes: ``src (1, N_s)`` ids (None decoder-only), the ``prompt`` ids, the ids it may
    choose among (``choices``: the first ``choices`` ids) and the id that ends the line (None: none)."""

    src: np.ndarray | None
    prompt: list
    choices: int
    end_id: int | None


def _step_function(model, with_memory: bool, kind: str | None):
    """The whole model on a prefix, traced once per model (and per kind of call): ``step(prefix (1, t), [memory
    (1, N_s, D), src_mask (1, 1, 1, N_s)], [active (stacks, L, H)[, means (stacks, L, H, d_v)]])`` -> ``(logits (V,)
    of the last position, its self-attention (L, H, t), its cross-attention (L, H, N_s) or (0,))``; ``active``: the
    heads ablated by ``kind`` as `HeadAblation.of_active` reads them. One graph serves every prefix length and every
    set of ablated heads."""
    name = f"_decode_step_{'memory' if with_memory else 'alone'}_{kind or 'plain'}"
    if not hasattr(model, name):
        specs = [tf.TensorSpec((1, None), tf.int32)]
        if with_memory:
            specs += [tf.TensorSpec((1, None, model.d_model), tf.float32), tf.TensorSpec((1, 1, 1, None), tf.bool)]
        specs += _ablation_specs(model, kind)

        @tf.function(input_signature=specs, autograph=False)
        def step(prefix, *rest):
            memory, src_mask = (rest[0], rest[1]) if with_memory else (None, None)
            causal = subsequent_mask(tf.shape(prefix)[1])[None, None]  # (1, 1, t, t)
            hook = _ablation(rest[2:] if with_memory else rest, kind)
            hidden, self_weights, cross_weights = model.decode(prefix, memory, src_mask, causal, hook=hook)
            logits = model.project_logits(hidden[:, -1])[0]  # (V,)
            self_rows = tf.stack([w[0, :, -1] for w in self_weights])  # (L, H, t)
            cross_rows = tf.stack([w[0, :, -1] for w in cross_weights]) if cross_weights else tf.zeros((0,))
            return logits, self_rows, cross_rows

        setattr(model, name, step)
    return getattr(model, name)


def run_steps(model, line: Line, max_steps: int, choose, ablation=None) -> tuple[list, object, float]:
    """Decode ``line`` with ``model`` step by step, each step the whole model on the prefix (traced), then the same
    line through the key/value cache once (the prompt, then every chosen token) to check it; ``ablation``: None, or
    ``(active (stacks, L, H), kind[, means (stacks, L, H, d_v)])`` as `greedy_decode` takes it.

    ``choose(logits (choices,)) -> (probabilities, chosen id)``. Returns ``(steps, cache, gap)``: per step
    ``(prefix ids, self weights (L, H, t), cross weights (L, H, N_s) or None, probabilities, chosen id)``; ``gap``:
    max |logits with the cache − logits of the whole model| over every step."""
    src = None if line.src is None else tf.constant(line.src)  # (1, N_s)
    src_mask = None if src is None else padding_mask(src, PAD_ID)  # (1, 1, 1, N_s)
    arguments = ablation_arguments(ablation)  # (S, L, H)[, (S, L, H, d_v)]
    kind = ablation[1] if ablation else None
    hook = _ablation(tuple(arguments), kind)
    memory = None if src is None else model.encode(src, src_mask, hook=hook)[0]  # (1, N_s, D): once
    step = _step_function(model, memory is not None, kind)
    extra = ([memory, src_mask] if memory is not None else []) + arguments
    prefix, steps, whole = list(line.prompt), [], []
    for _ in range(max_steps):
        logits, self_rows, cross_rows = step(tf.constant([prefix], tf.int32), *extra)
        whole.append(logits.numpy())  # (V,)
        probabilities, chosen = choose(whole[-1][: line.choices])
        cross = cross_rows.numpy() if memory is not None else None  # (L, H, N_s)
        steps.append((tuple(prefix), self_rows.numpy(), cross, probabilities, chosen))  # (L, H, t)
        prefix.append(chosen)
        if chosen == line.end_id:
            break
    cache, gap = _cached_run(model, prefix[:-1], len(line.prompt), memory, src_mask, hook, np.stack(whole))
    return steps, cache, gap


def _cached_run(model, fed: list, prompt_length: int, memory, src_mask, hook, whole) -> tuple[object, float]:
    """The decoded line through the key/value cache: the prompt in one call, then the chosen tokens in another (each
    new position attends to the cached ones); ``whole (steps, V)``: the whole model's logits at each step. Returns
    the cache and max |cached − whole| over the steps."""
    cache, cached = model.new_cache(), []
    for part in (fed[:prompt_length], fed[prompt_length:]):
        if part:
            hidden, _, _ = model.decode(tf.constant([part], tf.int32), memory, src_mask, cache=cache, hook=hook)
            cached.append(model.project_logits(hidden)[0].numpy())  # (n, V)
    cached = np.concatenate(cached)[prompt_length - 1:]  # (steps, V): the positions that chose
    return cache, float(np.abs(cached - whole).max())


def chooser(sample: bool, temperature: float, top_k: int, top_p: float, seed: int):
    """``choose(logits) -> (probabilities, chosen id)``: the most probable id, or one drawn from the distribution."""
    rng = np.random.default_rng(seed)

    def choose(logits):
        probabilities = next_token_distribution(logits, temperature, top_k if sample else 0,
                                                top_p if sample else 1.0)
        if sample:
            return probabilities, int(rng.choice(len(probabilities), p=probabilities / probabilities.sum()))
        return probabilities, int(np.argmax(logits))
    return choose


__all__ = ["Decoding", "Step", "check_settings", "chooser", "greedy_decode", "next_token_distribution",
           "run_steps", "strip"]
