"""What one attention layer costs against the sequence length, measured on the session's device.

Each series runs one `MultiHeadAttention` block-wise (as the engine runs long sequences) on random
inputs under one mask family and number of key/value heads. Time: the median of a few runs after a
warm-up. Memory: TensorFlow's measured peak for the run, on a GPU and on the CPU while its allocator is
TensorFlow's pool (the engine's default, `transformer/__init__.py`); with malloc TensorFlow keeps no CPU
statistics and the process's resident size hides freed blocks that malloc keeps, so the bytes are then
counted from the shapes of the tensors a block makes (``measured`` False).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import tensorflow as tf

from transformer.core.attention import MultiHeadAttention
from transformer.core.blockwise import QUERY_BLOCK, BlockHook, LayerView, power_of_two_block
from transformer.core.masks import family_mask
from transformer.core.shape import check_heads

COST_LENGTHS = (64, 128, 256, 512, 1024, 2048, 4096)
FIT_FROM = 256  # the exponent is fitted from here up: below, fixed per-op costs dominate
FIT_POINTS = 3  # … over the longest three lengths measured: the upper range, where the N² terms weigh most


@dataclass(frozen=True)
class Series:
    """One measured curve: ``label``; ``lengths`` N; ``seconds`` (the median of the repeats) and ``bytes`` per N;
    ``exponent`` the fitted slope of log(seconds) against log(N) over the upper range (`fit_range`); ``density``
    the allowed share of cells; ``runs`` every repeat's seconds ``(lengths, repeats)`` and ``exponents`` the slope
    fitted on each repeat alone (`spread`: their range, the noise an exponent is read against)."""

    label: str
    lengths: tuple
    seconds: tuple
    bytes: tuple
    exponent: float
    density: tuple
    measured: bool = True  # False: the bytes are counted from the tensors' shapes (the CPU with malloc)
    runs: tuple = ()
    exponents: tuple = ()
    kv_share: float = 1.0  # H_kv / H: the key/value heads the series ran with, as a share of the query heads

    @property
    def spread(self) -> tuple[float, float]:
        """``(lowest, highest)`` exponent over the repeats (the fitted one twice with no repeats)."""
        found = [e for e in self.exponents if np.isfinite(e)] or [self.exponent]
        return min(found), max(found)


MAX_EXPONENT_SPREAD = 0.5  # runs whose own exponents range wider than this do not support one (a busy host)


def supported(series: Series) -> bool:
    """Whether ``series``'s timings support an exponent: its runs' own exponents agree within `MAX_EXPONENT_SPREAD`
    and time does not shrink as N grows beyond that noise (a busy host gave N^-0.50)."""
    low, high = series.spread
    return bool(np.isfinite(series.exponent) and high - low <= MAX_EXPONENT_SPREAD and high >= 0)


def differ(spread: tuple, other: tuple) -> bool:
    """Whether two exponents' spreads (`Series.spread`) do not overlap: a difference beyond the runs' noise."""
    return spread[1] < other[0] or other[1] < spread[0]


def counted_bytes(n: int, heads: int, kv_heads: int, d_k: int, block: int = QUERY_BLOCK) -> int:
    """float32 bytes attention holds at its peak, block-wise: the projected q, k, v (and k, v shared out to
    every head), and one block's five ``(H, Q_b, N)`` tensors (scores, scaled, filled, softmax, weights)."""
    rows = min(block, n)
    heads_bytes = 4 * n * d_k * (heads + 2 * kv_heads + 2 * heads * (kv_heads < heads))
    return heads_bytes + 4 * 5 * heads * rows * n


def _memory_device(device: str) -> str:
    return "GPU:0" if device.startswith("/GPU") else "CPU:0"


def _reset_memory_peak(device: str) -> int | None:
    """Bytes in use on ``device``, its peak reset to them (TensorFlow's own count); None where it keeps none (the
    CPU with malloc)."""
    try:
        tf.config.experimental.reset_memory_stats(_memory_device(device))
    except ValueError:  # "Cannot reset memory stats": an allocator without statistics
        return None
    return tf.config.experimental.get_memory_info(_memory_device(device))["current"]


def _one_layer(d_model: int, heads: int, kv_heads: int, n: int, family: str, size: int, device: str):
    """A function running one block-wise attention layer at length ``n``, and the mask's density."""
    with tf.device(device):
        layer = MultiHeadAttention(d_model, heads, num_kv_heads=kv_heads)
        x = tf.random.stateless_normal((1, n, d_model), seed=(1, n))  # (1, N, d_model)
        mask = family_mask(family, n, min(size, n))  # (N, N) or None
        layer(x[:, :2], x[:, :2], x[:, :2])  # built
    hook = BlockHook({None: LayerView(power_of_two_block(n), (), None)})  # pooled as the engine pools a view; no checks
    mask4 = None if mask is None else mask[None, None]  # (1, 1, N, N)

    def run():
        with tf.device(device):
            output, _ = layer(x, x, x, mask=mask4, hook=hook)
            output.numpy()
    density = 1.0 if mask is None else float(tf.reduce_mean(tf.cast(mask, tf.float32)))
    return run, density


SERIES = (  # (label, family, size, kv heads: "all" / "few" / "one")
    ("full mask, all KV heads", "bidirectional", 0, "all"),
    ("window 128, all KV heads", "window", 128, "all"),
    ("strided 64, all KV heads", "strided", 64, "all"),
    ("full mask, 2 KV heads", "bidirectional", 0, "few"),
    ("full mask, 1 KV head", "bidirectional", 0, "one"),
)


def attention_cost(d_model: int = 64, heads: int = 8, device: str = "/CPU:0", lengths=COST_LENGTHS,
                   repeats: int = 3) -> list[Series]:
    """Every `SERIES` measured at ``lengths``; ValueError naming a bad size."""
    check_heads(d_model, heads)
    kv_counts = {"all": heads, "few": 2 if heads % 2 == 0 and heads > 2 else 1, "one": 1}
    measured = []
    for label, family, size, kv in SERIES:
        seconds, memory, density, runs, counted = [], [], [], [], []
        for n in lengths:
            run, share = _one_layer(d_model, heads, kv_counts[kv], n, family, size, device)
            run()  # warm-up
            in_use, times = _reset_memory_peak(device), []
            for _ in range(repeats):
                started = time.perf_counter()
                run()
                times.append(time.perf_counter() - started)
            seconds.append(float(np.median(times)))
            runs.append(tuple(times))
            counted.append(in_use is None)
            memory.append(counted_bytes(n, heads, kv_counts[kv], d_model // heads) if in_use is None else
                          tf.config.experimental.get_memory_info(_memory_device(device))["peak"] - in_use)
            density.append(share)
        each = [fitted_exponent(lengths, [times[r] for times in runs]) for r in range(repeats)]  # a fit a repeat
        measured.append(Series(label.replace("2 KV", f"{kv_counts['few']} KV"), tuple(lengths), tuple(seconds),
                               tuple(memory), fitted_exponent(lengths, seconds), tuple(density),
                               measured=not any(counted), runs=tuple(runs), exponents=tuple(each),
                               kv_share=kv_counts[kv] / heads))
    return measured


def fit_range(lengths) -> tuple[int, int] | None:
    """``(first, last)`` N the exponent is fitted over: the longest `FIT_POINTS` lengths from `FIT_FROM` up;
    None when fewer than two lengths are that long."""
    fitted = sorted(n for n in lengths if n >= FIT_FROM)[-FIT_POINTS:]
    return (fitted[0], fitted[-1]) if len(fitted) >= 2 else None


def quadratic_share(n: int, d_model: int, kv_share: float = 1.0) -> float:
    """The share of one attention layer's FLOPs in its N² terms, Q·Kᵀ and weights·V (2·N²·d_model each), at
    length ``n``: the rest are the projections, Q and O (2·N·d_model² each) and K and V (2·N·d_model²·kv_share
    each, ``kv_share`` = H_kv / H). With every key/value head it is N / (N + 2·d_model): half at N = 2·d_model."""
    quadratic = 4 * n * n * d_model
    return quadratic / (quadratic + 4 * n * d_model**2 * (1 + kv_share))


def quadratic_crossover(d_model: int, kv_share: float = 1.0) -> float:
    """The N at which the N² terms are half the layer's FLOPs (`quadratic_share` = 1/2): 4·N²·d_model =
    4·N·d_model²·(1 + kv_share), so N = d_model·(1 + kv_share): 2·d_model with every key/value head."""
    return d_model * (1 + kv_share)


def fitted_exponent(lengths, values, start: int = FIT_FROM) -> float:
    """The least-squares slope of log(values) against log(lengths) over the upper range (`fit_range`, from
    ``start`` up)."""
    span = fit_range([n for n in lengths if n >= start])
    if span is None:
        return float("nan")
    points = [(np.log(n), np.log(v)) for n, v in zip(lengths, values) if span[0] <= n <= span[1] and v > 0]
    if len(points) < 2:
        return float("nan")
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])
