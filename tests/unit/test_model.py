"""Blocks, stacks and the whole Transformer: causality, padding, weight sharing, configs."""

import keras
import numpy as np
import pytest

from transformer import (
    Decoder,
    DecoderBlock,
    Encoder,
    EncoderBlock,
    FeedForward,
    MultiHeadAttention,
    ResidualBlock,
    Transformer,
    padding_mask,
    target_mask,
)

RNG = np.random.default_rng(3)
SRC = np.array([[5, 6, 7, 8, 0, 0], [4, 3, 2, 0, 0, 0]])
TGT = np.array([[1, 9, 8, 7, 6, 0], [1, 2, 3, 4, 0, 0]])


@pytest.fixture(scope="module")
def model():
    model = Transformer(12, 12, d_model=16, num_heads=4, d_ff=32, num_encoder_layers=2,
                        num_decoder_layers=3, dropout=0.1)
    model(SRC, TGT, padding_mask(SRC, 0), target_mask(TGT, 0))
    return model


def run(model, src, tgt, pads=(0,)):
    return model(src, tgt, padding_mask(src, pads), target_mask(tgt, pads))


def test_shapes_of_logits_and_every_attention(model):
    logits, attention = run(model, SRC, TGT)
    assert logits.shape == (2, 6, 12)
    assert [a.shape for a in attention["encoder"]] == [(2, 4, 6, 6)] * 2
    assert [a.shape for a in attention["decoder"]] == [(2, 4, 6, 6)] * 3
    assert [a.shape for a in attention["cross"]] == [(2, 4, 6, 6)] * 3


def test_source_and_target_lengths_may_differ(model):
    src, tgt = SRC[:, :5], TGT[:, :3]
    logits, attention = run(model, src, tgt)
    assert logits.shape == (2, 3, 12) and attention["cross"][0].shape == (2, 4, 3, 5)


def test_no_causal_leak(model):
    """Changing target tokens after position t leaves logits up to t unchanged."""
    full = np.ones_like(TGT)
    logits, _ = model(SRC, TGT, padding_mask(SRC, 0), target_mask(full, 0))
    for t in range(TGT.shape[1] - 1):
        changed = TGT.copy()
        changed[:, t + 1:] = RNG.integers(1, 12, changed[:, t + 1:].shape)
        new_logits, _ = model(SRC, changed, padding_mask(SRC, 0), target_mask(full, 0))
        np.testing.assert_allclose(new_logits[:, : t + 1], logits[:, : t + 1], atol=1e-5)
        assert not np.allclose(new_logits[:, t + 1:], logits[:, t + 1:])


def test_source_padding_symbol_does_not_matter(model):
    """Replacing one pad symbol by another in the source leaves all logits unchanged."""
    logits, _ = run(model, SRC, TGT, pads=(0, 11))
    swapped = np.where(SRC == 0, 11, SRC)
    new_logits, _ = run(model, swapped, TGT, pads=(0, 11))
    np.testing.assert_allclose(new_logits, logits, atol=1e-5)


def test_target_padding_symbol_does_not_matter_at_real_positions(model):
    logits, _ = run(model, SRC, TGT, pads=(0, 11))
    swapped = np.where(TGT == 0, 11, TGT)
    new_logits, _ = run(model, SRC, swapped, pads=(0, 11))
    real = TGT != 0
    np.testing.assert_allclose(np.asarray(new_logits)[real], np.asarray(logits)[real], atol=1e-5)


def test_masked_keys_get_zero_weight_everywhere(model):
    _, attention = run(model, SRC, TGT)
    src_pad, tgt_mask = ~padding_mask(SRC, 0).numpy(), ~target_mask(TGT, 0).numpy()
    for weights in attention["encoder"] + attention["cross"]:
        assert np.all(np.asarray(weights)[np.broadcast_to(src_pad, weights.shape)] == 0)
    for weights in attention["decoder"]:
        assert np.all(np.asarray(weights)[np.broadcast_to(tgt_mask, weights.shape)] == 0)


def test_all_padding_sequence_stays_finite(model):
    src = np.array([[0, 0, 0, 0]])
    logits, attention = run(model, src, np.array([[1, 2, 0, 0]]))
    assert np.isfinite(logits).all()
    assert np.all(np.asarray(attention["encoder"][0]) == 0) and np.all(np.asarray(attention["cross"][1]) == 0)


def test_training_uses_dropout_inference_does_not(model):
    a, _ = model(SRC, TGT, training=False)
    b, _ = model(SRC, TGT, training=False)
    c, _ = model(SRC, TGT, training=True)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def _dropouts(layer) -> int:
    return sum(isinstance(each, keras.layers.Dropout) for each in layer._flatten_layers(include_self=False))


def test_a_model_without_dropout_has_no_dropout_layers_and_training_changes_nothing(model):
    """A rate-0 Dropout is the identity: none is built (each cost ~1 ms of a new model's build). With a rate, one
    after each positional encoding (2) and one in each residual block (2 × 2 + 3 × 3); the blocks' attention
    weights are not dropped (the paper drops sub-layer outputs and the embedding sums only)."""
    assert _dropouts(model) == 2 + (2 * 2 + 3 * 3)
    bare = Transformer(12, 12, d_model=16, num_heads=4, d_ff=32, num_encoder_layers=2, num_decoder_layers=3,
                       dropout=0.0)
    a, attention = bare(SRC, TGT, padding_mask(SRC, 0), target_mask(TGT, 0), training=True)
    assert _dropouts(bare) == 0
    b, same = bare(SRC, TGT, padding_mask(SRC, 0), target_mask(TGT, 0), training=False)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(attention["cross"][2], same["cross"][2])
    rebuilt = Transformer.from_config(bare.get_config())
    assert rebuilt.get_config() == bare.get_config() and _dropouts(rebuilt) == 0
    with pytest.raises(ValueError, match="rate"):
        MultiHeadAttention(8, 2, dropout=1.5)


def test_shared_embeddings_need_equal_vocabularies():
    with pytest.raises(ValueError, match="src_vocab_size=10, tgt_vocab_size=12"):
        Transformer(10, 12, d_model=8, num_heads=2, share_embeddings=True)


def test_shared_embeddings_and_output_weights_follow_the_paper():
    model = Transformer(12, 12, d_model=8, num_heads=2, d_ff=16, num_encoder_layers=1,
                        num_decoder_layers=1, share_embeddings=True, share_output_weights=True)
    model(SRC, TGT)
    assert model.source_embedding is model.target_embedding
    separate = Transformer(12, 12, d_model=8, num_heads=2, d_ff=16, num_encoder_layers=1, num_decoder_layers=1)
    separate(SRC, TGT)
    embedding_count = 12 * 8
    assert separate.count_params() - model.count_params() == embedding_count + (8 * 12 + 12)
    hidden, _ = model.hidden_and_attention(SRC, TGT)
    np.testing.assert_allclose(
        model.project_logits(hidden), np.asarray(hidden) @ model.target_embedding.embeddings.numpy().T, atol=1e-5
    )


LAYERS = [
    (lambda: FeedForward(8, 16), lambda x: (x,)),
    (lambda: ResidualBlock(FeedForward(8, 16), dropout=0.2), lambda x: (x,)),
    (lambda: ResidualBlock(MultiHeadAttention(8, 2)), lambda x: (x, x, x)),
    (lambda: EncoderBlock(8, 2, 16), lambda x: (x,)),
    (lambda: DecoderBlock(8, 2, 16), lambda x: (x, x)),
    (lambda: Encoder(2, 8, 2, 16), lambda x: (x,)),
    (lambda: Decoder(2, 8, 2, 16), lambda x: (x, x)),
]


@pytest.mark.parametrize("make, inputs", LAYERS)
def test_every_layer_round_trips_its_config(make, inputs):
    layer = make()
    x = RNG.standard_normal((2, 3, 8)).astype(np.float32)
    expected = layer(*inputs(x))
    clone = type(layer).from_config(layer.get_config())
    clone(*inputs(x))
    clone.set_weights(layer.get_weights())
    assert clone.get_config() == layer.get_config()
    for got, want in zip(keras.tree.flatten(clone(*inputs(x))), keras.tree.flatten(expected)):
        np.testing.assert_allclose(got, want, atol=1e-6)


def test_transformer_round_trips_its_config_and_serialisation(model):
    clone = Transformer.from_config(model.get_config())
    clone(SRC, TGT)
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone(SRC, TGT)[0], model(SRC, TGT)[0], atol=1e-5)
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(model))
    assert restored.get_config() == model.get_config()


def test_layers_override_call_not_dunder_call():
    for cls in (MultiHeadAttention, FeedForward, ResidualBlock, EncoderBlock, DecoderBlock, Encoder, Decoder,
                Transformer):
        assert "__call__" not in vars(cls)
        assert "call" in vars(cls), cls


def test_linear_computes_what_dense_computes_with_the_same_weights_and_order():
    from transformer.core.linear import Linear

    x = np.random.default_rng(3).standard_normal((2, 5, 6)).astype(np.float32)  # (B, N, d_in)
    ours, dense = Linear(4, activation="relu"), keras.layers.Dense(4, activation="relu")
    ours.build(x.shape)
    dense.build(x.shape)
    dense.set_weights([w.numpy() for w in ours.weights])
    assert [w.path.split("/")[-1] for w in ours.weights] == ["kernel", "bias"]
    np.testing.assert_allclose(ours(x), dense(x), atol=1e-6)
    kernel, bias = (w.numpy() for w in ours.weights)
    np.testing.assert_allclose(ours(x), np.maximum(x @ kernel + bias, 0), atol=1e-6)
    clone = Linear.from_config(ours.get_config())
    assert clone.units == 4 and clone.get_config() == ours.get_config()


def test_zero_kernels_starts_kernels_at_zero_on_its_own_thread_only():
    """`zero_kernels` is for the live engine, which draws every weight itself; a training run building a
    model on another thread at the same time keeps Keras's Glorot draws."""
    import threading

    from transformer.core.linear import Linear, zero_kernels

    def kernel_built():
        layer = Linear(8)
        layer.build((None, 8))
        return layer.kernel.numpy()

    inside, elsewhere = [], []
    with zero_kernels():
        thread = threading.Thread(target=lambda: elsewhere.append(kernel_built()))
        thread.start()
        thread.join()
        inside.append(kernel_built())
    assert not inside[0].any()
    assert elsewhere[0].any() and kernel_built().any()  # the other thread, and this one after the block


def test_one_shape_spells_the_model_for_the_live_config_the_training_spec_and_the_model():
    """`ModelShape` is declared once; `LiveConfig` and `TrainSpec` are shapes, and `Transformer.from_shape` builds
    either with the same layers."""
    from dataclasses import fields

    from transformer import LiveConfig
    from transformer.core.shape import ModelShape
    from transformer.training.saved_model import TrainSpec

    names = [field.name for field in fields(ModelShape)]
    for spec in (LiveConfig, TrainSpec):
        assert issubclass(spec, ModelShape) and [field.name for field in fields(spec)][:len(names)] == names
    shape = dict(d_model=16, num_heads=4, d_ff=0, num_layers=1, num_kv_heads=2, positions="rope", norm="pre",
                 architecture="decoder-only")
    built = [Transformer.from_shape(spec(**shape), 20, 20, dropout=0.0) for spec in (LiveConfig, TrainSpec)]
    assert all((m.d_model, m.num_heads, m.d_ff, m.num_kv_heads, m.architecture) == (16, 4, 0, 2, "decoder-only")
               for m in built)
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads"):
        ModelShape(num_heads=4, num_kv_heads=3).check_shape()
