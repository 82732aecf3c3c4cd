"""Activation and path patching (transformer.analysis.patching): each site kind against a NumPy forward pass with
the patch written in, the ends exact, a path touching only its receiver, and the errors named."""

import numpy as np
import pytest
import tensorflow as tf
from numpy_reference import layer_norm, subsequent_mask, transformer_forward
from small_models import SRC, TGT, cross_prefix, small_model, weight_table

from transformer.analysis import patch_maps as M
from transformer.analysis import patching as P
from transformer.core.masks import padding_mask
from transformer.core.patching import PatchHook

OTHER_SRC = np.array([[3, 6, 7, 2, 4]], np.int32)  # (1, N_s): two tokens changed
OTHER_TGT = np.array([[1, 4, 9, 8]], np.int32)  # (1, N_t): one token changed
OPTIONS = dict(layers=2, heads=4)


def pair(model):
    causal = subsequent_mask(TGT.shape[1])[None, None]
    if model.architecture == "decoder-only":
        return P.Inputs(None, TGT, None, causal), P.Inputs(None, OTHER_TGT, None, causal)
    return (P.Inputs(SRC, TGT, padding_mask(SRC, 0).numpy(), causal),
            P.Inputs(OTHER_SRC, TGT, padding_mask(OTHER_SRC, 0).numpy(), causal))


def numpy_run(model, inputs, patch=None):
    """``(logits (N, V), {"encoder"|"decoder"|"cross": [(H, N_q, N_k)]})`` of the NumPy forward pass."""
    w, norm, d_ff = weight_table(model), model.norm, model.d_ff
    options = dict(OPTIONS, d_ff=d_ff, norm=norm, cross_prefix=cross_prefix(w))
    patches = patch or {}
    attention, memory = {}, None
    if model.has_encoder:
        memory, attention["encoder"], _ = transformer_forward(w, inputs.src[0], stack="encoder", self_mask=None,
                                                              patch=patches.get("encoder"), **options)
    hidden, attention["decoder"], cross = transformer_forward(
        w, inputs.tgt[0], stack="decoder", self_mask=inputs.tgt_mask[0, 0], memory=memory,
        patch=patches.get("decoder"), **options)
    if memory is not None:
        attention["cross"] = cross
    return hidden @ w["output_layer/kernel"] + w["output_layer/bias"], attention


def assert_same_run(engine, reference):
    logits, attention = engine
    expected_logits, expected_attention = reference
    np.testing.assert_allclose(logits, expected_logits, atol=1e-4, rtol=1e-4)
    for stack, layers in expected_attention.items():
        np.testing.assert_allclose(np.stack(attention[stack]), np.stack(layers), atol=2e-5)


@pytest.mark.parametrize("architecture, norm", [("encoder-decoder", "post"), ("decoder-only", "pre")])
def test_a_heads_output_patched_matches_numpy(architecture, norm):
    model = small_model(architecture, norm)
    clean, corrupt = pair(model)
    record = {}
    numpy_run(model, clean, {"decoder": {"record": record}})
    stack = "cross" if model.has_encoder else "decoder"
    kind = "cross" if stack == "cross" else "self"
    clean_context = record[("contexts", (kind, 1))][2]  # (N_q, d): head 2 of layer 1 in the clean run
    expected = numpy_run(model, corrupt, {"decoder": {"contexts": {(kind, 1): {2: clean_context}}}})
    assert_same_run(P.patched_run(model, clean, corrupt, (P.HeadSite(stack, 1, 2),)), expected)


@pytest.mark.parametrize("architecture, norm", [("encoder-decoder", "post"), ("decoder-only", "pre")])
def test_a_heads_output_at_one_position_patched_matches_numpy(architecture, norm):
    """Issue 87, item 20: a head's output at one query position alone (TransformerLens's ``…_by_pos``)."""
    model = small_model(architecture, norm)
    clean, corrupt = pair(model)
    records = {}
    for name, inputs in (("clean", clean), ("corrupt", corrupt)):
        records[name] = {}
        numpy_run(model, inputs, {"decoder": {"record": records[name]}})
    stack = "cross" if model.has_encoder else "decoder"
    kind = "cross" if stack == "cross" else "self"
    given = records["corrupt"][("contexts", (kind, 1))][2].copy()  # (N_q, d): the corrupted run's own head 2
    given[1] = records["clean"][("contexts", (kind, 1))][2][1]  # … with position 1 from the clean run
    expected = numpy_run(model, corrupt, {"decoder": {"contexts": {(kind, 1): {2: given}}}})
    site = P.HeadSite(stack, 1, 2, position=1)
    assert_same_run(P.patched_run(model, clean, corrupt, (site,)), expected)
    assert site.label.endswith("at position 1")
    with pytest.raises(ValueError, match="no such site"):
        P.patched_run(model, clean, corrupt, (P.HeadSite(stack, 1, 2, position=99),))


@pytest.mark.parametrize("architecture, norm", [("encoder-decoder", "post"), ("decoder-only", "pre")])
def test_the_stream_at_one_position_patched_matches_numpy(architecture, norm):
    model = small_model(architecture, norm)
    clean, corrupt = pair(model)
    stack, position = ("encoder", 1) if model.has_encoder else ("decoder", 2)
    record = {}
    numpy_run(model, clean, {stack: {"record": record}})
    for layer in (1, 2):  # entering layer 1, and the stack's output
        row = record[("stream", layer)][position]
        expected = numpy_run(model, corrupt, {stack: {"streams": {layer: {position: row}}}})
        assert_same_run(P.patched_run(model, clean, corrupt, (P.StreamSite(stack, layer, position),)), expected)


def _parts_at_layer_1(model, inputs):
    """NumPy: the pre-norm decoder-only stream entering layer 1 by parts (layer 0's heads, its feed-forward), as
    the receivers' LayerNorm sees them, scale held at the whole stream's: ``({part: (N, D)}, normed input)``."""
    shares, stream, gamma, beta = _raw_parts_at_layer_1(model, inputs)
    sigma = np.sqrt(stream.var(-1, keepdims=True) + 1e-6)
    normed = {name: (part - part.mean(-1, keepdims=True)) * gamma / sigma for name, part in shares.items()}
    return normed, layer_norm(stream, gamma, beta)


def _raw_parts_at_layer_1(model, inputs):
    """NumPy: the same stream's parts before any LayerNorm of layer 1, the whole stream, and that LayerNorm's gamma
    and beta: ``({part: (N, D)}, (N, D), (D,), (D,))``."""
    w = weight_table(model)
    record = {}
    numpy_run(model, inputs, {"decoder": {"record": record}})
    contexts = record[("contexts", ("self", 0))]  # 4 × (N, d)
    kernel = w["decoder/block_0/self_attention_block/attention/transform_out/kernel"]  # (D, D)
    depth = kernel.shape[0] // 4
    shares = {f"L0H{h}": contexts[h] @ kernel[h * depth:(h + 1) * depth] for h in range(4)}
    attention_out = sum(shares.values()) + w["decoder/block_0/self_attention_block/attention/transform_out/bias"]
    stream = record[("stream", 1)]  # (N, D)
    shares["L0FF"] = stream - record[("stream", 0)] - attention_out
    gamma = w["decoder/block_1/self_attention_block/layer_norm/gamma"]
    beta = w["decoder/block_1/self_attention_block/layer_norm/beta"]
    return shares, stream, gamma, beta


@pytest.mark.parametrize("sender, side", [("L0H1", "k"), ("L0FF", "q"), ("L0H3", "v")])
def test_a_path_matches_numpy_and_changes_only_its_receivers_side(sender, side):
    model = small_model("decoder-only", "pre")
    clean, corrupt = pair(model)
    clean_parts, _ = _parts_at_layer_1(model, clean)
    corrupt_parts, corrupt_input = _parts_at_layer_1(model, corrupt)
    given = corrupt_input + clean_parts[sender] - corrupt_parts[sender]  # (N, D)
    expected = numpy_run(model, corrupt, {"decoder": {"inputs": {("self", 1): {2: {side: given}}}}})
    engine = P.patched_run(model, clean, corrupt, (P.PathSite((sender,), (("decoder", 1, 2, side),)),))
    assert_same_run(engine, expected)
    plain = numpy_run(model, corrupt)[1]["decoder"]
    others = [0, 1, 3]  # every other head of the receiver's layer, and layer 0, as in the corrupted run
    np.testing.assert_allclose(engine[1]["decoder"][1][others], plain[1][others], atol=2e-5)
    np.testing.assert_allclose(engine[1]["decoder"][0], plain[0], atol=2e-5)


@pytest.mark.parametrize("reading", ["held", "recomputed"])
def test_a_sender_at_one_position_matches_numpy(reading):
    """Issue 87, item 20: a sender's part at one stream position alone into a receiver's key."""
    model = small_model("decoder-only", "pre")
    clean, corrupt = pair(model)
    clean_raw, _, gamma, beta = _raw_parts_at_layer_1(model, clean)
    corrupt_raw, corrupt_stream, _, _ = _raw_parts_at_layer_1(model, corrupt)
    clean_parts, _ = _parts_at_layer_1(model, clean)
    corrupt_parts, corrupt_input = _parts_at_layer_1(model, corrupt)
    at = np.zeros((len(corrupt_input), 1))
    at[2] = 1.0  # position 2 alone
    if reading == "held":
        given = corrupt_input + at * (clean_parts["L0H1"] - corrupt_parts["L0H1"])
    else:
        given = layer_norm(corrupt_stream + at * (clean_raw["L0H1"] - corrupt_raw["L0H1"]), gamma, beta)
    expected = numpy_run(model, corrupt, {"decoder": {"inputs": {("self", 1): {2: {"k": given}}}}})
    site = P.PathSite(("L0H1",), (("decoder", 1, 2, "k"),), reading, position=2)
    assert_same_run(P.patched_run(model, clean, corrupt, (site,)), expected)


@pytest.mark.parametrize("sender, side", [("L0H1", "k"), ("L0FF", "q"), ("L0H0", "v")])
def test_a_path_with_the_receivers_layer_norm_recomputed_matches_numpy(sender, side):
    """Issue 87, item 19: path patching as Wang et al. (2022) and TransformerLens's users run it: the receiver's
    LayerNorm computed again on the base stream plus the sender's change, ``LN(x_base + p_src − p_base)``, not each
    part at its own run's scale; the two differ, and the held reading stays as it was."""
    model = small_model("decoder-only", "pre")
    clean, corrupt = pair(model)
    clean_raw, _, gamma, beta = _raw_parts_at_layer_1(model, clean)
    corrupt_raw, corrupt_stream, _, _ = _raw_parts_at_layer_1(model, corrupt)
    given = layer_norm(corrupt_stream + clean_raw[sender] - corrupt_raw[sender], gamma, beta)  # (N, D)
    expected = numpy_run(model, corrupt, {"decoder": {"inputs": {("self", 1): {2: {side: given}}}}})
    site = P.PathSite((sender,), (("decoder", 1, 2, side),), layer_norm="recomputed")
    engine = P.patched_run(model, clean, corrupt, (site,))
    assert_same_run(engine, expected)
    held = P.patched_run(model, clean, corrupt, (P.PathSite((sender,), (("decoder", 1, 2, side),)),))
    if side != "v":
        assert np.abs(held[1]["decoder"][1][2] - engine[1]["decoder"][1][2]).max() > 1e-4  # the readings differ
    assert "LayerNorm recomputed" in site.label


def test_a_post_norm_receivers_input_has_no_layer_norm_to_recompute():
    """Post-norm: the stream reaches the projections as it is, so the two readings are one."""
    model = small_model("encoder-decoder", "post")
    clean, corrupt = pair(model)
    runs = [P.patched_run(model, clean, corrupt, (P.PathSite(("token",), (("decoder", 1, 2, "k"),), layer_norm=ln),))
            for ln in P.LAYER_NORMS]
    assert_same_run(runs[0], runs[1])
    with pytest.raises(ValueError, match="no such site"):
        P.patched_run(model, clean, corrupt, (P.PathSite(("token",), (("decoder", 1, 2, "k"),), layer_norm="x"),))


def test_a_path_names_its_receivers_and_a_site_says_whether_the_model_has_it():
    """A receiver given as a 4-tuple becomes a `Receiver` (it still compares equal to the tuple); each site answers
    whether the model has it, and the error names the ones it has not (a malformed receiver as given)."""
    model = small_model("encoder-decoder", "post")
    clean, corrupt = pair(model)
    path = P.PathSite(("token",), (("decoder", 1, 2, "k"),))
    assert path.receivers == (P.Receiver("decoder", 1, 2, "k"),) == (("decoder", 1, 2, "k"),)
    assert path.label == "token → decoder L1 H2 K" and path.fits(model, clean)
    three = P.PathSite(("token", "position", "L0H0"), path.receivers)
    assert three.label == "token + position + L0H0 → decoder L1 H2 K"
    many = P.PathSite(("token", "position", "L0H0", "L0H1", "L0FF"), path.receivers)  # a page's "all together"
    assert many.label == "all 5 senders together (token … L0FF) → decoder L1 H2 K"
    assert not P.PathSite(("token",), (("decoder", 1, 2, "x"),)).fits(model, clean)
    assert not P.StreamSite("decoder", model.num_layers + 1, 0).fits(model, clean)
    malformed = r"no such site: PathSite\(senders=\('token',\), receivers=\(\('decoder', 1\),\)"
    with pytest.raises(ValueError, match=malformed):
        P.patched_run(model, clean, corrupt, (P.PathSite(("token",), (("decoder", 1),)),))
    with pytest.raises(ValueError, match="no such site: 'L0H0'"):
        P.patched_run(model, clean, corrupt, ("L0H0",))


@pytest.mark.parametrize("architecture, norm", [("encoder-decoder", "post"), ("decoder-only", "pre")])
def test_the_ends_are_exact(architecture, norm):
    model = small_model(architecture, norm)
    clean, corrupt = pair(model)
    metric = P.Metric("logprob", (1, 2, 3), (5, 6, 7))
    clean_value, corrupt_value = P.ends(model, clean, corrupt, metric)
    whole = tuple(P.StreamSite(stack, 0, p) for stack, inputs in (("encoder", clean.src), ("decoder", clean.tgt))
                  if stack in P.stream_stacks(model) for p in range(inputs.shape[1]))
    nothing, everything = P.patched_values(model, clean, corrupt, [(), whole], metric)
    assert abs(nothing - corrupt_value) < 1e-5 and abs(everything - clean_value) < 1e-5
    noised = P.patched_values(model, clean, corrupt, [(), whole], metric, direction="noise")
    assert abs(noised[0] - clean_value) < 1e-5 and abs(noised[1] - corrupt_value) < 1e-5


@pytest.mark.parametrize("architecture, norm, stack", [("encoder-decoder", "post", "cross"),
                                                       ("decoder-only", "pre", "decoder")])
def test_every_sender_into_a_layer_restores_its_attention_exactly(architecture, norm, stack):
    model = small_model(architecture, norm)
    clean, corrupt = pair(model)
    metric = P.Metric("attention", (1, 2, 3), stack=stack, layer=1, heads=(0, 1, 2, 3), keys=(0, 1, 2))
    clean_value, corrupt_value = P.ends(model, clean, corrupt, metric)
    receivers = tuple((stack, 1, h, side) for h in range(4) for side in "qk")
    query_side = M.senders(model, clean, (stack, 1, 0, "q"))
    key_side = M.senders(model, clean, (stack, 1, 0, "k"))
    patches = [(P.PathSite(query_side, tuple(r for r in receivers if r[3] == "q")),
                P.PathSite(key_side, tuple(r for r in receivers if r[3] == "k")))]
    if stack == "decoder":  # self-attention: one stream feeds both sides, so one path holds both
        patches = [(P.PathSite(query_side, receivers),)]
    value = P.patched_values(model, clean, corrupt, patches, metric)[0]
    assert abs(P.normalised(value, clean_value, corrupt_value) - 1) < 1e-5


def test_a_heads_map_batches_every_head_and_agrees_with_single_runs():
    model = small_model("encoder-decoder", "post")
    clean, corrupt = pair(model)
    metric = P.Metric("logit_diff", (1, 2), (5, 6), (7, 8))
    found = M.patch_map(model, clean, corrupt, metric, "heads")
    assert found.values.shape == (6, 4) and found.rows[0] == "encoder L0" and found.columns == ("H0", "H1", "H2", "H3")
    one = P.patched_values(model, clean, corrupt, [(found.sites[5][3],)], metric)[0]
    assert abs(P.normalised(one, found.clean_value, found.corrupt_value) - found.values[5, 3]) < 1e-5
    calls = []
    P.patched_values(model, clean, corrupt, [(s,) for row in found.sites for s in row], metric, rows=10,
                     progress=lambda done, total: calls.append((done, total)))
    assert calls == [(10, 24), (20, 24), (24, 24)]


def test_bad_input_is_a_value_error_naming_it():
    model = small_model("encoder-decoder", "post")
    clean, corrupt = pair(model)
    metric = P.Metric("logprob", (1,), (5,))
    shorter = P.Inputs(SRC[:, :4], TGT, padding_mask(SRC[:, :4], 0).numpy(), clean.tgt_mask)
    with pytest.raises(ValueError, match="equal length.*source 5 tokens.*source 4 tokens"):
        P.patched_values(model, clean, shorter, [()], metric)
    with pytest.raises(ValueError, match="no such site: encoder L5 H0"):
        P.patched_values(model, clean, corrupt, [(P.HeadSite("encoder", 5, 0),)], metric)
    with pytest.raises(ValueError, match="no such site"):
        P.patched_values(model, clean, corrupt, [(P.StreamSite("decoder", 0, 9),)], metric)
    with pytest.raises(ValueError, match="no L1H0"):
        P.patched_values(model, clean, corrupt, [(P.PathSite(("L1H0",), (("decoder", 1, 0, "k"),)),)], metric)
    with pytest.raises(ValueError, match="no such site"):  # a receiver without its side: named, not unpacked
        M.senders(model, clean, ("decoder", 1, 0))
    with pytest.raises(ValueError, match="same logprob"):
        P.ends(model, clean, clean, metric)
    with pytest.raises(ValueError, match="metric must be one of"):
        P.ends(model, clean, corrupt, P.Metric("accuracy", (1,), (5,)))
    with pytest.raises(ValueError, match="direction must be one of"):
        P.patched_values(model, clean, corrupt, [()], metric, direction="sideways")


def test_the_stream_hook_leaves_an_unpatched_run_as_it_was():
    model = small_model("encoder-decoder", "pre")
    clean, _ = pair(model)
    plain, _ = model(*clean.rows(1))
    hooked, _ = model(*clean.rows(1), hook=PatchHook())
    np.testing.assert_array_equal(plain.numpy(), hooked.numpy())
    assert tf.reduce_all(tf.equal(plain, hooked))
