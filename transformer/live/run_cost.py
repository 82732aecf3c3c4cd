"""What a run will cost, estimated from its model's own shape before it starts: the FLOPs of its forward passes, the
model calls they take and its peak memory, and from them the engine seconds on this machine
(`transformer.runtime.engine_rate`). A server shares one engine thread among every session, so a request priced
past ``ATTENTION_LAB_LIGHT_SECONDS`` waits for an explicit press and runs in the background lane
(`transformer.live.heavy`); past ``ATTENTION_LAB_RUN_MAX_GFLOP`` or ``ATTENTION_LAB_RUN_MAX_MB`` it is refused
(`check_cost`, which `run_live` calls too). Every call of the door has its price: `transformer.live.prices`.

FLOPs count multiply-adds twice: per layer of a stack of width d, d_k·H = d, N_q queries, N_k keys and d_ff inner
units, the projections 2·N_q·d²·2 (Q, O) and 2·N_k·d²·2·H_kv/H (K, V), the scores and weights · V 4·N_q·N_k·d, the
feed-forward 4·N_q·d·d_ff; the decoder's cross-attention is a second attention; the output layer 2·N·d·V.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer.core.blockwise import FULL_ATTENTION_MAX, QUERY_BLOCK, VIEW_CELLS
from transformer.core.shape import ModelShape
from transformer.live.config import VOCAB_SIZE, LiveConfig, attention_bytes
from transformer.runtime.engine_rate import RATE_ENV, engine_rate, positive_setting

LIGHT_SECONDS_ENV = "ATTENTION_LAB_LIGHT_SECONDS"  # above: an explicit press, then the background lane (default 1)
MAX_GFLOP_ENV = "ATTENTION_LAB_RUN_MAX_GFLOP"  # above: refused (default 8000: two 4,096-token lines at the largest)
MAX_MB_ENV = "ATTENTION_LAB_RUN_MAX_MB"  # a run's estimated peak memory above this is refused (default 4096)
TRACED_CALL_SECONDS = 0.006  # one small traced call (a layer timed, a decode step) beside its arithmetic: a decode
# step measured 4.3–5.8 ms on 2 cores, a quarter of a whole small run (`EngineRate.call_seconds`)
DEFAULTS = {LIGHT_SECONDS_ENV: 1.0, MAX_GFLOP_ENV: 8000.0, MAX_MB_ENV: 4096.0}


def budget(name: str) -> float:
    """The positive number ``name`` is set to, or its default; ValueError naming a value that is not one."""
    return positive_setting(name, DEFAULTS[name])


@dataclass(frozen=True)
class RunCost:
    """``flops`` of the run's forward (and backward) passes, ``bytes`` its estimated peak memory, ``calls`` the
    model calls it makes (each costs a fixed time beside its arithmetic), ``extra_seconds`` work that is not a model's
    arithmetic, timed (attention flow's solves, reading a file); ``what`` the run in words."""

    flops: float
    bytes: int
    what: str = "this run"
    calls: int = 1
    extra_seconds: float = 0.0

    @property
    def heavy(self) -> bool:
        """Over the light budget (engine seconds): it asks for a press and runs in the background lane."""
        return self.seconds() > budget(LIGHT_SECONDS_ENV)

    def seconds(self, gflops: float | None = None) -> float:
        """The estimated engine seconds on this machine (`transformer.runtime.engine_rate`); ``gflops``: at that
        rate instead (the background lane's, measured on its runs)."""
        rate = engine_rate()
        return self.flops / ((gflops or rate.gflops) * 1e9) + self.calls * rate.call_seconds + self.extra_seconds

    def duration(self, gflops: float | None = None) -> str:
        """``"about 2 min"``, ``"under 1 s"``: `seconds` in words."""
        return _duration(self.seconds(gflops))

    def __add__(self, other: RunCost) -> RunCost:
        """Two parts of one request: their FLOPs, calls and timed work, and the larger peak."""
        return RunCost(self.flops + other.flops, max(self.bytes, other.bytes), self.what, self.calls + other.calls,
                       self.extra_seconds + other.extra_seconds)

    def times(self, count: int, what: str | None = None) -> RunCost:
        """``count`` runs of this one after another (the peak is one run's)."""
        return RunCost(self.flops * count, self.bytes, what or self.what, self.calls * count,
                       self.extra_seconds * count)

    def said(self, what: str) -> RunCost:
        return RunCost(self.flops, self.bytes, what, self.calls, self.extra_seconds)

    def text(self, gflops: float | None = None) -> str:
        """``"about 5,400 GFLOP in 4 model calls and 1.2 GB: about 2 min on this server"``."""
        return (f"about {_gflop(self.flops)} GFLOP in {self.calls:,} model call{'s' * (self.calls != 1)} and "
                f"{_size(self.bytes)}: {self.duration(gflops)} on this server")


def _gflop(flops: float) -> str:
    return f"{flops / 1e9:,.0f}" if flops >= 1e10 else f"{flops / 1e9:.2g}"


def _size(size: float) -> str:
    return f"{size / 2**20:,.0f} MB" if size < 2**30 else f"{size / 2**30:,.1f} GB"


def _duration(seconds: float) -> str:
    if seconds < 1:
        return "under 1 s"
    if seconds < 90:
        return f"about {round(seconds):.0f} s"
    return f"about {seconds / 60:,.0f} min"


def layer_flops(n_q: int, n_k: int, d_model: int, kv_share: float, d_ff: int, cross: bool = False,
                heads: int = 1) -> float:
    """One layer's FLOPs: its self-attention (and a cross-attention over ``n_k`` keys), its feed-forward; each
    attention's softmax and masks ``10·H·N_q·N_k`` (what a layer of many narrow heads spends: its maps)."""
    self_attention = 4 * n_q * d_model**2 * (1 + kv_share) + 4 * n_q * n_q * d_model + 10 * heads * n_q * n_q
    cross_attention = (4 * n_q * d_model**2 + 4 * n_k * d_model**2 * kv_share + 4 * n_q * n_k * d_model
                       + 10 * heads * n_q * n_k)
    return self_attention + (cross_attention if cross else 0) + 4 * n_q * d_model * d_ff


def forward_flops(shape: ModelShape, n_source: int, n_target: int, vocab: int = VOCAB_SIZE) -> float:
    """One line's forward pass through every stack of ``shape``'s architecture, the output layer included."""
    kv_share = shape.kv_heads / shape.num_heads
    stacks, total = shape.stacks, 0.0
    if "encoder" in stacks:
        total += shape.num_layers * layer_flops(n_source, n_source, shape.d_model, kv_share, shape.d_ff,
                                                heads=shape.num_heads)
    if "decoder" in stacks:
        total += shape.num_layers * layer_flops(n_target, n_source, shape.d_model, kv_share, shape.d_ff,
                                                cross="cross" in stacks, heads=shape.num_heads)
    return total + 2 * max(n_source, n_target) * shape.d_model * vocab


def peak_bytes(shape: ModelShape, lines: int, n: int, vocab: int = VOCAB_SIZE) -> int:
    """Estimated float32 peak: the weights, the lines' activations, and the attention maps kept (every map up to
    N = 512; above, one block of queries' five (H, Q_b, N) tensors and the pooled views)."""
    d, d_ff, layers, stacks = shape.d_model, shape.d_ff, shape.num_layers, len(shape.stacks)
    weights = 4 * (layers * stacks * (4 * d * d + 2 * d * d_ff) + 2 * vocab * d)
    activations = 4 * lines * n * (6 * d + d_ff) * 2
    if n <= FULL_ATTENTION_MAX:
        maps = attention_bytes(lines, shape.num_heads, layers, n, stacks)
    else:
        cells = min(n, VIEW_CELLS)
        maps = 4 * 5 * shape.num_heads * min(QUERY_BLOCK, n) * n + attention_bytes(lines, shape.num_heads, layers,
                                                                                   cells, stacks)
    return int(weights + activations + maps)


def live_cost(config: LiveConfig, lines: int, n_source: int | None = None, n_target: int | None = None,
              shape: ModelShape | None = None, vocab: int = VOCAB_SIZE) -> RunCost:
    """The cost of running a model of ``shape`` (None: ``config``'s own; a trained or outside model passes its own,
    `transformer.live.prices.model_shape`) over ``lines`` lines of ``n_source`` and ``n_target`` tokens (the
    sequence length by default): one model call."""
    shape = shape or config
    n_source, n_target = n_source or config.seq_len, n_target or config.seq_len
    return RunCost(lines * forward_flops(shape, n_source, n_target, vocab),
                   peak_bytes(shape, lines, max(n_source, n_target), vocab),
                   f"{lines} line{'s' * (lines != 1)} of {max(n_source, n_target):,} tokens through d_model "
                   f"{shape.d_model}, {shape.num_heads} heads, {shape.num_layers} layers, d_ff {shape.d_ff}")


def measure_cost(d_model: int, heads: int, lengths, repeats: int, series: int = 5) -> RunCost:
    """The Cost page's measurement: ``series`` curves, each length run ``repeats`` times and once to warm up, of
    one attention layer (every cell computed: an upper bound for the sparse families)."""
    flops = series * (repeats + 1) * sum(4 * n * d_model**2 * 2 + 4 * n * n * d_model for n in lengths)
    longest = max(lengths)
    memory = 4 * (5 * heads * min(QUERY_BLOCK, longest) * longest + 6 * longest * d_model)
    return RunCost(flops, int(memory), f"timing one attention layer of d_model {d_model}, {heads} heads up to "
                                       f"N = {longest:,}, {repeats} times each", 1,
                   series * (repeats + 1) * len(lengths) * TRACED_CALL_SECONDS)


def check_cost(cost: RunCost) -> None:
    """ValueError with the figures when ``cost`` is past the hard limits (``ATTENTION_LAB_RUN_MAX_GFLOP``,
    ``ATTENTION_LAB_RUN_MAX_MB``)."""
    most_flops, most_bytes = budget(MAX_GFLOP_ENV) * 1e9, budget(MAX_MB_ENV) * 2**20
    if cost.flops > most_flops or cost.bytes > most_bytes:
        raise ValueError(f"This run is too large for a shared server: {cost.what} needs {cost.text()}; the limits "
                         f"are {_gflop(most_flops)} GFLOP ({MAX_GFLOP_ENV}) and {_size(most_bytes)} ({MAX_MB_ENV}). "
                         "Fewer lines, a shorter length or a smaller model fit. Received: "
                         f"{_gflop(cost.flops)} GFLOP, {_size(cost.bytes)}")


__all__ = ["LIGHT_SECONDS_ENV", "MAX_GFLOP_ENV", "MAX_MB_ENV", "RATE_ENV", "RunCost", "budget", "check_cost",
           "forward_flops", "live_cost", "measure_cost", "peak_bytes"]
