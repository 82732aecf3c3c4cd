"""Attention since 2017, each against its own paper's definition in NumPy: mask families (Sparse
Transformer, prefix LM, sliding window, block-local), RoPE, ALiBi, grouped-query attention."""

import math

import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf
from keras_reference import compare_with_keras

from transformer.core import masks
from transformer.core.attention import MultiHeadAttention
from transformer.core.model import Transformer
from transformer.core.positional import alibi_bias, alibi_slopes, rotary

RNG = np.random.default_rng(3)


@pytest.mark.parametrize("n", [1, 5, 16])
def test_mask_families_match_their_definitions(n):
    for size in range(1, n + 1):
        np.testing.assert_array_equal(masks.sliding_window_mask(n, size), ref.sliding_window_mask(n, size))
        np.testing.assert_array_equal(masks.strided_mask(n, size), ref.strided_mask(n, size))
        np.testing.assert_array_equal(masks.block_mask(n, size), ref.block_mask(n, size))
    for prefix in range(0, n + 1):
        np.testing.assert_array_equal(masks.prefix_mask(n, prefix), ref.prefix_mask(n, prefix))


def test_mask_families_worked_examples():
    """Small cases written out by hand from the papers' figures."""
    assert masks.sliding_window_mask(4, 2).numpy().astype(int).tolist() == [
        [1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]
    assert masks.strided_mask(6, 2).numpy().astype(int)[5].tolist() == [0, 1, 0, 1, 1, 1]  # 5-4=1 <2; 5-1, 5-3: ×2
    assert masks.prefix_mask(4, 2).numpy().astype(int).tolist() == [
        [1, 1, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    assert masks.block_mask(4, 2).numpy().astype(int).tolist() == [
        [1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]]
    np.testing.assert_array_equal(masks.family_mask("causal", 5), np.tril(np.ones((5, 5), bool)))
    assert masks.family_mask("bidirectional", 3).numpy().all() and masks.family_mask("paper", 3) is None
    # the window equal to n is the look-ahead mask; a stride of 1 too
    np.testing.assert_array_equal(masks.sliding_window_mask(6, 6), masks.subsequent_mask(6))
    np.testing.assert_array_equal(masks.strided_mask(6, 1), masks.subsequent_mask(6))


@pytest.mark.parametrize("call, message", [
    (lambda: masks.sliding_window_mask(4, 5), r"window=5"), (lambda: masks.sliding_window_mask(4, 0), r"window=0"),
    (lambda: masks.prefix_mask(4, -1), r"prefix=-1"), (lambda: masks.strided_mask(4, 1.5), r"stride=1.5"),
    (lambda: masks.block_mask(3, 4), r"block=4"), (lambda: masks.family_mask("dilated", 4), "dilated")])
def test_mask_families_name_bad_sizes(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def _rotary_reference(x, positions):
    """RoFormer eq. 34: R^d_{Θ,m} x, the block-diagonal rotation, built as a matrix for each position."""
    n, d = x.shape[-2:]
    out = np.empty_like(x, dtype=np.float64)
    for row, m in enumerate(positions):
        rotation = np.zeros((d, d))
        for i in range(d // 2):
            angle = m * 10000 ** (-2 * i / d)
            rotation[2 * i:2 * i + 2, 2 * i:2 * i + 2] = [[math.cos(angle), -math.sin(angle)],
                                                          [math.sin(angle), math.cos(angle)]]
        out[..., row, :] = x[..., row, :] @ rotation.T
    return out


def test_rotary_matches_roformer_and_makes_q_dot_k_depend_on_the_offset_only():
    x = RNG.standard_normal((2, 3, 7, 8)).astype(np.float32)
    positions = np.arange(7)
    np.testing.assert_allclose(rotary(x, positions).numpy(), _rotary_reference(x, positions), atol=1e-5)
    q, k = RNG.standard_normal((2, 16)).astype(np.float32)
    at = lambda vector, m: rotary(vector[None], [m]).numpy()[0]  # noqa: E731
    dots = {(m, n): float(at(q, m) @ at(k, n)) for m in range(12) for n in range(12)}
    for offset in range(-5, 6):
        same = [value for (m, n), value in dots.items() if m - n == offset]
        assert max(same) - min(same) < 1e-4, offset
    np.testing.assert_allclose(np.linalg.norm(rotary(x, positions).numpy(), axis=-1), np.linalg.norm(x, axis=-1),
                               rtol=1e-5)  # a rotation keeps lengths
    with pytest.raises(ValueError, match=r"x.shape=\(3, 5\)"):
        rotary(np.zeros((3, 5), np.float32), np.arange(3))


def _get_slopes(n):
    """The ALiBi paper's reference code (ofirpress/attention_with_linear_biases), as published."""
    def get_slopes_power_of_2(n):
        start = (2 ** (-2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio ** i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return get_slopes_power_of_2(closest_power_of_2) + _get_slopes(2 * closest_power_of_2)[0::2][
        :n - closest_power_of_2]


@pytest.mark.parametrize("heads", [1, 2, 3, 4, 6, 8, 12, 16, 64])
def test_alibi_slopes_are_the_reference_codes(heads):
    np.testing.assert_allclose(alibi_slopes(heads), _get_slopes(heads), rtol=1e-6)


def test_alibi_slopes_for_eight_heads_halve_from_one_half_and_the_bias_is_minus_slope_times_distance():
    np.testing.assert_allclose(alibi_slopes(8), [2.0 ** -(h + 1) for h in range(8)])
    bias = alibi_bias(4, 5, 5).numpy()  # (H, N, N)
    slopes = alibi_slopes(4)
    for h in range(4):
        for i in range(5):
            for j in range(i + 1):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * (i - j))


def _heads(x, count):
    return x.reshape(x.shape[0], x.shape[1], count, -1).transpose(0, 2, 1, 3)  # (B, count, N, d_k)


def _layer_reference(layer, query, key, mask, positions=None):
    """NumPy attention with this layer's weights: projections, RoPE, ALiBi, key/value heads shared by groups."""
    (wq, bq), (wk, bk), (wv, bv), (wo, bo) = [[w.numpy() for w in sub.weights] for sub in (
        layer.transform_query, layer.transform_key, layer.transform_value, layer.transform_out)]
    heads, kv = layer.num_heads, layer.num_kv_heads
    q, k, v = _heads(query @ wq + bq, heads), _heads(key @ wk + bk, kv), _heads(key @ wv + bv, kv)
    if positions == "rope":
        q, k = _rotary_reference(q, range(q.shape[2])), _rotary_reference(k, range(k.shape[2]))
    group = heads // kv
    k, v = k[:, [h // group for h in range(heads)]], v[:, [h // group for h in range(heads)]]  # head h -> h // group
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])  # (B, H, N_q, N_k)
    if positions == "alibi":
        slopes = np.array(_get_slopes(heads))
        scores = scores - slopes[:, None, None] * np.abs(np.arange(q.shape[2])[:, None] - np.arange(k.shape[2]))
    weights = _masked_softmax(scores, mask)  # (B, H, N_q, N_k)
    context = (weights @ v).transpose(0, 2, 1, 3).reshape(query.shape[0], query.shape[1], -1)
    return context @ wo + bo, weights


def _masked_softmax(scores, mask):
    mask = np.broadcast_to(mask, scores.shape)
    exp = np.where(mask, np.exp(scores - np.where(mask, scores, -np.inf).max(-1, keepdims=True)), 0.0)
    total = exp.sum(-1, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


@pytest.mark.parametrize("kv_heads", [1, 2, 4])
@pytest.mark.parametrize("positions", [None, "rope", "alibi"])
def test_attention_with_fewer_kv_heads_rope_and_alibi_matches_numpy(kv_heads, positions):
    layer = MultiHeadAttention(32, 4, num_kv_heads=kv_heads, positions=positions)
    query = RNG.standard_normal((2, 6, 32)).astype(np.float32)
    mask = np.tril(np.ones((6, 6), bool))[None, None]  # (1, 1, N, N)
    output, weights = layer(query, query, query, mask=mask)
    expected_output, expected_weights = _layer_reference(layer, query.astype(np.float64), query.astype(np.float64),
                                                         mask, positions)
    np.testing.assert_allclose(weights.numpy(), expected_weights, atol=1e-5)
    np.testing.assert_allclose(output.numpy(), expected_output, atol=1e-4)
    assert layer.transform_key.weights[0].shape == (32, kv_heads * 8)  # fewer key/value parameters


@pytest.mark.parametrize("kv_heads", [1, 2])
def test_grouped_query_attention_agrees_with_keras_group_query_attention(kv_heads):
    layer = MultiHeadAttention(32, 4, num_kv_heads=kv_heads)
    query, memory = RNG.standard_normal((2, 5, 32)).astype(np.float32), RNG.standard_normal((2, 7, 32))
    layer(query, memory.astype(np.float32), memory.astype(np.float32))
    mask = RNG.random((2, 5, 7)) > 0.3
    gaps = compare_with_keras(layer, query, memory.astype(np.float32), memory.astype(np.float32), mask)
    assert gaps["output"] < 1e-4 and gaps["weights"] < 1e-5


def test_a_layer_names_kv_heads_that_do_not_divide_the_heads_and_unknown_positions():
    with pytest.raises(ValueError, match=r"num_heads=4, num_kv_heads=3"):
        MultiHeadAttention(32, 4, num_kv_heads=3)
    with pytest.raises(ValueError, match=r"positions='xpos'"):
        MultiHeadAttention(32, 4, positions="xpos")


@pytest.mark.parametrize("positions", ["sinusoidal", "learned", "rope", "alibi", "none"])
def test_a_transformer_runs_with_every_position_scheme_and_round_trips_its_config(positions):
    model = Transformer(20, 20, d_model=16, num_heads=4, d_ff=32, num_encoder_layers=1, num_decoder_layers=1,
                        positions=positions, num_kv_heads=2, max_len=32)
    ids = tf.constant([[1, 2, 3, 4]])
    logits, attention = model(ids, ids)
    assert logits.shape == (1, 4, 20) and attention["cross"][0].shape == (1, 4, 4, 4)
    copy = Transformer.from_config(model.get_config())
    assert (copy.positions, copy.num_kv_heads) == (positions, 2)
    assert copy.attention_layers("encoder")[0].positions == (
        positions if positions in ("rope", "alibi") else None)
    assert copy.attention_layers("cross")[0].positions is None  # self-attention only
    learned = [w for w in model.weights if "table" in w.path]
    assert len(learned) == (2 if positions == "learned" else 0)


# ----------------------------------------------------------------- the live engine with the variants

from dataclasses import replace  # noqa: E402

from transformer import LiveConfig, ModelCache, keras_difference, run_live  # noqa: E402

LIVE = LiveConfig(d_model=16, num_heads=4, d_ff=32, num_layers=2, seq_len=7)


@pytest.fixture(scope="module")
def cache():
    return ModelCache(size=3)


@pytest.mark.parametrize("family, size", [("window", 3), ("strided", 2), ("block", 3), ("prefix", 4),
                                          ("causal", 4), ("bidirectional", 4)])
def test_a_mask_family_runs_in_both_self_attentions_with_padding_and_leaves_cross_attention_the_padding(
        family, size, cache):
    result = run_live(replace(LIVE, mask_family=family, mask_size=size), cache)
    pattern = masks.family_mask(family, 7, size).numpy()  # (N, N)
    padding = result.source_padding_mask[:, 0, 0]  # (B, N)
    np.testing.assert_array_equal(result.applied_masks["encoder"], pattern[None] & padding[:, None, :])
    np.testing.assert_array_equal(result.applied_masks["decoder"],
                                  pattern[None] & result.target_padding_mask[:, 0, 0][:, None, :])
    np.testing.assert_array_equal(result.applied_masks["cross"], np.broadcast_to(padding[:, None, :], (3, 7, 7)))
    for stack in ("encoder", "decoder", "cross"):
        blocked = ~result.applied_masks[stack][None, :, None]  # (1, B, 1, N_q, N_k)
        assert np.all(result.attention[stack][np.broadcast_to(blocked, result.attention[stack].shape)] == 0)


@pytest.mark.parametrize("positions", ["learned", "rope", "alibi", "none"])
def test_every_position_scheme_runs_live_and_changes_the_weights(positions, cache):
    paper = run_live(LIVE, cache).attention["encoder"]
    other = run_live(replace(LIVE, positions=positions), cache).attention["encoder"]
    assert other.shape == paper.shape and not np.allclose(other, paper, atol=1e-3)
    rows = other.sum(-1)
    np.testing.assert_allclose(rows[rows > 0], 1, atol=1e-5)


def test_fewer_kv_heads_run_live_and_agree_with_keras(cache):
    config = replace(LIVE, num_kv_heads=2)
    assert run_live(config, cache).attention["decoder"].shape == (2, 3, 4, 7, 7)
    gaps = keras_difference(config, "cross", 1, cache)
    assert gaps["output"] < 1e-4 and gaps["weights"] < 1e-5
    assert keras_difference(replace(LIVE, positions="rope"), "encoder", 0, cache) == {}  # no Keras layer to compare


@pytest.mark.parametrize("change, message", [
    (dict(num_kv_heads=3), r"num_heads=4, num_kv_heads=3"),
    (dict(mask_family="window", mask_size=8), r"mask_size=8, seq_len=7"),
    (dict(mask_family="prefix", mask_size=-1), r"mask_size=-1"),
    (dict(mask_family="dilated"), r"mask_family='dilated'"),
    (dict(positions="xpos"), r"positions='xpos'"),
    (dict(positions="rope", d_model=12, num_heads=4), r"d_k = 3"),
    (dict(weights="dates", positions="alibi"), r"'dates' is an encoder-decoder .*positions='alibi'"),
    (dict(weights="dates", architecture="decoder-only"), r"architecture='decoder-only'"),
    (dict(weights="dates", norm="pre"), r"post-norm.*norm='pre'"),
    (dict(architecture="gpt"), r"architecture='gpt'"),
    (dict(norm="middle"), r"norm='middle'"),
    (dict(d_ff=-1), r"d_ff=-1"),
    (dict(weights="reverse", num_kv_heads=1), r"num_kv_heads=1"),
])
def test_bad_combinations_are_named(change, message, cache):
    with pytest.raises(ValueError, match=message):
        run_live(replace(LIVE, **change), cache)


def test_a_trained_model_runs_only_with_its_own_masks_not_a_family(cache):
    """A mask family is the random-weights model's: a trained model's maps and predictions come from one run, with
    the masks it was trained with (the pages show the family locked)."""
    with pytest.raises(ValueError, match="mask_family='window'"):
        run_live(replace(LIVE, weights="reverse", mask_family="window", mask_size=2,
                         source_text="a b c d\nj i h", target_text="a b c d\nj i h"), cache)


def test_the_cost_measurement_gives_every_series_and_fits_exponents():
    from transformer.analysis.cost import SERIES, attention_cost, counted_bytes, fitted_exponent

    series = attention_cost(16, 4, "/CPU:0", lengths=(64, 128), repeats=1)
    assert [one.label for one in series][:3] == [label for label, *_ in SERIES][:3] and len(series) == 5
    assert all(len(one.seconds) == 2 and min(one.seconds) > 0 for one in series)
    window = series[1]  # a window of 128 at N = 64 is the whole causal triangle
    assert window.density[0] == pytest.approx(65 / 128)
    # the CPU allocator is TensorFlow's pool (the engine's default), which counts what it hands out: measured
    assert all(one.measured and min(one.bytes) > 0 for one in series)
    assert series[0].bytes[1] == pytest.approx(counted_bytes(128, 4, 4, 4), rel=1.0)  # the count's order of size
    assert fitted_exponent((256, 512, 1024), (1.0, 4.0, 16.0)) == pytest.approx(2.0)


def test_without_tensorflows_cpu_pool_the_cost_page_counts_the_bytes(monkeypatch):
    from transformer.analysis import cost

    def no_statistics(device):  # what TensorFlow raises with TF_CPU_ALLOCATOR_USE_BFC=false
        raise ValueError(f"Cannot reset memory stats for device '{device}'")

    monkeypatch.setattr(cost.tf.config.experimental, "reset_memory_stats", no_statistics)
    series = cost.attention_cost(16, 4, "/CPU:0", lengths=(64, 128), repeats=1)
    assert not series[0].measured and series[0].bytes[1] == cost.counted_bytes(128, 4, 4, 4)
    # one key/value head: stored keys and values shrink, but they are repeated to every head (as Keras does)
    assert series[4].bytes[1] == cost.counted_bytes(128, 4, 1, 4) > series[0].bytes[1]


def test_the_exponent_is_fitted_over_the_upper_range_and_the_quadratic_share_is_the_flop_count():
    from transformer.analysis.cost import fit_range, fitted_exponent, quadratic_share

    lengths = (64, 128, 256, 512, 1024, 2048, 4096)
    seconds = [n / 1000 if n <= 512 else (n / 1000) ** 2 for n in lengths]  # linear, then quadratic
    assert fit_range(lengths) == (1024, 4096) and fit_range((64, 128, 256)) is None
    assert fitted_exponent(lengths, seconds) == pytest.approx(2.0)
    assert quadratic_share(128, 64) == pytest.approx(0.5)  # N = 2·d_model
    # counted by hand: Q·Kᵀ and weights·V 2·N²·d each; Q, O 2·N·d² each; K, V 2·N·d·(d·H_kv/H) each
    n, d, kv_share = 100, 32, 0.25
    quadratic = 2 * 2 * n * n * d
    assert quadratic_share(n, d, kv_share) == pytest.approx(quadratic / (quadratic + 2 * 2 * n * d * d +
                                                                          2 * 2 * n * d * d * kv_share))


@pytest.mark.slow
def test_the_cost_exponents_come_with_their_spread_over_repeated_runs():
    """#52.15: exponents from one noisy run contradicted each other (N^0.71 against N^1.15); each is now fitted on
    every repeat, and two series whose spreads overlap are said to be within the noise."""
    from transformer.analysis.cost import attention_cost, differ, fitted_exponent

    series = attention_cost(16, 4, "/CPU:0", lengths=(64, 256, 512), repeats=3)
    for one in series:
        assert len(one.exponents) == 3 and one.spread[0] <= one.spread[1]
        runs = np.array(one.runs)  # (lengths, repeats)
        np.testing.assert_allclose(one.exponents, [fitted_exponent(one.lengths, runs[:, r]) for r in range(3)])
    assert differ((0.9, 1.0), (1.05, 1.2)) and not differ((0.9, 1.1), (1.0, 1.2))


@pytest.mark.parametrize("d_model, kv_share", [(64, 1.0), (64, 2 / 8), (64, 1 / 8), (512, 0.5)])
def test_each_series_crossover_is_where_its_own_quadratic_share_is_one_half(d_model, kv_share):
    from transformer.analysis.cost import quadratic_crossover, quadratic_share

    n = quadratic_crossover(d_model, kv_share)
    assert quadratic_share(n, d_model, kv_share) == pytest.approx(0.5)
    assert quadratic_crossover(64, 2 / 8) == 80 and quadratic_crossover(64, 1 / 8) == 72  # the figures
