"""A model's shape, spelled once: its widths, depth, heads and options (nanoGPT's ``GPTConfig``), and every rule a
shape keeps: the enumerations (stacks, architectures, norms, positions), the divisibility rules and the live engine's
limits. A leaf: it imports nothing of the engine, and the layers take these names from here
(tests/unit/test_shape_leaf.py keeps it so).

The live configuration (`transformer.live.config.LiveConfig`), a training run (`TrainSpec`) and so a saved model's
``model.json`` are each a `ModelShape` with more fields; `Transformer.from_shape` builds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

STACKS = ("encoder", "decoder", "cross")  # encoder self-attention, decoder self-attention, cross-attention
ARCHITECTURES = ("encoder-decoder", "decoder-only", "encoder-only")
ARCHITECTURE_STACKS = {  # the attention stacks each architecture has
    "encoder-decoder": STACKS,
    "decoder-only": ("decoder",),
    "encoder-only": ("encoder",),
}


def check_architecture(architecture) -> None:
    """Raise ValueError unless ``architecture`` is one of `ARCHITECTURES`."""
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {ARCHITECTURES}. Received: architecture={architecture!r}")


NORMS = ("post", "pre")


def check_norm(norm) -> None:
    """Raise ValueError unless ``norm`` is one of `NORMS`."""
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}. Received: norm={norm!r}")


POSITIONS = ("sinusoidal", "learned", "rope", "alibi", "none")

# How a block is built beyond its sizes: the paper's (LayerNorm, a ReLU feed-forward, biases) or a Llama's (RMSNorm,
# a SwiGLU feed-forward, no biases); `LAYER_STYLE` holds the paper's, `Transformer`'s defaults.
NORM_LAYERS = ("layer", "rms")  # LayerNorm (Ba et al. 2016), RMSNorm (Zhang & Sennrich 2019)
FEED_FORWARDS = ("relu", "swiglu")  # max(0, xW1)W2 (the paper), (SiLU(xW_gate) ⊙ xW_up)W_down (Shazeer 2020)
LAYER_STYLE = {"norm_layer": "layer", "norm_epsilon": 1e-6, "ffn": "relu", "use_bias": True,
               "rope_base": 10000.0}


def pop_layer_style(options: dict) -> dict:
    """The `LAYER_STYLE` keys taken out of a layer's keyword arguments ``options`` (the rest go to Keras): those
    given, the paper's left to the defaults."""
    return {name: options.pop(name) for name in LAYER_STYLE if name in options}


def check_layer_style(norm_layer, norm_epsilon, ffn, use_bias, rope_base) -> None:
    """Raise ValueError naming the offending values unless they are a layer style `Transformer` can build."""
    if norm_layer not in NORM_LAYERS:
        raise ValueError(f"norm_layer must be one of {NORM_LAYERS}. Received: norm_layer={norm_layer!r}")
    if ffn not in FEED_FORWARDS:
        raise ValueError(f"ffn (the feed-forward) must be one of {FEED_FORWARDS}. Received: ffn={ffn!r}")
    if not isinstance(use_bias, bool):
        raise ValueError(f"use_bias must be True or False. Received: use_bias={use_bias!r}")
    for name, value in (("norm_epsilon", norm_epsilon), ("rope_base", rope_base)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"{name} must be a positive number. Received: {name}={value!r}")

# The live engine's limits (a trained model's own shape is checked by its training)
MAX_D_MODEL = 1024
MAX_D_FF = 4096
MAX_LAYERS = 6
MAX_MODEL_LAYERS = 48  # the deepest model a page reads: a real language model's or one from outside
MAX_HEADS = 64


def check_range(name, value, low, high) -> None:
    """ValueError unless ``value`` is an integer (not a bool) from ``low`` to ``high``, naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}. Received: {name}={value!r}")


def check_heads(d_model, num_heads):
    """Raise ValueError unless ``num_heads`` is a positive divisor of ``d_model``."""
    if not isinstance(d_model, int) or d_model < 1:
        raise ValueError(f"d_model must be a positive integer. Received: d_model={d_model!r}")
    if not isinstance(num_heads, int) or num_heads < 1 or d_model % num_heads:
        raise ValueError(
            "d_model must be divisible by num_heads. "
            f"Received: d_model={d_model}, num_heads={num_heads}"
        )


def check_kv_heads(num_heads, num_kv_heads):
    """Raise ValueError unless ``num_kv_heads`` (key/value heads) divides ``num_heads`` (query heads)."""
    if isinstance(num_kv_heads, bool) or not isinstance(num_kv_heads, int) or num_kv_heads < 1 \
            or num_heads % num_kv_heads:
        raise ValueError("num_kv_heads must divide num_heads (1 = multi-query, num_heads = the paper). "
                         f"Received: num_heads={num_heads}, num_kv_heads={num_kv_heads!r}")


def head_counts(d_model: int, most: int | None = None) -> list[int]:
    """Every head count `check_heads` accepts for ``d_model`` (up to ``most``), smallest first: the rule is
    spelled once, there."""
    return [heads for heads in range(1, min(d_model, most or d_model) + 1) if _accepts(check_heads, d_model, heads)]


def kv_head_counts(num_heads: int) -> list[int]:
    """Every key/value head count `check_kv_heads` accepts for ``num_heads`` query heads, smallest first."""
    return [kv for kv in range(1, num_heads + 1) if _accepts(check_kv_heads, num_heads, kv)]


def _accepts(check, *values) -> bool:
    try:
        check(*values)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class ModelShape:
    reads_images: ClassVar[bool] = False  # a training run of a Vision Transformer (`VisionSpec`) reads images

    d_model: int = 64  # model width
    num_heads: int = 4  # H, divides d_model
    d_ff: int = 256  # feed-forward inner width; 0: no feed-forward sublayer (attention-only)
    num_layers: int = 2  # encoder layers = decoder layers
    positions: str = "sinusoidal"  # POSITIONS: how the model knows where a token is
    num_kv_heads: int | None = None  # key/value heads, a divisor of num_heads (None: num_heads, the paper)
    norm: str = "post"  # NORMS: LayerNorm after each residual sum (the paper) or before
    architecture: str = "encoder-decoder"  # ARCHITECTURES: the stacks the model has

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``num_kv_heads``, or ``num_heads`` when None."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def stacks(self) -> tuple:
        """The attention stacks the model has (`ARCHITECTURE_STACKS`)."""
        return ARCHITECTURE_STACKS[self.architecture]

    def check_shape(self) -> None:
        """Raise ValueError naming the offending values unless a model of this shape can be built: heads divide
        d_model, key/value heads divide heads, RoPE's d_k is even, a known norm, positions and architecture."""
        check_architecture(self.architecture)
        check_norm(self.norm)
        check_heads(self.d_model, self.num_heads)
        if self.num_kv_heads is not None:
            check_kv_heads(self.num_heads, self.num_kv_heads)
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}. Received: positions={self.positions!r}")
        if self.positions == "rope" and (self.d_model // self.num_heads) % 2:
            raise ValueError(f"RoPE rotates pairs of dimensions: d_k = d_model / heads must be even. Received: "
                             f"d_model={self.d_model}, num_heads={self.num_heads} (d_k = "
                             f"{self.d_model // self.num_heads})")

    def model_options(self) -> dict:
        """The `Transformer` keyword arguments of this shape."""
        return dict(d_model=self.d_model, num_heads=self.num_heads, d_ff=self.d_ff, num_encoder_layers=self.num_layers,
                    num_decoder_layers=self.num_layers, positions=self.positions, num_kv_heads=self.num_kv_heads,
                    norm=self.norm, architecture=self.architecture)


PAPER = ModelShape(d_model=512, num_heads=8, d_ff=2048, num_layers=6)  # the paper's base model (its Table 3):
# `Transformer`'s own defaults
