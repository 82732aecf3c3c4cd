"""A small Transformer with every weight drawn at random (LayerNorm's γ and β too), its weights as NumPy, and two
lines: what the architecture and patching tests check against their NumPy forward pass."""

import numpy as np

from transformer.core.model import Transformer

VOCAB = 13
SRC = np.array([[3, 5, 7, 2, 9]], np.int32)  # (1, N_s)
TGT = np.array([[1, 4, 4, 8]], np.int32)  # (1, N_t)


def small_model(architecture, norm, d_ff=16, positions="sinusoidal", kv_heads=None, layers=2):
    model = Transformer(VOCAB, VOCAB, d_model=16, num_heads=4, d_ff=d_ff, num_encoder_layers=layers,
                        num_decoder_layers=layers, dropout=0.0, positions=positions, num_kv_heads=kv_heads,
                        norm=norm, architecture=architecture)
    model.build((None, None), (None, None))
    rng = np.random.default_rng(3)
    for weight in model.weights:  # LayerNorm's γ and β too, so that a missing norm would show
        weight.assign(rng.normal(0, 0.4, weight.shape).astype(np.float32))
    return model


def weight_table(model):
    return {weight.path.split("/", 1)[1]: weight.numpy().astype(np.float64) for weight in model.weights}


def cross_prefix(weights):
    """Where the cross-attention's kernels live (Keras names them by the block that builds them)."""
    return "attention" if "decoder/block_0/attention/transform_query/kernel" in weights \
        else "cross_attention_block/attention"
