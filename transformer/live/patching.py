"""Patching on a trained model of a task whose answer is known: the clean line (typed, or drawn from a seed), its
corrupted twin (typed, or made by the task's corruption), the metric on their answers, and the maps and patched
runs of `transformer.analysis.patching`, as NumPy for the pages.

A sequence-to-sequence model runs teacher forced on the clean answer in every run (only the source differs); the
answer is each target position where the clean and the corrupted answers differ. A decoder-only model (induction)
reads the line; the answer is each position where the in-context rule's next token differs between the two lines.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np
import tensorflow as tf

from transformer.analysis import patch_maps, patching
from transformer.analysis.patch_maps import PatchMap
from transformer.analysis.patching import Inputs, Metric
from transformer.core import patching as core_patching
from transformer.core.masks import padding_mask, target_mask
from transformer.live.sources import source_of
from transformer.runtime.device import resolve_device
from transformer.tasks import END, PAD_ID, START, START_ID
from transformer.tasks.corruption import CORRUPTIONS, corrupt
from transformer.tasks.induction import NO_RULE
from transformer.training.pretrained import Pretrained, load_pretrained

METRIC_LABELS = {"logprob": "log-probability of the clean answer", "logit_diff": "logit difference, clean − corrupted "
                 "answer", "attention": "the last layer's weight on the token after the earlier occurrence"}
MAX_LINE_TOKENS = 64
SEQ2SEQ_METRICS = ("logit_diff", "logprob")  # a sequence-to-sequence model's metrics, its default first
TASK_METRICS = {"induction": ("attention", "logprob")}  # a task's own, where they differ (its answer is a rule's)


def metrics_of(task: str) -> tuple:
    """The metrics a model of ``task`` can be measured by, the default first."""
    return TASK_METRICS.get(task, SEQ2SEQ_METRICS)


@dataclass(frozen=True)
class PatchingTerms:
    """Patching's vocabulary as the pages offer it, one object at the door: the maps, directions, metrics (with
    their labels and which a task has), receivers' sides and LayerNorm readings, and the smallest gap normalised."""

    maps: tuple = patch_maps.MAP_KINDS
    directions: tuple = patching.DIRECTIONS
    metrics: tuple = patching.METRICS
    metric_labels: MappingProxyType = field(default_factory=lambda: MappingProxyType(METRIC_LABELS))
    sides: tuple = core_patching.SIDES
    layer_norms: tuple = patching.LAYER_NORMS
    min_gap: float = patching.MIN_PATCH_GAP

    @staticmethod
    def metrics_of(task: str) -> tuple:
        return metrics_of(task)

    @staticmethod
    def gap_too_small(clean_value: float, corrupt_value: float) -> bool:
        return patching.gap_too_small(clean_value, corrupt_value)


PATCHING = PatchingTerms()


@dataclass(frozen=True)
class PatchingLines:
    """The two lines and what is measured on them.

    clean, corrupt: the source tokens; answer, corrupt_answer: the right answers (a decoder-only model's: the rule's
    next token at each position, "·" where none); positions: the output positions measured; outputs: the token
    each output position reads (the target fed: ``<s>`` and the clean answer; or the line), as every page names a
    position; written: the token each writes (the clean answer and ``</s>``; or the rule's next); metric: the
    `Metric`.
    """

    name: str
    clean: tuple
    corrupt: tuple
    answer: tuple
    corrupt_answer: tuple
    positions: tuple
    outputs: tuple
    written: tuple
    metric: Metric
    clean_inputs: Inputs
    corrupt_inputs: Inputs

    @property
    def decoder_only(self) -> bool:
        return self.clean_inputs.src is None


def _model(name: str, device: str) -> Pretrained:
    if not source_of(name).supports.inside:
        raise ValueError("Patching runs through the lab's own attention layers (their hook), which a model from "
                         "outside (keras-hub or an uploaded .keras file) does not have: choose a shipped or trained "
                         f"model of {', '.join(sorted(CORRUPTIONS))}. Received: weights={name!r}")
    pretrained = load_pretrained(name, device)
    if not isinstance(pretrained, Pretrained) or pretrained.task not in CORRUPTIONS:
        raise ValueError(f"Patching needs a model of a task whose answer and corruption are known: "
                         f"{', '.join(sorted(CORRUPTIONS))}. Received: weights={name!r}")
    return pretrained


def patching_line(name: str, seed: int = 0, device: str = "auto") -> str:
    """A fresh clean line of the model's task drawn from ``seed`` (an induction line with its segment of 8–20)."""
    pretrained = _model(name, resolve_device(device))
    return pretrained.rules.fresh_line(np.random.default_rng(seed), pretrained.lengths)


def patching_lines(name: str, clean_text: str, corrupt_text: str = "", *, seed: int = 0, part: str = "",
                   metric: str = "logit_diff", device: str = "auto") -> PatchingLines:
    """The lines and metric of a study: ``corrupt_text`` "" makes the corruption (from ``seed``, of ``part``).
    ValueError naming a line not of the task's form, lines of different lengths, equal answers or a metric the
    task cannot give."""
    pretrained = _model(name, resolve_device(device))
    task = pretrained.rules
    clean = task.source_tokens(clean_text)
    if not clean or len(clean) > MAX_LINE_TOKENS:
        raise ValueError(f"A line for patching has 1 to {MAX_LINE_TOKENS} tokens. Received: {len(clean)}")
    corrupted = task.source_tokens(corrupt_text) if corrupt_text.strip() else corrupt(task, clean, seed, part)
    if len(corrupted) != len(clean):
        raise ValueError(f"Patching copies position by position: the corrupted line must have as many tokens as the "
                         f"clean one. Received: clean {len(clean)}, corrupted {len(corrupted)}")
    if task.decoder_only:
        return _decoder_only_lines(pretrained, clean, corrupted, metric)
    return _seq2seq_lines(pretrained, clean, corrupted, metric)


def _seq2seq_lines(pretrained: Pretrained, clean: list, corrupted: list, metric: str) -> PatchingLines:
    task, vocab = pretrained.rules, pretrained.vocab
    answers = [task.solve(line) for line in (clean, corrupted)]  # ValueError naming a line not of the task's form
    if len(answers[0]) != len(answers[1]):
        raise ValueError(f"The answers differ in length ({len(answers[0])} and {len(answers[1])} tokens): a logit "
                         "is compared position by position. Change the corrupted line so its answer is as long.")
    positions = tuple(i for i, (a, b) in enumerate(zip(*answers)) if a != b)
    if not positions:
        raise ValueError(f"The corrupted line has the same answer as the clean one ({task.target_text(answers[0])!r})"
                         ": there is nothing for a patch to restore.")
    if metric == "attention":
        raise ValueError("The attention metric measures an induction head: choose the induction model, or the "
                         "log-probability or the logit difference.")
    src = [np.array([vocab.encode(line)], np.int32) for line in (clean, corrupted)]  # (1, N_s) each
    tgt = np.array([[START_ID] + vocab.encode(answers[0])], np.int32)  # (1, T + 1): the clean answer fed to both
    inputs = [Inputs(ids, tgt, padding_mask(ids, PAD_ID).numpy(), target_mask(tgt, PAD_ID).numpy()) for ids in src]
    chosen = Metric(metric, positions, tuple(vocab.encode([answers[0][i] for i in positions])),
                    tuple(vocab.encode([answers[1][i] for i in positions])))
    return PatchingLines(pretrained.name, tuple(clean), tuple(corrupted), tuple(answers[0]), tuple(answers[1]),
                         positions, (START, *answers[0]), (*answers[0], END), chosen, *inputs)


def _decoder_only_lines(pretrained: Pretrained, clean: list, corrupted: list, metric: str) -> PatchingLines:
    task, vocab, model = pretrained.rules, pretrained.vocab, pretrained.model
    answers = [task.solve(line) for line in (clean, corrupted)]
    positions = tuple(p for p, (a, b) in enumerate(zip(*answers)) if a != NO_RULE and a != b)
    if not positions:
        raise ValueError("The corrupted line leaves the in-context rule's answers as they are: there is nothing for "
                         "a patch to restore. Change the first occurrence of the repeated segment.")
    tgt = [np.array([vocab.encode(line)], np.int32) for line in (clean, corrupted)]  # (1, N) each
    inputs = [Inputs(None, ids, None, target_mask(ids, PAD_ID).numpy()) for ids in tgt]
    clean_ids = tuple(vocab.encode([answers[0][p] for p in positions]))
    if metric == "logit_diff":
        missing = [p for p in positions if answers[1][p] == NO_RULE]
        if missing:
            raise ValueError("The logit difference compares the clean and the corrupted answer, and the corrupted "
                             f"line has none at positions {list(missing)[:8]} (the token did not occur before): "
                             "measure the log-probability or the attention.")
        chosen = Metric(metric, positions, clean_ids, tuple(vocab.encode([answers[1][p] for p in positions])))
    elif metric == "attention":
        keys = _earlier_next(clean, positions)
        chosen = Metric(metric, positions, stack="decoder", layer=model.num_layers - 1,
                        heads=tuple(range(model.num_heads)), keys=keys)
    else:
        chosen = Metric(metric, positions, clean_ids)
    return PatchingLines(pretrained.name, tuple(clean), tuple(corrupted), tuple(answers[0]), tuple(answers[1]),
                         positions, tuple(clean), tuple(answers[0]), chosen, *inputs)


def _earlier_next(tokens: list, positions: tuple) -> tuple:
    """For each position, the one after the latest earlier occurrence of its token (where an induction head looks)."""
    latest, keys = {}, {}
    for position, token in enumerate(tokens):
        if token in latest:
            keys[position] = latest[token] + 1
        latest[token] = position
    return tuple(keys[p] for p in positions)


@dataclass(frozen=True)
class PatchingStudy:
    """A map and the runs it starts from: ``predictions`` (clean, corrupted) the argmax token at each output
    position, ``lines`` the `PatchingLines`."""

    lines: PatchingLines
    map: PatchMap
    predictions: tuple


_STUDIES: collections.OrderedDict = collections.OrderedDict()
STUDIES_KEPT = 32


@dataclass(frozen=True)
class PatchRequest:
    """One patching map asked of a trained model ``name``, from the page to the engine as one value (hashable: the
    studies' key). The lines (`patching_lines`: ``corrupt_text`` "" makes the corruption, from ``seed``, of
    ``part``), what is measured, which map (`patch_maps.MAP_KINDS`) and its direction; the stream map's ``stack``
    ("": the model's first; a heads map by position: the attention stack, "" its last), a path map's ``receiver``
    ``(stack, layer, head, side)`` and its LayerNorm (`patching.LAYER_NORMS`: held at each run's scale, or
    recomputed on the patched stream)."""

    name: str
    clean_text: str
    corrupt_text: str = ""
    seed: int = 0
    part: str = ""
    metric: str = "logit_diff"
    kind: str = "heads"
    direction: str = "denoise"
    stack: str = ""
    receiver: tuple = ()
    device: str = "auto"
    layer_norm: str = "held"
    by_position: bool = False  # a heads map of ``stack``'s attention, or a path map, a column a position

    def __post_init__(self):
        path = self.kind == "path"
        object.__setattr__(self, "receiver", tuple(self.receiver) if path else ())
        object.__setattr__(self, "layer_norm", self.layer_norm if path else "held")
        object.__setattr__(self, "by_position", self.by_position and self.kind != "stream")


def patching_study(request: PatchRequest, progress=None) -> PatchingStudy:
    """``request``'s map on the lines of `patching_lines`; remembered (a click on a cell reads it again).
    ``progress(done, total)`` is told after each batch of patched runs."""
    if request not in _STUDIES:
        _STUDIES[request] = _study(request, progress)
        while len(_STUDIES) > STUDIES_KEPT:
            _STUDIES.popitem(last=False)
    _STUDIES.move_to_end(request)
    return _STUDIES[request]


def _study(request: PatchRequest, progress) -> PatchingStudy:
    lines = patching_lines(request.name, request.clean_text, request.corrupt_text, seed=request.seed,
                           part=request.part, metric=request.metric, device=request.device)
    device = resolve_device(request.device)
    pretrained = load_pretrained(request.name, device)
    model = pretrained.model
    lines = _receivers_own(lines, request.receiver)  # the receiver is checked by the map, against the model
    with tf.device(device):
        default_stack = model.stacks[-1] if request.by_position else patching.stream_stacks(model)[0]
        found = patch_maps.patch_map(model, lines.clean_inputs, lines.corrupt_inputs, lines.metric, request.kind,
                                     direction=request.direction, stack=request.stack or default_stack,
                                     receiver=request.receiver, progress=progress, layer_norm=request.layer_norm,
                                     by_position=request.by_position)
        predictions = tuple(_predicted(patching.plain_run(model, inputs)[0], pretrained.vocab)
                            for inputs in (lines.clean_inputs, lines.corrupt_inputs))
    return PatchingStudy(lines, found, predictions)


def _receivers_own(lines: PatchingLines, receiver: tuple) -> PatchingLines:
    """A path into a head of the attention metric's layer is measured by that head's own weight, not its layer's."""
    metric = lines.metric
    if metric.kind != "attention" or not receiver or tuple(receiver[:2]) != (metric.stack, metric.layer):
        return lines
    return replace(lines, metric=replace(metric, heads=(receiver[2],)))


def _predicted(logits: np.ndarray, vocab) -> tuple:
    """The argmax token at each position of ``logits (N, V)``."""
    return tuple(vocab.decode(np.argmax(logits, -1)))


@dataclass(frozen=True)
class ThreeRuns:
    """The clean, the patched and the corrupted run of one cell: ``attention[run]`` the weights of the asked-for
    layer ``(H, N_q, N_k)``, ``predictions[run]`` the argmax tokens, ``values[run]`` the metric normalised."""

    site: object
    runs: tuple  # ("clean", "patched", "corrupted")
    attention: tuple
    predictions: tuple
    values: tuple


def three_runs(study: PatchingStudy, row: int, column: int, stack: str, layer: int, *,
               device: str = "auto") -> ThreeRuns:
    """The cell ``(row, column)`` of ``study``'s map patched, beside the clean and the corrupted run; the attention
    of ``stack``'s layer ``layer`` in each. ValueError for a cell outside the map."""
    grid = study.map.sites
    if not (0 <= row < len(grid) and 0 <= column < len(grid[row])):
        raise ValueError(f"The map has {len(grid)} rows and {len(grid[0])} columns. Received: cell ({row}, "
                         f"{column})")
    device = resolve_device(device)
    pretrained = load_pretrained(study.lines.name, device)
    model, lines, site = pretrained.model, study.lines, grid[row][column]
    with tf.device(device):
        return cell_runs(model, lines.clean_inputs, lines.corrupt_inputs, lines.metric, site=site,
                         direction=study.map.direction, ends=(study.map.clean_value, study.map.corrupt_value),
                         stack=stack, layer=layer, vocab=pretrained.vocab)


def cell_runs(model, clean: Inputs, corrupt: Inputs, metric: Metric, *, site, direction: str, ends: tuple,
              stack: str, layer: int, vocab) -> ThreeRuns:
    """``site`` patched (``direction``) beside ``clean``'s and ``corrupt``'s own runs: the attention of ``stack``'s
    layer ``layer`` in each, the argmax token at each position (``vocab.decode``), and the metric normalised by
    ``ends`` (the clean and the corrupted value). ValueError for a layer the model lacks."""
    if stack not in model.stacks or not 0 <= layer < model.num_layers:
        raise ValueError(f"This model's attention is {model.stacks} × layers 0 to {model.num_layers - 1}. "
                         f"Received: {stack!r} L{layer}")
    runs = [patching.plain_run(model, clean), patching.patched_run(model, clean, corrupt, (site,), direction),
            patching.plain_run(model, corrupt)]
    values = tuple(float(patching.normalised(metric.value(logits[None], {s: [w[None] for w in layers]
                                                                        for s, layers in attention.items()}),
                                             *ends)[0])
                   for logits, attention in runs)  # a run as a batch of one, as the metric reads it
    return ThreeRuns(site, ("clean", "patched", "corrupted"), tuple(attention[stack][layer] for _, attention in runs),
                     tuple(_predicted(logits, vocab) for logits, _ in runs), values)


def patching_cell(request: PatchRequest, row: int, column: int, view_stack: str, view_layer: int) -> ThreeRuns:
    """`three_runs` of ``request``'s map (remembered, so not made again)."""
    return three_runs(patching_study(request), row, column, view_stack, view_layer, device=request.device)
