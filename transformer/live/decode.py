"""Decoding a `LiveConfig`'s model: the Decode page's step-by-step run and `cache_gap`, the cache's check."""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from transformer.core import tokens
from transformer.core.ablation import active_heads
from transformer.decoding.search import Decoding, Line, Step, check_settings, chooser, run_steps
from transformer.live.config import PROMPT_STEPS, VOCAB_SIZE, LiveConfig
from transformer.live.plan import Resolved, ablation_means, resolved
from transformer.runtime.device import device_label
from transformer.tasks import END, END_ID, START_ID
from transformer.training.pretrained import Pretrained, load_pretrained


def _prompt_line(config: LiveConfig, text: str):
    """A random decoder-only model's prompt: ``text``'s tokens in the live text's vocabulary (integer tokens are their
    own ids); it may choose among the tokens the live text names."""
    prompt = text.split()
    if not prompt:
        raise ValueError("The prompt is empty: type a few tokens for the model to continue.")
    vocabulary = tokens.build_vocabulary(tokens.split_lines(config.target_text, "target") + [prompt],
                                         tokens.check_pad_symbols(config.pad_symbols), VOCAB_SIZE)
    named = VOCAB_SIZE if vocabulary.is_integer else len(vocabulary.tokens)  # ids the text gives a name
    return Line(None, vocabulary.encode(prompt), named, None), vocabulary


def _source_line(pretrained: Pretrained, text: str) -> Line:
    """A trained model's source line (decoded from ``<s>``), or a decoder-only one's prompt (continued)."""
    ids = pretrained.vocab.encode(pretrained.source_tokens(text))
    if pretrained.decoder_only:
        return Line(None, ids, len(pretrained.vocab), None)
    return Line(np.array([ids], np.int32), [START_ID], len(pretrained.vocab), END_ID)  # src (1, N_s)


def decode(config: LiveConfig, text: str, *, sample: bool = False, temperature: float = 1.0, top_k: int = 0,
           top_p: float = 1.0, seed: int = 0, max_steps: int | None = None) -> Decoding:
    """Decode ``text`` step by step with ``config``'s model: a trained model's answer to the source line, a random
    decoder-only model's or a real language model's continuation of the prompt (`PROMPT_STEPS` tokens).
    ValueError naming bad settings, tokens outside the model's vocabulary, or a model that does not decode."""
    checked = resolved(config)
    own = checked.source.own_decoding(config, text.strip(), checked.device, max_steps, sample=sample,
                                      temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    if own is not None:  # a model from outside: transformer.live.outside
        return own
    trained = checked.source.supports.predictions  # a trained model answers its task
    prompt = checked.source.own_prompt(text.strip())  # a model that reads its own pieces (a real language model)
    write = " ".join
    if prompt is not None:
        line, vocabulary, write, default_steps = prompt.line, prompt.vocabulary, prompt.write, PROMPT_STEPS
    elif trained:
        pretrained = load_pretrained(config.weights, checked.device)
        line, vocabulary = _source_line(pretrained, text.strip()), pretrained.vocab
        default_steps = PROMPT_STEPS if pretrained.decoder_only else \
            pretrained.rules.target_length(line.src.shape[1]) + 1
    elif config.architecture == "decoder-only":
        (line, vocabulary), default_steps = _prompt_line(config, text), PROMPT_STEPS
    else:
        raise ValueError("Decoding needs a trained model or a decoder-only model (which continues a prompt). "
                         f"Received: weights={config.weights!r}, architecture={config.architecture!r}")
    max_steps = default_steps if max_steps is None else max_steps
    check_settings(temperature, top_k, top_p, max_steps)
    if trained and pretrained.decoder_only and len(line.prompt) + max_steps > pretrained.longest:
        raise ValueError(f"The {config.weights} model reads up to {pretrained.longest} tokens: a prompt of "
                         f"{len(line.prompt)} and {max_steps} steps would go past. Received: a prompt of "
                         f"{len(line.prompt)} tokens")
    entry = checked.model()
    ablation = _ablation(checked, entry.model)
    with tf.device(entry.device):
        raw, cache, gap = run_steps(entry.model, line, max_steps, chooser(sample, temperature, top_k, top_p, seed),
                                    ablation)
    steps = tuple(Step(tuple(vocabulary.decode(prefix)), self_weights, cross, probabilities,
                       vocabulary.decode([chosen])[0]) for prefix, self_weights, cross, probabilities, chosen in raw)
    chosen = [step.chosen for step in steps if step.chosen != END]
    if trained and not pretrained.decoder_only:
        prediction, expected = pretrained.rules.target_text(chosen), pretrained.expected(text)
        source = tuple(vocabulary.decode(line.src[0]))
    else:
        prediction, expected, source = write(chosen), None, ()
    model = entry.model
    return Decoding(config.weights, source, steps, prediction, expected, tuple(cache.arrays()), cache.bytes(), gap,
                    vocabulary, model.num_layers, model.num_heads, device_label(entry.device),
                    prompt=tuple(vocabulary.decode(line.prompt)), kv_heads=model.num_kv_heads or model.num_heads)


def _ablation(checked: Resolved, model):
    """The configuration's ablated heads (checked once: `Resolved.ablate`) as `run_steps` takes them: ``(active
    (stacks, L, H), kind[, means])``, or None. A mean-ablated head's mean is the one every page uses: over the real
    positions of the configuration's lines (the sidebar's), in the model without ablation (`ablation_means`), so a
    step decodes as the pages predict."""
    config, ablate = checked.config, checked.ablate
    if not ablate:
        return None
    active = active_heads(ablate, model.num_layers, model.num_heads)
    return (active, "mean", ablation_means(config)) if config.ablation == "mean" else (active, "zero")


def cache_gap(config: LiveConfig, steps: int = 8) -> float:
    """max |logits with the cache − logits of the whole model on the prefix| over ``steps`` greedy steps of
    ``config``'s model (random or trained weights): a trained model answers its task's example, a random one
    decodes ``config``'s first source line (encoder-decoder, from its first target token) or continues its first
    target line (decoder-only). ValueError for an encoder-only model (it does not decode)."""
    checked = resolved(config)
    trained = checked.source.supports.predictions  # a trained model answers its task
    if config.architecture == "encoder-only" and not trained:
        raise ValueError("An encoder-only model does not decode: it has no cache. "
                         f"Received: architecture={config.architecture!r}")
    entry = checked.model()
    if trained:
        pretrained = load_pretrained(config.weights, entry.device)
        example = _source_line(pretrained, pretrained.rules.example.splitlines()[0])
        line = dataclasses.replace(example, end_id=None)  # no end: the gap is measured over every step asked for
    else:
        line = _random_line(config)
    with tf.device(entry.device):
        _, _, gap = run_steps(entry.model, line, steps, chooser(False, 1.0, 0, 1.0, 0))
    return gap


def _random_line(config: LiveConfig) -> Line:
    """The first source and target lines of ``config`` as ids (padding dropped)."""
    pads = tokens.check_pad_symbols(config.pad_symbols)
    source, target = tokens.split_lines(config.source_text, "source"), tokens.split_lines(config.target_text,
                                                                                          "target")
    vocabulary = tokens.build_vocabulary(source + target, pads, VOCAB_SIZE)
    kept = [[token for token in line if token not in pads] or line for line in (source[0], target[0])]
    src = np.array([vocabulary.encode(kept[0])], np.int32)  # (1, N_s)
    prompt = vocabulary.encode(kept[1])
    if config.architecture == "decoder-only":
        return Line(None, prompt, VOCAB_SIZE, None)
    return Line(src, prompt[:1], VOCAB_SIZE, None)


