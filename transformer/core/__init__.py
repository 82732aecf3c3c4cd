"""The model itself: attention, its layers, positions, masks, the Transformer, tokens."""
