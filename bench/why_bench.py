"""Why a head attends, how much it moves, where its attention flows: the engine's cost of each at the sizes the
Attention page offers, against a reference measured in the same run (a traced `run_live` of the same model, or
rollout of the same weights)."""

from __future__ import annotations

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
    for n, causal in ((64, False), (64, True), (32, False)):
        weights = rng.random((2, 4, n, n)) * (np.tril(np.ones((n, n))) if causal else 1)
        weights /= weights.sum(-1, keepdims=True)
        flow_s, rollout_s = timed(lambda w=weights: attention_flow(w, queries=[n // 2]),
                                  lambda w=weights: attention_rollout(w), repeats=max(2, repeats // 3))
        row("why", f"attention flow of one query, N = {n}, 2 layers, {'causal' if causal else 'dense'}: ms",
            f"{flow_s * 1e3:.0f} (rollout of the whole map {rollout_s * 1e3:.2f} ms)")
