"""Block-wise attention for long sequences: the same numbers as full attention, pooled and cropped."""

from dataclasses import replace

import numpy as np
import pytest
import tensorflow as tf

from transformer import LiveConfig, ModelCache, run_live
from transformer.analysis.measures import attention_checks
from transformer.core.blockwise import QUERY_BLOCK, KeptKeys, blockwise_attention, power_of_two_block
from transformer.core.model import Transformer
from transformer.live.plan import plan_of
from transformer.runtime.engine_thread import on_engine_thread
from viz.pooling import max_pool

N = 300  # both fit: full attention and the block-wise run (three blocks of 128)


def _model(**options):
    model = Transformer(50, 50, d_model=32, num_heads=4, d_ff=64, num_encoder_layers=2, num_decoder_layers=2,
                        dropout=0.0, max_len=N, **options)
    model(tf.ones((1, 2), tf.int32), tf.ones((1, 2), tf.int32))  # built
    return model


def _inputs(n=N, lengths=(N, N - 37)):
    rng = np.random.default_rng(1)
    src = tf.constant(rng.integers(1, 50, (2, n)), tf.int32)
    tgt = tf.constant(rng.integers(1, 50, (2, n)), tf.int32)
    src_mask = tf.constant(np.arange(n)[None, None, None, :] < np.array(lengths)[:, None, None, None])
    tgt_mask = tf.logical_and(src_mask, tf.linalg.band_part(tf.ones((n, n), tf.bool), -1, 0))  # (B, 1, N, N)
    return src, tgt, src_mask, tgt_mask


@pytest.mark.parametrize("lengths", [(N, N - 37), (23, 130)], ids=["long lines", "mostly padding"])
@pytest.mark.parametrize("options", [{}, *[pytest.param(options, marks=pytest.mark.slow) for options in (
    {"positions": "rope", "num_kv_heads": 2}, {"positions": "alibi"})]])  # `make test-fast`: sinusoidal only
def test_block_wise_maps_equal_full_attention_pooled_and_cropped(options, lengths):
    """Mostly padding: the encoder and cross-attention attend over the 130 keys some line allows (`KeptKeys`)."""
    model = _model(**options)
    src, tgt, src_mask, tgt_mask = _inputs(lengths=lengths)
    kept = KeptKeys.of(src_mask, N, power_of_two_block(N))
    assert (kept is not None and kept.index.shape == (130,)) == (lengths == (23, 130))
    _, full = model(src, tgt, src_mask, tgt_mask)  # every map whole: (B, H, N, N) a layer
    result = blockwise_attention(model, ("encoder", "decoder", "cross"), src, tgt, src_mask, tgt_mask,
                                 windows=((100, 40, 150), (236, 280, 64)))  # the second across two blocks
    factor = power_of_two_block(N)
    assert factor == 4 and result.factor == 4
    for stack in ("encoder", "decoder", "cross"):
        whole = tf.stack(full[stack]).numpy()  # (L, B, H, N, N)
        # float32 sums in another order: ~1e-7 in layer 0, a few 1e-6 relative in layer 1 (ALiBi's larger logits)
        close = dict(atol=1e-6, rtol=1e-5)
        np.testing.assert_allclose(result.attention[stack], max_pool(whole, factor, factor), **close)
        first, second = result.window_weights[stack]  # (L, B, H, rows, cols) each
        np.testing.assert_allclose(first, whole[..., 100:250, 40:190], **close)
        np.testing.assert_allclose(second, whole[..., 236:300, 280:300], **close)  # cut at N = 300


@pytest.mark.parametrize("lengths", [(N, N - 37), (23, 130)], ids=["long lines", "mostly padding"])
def test_block_wise_outputs_equal_the_full_forward_pass(lengths):
    from transformer.core.blockwise import BlockHook, CheckTotals, LayerView

    model = _model()
    src, tgt, src_mask, tgt_mask = _inputs(lengths=lengths)
    memory, _ = model.encode(src, src_mask)
    views = {layer.site: LayerView(4, (), CheckTotals()) for layer in model.attention_layers("encoder")}
    blocked, pooled = model.encode(src, src_mask, hook=BlockHook(views))
    assert [len(view.kept) for view in views.values()] == [1, 1]  # each layer ran block-wise, once
    assert pooled[0].shape == (2, 4, 75, 75)  # (B, H, N/4, N/4)
    np.testing.assert_allclose(blocked.numpy(), memory.numpy(), atol=1e-5)


@pytest.mark.parametrize("lengths", [(N, N - 37), (23, 130)], ids=["long lines", "mostly padding"])
def test_block_wise_checks_are_the_checks_of_the_whole_maps(lengths):
    model = _model()
    src, tgt, src_mask, tgt_mask = _inputs(lengths=lengths)
    _, full = model(src, tgt, src_mask, tgt_mask)
    result = blockwise_attention(model, ("encoder", "decoder"), src, tgt, src_mask, tgt_mask)
    for stack, mask in (("encoder", src_mask), ("decoder", tgt_mask)):  # padding (B, 1, 1, N); look-ahead too
        whole = tf.stack(full[stack]).numpy()  # (L, B, H, N, N)
        expected = {check.name: check.value for check in attention_checks(whole, mask.numpy()[None])}
        totals = result.checks[stack]
        assert totals.non_finite == expected["no NaN or inf"] == 0
        assert totals.row_gap == pytest.approx(expected["rows sum to 1 where a key is allowed"], abs=1e-6)
        assert totals.masked_max == expected["masked weights are exactly 0"] == 0.0
        # keys no query of a block may attend: padding on every line; the look-ahead mask's future (block 0: 172)
        left_out = {"encoder": N - 130 if lengths == (23, 130) else 0, "decoder": N - QUERY_BLOCK}[stack]
        assert totals.keys_left_out == left_out
    assert QUERY_BLOCK % power_of_two_block(4096) == 0  # a block's rows pool whole, up to N = 4096


def test_run_live_above_512_positions_is_block_wise_and_pooled_to_128_cells():
    cache = ModelCache(size=1)
    config = LiveConfig(d_model=32, num_heads=8, d_ff=64, num_layers=2, seq_len=1024,
                        source_text=" ".join(str(i % 10) for i in range(1024)), target_text="1 2 3")
    result = run_live(config, cache, stacks=("encoder",), lines=(0,), windows=[(0, 512, 256)])
    assert result.attention_factor == 8 and result.attention["encoder"].shape == (2, 1, 8, 128, 128)
    (window,) = result.window_weights["encoder"]
    assert window.shape == (2, 1, 8, 256, 256) and result.windows == ((0, 512, 256),)
    assert result.block_checks["encoder"].row_gap < 1e-5 and result.traces == 0
    assert result.applied_masks["encoder"].shape == (1, 1024, 1024)
    with pytest.raises(ValueError, match="seq_len=1024"):
        from transformer import attention_walkthrough

        attention_walkthrough(config, "encoder", 0, cache)
    assert plan_of(replace(config)).inputs.batches.source.ids.shape == (1, 1024)


def test_block_checks_measure_what_attention_checks_measures_on_bad_weights():
    from transformer.core.blockwise import CheckTotals

    good = np.full((1, 2, 3, 4), 0.25, np.float32)  # (B, H, Q_b, N_k), rows sum to 1
    unmasked = CheckTotals()
    unmasked.add(tf.constant(good), True)  # no mask
    assert (unmasked.non_finite, unmasked.row_gap, unmasked.masked_max, unmasked.empty_gap) == (0, 0.0, 0.0, 0.0)
    leaky = good.copy()
    leaky[0, 0, 1, 3] = 0.5  # on a masked key: its row sums to 1.25
    leaky[0, :, 2] = [0.0, 0.0, 0.0, 0.125]  # the empty row keeps weight
    not_finite = good.copy()
    not_finite[0, 1, 0, 1] = np.nan
    not_finite[0, 0, 2, 0] = np.inf
    mask = np.array([[[[True, True, True, False], [True, True, True, False], [False] * 4]]])  # (1, 1, 3, 4)
    padding = np.array([[[[True, True, True, False]]]])  # (1, 1, 1, 4): one row for every query and head
    cases = {"leaky": (leaky, mask), "not finite": (not_finite, mask), "leaky, padding": (leaky, padding)}
    totals = {}
    for name, (weights, case_mask) in cases.items():
        expected = {check.name: check.value for check in attention_checks(weights, case_mask)}
        totals[name] = CheckTotals()
        totals[name].add(tf.constant(weights), tf.constant(case_mask))
        measured = [totals[name].non_finite, totals[name].row_gap, totals[name].masked_max, totals[name].empty_gap]
        for value, reference in zip(measured, expected.values()):  # a gap a NaN or inf touches: at least 1e300
            assert value == pytest.approx(reference) or min(value, reference) >= 1e300, (name, measured, expected)
    assert totals["not finite"].non_finite == 2 and totals["not finite"].masked_max >= 1e300  # the inf, masked
    assert totals["leaky, padding"].masked_max == 0.5  # the leak on a padded key, reduced over heads and queries first


@pytest.mark.parametrize("traced", [pytest.param(False, marks=pytest.mark.slow), True])
def test_maps_pooled_on_the_device_equal_the_full_maps_pooled_in_numpy(traced):
    """`run_live(pool_to=…)` max-pools each map on the model's device before the copy to NumPy (the copy was most
    of a run at N = 512 on an H100): the same cells as pooling the full maps, eager and traced."""
    cache = ModelCache()
    config = LiveConfig(d_model=32, num_heads=4, d_ff=64, num_layers=2, seq_len=300)
    full = run_live(config, cache)
    if traced:
        on_engine_thread(cache.trace_pending)()
    pooled = run_live(config, cache, pool_to=64)
    factor = power_of_two_block(300, 64)
    assert factor == 8 and pooled.attention_factor == 8 and full.attention_factor == 1
    for stack, maps in full.attention.items():  # (L, B, H, N_q, N_k)
        assert pooled.attention[stack].shape == (*maps.shape[:3], 38, 38)
        np.testing.assert_allclose(pooled.attention[stack], max_pool(maps, 8, 8), atol=1e-6)
    assert run_live(config, cache, pool_to=300).attention_factor == 1  # fits: nothing pooled


def test_pool_to_names_a_bad_value():
    with pytest.raises(ValueError, match="pool_to=0"):
        run_live(LiveConfig(), ModelCache(), pool_to=0)


def _numpy_attention(q, k, v, mask, bias):
    """softmax(Q·Kᵀ / sqrt(d_k) + bias) · V in NumPy (float64), 0 where masked and on rows with no allowed key."""
    scaled = q.astype(np.float64) @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]) + bias  # (B, H, Q_b, N_k)
    scaled = np.where(mask, scaled, -np.inf)
    top = np.max(scaled, -1, keepdims=True)
    exps = np.where(mask, np.exp(scaled - np.where(np.isfinite(top), top, 0.0)), 0.0)
    totals = exps.sum(-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)  # (B, H, Q_b, N_k)
    return weights, weights @ v


def test_the_compiled_block_equals_softmax_in_numpy_pooled_with_its_row_measures():
    """`fused_block` against NumPy: the output (a weight on a masked key would move it), the weights max-pooled
    (keys and rows not multiples of the cell) and every row's sum (1, or 0 for a row with no allowed key)."""
    from transformer.core.fused_attention import fused_block

    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(size=(2, 3, 37, 8)).astype(np.float32) for _ in range(3))  # (B, H, Q_b, d_k)
    k, v = k[:, :, :30], v[:, :, :30]  # (B, H, N_k, d_k): 30 keys
    bias = rng.normal(size=(3, 37, 30)).astype(np.float32)  # (H, Q_b, N_k), as ALiBi's
    mask = rng.random((2, 1, 37, 30)) < 0.7  # (B, 1, Q_b, N_k)
    mask[1, 0, 5] = False  # a query with no allowed key
    weights, output = _numpy_attention(q, k, v, mask, bias)
    block = fused_block(tf.constant(q), tf.constant(k), tf.constant(v), tf.constant(mask), tf.constant(bias), 4)
    np.testing.assert_allclose(block.output.numpy(), output, atol=2e-6)
    np.testing.assert_allclose(block.pooled.numpy(), max_pool(weights, 4, 4), atol=2e-6)  # (B, H, 10, 8)
    sums = block.row_sums.numpy()  # (B, H, Q_b)
    np.testing.assert_allclose(sums, np.broadcast_to(mask.any(-1), sums.shape).astype(float), atol=1e-6)
    assert sums[1, :, 5].tolist() == [0.0] * 3  # the empty row: no weight anywhere
    unmasked = fused_block(tf.constant(q), tf.constant(k), tf.constant(v), None, None, 1)
    weights, output = _numpy_attention(q, k, v, np.ones(mask.shape, bool), 0.0)
    np.testing.assert_allclose(unmasked.output.numpy(), output, atol=2e-6)
    np.testing.assert_allclose(unmasked.pooled.numpy(), weights, atol=2e-6)  # factor 1: the weights themselves


@pytest.fixture()
def compiled_blocks(monkeypatch):
    """Every block-wise layer compiles its blocks (`FUSED_MIN_CELLS` is a layer of 2^28 weights otherwise)."""
    monkeypatch.setattr("transformer.core.fused_attention.FUSED_MIN_CELLS", 0)


@pytest.mark.parametrize("lengths", [(N, N), (N, N - 37)], ids=["every key", "padding"])
@pytest.mark.parametrize("options", [{}, pytest.param({"positions": "alibi"}, marks=pytest.mark.slow)])
def test_compiled_blocks_give_the_maps_windows_and_checks_of_full_attention(compiled_blocks, options, lengths):
    """Where a layer's blocks compile (`fused_block`): the pooled maps and the windows (those blocks run eager) of
    the full maps, the same checks, and a look-ahead block whose past is short still gathers its keys."""
    model = _model(**options)
    src, tgt, src_mask, tgt_mask = _inputs(lengths=lengths)
    _, full = model(src, tgt, src_mask, tgt_mask)
    result = blockwise_attention(model, ("encoder", "decoder", "cross"), src, tgt, src_mask, tgt_mask,
                                 windows=((260, 280, 40),))  # block 2's rows
    for stack, mask in (("encoder", src_mask), ("decoder", tgt_mask), ("cross", src_mask)):
        whole = tf.stack(full[stack]).numpy()  # (L, B, H, N, N)
        np.testing.assert_allclose(result.attention[stack], max_pool(whole, 4, 4), atol=1e-6, rtol=1e-5)
        np.testing.assert_allclose(result.window_weights[stack][0], whole[..., 260:300, 280:300], atol=1e-6,
                                   rtol=1e-5)
        expected = {check.name: check.value for check in attention_checks(whole, mask.numpy()[None])}
        totals = result.checks[stack]
        assert totals.row_gap == pytest.approx(expected["rows sum to 1 where a key is allowed"], abs=1e-6)
        assert totals.non_finite == totals.masked_max == totals.empty_gap == 0
        # two layers × blocks 0 and 1 (block 2 holds the window's rows); the decoder's block 0 gathers its past
        assert totals.compiled_blocks == {"decoder": 2}.get(stack, 4), stack


def test_a_compiled_block_with_a_nan_runs_eager_and_its_checks_count_the_nans(compiled_blocks):
    from transformer.core.blockwise import CheckTotals, LayerView

    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(size=(1, 2, 256, 4)).astype(np.float32) for _ in range(3))  # (B, H, N, d_k)
    q[0, 1, 200, 0] = np.nan  # block 1, one query of head 1: its row of weights is NaN
    view = LayerView(4, (), CheckTotals())
    output, pooled = view.attend(tf.constant(q), tf.constant(k), tf.constant(v))
    assert view.checks.compiled_blocks == 1 and view.checks.non_finite == 256  # block 0 compiled, block 1 eager
    assert output.shape == (1, 2, 256, 4) and pooled.shape == (1, 2, 64, 64)
    assert np.isfinite(output.numpy()[:, :, :128]).all()
