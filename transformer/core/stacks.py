"""The attention stacks a model can have, and which each architecture has (the names every layer above uses)."""

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
