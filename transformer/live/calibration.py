"""This machine's engine speed, measured on the lab's own model at start-up (`transformer.runtime.engine_rate` keeps
it): ``gflops`` from a mid-sized forward pass, whose arithmetic dominates, less a small one's time; ``call_seconds``
from the small one, whose fixed cost dominates. Each is the median of a few runs after a first that builds and traces.
"""

from __future__ import annotations

import time

import numpy as np

from transformer.live.config import LiveConfig
from transformer.live.run import run_live
from transformer.live.run_cost import RunCost, live_cost
from transformer.runtime.engine_rate import EngineRate, keep

# A narrow model's many lines, as the trained models and the measures over them run: the rate it gives is below a wide
# model's (its small products use the cores less well), so estimates err towards the background lane, never from it
# (d_model 256 gave 55 GFLOP/s here against this one's ~15; the probes' whole runs went at 13–16).
LARGE_LINES, LARGE_N = 16, 128  # at most 16 lines a run (`transformer.core.tokens.MAX_LINES`)
LARGE = LiveConfig(seq_len=LARGE_N, architecture="encoder-only",  # the spec's default sizes: the trained models' own
                   source_text="\n".join(" ".join(f"w{(i * k) % 97}" for i in range(LARGE_N))
                                         for k in range(1, 2 * LARGE_LINES, 2)))
SMALL = LiveConfig(architecture="encoder-only")  # the default lines
# The least share of the large pass's time taken as its arithmetic: a busy host once timed the small pass slower
# than the large one, and the difference made the engine 813,083 GFLOP/s (every price ~0). Quiet: 23 and 50 ms.
MIN_ARITHMETIC_SHARE = 1 / 3


def _typical(config: LiveConfig, device: str, repeats: int) -> float:
    """The median of ``repeats`` runs after one that builds and traces: what a request meets on this machine as it
    is (the best of three read 35 GFLOP/s where requests met 18–25 on a busy host)."""
    run_live(config, stacks=("encoder",))  # builds and traces
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        run_live(config, stacks=("encoder",))
        timings.append(time.perf_counter() - started)
    return float(np.median(timings))


def calibrate(device: str = "auto", repeats: int = 5) -> EngineRate:
    """Time the lab's own forward pass at two sizes on ``device`` and keep the rate they give (about 1–2 s on 2 cores,
    models built included). Call on the engine thread (the door's `calibrate` is)."""
    from dataclasses import replace  # noqa: PLC0415

    large, small = replace(LARGE, device=device), replace(SMALL, device=device)
    small_seconds = _typical(small, device, repeats)
    large_seconds = _typical(large, device, repeats)
    flops = live_cost(large, LARGE_LINES).flops - live_cost(small, 3).flops
    arithmetic_seconds = max(large_seconds - small_seconds, large_seconds * MIN_ARITHMETIC_SHARE)
    rate = EngineRate(flops / arithmetic_seconds / 1e9, small_seconds, measured=True)
    keep(rate)
    return rate


def price(**_) -> RunCost:
    """The calibration's own cost: the two sizes, each run six times."""
    return (live_cost(LARGE, LARGE_LINES) + live_cost(SMALL, 3)).times(6, "timing the engine")


__all__ = ["LARGE", "SMALL", "calibrate", "price"]
