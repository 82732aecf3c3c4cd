"""The plain-data entry point: tokens, masks, caching, tracing, devices and bad input."""

import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import numpy_reference as ref
import pytest
import tensorflow as tf
from child_env import child_env

from transformer import (
    LiveConfig,
    ModelCache,
    attention_walkthrough,
    keras_difference,
    line_count,
    run_live,
    sequence_lengths,
    stack_sides,
)
from transformer.core import shape as limits
from transformer.core.model import Transformer
from transformer.core.positional import positional_encoding
from transformer.core.weight_init import seed_weights
from transformer.live import model_cache
from transformer.live.config import ATTENTION_BUDGET_BYTES, MAX_SEQ_LEN, SEED_BATCH, VOCAB_SIZE, attention_bytes
from transformer.live.inputs import encoding_array
from transformer.live.plan import resolved
from transformer.runtime import engine_thread
from transformer.runtime.engine_thread import on_engine_thread

BASE = LiveConfig(d_model=16, num_heads=2, d_ff=32, num_layers=2)


@pytest.fixture()
def cache():
    return ModelCache(size=2)


def test_default_config_reproduces_the_seed_masks(cache):
    result = run_live(LiveConfig(), cache)
    assert result.source_ids.tolist() == [[1, 2, 3, 4, 5, 0, 0], [1, 2, 0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6, 7]]
    np.testing.assert_array_equal(result.source_padding_mask, ref.padding_mask(result.source_ids, [0]))
    np.testing.assert_array_equal(result.subsequent_mask, ref.subsequent_mask(7))
    np.testing.assert_array_equal(result.target_mask, ref.padding_mask(result.target_ids, [0]) & ref.subsequent_mask(7))
    assert result.source_tokens[1] == ("1", "2", "0", "0", "0", "0", "0")


def test_result_holds_plain_numpy_of_documented_shapes(cache):
    result = run_live(replace(BASE, seq_len=5), cache)
    for stack in ("encoder", "decoder", "cross"):
        assert isinstance(result.attention[stack], np.ndarray)
        assert result.attention[stack].shape == (2, 3, 2, 5, 5)
        assert result.applied_masks[stack].shape == (3, 5, 5)
    assert result.positional_encoding.shape == (5, 16)
    np.testing.assert_allclose(result.positional_encoding, ref.positional_encoding(5, 16), atol=2e-5)
    assert result.device == "/CPU:0" or "GPU" in result.device
    assert result.compute_seconds > 0 and result.tf_version.startswith("2.21")


@pytest.mark.parametrize("d_model", [1, 7, 64])
def test_encoding_of_every_length_is_the_engines_own(d_model):
    """run_live's encoding is a view of one MAX_SEQ_LEN encoding per width: the same numbers as
    positional_encoding(length, d_model) computed for that length on the same device (up to one float32 rounding
    step: TensorFlow's vectorised and scalar sin/cos can differ in the last bit; a GPU's sin/cos differ from the
    CPU's by up to 2e-6, measured on an H100), and nobody can write into it."""
    for length in (0, 1, 7, 100, MAX_SEQ_LEN, MAX_SEQ_LEN + 3):
        encoding = encoding_array(length, d_model)  # (N, D)
        assert encoding.shape == (length, d_model)
        with tf.device("/CPU:0"):  # encoding_array's default device
            reference = positional_encoding(length, d_model).numpy()  # (N, D)
        np.testing.assert_allclose(encoding, reference, rtol=0, atol=2e-7)
        assert not encoding.flags.writeable


def test_same_config_gives_same_arrays_and_seed_changes_them(cache):
    first = run_live(BASE, cache)
    again = run_live(BASE, ModelCache())
    np.testing.assert_array_equal(first.attention["cross"], again.attention["cross"])
    other = run_live(replace(BASE, seed=1), cache)
    assert not np.allclose(first.attention["cross"], other.attention["cross"])


@pytest.mark.slow
def test_a_new_model_runs_eagerly_then_its_trace_gives_the_same_weights(cache):
    eager = run_live(BASE, cache)
    assert eager.traces == 0
    assert on_engine_thread(cache.trace_pending)() == 1
    traced = run_live(BASE, cache)
    assert traced.traces == 1 and on_engine_thread(cache.trace_pending)() == 0
    for stack in ("encoder", "decoder", "cross"):
        np.testing.assert_allclose(traced.attention[stack], eager.attention[stack], atol=1e-6)


@pytest.mark.slow
@pytest.mark.idle_traces
def test_the_engine_traces_the_shared_cache_s_new_functions_one_by_one_once_it_is_idle(monkeypatch):
    import time

    monkeypatch.setattr(engine_thread, "TRACE_AFTER_IDLE_SECONDS", 0.2)
    config = replace(BASE, d_model=24, num_heads=3)  # an architecture no other test uses
    run_live(config)
    run_live(config, stacks=("cross",))
    keras_difference(config, "decoder", 1)
    functions = list(model_cache.MODELS.get(resolved(config).model_key).functions.values())
    deadline = time.monotonic() + 60
    while not all(function.traced for function in functions) and time.monotonic() < deadline:
        time.sleep(0.1)  # one function per idle moment, until none is left
    assert len(functions) == 3 and all(function.traced for function in functions)
    assert run_live(config).traces == 1 and run_live(config, stacks=("cross",)).traces == 1


@pytest.mark.slow
def test_model_functions_that_each_trace_once_raise_no_retracing_warning():
    """TensorFlow's 'N out of the last N calls … triggered tf.function retracing' keys on the traced Python code,
    which every ModelFunction shares: six architectures traced once each read, in the server's log, as retracing.
    (A fresh process: TensorFlow gives that warning twice per process at most.)"""
    code = ("from transformer.runtime.model_function import ModelFunction\n"
            "functions = [ModelFunction(lambda src, tgt, src_mask, tgt_mask: src + 1, '/CPU:0') for _ in range(7)]\n"
            "for function in functions: function.trace()\n"
            "print(sum(function.traces for function in functions))")
    env = child_env(os.getcwd(), CUDA_VISIBLE_DEVICES="-1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["7"] and "retracing" not in out.stderr, out.stderr[-2000:]


def test_tensorflow_still_has_the_private_calls_the_engine_uses():
    """transformer/runtime/tf_patches.py: each patch must still reach what it patches in this TensorFlow."""
    import tensorflow as tf

    from transformer.runtime import tf_patches

    function = tf.function(lambda x: x + 1)
    assert hasattr(function, "_omit_frequent_tracing_warning")
    tf_patches.quiet_retracing_warning(function)
    assert function._omit_frequent_tracing_warning is True
    tf_patches.clear_kernel_cache()  # AttributeError if TensorFlow dropped it
    assert float(tf.reduce_sum(tf.ones(3))) == 3.0  # and ops still run after it


@pytest.mark.slow
def test_evicting_models_releases_tensorflows_cached_kernels_after_as_many_as_the_cache_holds(monkeypatch):
    """TensorFlow keeps the kernels it made for every model's ops and traced graphs until its kernel cache is
    cleared, and the app keeps that cache across reruns: architecture changes grew the server by ~7 MB each
    (1.9 → 2.1 GB over three rounds of ten large models; flat with the cache cleared). It is cleared once the
    model cache has evicted as many models as it holds."""
    releases = []
    monkeypatch.setattr(model_cache, "release_kernels", lambda: releases.append(small.builds))
    collections = []
    monkeypatch.setattr(model_cache, "collect_evicted", lambda: collections.append(small.builds))
    small = ModelCache(size=2)
    for d_model in (16, 32, 16, 32):  # two architectures: nothing to evict
        run_live(replace(BASE, d_model=d_model, seq_len=4), small, stacks=("encoder",))
    assert releases == []
    for d_model in (48, 16, 64, 32, 48):  # each new one evicts the least recently used: a release every second
        run_live(replace(BASE, d_model=d_model, seq_len=4), small, stacks=("encoder",))
    assert releases == [3, 5] and small.builds == 7  # made room for the 4th and 6th build: before building them
    assert collections == []  # a collection holds the GIL for ~0.1 s: not for small models (see collect_evicted)


@pytest.mark.slow
def test_an_evicted_model_is_freed_at_once_when_its_weights_are_large():
    """A Keras model is a web of reference cycles: without a collection an evicted model stayed in memory until
    the garbage collector's next full pass (seven of the largest models in a row: six alive with three cached,
    4 GB of RSS and growing; 2.4 GB and flat with the collection)."""
    import gc
    import weakref

    first = replace(BASE, d_model=32)
    small_release = ModelCache(size=1, release_bytes=1)  # every evicted byte counts as large here
    run_live(first, small_release, stacks=("encoder",))
    model = weakref.ref(small_release.get(resolved(first).model_key).model)
    gc.disable()  # only the cache's own collection may free it
    try:
        run_live(replace(BASE, d_model=16), small_release, stacks=("encoder",))
        assert model() is None
    finally:
        gc.enable()


def test_one_trace_and_one_build_across_lengths_pads_and_text(cache):
    """The model for one architecture is traced once across sequence lengths, pad symbols and text."""
    run_live(BASE, cache)
    on_engine_thread(cache.trace_pending)()
    moves = [
        replace(BASE, seq_len=3), replace(BASE, seq_len=40), replace(BASE, seq_len=11),
        replace(BASE, pad_symbols=("<pad>",)), replace(BASE, pad_symbols=("0", "9")),
        replace(BASE, source_text="a b c", target_text="x y"),
        replace(BASE, source_text="1 2\n3 4\n5 6\n7 8", target_text="1\n2\n3\n4"),
        replace(BASE, padding_masks=False), replace(BASE, look_ahead_mask=False),
    ]
    results = [run_live(move, cache) for move in moves]
    assert {result.traces for result in results} == {1}
    assert cache.builds == 1


@pytest.mark.slow
def test_a_new_seed_redraws_the_weights_in_place_without_a_rebuild_or_retrace(cache):
    first = run_live(BASE, cache)
    on_engine_thread(cache.trace_pending)()
    other = run_live(replace(BASE, seed=5), cache)
    back = run_live(BASE, cache)
    assert cache.builds == 1 and back.traces == 1
    assert not np.allclose(first.attention["encoder"], other.attention["encoder"])
    np.testing.assert_allclose(first.attention["encoder"], back.attention["encoder"], atol=1e-6)  # eager, traced
    walk = attention_walkthrough(replace(BASE, seed=5), "encoder", 0, cache)
    np.testing.assert_allclose(walk.tensors["weights"], other.attention["encoder"][0], atol=1e-6)


def test_a_model_from_the_cache_holds_the_weights_of_seed_0(cache, monkeypatch):
    """The cache builds random models with zero kernels and draws every weight from seed 0 at once (Keras's
    own draws would be overwritten): the same weights as a Keras-initialised model redrawn from seed 0."""
    entry = cache.get(resolved(BASE).model_key)
    reference = Transformer(VOCAB_SIZE, VOCAB_SIZE, d_model=BASE.d_model, num_heads=BASE.num_heads, d_ff=BASE.d_ff,
                            num_encoder_layers=BASE.num_layers, num_decoder_layers=BASE.num_layers, dropout=0.0)
    reference.build((None, None), (None, None))
    seed_weights(reference, 0)
    assert entry.seed == 0 and len(entry.model.weights) == len(reference.weights)
    for ours, theirs in zip(entry.model.weights, reference.weights):
        assert ours.path.split("/", 1)[1] == theirs.path.split("/", 1)[1]
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    assert all(weight.numpy().any() for weight in entry.model.weights if weight.path.endswith("kernel"))
    draws = []
    monkeypatch.setattr(model_cache, "seed_weights", lambda *args: draws.append(args))
    assert resolved(BASE).model(cache) is entry and not draws  # seed 0 (the default): nothing drawn again
    resolved(replace(BASE, seed=1)).model(cache)
    assert len(draws) == 1
    resolved(replace(BASE, d_model=32, seed=5)).model(cache)  # a new model: drawn from its seed once, as it is built
    assert len(draws) == 2 and draws[-1][1] == 5


def _weights_by_place(config, cache):
    """{path within the model: values} of ``config``'s model (the cache's, seeded as ``config`` says)."""
    return {weight.path.split("/", 1)[1]: weight.numpy() for weight in resolved(config).model(cache).model.weights}


@pytest.mark.slow
def test_models_of_one_seed_share_every_weight_they_have_in_common(cache):
    """Each weight is drawn from the seed and its place in the model, not from one stream for the whole model
    (which shifted every later weight when a layer was added or d_ff changed): moving a slider changes only
    what the slider is about."""
    base = _weights_by_place(BASE, cache)
    assert _weights_by_place(replace(BASE, num_heads=4), cache).keys() == base.keys()
    for place, values in _weights_by_place(replace(BASE, num_heads=4), cache).items():  # the same projections
        np.testing.assert_array_equal(values, base[place], err_msg=place)
    deeper = _weights_by_place(replace(BASE, num_layers=3), cache)
    assert set(base) < set(deeper) and any("block_2" in place for place in deeper)
    for place, values in base.items():  # the layers there were are kept, the decoder's too
        np.testing.assert_array_equal(deeper[place], values, err_msg=place)
    wider = _weights_by_place(replace(BASE, d_ff=64), cache)
    for place, values in base.items():  # the feed-forward kernels are redrawn (new shapes), nothing else
        if "feed_forward/" in place:
            assert wider[place].shape != values.shape or not place.endswith("kernel"), place
        else:
            np.testing.assert_array_equal(wider[place], values, err_msg=place)
    other_seed = _weights_by_place(replace(BASE, seed=1), cache)
    assert not any(np.array_equal(values, base[place]) for place, values in other_seed.items() if values.std() > 0)
    kernels = [values for place, values in base.items() if place.endswith("kernel") and values.shape == (16, 16)]
    assert len(kernels) == 4 * 3 * 2 and len({values.tobytes() for values in kernels}) == len(kernels)


def test_random_weights_follow_the_keras_defaults(cache):
    """Kernels Glorot uniform, U(±sqrt(6 / (fan_in + fan_out))); embeddings U(±0.05); biases and beta 0; gamma 1."""
    for place, values in _weights_by_place(replace(BASE, d_model=64, d_ff=128), cache).items():
        assert values.dtype == np.float32, place
        if place.endswith(("bias", "beta", "gamma")):
            np.testing.assert_array_equal(values, float(place.endswith("gamma")), err_msg=place)
            continue
        limit = 0.05 if place.endswith("embeddings") else np.sqrt(6.0 / (values.shape[0] + values.shape[-1]))
        assert -limit <= values.min() and values.max() <= limit, place
        assert abs(values.mean()) < 0.05 * limit and abs(values.std() - limit / np.sqrt(3)) < 0.05 * limit, place


@pytest.mark.slow
def test_a_layer_added_keeps_the_attention_of_the_layers_before_it(cache):
    """What the reader sees: with one more layer, the encoder's attention in the layers there were stays as it
    was, and so does the decoder's first self-attention. Cross-attention changes: it reads the (now deeper)
    encoder's output, and the decoder's later layers read what cross-attention made."""
    two, three = run_live(BASE, cache), run_live(replace(BASE, num_layers=3), cache)
    np.testing.assert_allclose(three.attention["encoder"][:2], two.attention["encoder"], atol=1e-6)
    np.testing.assert_allclose(three.attention["decoder"][0], two.attention["decoder"][0], atol=1e-6)
    assert not np.allclose(three.attention["cross"][:2], two.attention["cross"], atol=1e-3)
    wider_ff = run_live(replace(BASE, d_ff=64), cache)  # the first encoder layer's attention comes before any FFN
    np.testing.assert_allclose(wider_ff.attention["encoder"][0], two.attention["encoder"][0], atol=1e-6)


def test_only_the_stacks_asked_for_are_computed(cache, monkeypatch):
    every = run_live(BASE, cache)
    entry = cache.get(resolved(BASE).model_key)
    decodes = []
    decode = entry.model.decode
    monkeypatch.setattr(entry.model, "decode", lambda *args, **kwargs: decodes.append(1) or decode(*args, **kwargs))
    encoder = run_live(replace(BASE, seq_len=9), cache, stacks=("encoder",))
    assert set(encoder.attention) == {"encoder"} and not decodes  # the decoder did not run
    np.testing.assert_allclose(encoder.attention["encoder"], run_live(replace(BASE, seq_len=9), cache)
                               .attention["encoder"], atol=1e-6)
    cross = run_live(BASE, cache, stacks=("cross", "decoder"))
    assert list(cross.attention) == ["decoder", "cross"]
    np.testing.assert_allclose(cross.attention["cross"], every.attention["cross"], atol=1e-6)
    none = run_live(BASE, cache, stacks=())
    assert none.attention == {} and none.compute_seconds < 0.5
    np.testing.assert_array_equal(none.target_mask, every.target_mask)
    assert (none.layers, none.heads) == (BASE.num_layers, BASE.num_heads)
    with pytest.raises(ValueError, match="stacks=.*'keys'"):
        run_live(BASE, cache, stacks=("keys",))


@pytest.mark.slow
def test_sequence_lengths_are_the_runs_own_and_bad_windows_are_named(cache):
    assert sequence_lengths(replace(BASE, seq_len=9)) == (9, 9)
    assert [stack_sides(stack, "source", "target") for stack in ("encoder", "decoder", "cross")] == [
        ("source", "source"), ("target", "target"), ("target", "source")]  # (queries, keys)
    trained = LiveConfig(weights="dates", source_text="24/11/2026", target_text="")
    result = run_live(trained, cache, stacks=())
    assert sequence_lengths(trained) == (result.source_ids.shape[1], result.target_ids.shape[1])
    for windows in ([(0, 0)], [(0, -1, 64)], [(0, 0, 0)], [(0.5, 0, 64)]):
        with pytest.raises(ValueError, match=r"Received: windows="):
            run_live(BASE, cache, stacks=("encoder",), windows=windows)


@pytest.mark.slow
def test_the_lines_asked_for_get_the_same_maps_as_in_the_whole_batch(cache):
    """A line's attention does not depend on the other lines, so the Attention page computes only the
    line on view; every other field still covers every line."""
    every = run_live(BASE, cache)
    assert every.lines == (0, 1, 2) and line_count(BASE) == 3
    for stack in ("encoder", "decoder", "cross"):
        some = run_live(BASE, cache, stacks=(stack,), lines=(2, 0))
        assert some.lines == (2, 0)
        np.testing.assert_allclose(some.attention[stack], every.attention[stack][:, [2, 0]], atol=1e-6)  # (L, 2, …)
        np.testing.assert_array_equal(some.applied_masks[stack], every.applied_masks[stack])  # all 3 lines
    assert run_live(BASE, cache, stacks=("encoder",), lines=(1,)).source_ids.shape[0] == 3
    cache.trace_pending()
    assert {run_live(BASE, cache, stacks=("encoder",), lines=lines).traces for lines in ((1,), (2, 0), None)} == {1}
    for bad in ((3,), (-1,), (), ("1",), (0.0,)):
        with pytest.raises(ValueError, match=r"lines must name lines 0 to 2 \(there are 3\)\. Received: lines="):
            run_live(BASE, cache, stacks=("encoder",), lines=bad)


def test_a_page_without_attention_maps_builds_no_model(cache):
    """Masks and positional encodings come from the configuration alone: the first Masks page of a
    cold start does not wait ~0.5 s for a Transformer to be built."""
    config = replace(BASE, d_model=32, num_heads=8, seq_len=9)
    result = run_live(config, cache, stacks=())
    assert cache.builds == 0 and len(cache) == 0
    assert result.positional_encoding.shape == (9, 32)
    assert (result.layers, result.heads) == (config.num_layers, 8)
    np.testing.assert_allclose(result.positional_encoding, run_live(config, cache).positional_encoding)
    assert cache.builds == 1  # the attention maps do need it


def test_the_engine_traces_only_the_functions_a_page_asked_for(cache):
    run_live(BASE, cache, stacks=())  # Masks: no attention maps, so no graph to trace
    assert on_engine_thread(cache.trace_pending)() == 0
    run_live(BASE, cache, stacks=("encoder",))
    assert list(cache.get(resolved(BASE).model_key).functions) == [("attention", ("encoder",))]
    assert on_engine_thread(cache.trace_pending)() == 1


@pytest.mark.slow
def test_a_stack_subset_is_traced_once_for_every_length(cache):
    run_live(BASE, cache, stacks=("decoder",))
    on_engine_thread(cache.trace_pending)()
    results = [run_live(replace(BASE, seq_len=n), cache, stacks=("decoder",)) for n in (3, 17, 40)]
    assert {result.traces for result in results} == {1}
    assert [result.attention["decoder"].shape[-1] for result in results] == [3, 17, 40]


@pytest.mark.slow
def test_model_cache_is_bounded(cache):
    for d_model in (8, 16, 32):
        run_live(replace(BASE, d_model=d_model), cache)
    assert len(cache) == 2 and cache.builds == 3
    run_live(replace(BASE, d_model=32), cache)
    assert cache.builds == 3


@pytest.mark.parametrize("d_model, heads, d_ff, layers, positions, kv_heads, norm, architecture", [
    (8, 1, 16, 1, "sinusoidal", None, "post", "encoder-decoder"), (16, 2, 32, 2, "learned", None, "pre",
                                                                   "encoder-decoder"),
    (48, 4, 64, 3, "rope", 2, "post", "decoder-only"), (48, 4, 0, 1, "learned", 1, "pre", "decoder-only"),
    (16, 2, 0, 2, "learned", None, "post", "encoder-only"), (16, 2, 32, 1, "alibi", None, "pre", "encoder-only")])
def test_the_weight_bytes_of_an_architecture_are_known_before_it_is_built(d_model, heads, d_ff, layers, positions,
                                                                           kv_heads, norm, architecture):
    config = replace(BASE, d_model=d_model, num_heads=heads, d_ff=d_ff, num_layers=layers, positions=positions,
                     num_kv_heads=kv_heads, norm=norm, architecture=architecture)
    architecture = resolved(config).model_key
    assert model_cache.model_bytes(architecture) == ModelCache().get(architecture).weight_bytes


@pytest.mark.slow
def test_model_cache_holds_models_up_to_a_weight_budget_and_always_the_newest(monkeypatch):
    small, large = replace(BASE, d_model=8, num_heads=2), replace(BASE, d_model=32)
    sizes = ModelCache()
    small_bytes, large_bytes = (resolved(config).model(sizes).weight_bytes for config in (small, large))
    assert small_bytes < large_bytes and sizes.weight_bytes() == small_bytes + large_bytes
    cache = ModelCache(size=4, budget_bytes=small_bytes + large_bytes - 1)
    held_while_building = []
    build = model_cache.build_cached_model
    monkeypatch.setattr(model_cache, "build_cached_model",
                        lambda *args: held_while_building.append(cache.weight_bytes()) or build(*args))
    run_live(small, cache)
    run_live(large, cache)  # both are over the budget: the older goes first, although four models are allowed
    assert len(cache) == 1 and cache.weight_bytes() == large_bytes
    assert held_while_building == [0, 0]  # the small model was evicted before the large one was built
    cache = ModelCache(size=4, budget_bytes=1)
    run_live(large, cache)  # alone over the budget: kept (a page is using it), and used again
    run_live(large, cache)
    assert len(cache) == 1 and cache.builds == 1


def test_the_model_cache_budget_holds_two_of_the_largest_models():
    largest = model_cache.model_bytes(model_cache.shape_key(
        limits.ModelShape(d_model=limits.MAX_D_MODEL, num_heads=8, d_ff=limits.MAX_D_FF, num_layers=limits.MAX_LAYERS,
                          positions="learned", num_kv_heads=8, norm="pre", architecture="encoder-decoder"), "/CPU:0"))
    assert 2 * largest <= model_cache.MODEL_CACHE_BYTES < 3 * largest


def test_text_tokens_build_a_vocabulary_with_pads_first(cache):
    result = run_live(replace(BASE, source_text="the cat the", target_text="le chat", seq_len=4,
                              pad_symbols=("<pad>", "0")), cache)
    assert result.source_tokens == (("the", "cat", "the", "<pad>"),)
    assert result.source_ids.tolist() == [[2, 3, 2, 0]]
    assert result.pad_ids == (0, 1)
    assert result.source_padding_mask[0, 0, 0].tolist() == [True, True, True, False]


def test_truncation_is_reported(cache):
    result = run_live(replace(BASE, seq_len=3, source_text="1 2 3 4\n1 2", target_text="1\n2"), cache)
    assert result.source_truncated == (True, False)
    assert any("cut to 3" in notice for notice in result.notices)


def test_all_padding_line_gets_zero_weights_and_a_notice(cache):
    result = run_live(replace(BASE, source_text="0 0 0\n1 2 3", target_text="1\n2"), cache)
    assert np.all(result.attention["encoder"][:, 0] == 0)
    assert np.all(result.attention["cross"][:, 0] == 0)
    assert any("Source line 1 is all padding" in notice for notice in result.notices)


def test_mask_toggles_change_what_is_applied(cache):
    on = run_live(BASE, cache)
    no_pad = run_live(replace(BASE, padding_masks=False), cache)
    no_future = run_live(replace(BASE, look_ahead_mask=False), cache)
    assert no_pad.applied_masks["encoder"].all() and not on.applied_masks["encoder"].all()
    assert (no_pad.attention["encoder"][:, 0, :, :, 5:] > 0).all()
    assert (no_future.attention["decoder"][:, 2, :, 0, 1:] > 0).all()
    np.testing.assert_array_equal(on.target_mask, no_future.target_mask)  # drawn masks stay the paper's


@pytest.mark.parametrize("padding_on", [True, False])
@pytest.mark.parametrize("future_on", [True, False])
def test_applied_masks_are_the_reference_masks_with_the_switched_off_ones_all_true(cache, padding_on, future_on):
    result = run_live(replace(BASE, padding_masks=padding_on, look_ahead_mask=future_on), cache, stacks=())
    source_padding = ref.padding_mask(result.source_ids, [0])[:, 0, 0]  # (B, N_s)
    target_padding = ref.padding_mask(result.target_ids, [0])[:, 0]  # (B, 1, N_t)
    batch, n = result.source_ids.shape
    keys = source_padding[:, None, :] if padding_on else np.ones((batch, 1, n), bool)  # (B, 1, N_s)
    decoder = (target_padding if padding_on else True) & (ref.subsequent_mask(n) if future_on else True)
    np.testing.assert_array_equal(result.applied_masks["encoder"], np.broadcast_to(keys, (batch, n, n)))
    np.testing.assert_array_equal(result.applied_masks["cross"], np.broadcast_to(keys, (batch, n, n)))
    np.testing.assert_array_equal(result.applied_masks["decoder"], np.broadcast_to(decoder, (batch, n, n)))
    np.testing.assert_array_equal(result.target_mask, ref.padding_mask(result.target_ids, [0]) & ref.subsequent_mask(n))
    for mask in (*result.applied_masks.values(), result.source_padding_mask, result.target_padding_mask,
                 result.subsequent_mask, result.target_mask):  # shared by every run of the configuration
        assert not mask.flags.writeable


BAD = [
    (dict(num_heads=3), "d_model=16, num_heads=3"),
    (dict(seq_len=0), "seq_len=0"),
    (dict(seq_len=4097), "seq_len=4097"),
    (dict(seq_len="7"), "seq_len='7'"),
    (dict(d_model=4096), "d_model=4096"),
    (dict(num_layers=0), "num_layers=0"),
    (dict(source_text="  \n "), "source text is empty"),
    (dict(target_text=""), "target text is empty"),
    (dict(pad_symbols=()), "at least one pad symbol"),
    (dict(pad_symbols=("a b",)), "'a b'"),
    (dict(source_text="1 2 5000", target_text="1"), "5000"),
    (dict(source_text="x\n" * 17, target_text="y\n" * 17), "17 lines"),
    (dict(device="tpu"), "device='tpu'"),
]


@pytest.mark.parametrize("change, message", BAD)
def test_bad_input_raises_value_error_naming_the_values(change, message, cache):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        run_live(replace(BASE, **change), cache)
    assert run_live(BASE, cache).attention["encoder"].shape[0] == 2  # the next valid input works


def test_memory_budget_is_checked_before_computing(cache):
    config = replace(BASE, d_model=512, num_heads=64, num_layers=6, seq_len=512,
                     source_text="1\n" * 16, target_text="1\n" * 16)
    assert attention_bytes(16, 64, 6, 512) > ATTENTION_BUDGET_BYTES
    with pytest.raises(ValueError, match=r"B=16 lines × H=64 heads"):
        run_live(config, cache)
    assert cache.builds == 0


def test_walkthrough_shapes_and_agreement_with_keras(cache):
    for stack in ("encoder", "decoder", "cross"):
        walk = attention_walkthrough(replace(BASE, seq_len=6), stack, 1, cache)
        assert walk.shapes["query_heads"] == (3, 2, 6, 8)
        assert walk.shapes["weights"] == (3, 2, 6, 6) and walk.shapes["output"] == (3, 6, 16)
        assert walk.keras_difference["output"] < 1e-4 and walk.keras_difference["weights"] < 1e-5
        assert 0 < walk.compute_seconds < 60
    live = run_live(replace(BASE, seq_len=6), cache)
    assert (walk.device_label, walk.tf_version) == (live.device_label, live.tf_version)  # where it ran, named alike
    assert walk.device_label in ("CPU", "GPU:0") or walk.device_label.startswith("GPU:0 — ")
    np.testing.assert_allclose(walk.tensors["weights"], live.attention["cross"][1], atol=1e-5)


@pytest.mark.slow
def test_a_walkthrough_is_traced_once_and_agrees_with_its_eager_run(cache):
    """Eager at first, then one graph for every length, pad set and seed (weights redrawn in place)."""
    config = replace(BASE, seq_len=6)
    eager = attention_walkthrough(config, "cross", 1, cache)
    assert on_engine_thread(cache.trace_pending)() == 1  # this walkthrough's function: no forward pass was asked for
    function = cache.get(resolved(config).model_key).functions[("walkthrough", "cross", 1)]
    traced = attention_walkthrough(config, "cross", 1, cache)
    assert function.traced and set(traced.tensors) == set(eager.tensors)
    for name, array in eager.tensors.items():
        np.testing.assert_allclose(traced.tensors[name], array, atol=1e-5, err_msg=name)
    np.testing.assert_array_equal(traced.mask, eager.mask)
    moved = replace(config, seq_len=9, seed=3, pad_symbols=("<pad>",), source_text="a b <pad>\nc\nd e f g")
    other = attention_walkthrough(moved, "cross", 1, cache)
    np.testing.assert_allclose(other.tensors["weights"], run_live(moved, cache).attention["cross"][1], atol=1e-5)
    assert other.keras_difference["output"] < 1e-4 and other.keras_difference["weights"] < 1e-5
    assert other.shapes["weights"][-1] == 9 and function.traces == 1
    assert keras_difference(moved, "cross", 1, cache) == pytest.approx(other.keras_difference, abs=1e-6)


def test_the_keras_check_of_one_line_runs_that_line_alone(cache, monkeypatch):
    from transformer.live import walkthrough

    config = replace(BASE, seq_len=6, source_text="1 2 0\n3 4 5 6\n7", target_text="1\n2 3\n4 5 6")
    batches = []
    check = walkthrough._check_function
    def counted(*args):
        def run(src, tgt, src_mask, tgt_mask):
            batches.append(src.shape[0])
            return check(*args)(src, tgt, src_mask, tgt_mask)
        return run

    monkeypatch.setattr(walkthrough, "_check_function", counted)
    every = keras_difference(config, "cross", 1, cache)
    lines = [keras_difference(config, "cross", 1, cache, line=line) for line in range(3)]
    assert batches == [3, 1, 1, 1]
    for gaps in (every, *lines):
        assert gaps["output"] < 1e-4 and gaps["weights"] < 1e-5
    assert max(gaps["output"] for gaps in lines) == pytest.approx(every["output"], abs=1e-6)
    with pytest.raises(ValueError, match=r"lines must name lines 0 to 2 \(there are 3\)\. Received: lines=\(3,\)"):
        keras_difference(config, "cross", 1, cache, line=3)


def test_walkthrough_rejects_unknown_layer(cache):
    with pytest.raises(ValueError, match="layer=2"):
        attention_walkthrough(BASE, "encoder", 2, cache)


@pytest.mark.slow
def test_runs_on_cpu_when_no_gpu_is_visible():
    code = (
        "from transformer import run_live, LiveConfig, resolve_device;"
        "r = run_live(LiveConfig(d_model=8, num_heads=2, d_ff=8, num_layers=1));"
        "print(r.device, r.device_label, resolve_device('cpu'))"
    )
    env = child_env(os.getcwd(), CUDA_VISIBLE_DEVICES="-1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["/CPU:0", "CPU", "/CPU:0"]


def test_the_seed_batch_pads_its_short_lines_and_the_default_masks_block_those_keys():
    result = run_live(LiveConfig(), stacks=())
    assert result.source_tokens == tuple(tuple(line.split()) for line in SEED_BATCH.splitlines())
    np.testing.assert_array_equal(result.source_padding_mask[:, 0, 0], [
        [True] * 5 + [False] * 2, [True] * 2 + [False] * 5, [True] * 7])


@pytest.mark.parametrize("change, says", [
    (dict(source_text="1 2"), "The source has 1 line and the target 3: the target's lines 2–3 are left out"),
    (dict(target_text="1 2"), "The source has 3 lines and the target 1: target lines 2–3 are their source lines"),
])
def test_line_counts_that_differ_run_the_sources_lines_and_say_what_was_filled(change, says, cache):
    """#52.4: one source line no longer blanks every view; the encoder never reads the targets."""
    result = run_live(replace(BASE, **change), cache)
    assert any(notice.startswith(says) for notice in result.notices), result.notices
    batch = len(result.config.source_text.splitlines())
    assert result.attention["encoder"].shape[1] == batch == result.target_ids.shape[0]
    alone = run_live(replace(BASE, source_text=result.config.source_text,
                             target_text="\n".join([BASE.target_text.splitlines()[0]] * batch)), cache)
    np.testing.assert_allclose(result.attention["encoder"], alone.attention["encoder"], atol=1e-6)


def test_a_decoder_only_model_reads_its_target_lines_whatever_the_source_has(cache):
    result = run_live(replace(BASE, architecture="decoder-only", source_text="1 2"), cache)
    assert result.attention["decoder"].shape[1] == 3


def test_a_large_loaded_model_makes_room_in_the_model_cache_by_its_own_bytes():
    """A loaded model whose size its source states (a real language model's `load_bytes`) evicts what would put
    the cache over its budget; a trained model's (no size stated) makes no room, as before."""
    import keras

    def small():
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)])  # 20 float32 weights: 80 bytes

    cache = ModelCache(size=4, budget_bytes=1000)
    cache.entry(("trained", "a", "/CPU:0"), load=small)
    cache.entry(("trained", "b", "/CPU:0"), load=small)
    assert cache.holds(("trained", "a", "/CPU:0")) and cache.holds(("trained", "b", "/CPU:0"))
    cache.entry(("real", "big", "/CPU:0"), load=small, load_bytes=950)
    assert not cache.holds(("trained", "a", "/CPU:0")) and not cache.holds(("trained", "b", "/CPU:0"))
    assert cache.holds(("real", "big", "/CPU:0"))


def test_a_loaded_model_asked_for_without_its_loader_keeps_its_weights():
    """`ModelCache.entry(key)` of a held loaded model (a real model's, a trained one's) returns it as it is: only
    random weights are re-drawn from a seed (a loaded model asked for by its key alone was re-drawn at random)."""
    import keras

    def loaded():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(4)])
        model.set_weights([np.full((4, 4), 0.25, np.float32), np.zeros(4, np.float32)])
        return model

    cache = ModelCache(size=4)
    key = ("real", "loaded", "/CPU:0")
    cache.entry(key, load=loaded)
    again = cache.entry(key)  # its key alone, as a caller that knows it is held
    assert np.array_equal(again.model.get_weights()[0], np.full((4, 4), 0.25, np.float32))
