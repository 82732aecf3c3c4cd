"""The attention stacks a model can have, and which each architecture has (the names every layer above uses)."""

STACKS = ("encoder", "decoder", "cross")  # encoder self-attention, decoder self-attention, cross-attention
ARCHITECTURES = ("encoder-decoder", "decoder-only", "encoder-only")
ARCHITECTURE_STACKS = {  # the attention stacks each architecture has
    "encoder-decoder": STACKS,
    "decoder-only": ("decoder",),
    "encoder-only": ("encoder",),
}
