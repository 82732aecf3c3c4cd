"""A model's shape, spelled once: its widths, depth, heads and options (nanoGPT's ``GPTConfig``).

The live configuration (`transformer.live.config.LiveConfig`), a training run (`TrainSpec`) and so a saved model's
``model.json`` are each a `ModelShape` with more fields; `Transformer.from_shape` builds one.
"""

from __future__ import annotations

from dataclasses import dataclass

from transformer.core.attention import check_heads, check_kv_heads
from transformer.core.layers import check_norm
from transformer.core.positional import POSITIONS
from transformer.core.stacks import ARCHITECTURE_STACKS, check_architecture


@dataclass(frozen=True)
class ModelShape:
    d_model: int = 64  # model width
    num_heads: int = 4  # H, divides d_model
    d_ff: int = 256  # feed-forward inner width; 0: no feed-forward sublayer (attention-only)
    num_layers: int = 2  # encoder layers = decoder layers
    positions: str = "sinusoidal"  # transformer.core.positional.POSITIONS: how the model knows where a token is
    num_kv_heads: int | None = None  # key/value heads, a divisor of num_heads (None: num_heads, the paper)
    norm: str = "post"  # transformer.core.layers.NORMS: LayerNorm after each residual sum (the paper) or before
    architecture: str = "encoder-decoder"  # transformer.core.stacks.ARCHITECTURES: the stacks the model has

    @property
    def kv_heads(self) -> int:
        """Key/value heads: ``num_kv_heads``, or ``num_heads`` when None."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def stacks(self) -> tuple:
        """The attention stacks the model has (`transformer.core.stacks.ARCHITECTURE_STACKS`)."""
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
