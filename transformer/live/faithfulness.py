"""Which explanation of a trained encoder-decoder is right, measured: on fresh examples of a task whose alignment is
known (the source token each output token comes from), each method's map over the source tokens is scored by
(a) how often its top source token is the aligned one and (b) a deletion test — its top-k source tokens replaced by
``<pad>`` (masked), and the drop in the aligned output token's probability, against k random source tokens (AOPC,
the mean drop over k = 1…3). Teacher forced on the right answers; docs/explanations.md has the shipped models'.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.analysis.explanations import head_mean, head_sum_normalised, source_flow, source_rollout
from transformer.core.ablation import active_heads
from transformer.core.masks import padding_mask, target_mask
from transformer.core.shape import STACKS
from transformer.core.value_norms import value_weighted_norms
from transformer.live.importance import ablated_loss, model_identity
from transformer.runtime.stored_results import recall, remember
from transformer.tasks import PAD_ID, get_task, make_batch
from transformer.training.pretrained import load_pretrained, task_of

METHODS = ("last-layer cross-attention", "rollout", "flow", "norm rollout", "gradient × input", "ablation's head")
DELETED = (1, 2, 3)  # k: the top-k source tokens deleted
RANDOM_DRAWS = 8  # random deletions a (output token, k)
MAX_COUNT = 500
CHUNK = 512  # rows a forward pass of the deletion test
SCORES_VERSION = 2  # what a kept result holds: a new version measures again


@dataclass(frozen=True)
class ExampleMaps:
    """One example: ``maps[method]`` ``(T, N_s)`` over the source tokens for each target token (its scale is the
    method's own); ``aligned[j]`` the source index target token j comes from (None: none); ``head`` the cross-
    attention ``(layer, head)`` whose zero-ablation costs the most loss on the study's examples."""

    source_tokens: list
    target_tokens: list
    aligned: list
    maps: dict
    head: tuple


@dataclass(frozen=True)
class Faithfulness:
    """A trained model's explanations scored on ``count`` fresh examples (``outputs`` aligned output tokens).
    ``top1 (M,)``: the share whose top source token is the aligned one (a tie shares the credit); ``top1_same``:
    the share whose top source token is the aligned one's symbol (a repeated symbol's other copy counts);
    ``drops (M, K)``: the mean drop in the aligned token's probability with each method's top-k deleted (k: `DELETED`);
    ``random_drops (K,)`` the same for k random source tokens; ``base``: the mean probability undeleted."""

    name: str
    count: int
    seed: int
    outputs: int
    base: float
    top1: np.ndarray
    top1_same: np.ndarray
    drops: np.ndarray
    random_drops: np.ndarray
    head: tuple
    seconds: float

    @property
    def aopc(self) -> np.ndarray:
        return self.drops.mean(1)  # (M,)

    @property
    def random_aopc(self) -> float:
        return float(self.random_drops.mean())

    def rows(self) -> list[dict]:
        """The table: a row a method."""
        return [{"method": method, "top-1 aligned": float(self.top1[m]), "top-1 same symbol": float(self.top1_same[m]),
                 "AOPC": float(self.aopc[m]),
                 "AOPC random": self.random_aopc} for m, method in enumerate(METHODS)]


@dataclass(frozen=True)
class _Study:
    """Examples as teacher-forcing arrays (``src (B, N_s)``, ``decoder_input``, ``labels (B, T + 1)``), their
    lengths and alignments, and every method's maps ``{method: [(T_b, N_s_b)] an example}``."""

    src: np.ndarray
    decoder_input: np.ndarray
    labels: np.ndarray
    source_lengths: list
    aligned: list
    maps: dict
    head: tuple


EXPLAINED_TASKS = ("dates", "translate", "copy", "reverse", "sort")  # encoder-decoder tasks with an alignment


def _checked(name: str, count: int) -> None:
    task = task_of(name)
    if task not in EXPLAINED_TASKS:
        raise ValueError(f"Explanations are scored against a task's known alignment: a trained encoder-decoder of "
                         f"{', '.join(EXPLAINED_TASKS)}. Received: {name!r} (task {task!r})")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_COUNT:
        raise ValueError(f"count must be a whole number from 1 to {MAX_COUNT}. Received: count={count!r}")


def _gradient_times_input(model, src, decoder_input, labels, rows) -> np.ndarray:
    """``(R, N_s)``: for each ``(example, position)`` of ``rows``, Σ_d ∂ log p(label) / ∂e · e over the source's
    token embeddings e — one backward pass for all (each row is its own copy of its example)."""
    examples, positions = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    src, decoder_input = tf.constant(src[examples]), tf.constant(decoder_input[examples])  # (R, N_s), (R, N_t)
    wanted = labels[examples, positions]  # (R,)
    embedded = model.source_embedding(src)  # (R, N_s, D)
    with tf.GradientTape() as tape:
        tape.watch(embedded)
        logits = model.logits_from_embedded(embedded, decoder_input, padding_mask(src, PAD_ID),
                                            target_mask(decoder_input, PAD_ID))  # (R, N_t, V)
        picked = tf.gather_nd(tf.nn.log_softmax(logits), np.stack([np.arange(len(rows)), positions, wanted], 1))
        total = tf.reduce_sum(picked)  # rows are independent: each gradient is its own row's
    return tf.reduce_sum(tape.gradient(total, embedded) * embedded, -1).numpy()  # (R, N_s)


def _costliest_cross_head(model, src, decoder_input, labels) -> tuple[int, int]:
    """The cross-attention ``(layer, head)`` whose zero-ablation raises the teacher-forced loss the most."""
    loss = ablated_loss(model, "zero")
    means = tf.zeros((len(STACKS), model.num_layers, model.num_heads, model.d_model // model.num_heads))
    costs = {(layer, head): float(loss(src, decoder_input, labels,
                                       tf.constant(active_heads([("cross", layer, head)], model.num_layers,
                                                              model.num_heads)), means))
             for layer in range(model.num_layers) for head in range(model.num_heads)}
    return max(costs, key=costs.get)


def _study(name: str, sources: list, aligned: list, device: str, head: tuple | None = None) -> _Study:
    pretrained = load_pretrained(name, device)
    model, task = pretrained.model, pretrained.rules
    src, decoder_input, labels = make_batch(task, pretrained.vocab, sources, max(len(s) for s in sources))
    rows = [(b, j) for b, pairs in enumerate(aligned) for j, at in enumerate(pairs) if at is not None]
    with tf.device(pretrained.device):
        masks = padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID)
        norms, weights = value_weighted_norms(model, ("encoder", "decoder", "cross"), src, decoder_input,
                                              *masks)  # {stack: (L, B, H, N_q, N_k)}
        gradients = _gradient_times_input(model, src, decoder_input, labels, rows)  # (R, N_s)
        head = head or _costliest_cross_head(model, src, decoder_input, labels)
    gradient_rows = {(b, j): r for r, (b, j) in enumerate(rows)}
    maps = {method: [] for method in METHODS}
    for b, (source, pairs) in enumerate(zip(sources, aligned)):
        n_s, n_t, targets = len(source), len(pairs) + 1, len(pairs)  # the decoder's positions: <s> and the target
        sizes = (("encoder", n_s, n_s), ("decoder", n_t, n_t), ("cross", n_t, n_s))
        parts = [weights[stack][:, b, :, :n_q, :n_k] for stack, n_q, n_k in sizes]  # (L, H, N_q, N_k) each
        moved = [norms[stack][:, b, :, :n_q, :n_k] for stack, n_q, n_k in sizes]
        maps["last-layer cross-attention"].append(parts[2][-1].mean(0)[:targets])
        maps["rollout"].append(source_rollout(*map(head_mean, parts))[:targets])
        maps["flow"].append(source_flow(*map(head_mean, parts), queries=range(targets)))
        maps["norm rollout"].append(source_rollout(*map(head_sum_normalised, moved))[:targets])
        grid = np.zeros((targets, n_s))  # an output token without a source token keeps a zero row
        for j in range(targets):
            if (b, j) in gradient_rows:
                grid[j] = gradients[gradient_rows[(b, j)], :n_s]
        maps["gradient × input"].append(grid)
        maps["ablation's head"].append(parts[2][head[0], head[1]][:targets])
    return _Study(src, decoder_input, labels, [len(s) for s in sources], aligned, maps, head)


def _ranked(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions from the largest value down, ties in a random order."""
    return np.lexsort((rng.random(len(values)), -values))


def _top1_credit(values: np.ndarray, aligned: int, tokens=None) -> float:
    """1 when ``aligned`` alone holds the largest value, 1/t when it is one of t tied at the top, else 0; with the
    source ``tokens``, the share of the tied top positions that hold ``aligned``'s token."""
    top = np.flatnonzero(values >= values.max() - 1e-9 * max(1.0, abs(values.max())))
    if tokens is not None:
        return float(np.mean([tokens[position] == tokens[aligned] for position in top]))
    return 1.0 / len(top) if aligned in top else 0.0


def _probabilities(model, src, decoder_input, labels, rows) -> np.ndarray:
    """``(R,)``: the probability of ``labels[b, j]`` at decoder position j with each row's source ``(R, N_s)``."""
    rows_src = np.stack([r[0] for r in rows])  # (R, N_s)
    examples, positions = np.array([r[1] for r in rows]), np.array([r[2] for r in rows])
    found = []
    for start in range(0, len(rows), CHUNK):
        part = slice(start, start + CHUNK)
        chunk_src, chunk_tgt = rows_src[part], decoder_input[examples[part]]  # (C, N_s), (C, N_t)
        logits, _ = model(chunk_src, chunk_tgt, padding_mask(chunk_src, PAD_ID), target_mask(chunk_tgt, PAD_ID))
        probabilities = tf.nn.softmax(logits).numpy()  # (C, N_t, V)
        found.append(probabilities[np.arange(len(chunk_src)), positions[part], labels[examples[part],
                                                                                      positions[part]]])
    return np.concatenate(found)


def _deletions(study: _Study, seed: int) -> tuple[list, list]:
    """The deletion test's rows ``(src, example, position)`` and what each is: ``(method index or -1 for random,
    k index)``; the undeleted rows first (kind ``(None, None)``)."""
    rng = np.random.default_rng(seed)
    rows, kinds = [], []
    for b, pairs in enumerate(study.aligned):
        n_s = study.source_lengths[b]
        for j, at in enumerate(pairs):
            if at is None:
                continue
            rows.append((study.src[b], b, j))
            kinds.append((None, None))
            for k_index, k in enumerate(kk for kk in DELETED if kk < n_s):
                for m, method in enumerate(METHODS):
                    deleted = study.src[b].copy()
                    deleted[_ranked(study.maps[method][b][j], rng)[:k]] = PAD_ID
                    rows.append((deleted, b, j))
                    kinds.append((m, k_index))
                for _ in range(RANDOM_DRAWS):
                    deleted = study.src[b].copy()
                    deleted[rng.choice(n_s, k, replace=False)] = PAD_ID
                    rows.append((deleted, b, j))
                    kinds.append((-1, k_index))
    return rows, kinds


def _scored(name: str, count: int, seed: int, device: str) -> dict:
    started = time.perf_counter()
    task = get_task(task_of(name))
    triples = task.examples(count, seed)
    sources = [task.source_tokens(text) for text, _, _ in triples]
    study = _study(name, sources, [alignment for _, _, alignment in triples], device)
    credits, same = ([[_top1_credit(study.maps[method][b][j], at, sources[b] if by_symbol else None)
                       for b, pairs in enumerate(study.aligned) for j, at in enumerate(pairs) if at is not None]
                      for method in METHODS] for by_symbol in (False, True))
    rows, kinds = _deletions(study, seed)
    pretrained = load_pretrained(name, device)
    with tf.device(pretrained.device):
        found = _probabilities(pretrained.model, study.src, study.decoder_input, study.labels, rows)  # (R,)
    drops = [[[] for _ in DELETED] for _ in range(len(METHODS) + 1)]  # the last: random
    undeleted = []
    for probability, (m, k_index) in zip(found, kinds):
        if m is None:  # the undeleted row: the ones after it (its output token's) are measured against it
            undeleted.append(probability)
            continue
        drops[m][k_index].append(undeleted[-1] - probability)
    table = np.array([[np.mean(d) if d else np.nan for d in per_k] for per_k in drops])  # (M + 1, K)
    return {"count": count, "outputs": len(credits[0]), "base": float(np.mean(undeleted)),
            "top1": [float(np.mean(c)) for c in credits], "top1_same": [float(np.mean(c)) for c in same],
            "drops": table[:-1].tolist(),
            "random_drops": table[-1].tolist(), "head": list(study.head), "seconds": time.perf_counter() - started}


_SCORED: dict = {}  # key -> the scores, measured in this process


def _key(name: str, count: int, seed: int, device: str) -> str:
    return json.dumps([model_identity(name), count, seed, device, METHODS, DELETED, RANDOM_DRAWS, SCORES_VERSION])


def is_measured(name: str, count: int = 100, seed: int = 0, device: str = "/CPU:0") -> bool:
    """Whether `faithfulness` with these settings is kept (in this process or the data directory): quick."""
    key = _key(name, count, seed, device)
    return key in _SCORED or recall("faithfulness", key) is not None


def faithfulness(name: str, count: int = 100, seed: int = 0, device: str = "/CPU:0") -> Faithfulness:
    """Every method of `METHODS` scored on ``count`` fresh examples of the task of the trained encoder-decoder
    ``name`` drawn from ``seed`` (kept once measured: in this process and the data directory).
    ValueError for a model whose task has no alignment, or a count outside 1…`MAX_COUNT`."""
    _checked(name, count)
    key = _key(name, count, seed, device)
    found = _SCORED.get(key) or recall("faithfulness", key)
    if found is None:
        found = _scored(name, count, seed, device)
        remember("faithfulness", key, found)
    _SCORED[key] = found
    return Faithfulness(name, count, seed, found["outputs"], found["base"], np.array(found["top1"]),
                        np.array(found["top1_same"]),
                        np.array(found["drops"]), np.array(found["random_drops"]), tuple(found["head"]),
                        found["seconds"])


def keep_scores(scores: Faithfulness, name: str, count: int = 100, seed: int = 0, device: str = "/CPU:0") -> None:
    """Keep ``scores``, made elsewhere (the background lane's process), as if scored here (and in the data
    directory)."""
    key = _key(name, count, seed, device)
    found = {"count": scores.count, "outputs": scores.outputs, "base": scores.base, "top1": scores.top1.tolist(),
             "top1_same": scores.top1_same.tolist(), "drops": np.asarray(scores.drops).tolist(),
             "random_drops": np.asarray(scores.random_drops).tolist(), "head": list(scores.head),
             "seconds": scores.seconds}
    _SCORED[key] = found
    remember("faithfulness", key, found)


def example_maps(name: str, source_text: str, count: int = 100, seed: int = 0,
                 device: str = "/CPU:0") -> ExampleMaps:
    """Every method's map for one typed source of the task of ``name``, teacher forced on its right answer; the
    ablation's head is the one chosen on the study's examples (``count``, ``seed``). ValueError for a source not
    of the task's form, or a model as `faithfulness`."""
    _checked(name, count)
    task = get_task(task_of(name))
    pretrained = load_pretrained(name, device)
    tokens = pretrained.source_tokens(source_text)
    try:
        target, aligned = task.solve(tokens), task.align(tokens)
    except ValueError as error:
        raise ValueError(f"The explanations are scored on the task's right answer: {error}") from None
    head = faithfulness(name, count, seed, device).head  # chosen on the study's examples
    study = _study(name, [tokens], [aligned], device, head)
    return ExampleMaps(tokens, list(target), list(aligned), {method: grids[0] for method, grids in study.maps.items()},
                       head)


__all__ = ["DELETED", "EXPLAINED_TASKS", "METHODS", "ExampleMaps", "Faithfulness", "example_maps", "faithfulness",
           "is_measured", "keep_scores"]
