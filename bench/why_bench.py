"""Why a head attends, how much it moves, where its attention flows: the engine's cost of each at the sizes the
Attention page offers, against a reference measured in the same run (a traced `run_live` of the same model, or
rollout of the same weights)."""

from __future__ import annotations

import time

import numpy as np
from report import row, timed


def why(quick: bool) -> None:
    from transformer import LiveConfig, ModelCache, run_live, score_terms, value_norms
    from transformer.analysis.flow import attention_flow
    from transformer.analysis.measures import attention_rollout
    from transformer.runtime.engine_thread import on_engine_thread

    repeats = 3 if quick else 9
    cache = ModelCache()
    config = LiveConfig()
    page_run = lambda: run_live(config, cache, stacks=("decoder",), lines=(0,))  # noqa: E731  (the page's call)
    page_run()
    on_engine_thread(cache.trace_pending)()  # the page's function traced, as the idle engine does
    split = lambda: score_terms(config, "decoder", 1, 0, 0, (3,), cache)  # noqa: E731
    norms = lambda: value_norms(config, cache, stacks=("decoder",), lines=(0,))  # noqa: E731
    run_s, split_s, norms_s = timed(page_run, split, norms, repeats=repeats)
    row("why", "score terms of one query, default model (decoder L1): ms", f"{split_s * 1e3:.1f} "
        f"({split_s / run_s:.1f}× the page's run_live, {run_s * 1e3:.1f} ms)")
    row("why", "value-weighted norms of one line, default model: ms", f"{norms_s * 1e3:.1f} "
        f"({norms_s / run_s:.1f}× the page's run_live)")
    rng = np.random.default_rng(0)
    # two layers: in closed form (every shipped model, the Images page's ViT); deeper: SciPy's max-flow
    for layers, n, causal in ((2, 64, False), (3, 64, False), (6, 64, False), (6, 64, True)):
        weights = rng.random((layers, 4, n, n)) * (np.tril(np.ones((n, n))) if causal else 1)
        weights /= weights.sum(-1, keepdims=True)
        flow_s, rollout_s = timed(lambda w=weights: attention_flow(w, queries=[n // 2]),
                                  lambda w=weights: attention_rollout(w), repeats=max(2, repeats // 3))
        row("why", f"attention flow of one query, N = {n}, {layers} layers, {'causal' if causal else 'dense'}: ms",
            f"{flow_s * 1e3:.2f} (rollout of the whole map {rollout_s * 1e3:.2f} ms)")
    _explanations(repeats)


def _explanations(repeats: int) -> None:
    """Which explanation is right: one dates line's six maps (flow through both stacks is most of it) and the
    whole study on 10 examples, against one teacher-forced run of the model on that line."""
    import tensorflow as tf

    from transformer.core.masks import padding_mask, target_mask
    from transformer.live import faithfulness as study
    from transformer.tasks import PAD_ID, make_batch
    from transformer.training.pretrained import load_pretrained

    pretrained = load_pretrained("dates")
    source = pretrained.source_tokens("Wednesday, 30 September 2026")
    src, decoder_input, _ = make_batch(pretrained.rules, pretrained.vocab, [source], len(source))
    forward = lambda: pretrained.model(tf.constant(src), tf.constant(decoder_input),  # noqa: E731
                                       padding_mask(src, PAD_ID), target_mask(decoder_input, PAD_ID))
    maps = lambda: study._study("dates", [source], [pretrained.rules.align(source)], "/CPU:0", (1, 2))  # noqa: E731
    forward_s, maps_s = timed(forward, maps, repeats=max(2, repeats // 3))
    row("why", "six explanations of one dates line (N_s 28, T 10): ms", f"{maps_s * 1e3:.0f} "
        f"({maps_s / forward_s:.0f}× one run of the model, {forward_s * 1e3:.1f} ms)")
    started = time.perf_counter()
    study._scored("dates", 10, 0, "/CPU:0")  # not kept: measured again each time
    scored_s = time.perf_counter() - started
    row("why", "explanations scored on 10 dates examples (the page's smallest study): s", f"{scored_s:.1f}")
