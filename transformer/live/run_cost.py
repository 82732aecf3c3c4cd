"""What a run will cost, estimated from its shape before it starts: the FLOPs of one forward pass over its lines and
its peak memory. A server shares one engine among every session, so past ``ATTENTION_LAB_LIGHT_GFLOP`` a run waits
for an explicit press and runs in the background lane (`transformer.live.heavy`); past ``ATTENTION_LAB_RUN_MAX_GFLOP``
or ``ATTENTION_LAB_RUN_MAX_MB`` it is refused (`check_cost`, which `run_live` calls too).

FLOPs count multiply-adds twice: per layer of a stack of width d, d_k·H = d, N_q queries, N_k keys and d_ff inner
units, the projections 2·N_q·d²·2 (Q, O) and 2·N_k·d²·2·H_kv/H (K, V), the scores and weights · V 4·N_q·N_k·d, the
feed-forward 4·N_q·d·d_ff; the decoder's cross-attention is a second attention; the output layer 2·N·d·V.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from transformer.core.blockwise import FULL_ATTENTION_MAX, QUERY_BLOCK, VIEW_CELLS
from transformer.live.config import VOCAB_SIZE, LiveConfig, attention_bytes

LIGHT_GFLOP_ENV = "ATTENTION_LAB_LIGHT_GFLOP"  # above: an explicit press, then the background lane (default 100)
MAX_GFLOP_ENV = "ATTENTION_LAB_RUN_MAX_GFLOP"  # above: refused (default 8000: two 4,096-token lines at the largest)
MAX_MB_ENV = "ATTENTION_LAB_RUN_MAX_MB"  # a run's estimated peak memory above this is refused (default 4096)
RATE_ENV = "ATTENTION_LAB_GFLOPS"  # the rate a first estimate of seconds assumes (default 40: 2 cores, measured)
DEFAULTS = {LIGHT_GFLOP_ENV: 100.0, MAX_GFLOP_ENV: 8000.0, MAX_MB_ENV: 4096.0, RATE_ENV: 40.0}


def budget(name: str) -> float:
    """The positive number ``name`` is set to, or its default; ValueError naming a value that is not one."""
    raw = os.environ.get(name, "")
    if raw.strip() == "":
        return DEFAULTS[name]
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(f"{name} must be a positive number. Received: {name}={raw!r}")
    return value


@dataclass(frozen=True)
class RunCost:
    """``flops`` of the run's forward passes, ``bytes`` its estimated peak memory; ``what`` the run in words."""

    flops: float
    bytes: int
    what: str = "this run"

    @property
    def heavy(self) -> bool:
        """Over the light budget: it asks for a press and runs in the background lane."""
        return self.flops > budget(LIGHT_GFLOP_ENV) * 1e9

    def seconds(self, gflops: float | None = None) -> float:
        """The estimated seconds at ``gflops`` (None: ``ATTENTION_LAB_GFLOPS``)."""
        return self.flops / ((gflops or budget(RATE_ENV)) * 1e9)

    def text(self, gflops: float | None = None) -> str:
        """``"about 5,400 GFLOP and 1.2 GB: about 2 min on this server"``."""
        return (f"about {_gflop(self.flops)} GFLOP and {_size(self.bytes)}: about "
                f"{_duration(self.seconds(gflops))} on this server")


def _gflop(flops: float) -> str:
    return f"{flops / 1e9:,.0f}" if flops >= 1e10 else f"{flops / 1e9:.2g}"


def _size(size: float) -> str:
    return f"{size / 2**20:,.0f} MB" if size < 2**30 else f"{size / 2**30:,.1f} GB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds)):.0f} s"
    return f"{seconds / 60:,.0f} min"


def layer_flops(n_q: int, n_k: int, d_model: int, kv_share: float, d_ff: int, cross: bool = False) -> float:
    """One layer's FLOPs: its self-attention (and a cross-attention over ``n_k`` keys), its feed-forward."""
    self_attention = 4 * n_q * d_model**2 * (1 + kv_share) + 4 * n_q * n_q * d_model
    cross_attention = 4 * n_q * d_model**2 + 4 * n_k * d_model**2 * kv_share + 4 * n_q * n_k * d_model
    return self_attention + (cross_attention if cross else 0) + 4 * n_q * d_model * d_ff


def forward_flops(config: LiveConfig, n_source: int, n_target: int) -> float:
    """One line's forward pass through every stack of ``config``'s architecture, the output layer included."""
    kv_share = config.kv_heads / config.num_heads
    stacks, total = config.stacks, 0.0
    if "encoder" in stacks:
        total += config.num_layers * layer_flops(n_source, n_source, config.d_model, kv_share, config.d_ff)
    if "decoder" in stacks:
        total += config.num_layers * layer_flops(n_target, n_source, config.d_model, kv_share, config.d_ff,
                                                 cross="cross" in stacks)
    return total + 2 * max(n_source, n_target) * config.d_model * VOCAB_SIZE


def peak_bytes(config: LiveConfig, lines: int, n: int) -> int:
    """Estimated float32 peak: the weights, the lines' activations, and the attention maps kept (every map up to
    N = 512; above, one block of queries' five (H, Q_b, N) tensors and the pooled views)."""
    d, d_ff, layers, stacks = config.d_model, config.d_ff, config.num_layers, len(config.stacks)
    weights = 4 * (layers * stacks * (4 * d * d + 2 * d * d_ff) + 2 * VOCAB_SIZE * d)
    activations = 4 * lines * n * (6 * d + d_ff) * 2
    if n <= FULL_ATTENTION_MAX:
        maps = attention_bytes(lines, config.num_heads, layers, n, stacks)
    else:
        cells = min(n, VIEW_CELLS)
        maps = 4 * 5 * config.num_heads * min(QUERY_BLOCK, n) * n + attention_bytes(lines, config.num_heads, layers,
                                                                                    cells, stacks)
    return int(weights + activations + maps)


def live_cost(config: LiveConfig, lines: int, n_source: int | None = None, n_target: int | None = None) -> RunCost:
    """The cost of running ``config``'s model over ``lines`` lines of ``n_source`` and ``n_target`` tokens (the
    sequence length by default)."""
    n_source, n_target = n_source or config.seq_len, n_target or config.seq_len
    return RunCost(lines * forward_flops(config, n_source, n_target), peak_bytes(config, lines,
                                                                                 max(n_source, n_target)),
                   f"{lines} line{'s' * (lines != 1)} of {max(n_source, n_target):,} tokens through d_model "
                   f"{config.d_model}, {config.num_heads} heads, {config.num_layers} layers, d_ff {config.d_ff}")


def measure_cost(d_model: int, heads: int, lengths, repeats: int, series: int = 5) -> RunCost:
    """The Cost page's measurement: ``series`` curves, each length run ``repeats`` times and once to warm up, of
    one attention layer (every cell computed: an upper bound for the sparse families)."""
    flops = series * (repeats + 1) * sum(4 * n * d_model**2 * 2 + 4 * n * n * d_model for n in lengths)
    longest = max(lengths)
    memory = 4 * (5 * heads * min(QUERY_BLOCK, longest) * longest + 6 * longest * d_model)
    return RunCost(flops, int(memory), f"timing one attention layer of d_model {d_model}, {heads} heads up to "
                                       f"N = {longest:,}, {repeats} times each")


def check_cost(cost: RunCost) -> None:
    """ValueError with the figures when ``cost`` is past the hard limits (``ATTENTION_LAB_RUN_MAX_GFLOP``,
    ``ATTENTION_LAB_RUN_MAX_MB``)."""
    most_flops, most_bytes = budget(MAX_GFLOP_ENV) * 1e9, budget(MAX_MB_ENV) * 2**20
    if cost.flops > most_flops or cost.bytes > most_bytes:
        raise ValueError(f"This run is too large for a shared server: {cost.what} needs {cost.text()}; the limits "
                         f"are {_gflop(most_flops)} GFLOP ({MAX_GFLOP_ENV}) and {_size(most_bytes)} ({MAX_MB_ENV}). "
                         "Fewer lines, a shorter length or a smaller model fit. Received: "
                         f"{_gflop(cost.flops)} GFLOP, {_size(cost.bytes)}")


__all__ = ["LIGHT_GFLOP_ENV", "MAX_GFLOP_ENV", "MAX_MB_ENV", "RATE_ENV", "RunCost", "budget", "check_cost",
           "forward_flops", "live_cost", "measure_cost", "peak_bytes"]
