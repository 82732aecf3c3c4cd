"""Models from outside the lab, built here tiny and with random weights (nothing downloads): a functional Keras
model saved as .keras, and keras-hub BERT and GPT-2 backbones saved as presets with tiny tokenizers, read through
the same path a downloaded preset takes. Their weights against the layers' own `return_attention_scores` and a
NumPy recomputation from the weights; untrusted files refused with a message."""

import keras
import numpy as np
import pytest
from hub_support import bert_preset, functional_model, gpt2_preset

from transformer.external import UPLOAD_LIMIT_ENV, load

keras_hub = pytest.importorskip("keras_hub")


def _softmax(x):
    x = x - x.max(-1, keepdims=True)
    return np.exp(x) / np.exp(x).sum(-1, keepdims=True)


def _numpy_attention(layer, x, causal=False):
    """A Keras MultiHeadAttention's weights recomputed in NumPy from its kernels: ``x`` (N, D) -> (H, N, N)."""
    q_kernel, q_bias = (np.asarray(w) for w in layer.query_dense.weights)  # (D, H, d), (H, d)
    k_kernel, k_bias = (np.asarray(w) for w in layer.key_dense.weights)
    q = np.einsum("nd,dhk->hnk", x, q_kernel) + q_bias[:, None]  # (H, N, d)
    k = np.einsum("nd,dhk->hnk", x, k_kernel) + k_bias[:, None]
    logits = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])  # (H, N, N)
    if causal:
        logits = np.where(np.tril(np.ones(logits.shape[-2:], bool)), logits, -np.inf)
    return _softmax(logits)


def test_a_keras_file_is_read_and_its_weights_are_what_each_layer_returns(tmp_path):
    path = tmp_path / "mine.keras"
    functional_model().save(path)
    model = load(path)
    tokens, weights = model.attention("3 1 4 1 5")
    assert tokens == ["3", "1", "4", "1", "5"] and weights.shape == (2, 2, 5, 5)
    ids = np.array([[3, 1, 4, 1, 5]])
    x = model.model.layers[1](ids)  # the embedding: (1, 5, 16)
    first, second = (model.model.get_layer(name) for name in ("first", "second"))
    y, expected_first = first(x, x, return_attention_scores=True)
    _, expected_second = second(y, y, return_attention_scores=True)
    np.testing.assert_allclose(weights[0], expected_first[0], atol=1e-6)
    np.testing.assert_allclose(weights[1], expected_second[0], atol=1e-6)
    np.testing.assert_allclose(weights[0], _numpy_attention(first, np.asarray(x[0])), atol=1e-5)
    assert not model.causal


def test_a_fixed_length_keras_file_runs_at_its_declared_length_and_says_so_in_words(tmp_path):
    """Issue 87, item 15: a model declared for 8 ids failed to load with Keras's own "expected shape=(None, 8),
    found shape=(1, 3)" (the lab's three-token probe of its masks)."""
    from transformer.external.registry import info

    path = tmp_path / "eight.keras"
    functional_model(length=8).save(path)
    model = load(path)
    assert model.fixed_length == 8 and load(functional_model()).fixed_length is None
    described = info("upload:" + "0" * 64, model)
    assert described.length == 8 and not described.causal_layers[0]
    tokens, weights = model.attention("3 1 4 1 5 9 2 6")
    assert len(tokens) == 8 and weights.shape == (2, 2, 8, 8)
    with pytest.raises(ValueError, match=r"reads lines of exactly 8 tokens \(its input is declared so\); this line "
                                         r"has 3\."):
        model.attention("3 1 4")


def test_a_bert_preset_reads_with_its_tokenizer_and_its_first_layer_matches_numpy(tmp_path):
    model = load(bert_preset(tmp_path / "tiny_bert"))
    tokens, weights = model.attention("The cat sat on the mat")
    assert tokens == ["the", "cat", "sat", "on", "the", "mat"] and weights.shape == (2, 2, 6, 6)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    ids = model.token_ids("The cat sat on the mat")[None]
    embedded = model.model.get_layer("embeddings_layer_norm")(  # what the first encoder layer reads
        model.model.get_layer("token_embedding")(ids) + model.model.get_layer("position_embedding")(
            model.model.get_layer("token_embedding")(ids)) + model.model.get_layer("segment_embedding")(0 * ids))
    np.testing.assert_allclose(weights[0], _numpy_attention(model.layers[0], np.asarray(embedded[0])), atol=1e-5)
    assert not model.causal
    with pytest.raises(ValueError, match="not a causal language model"):
        model.next_token_probabilities("the cat")


def test_a_gpt2_preset_is_causal_and_gives_next_token_probabilities(tmp_path):
    model = load(gpt2_preset(tmp_path / "tiny_gpt2"))
    tokens, weights = model.attention("a b c a b")
    assert tokens == ["a", "Ġb", "Ġc", "Ġa", "Ġb"] and weights.shape == (2, 2, 5, 5)
    assert np.abs(np.triu(weights, 1)).max() == 0  # no position attends to a later one
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    probabilities = model.next_token_probabilities("a b c a b")
    assert probabilities.shape == (5, 8)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)


def test_a_model_with_no_attention_or_bad_text_gets_a_message(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    plain = keras.Model(ids, keras.layers.Dense(3)(keras.layers.Embedding(5, 4)(ids)))
    with pytest.raises(ValueError, match="no attention layer this lab reads .*no attention layer was found"):
        load(plain)

    class MyAttention(keras.layers.Layer):  # attention of its own, no Softmax layer to read
        def call(self, x):
            return x

    odd = keras.Model(ids, MyAttention()(keras.layers.Embedding(5, 4)(ids)))
    with pytest.raises(ValueError, match=r"its attention layers \(MyAttention\) are not read yet"):
        load(odd)
    model = load(functional_model())
    with pytest.raises(ValueError, match="token ids separated by spaces"):
        model.attention("hello there")
    with pytest.raises(ValueError, match="below the model's vocabulary of 20. Received: 99"):
        model.attention("3 99")
    with pytest.raises(ValueError, match="at most 512"):
        model.attention(" ".join(["1"] * 600))


@pytest.mark.parametrize("content, says", [(b"not a zip at all", "is not a .keras file"),
                                           (b"PK\x03\x04" + b"\0" * 40, "is not a .keras file|could not be read")])
def test_a_corrupt_or_truncated_file_is_refused_with_a_message(tmp_path, content, says):
    path = tmp_path / "broken.keras"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=says):
        load(path)


def test_a_truncated_keras_file_and_an_oversize_one_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "whole.keras"
    functional_model().save(path)
    cut = tmp_path / "cut.keras"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(ValueError, match="cut.keras"):
        load(cut)
    monkeypatch.setenv(UPLOAD_LIMIT_ENV, "0.001")
    with pytest.raises(ValueError, match=f"the limit is 0 MB \\({UPLOAD_LIMIT_ENV}\\)"):
        load(path)


def test_a_keras_file_with_python_code_is_refused_by_safe_mode(tmp_path):
    ids = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(5, 4)(ids)
    x = keras.layers.Lambda(lambda t: t * 2.0)(x)  # code inside the file
    model = keras.Model(ids, keras.layers.MultiHeadAttention(num_heads=1, key_dim=4)(x, x))
    path = tmp_path / "code.keras"
    model.save(path)
    with pytest.raises(ValueError, match="could not be read as a Keras model"):
        load(path)


@pytest.mark.parametrize("name", ["../etc/passwd", "https://example.com/x", "Bad Name", ""])
def test_a_preset_name_is_a_name_never_a_path_or_an_address(name):
    with pytest.raises(ValueError, match="preset name"):
        load(name)


FAMILIES = {  # keras-hub's families with attention layers of their own: rotary positions, grouped-query heads
    "llama": lambda: keras_hub.models.LlamaBackbone(vocabulary_size=20, num_layers=2, num_query_heads=4,
                                                    num_key_value_heads=2, hidden_dim=16, intermediate_dim=32),
    "mistral": lambda: keras_hub.models.MistralBackbone(vocabulary_size=20, num_layers=2, num_query_heads=4,
                                                        num_key_value_heads=2, hidden_dim=16, intermediate_dim=32),
    "gemma": lambda: keras_hub.models.GemmaBackbone(vocabulary_size=20, num_layers=2, num_query_heads=4,
                                                    num_key_value_heads=2, hidden_dim=16, intermediate_dim=32,
                                                    head_dim=4),
    "qwen": lambda: keras_hub.models.QwenBackbone(vocabulary_size=20, num_layers=2, num_query_heads=4,
                                                  num_key_value_heads=2, hidden_dim=16, intermediate_dim=32),
}


@pytest.mark.parametrize("family", FAMILIES)
def test_the_families_with_their_own_attention_are_read_causal_with_every_query_head(tmp_path, family):
    keras.utils.set_random_seed(3)
    FAMILIES[family]().save_to_preset(tmp_path / family)  # no tokenizer: the input is typed as ids
    model = load(tmp_path / family)
    tokens, weights = model.attention("3 1 4 1 5 9")
    assert tokens == ["3", "1", "4", "1", "5", "9"] and model.causal and model.num_heads == 4
    assert weights.shape == (2, 4, 6, 6) and np.abs(np.triu(weights, 1)).max() == 0
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(model.next_token_probabilities("3 1 4").sum(-1), 1.0, atol=1e-5)


def _rotary(x, base=10000.0):
    """RoFormer's rotation as Llama writes it (rotate half): ``x`` (N, H, d) at positions 0 … N − 1."""
    n, _, d = x.shape
    inverse = base ** -(np.arange(0, d, 2) / d)  # (d/2,)
    angles = np.arange(n)[:, None] * inverse[None]  # (N, d/2)
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))
    rotated = np.concatenate([-x[..., d // 2:], x[..., : d // 2]], -1)
    return x * cos[:, None] + rotated * sin[:, None]


def test_llamas_first_layer_matches_a_numpy_reading_of_its_weights():
    """Queries and keys projected, rotated (RoPE), key/value heads shared by groups of query heads (query head h
    reads key/value head h // 2), scaled by 1/√d and softmaxed under the causal mask."""
    keras.utils.set_random_seed(4)
    backbone = FAMILIES["llama"]()
    model = load(backbone)
    _, weights = model.attention("3 1 4 1 5 9")
    ids = np.array([[3, 1, 4, 1, 5, 9]])
    block = backbone.transformer_layers[0]
    normed = np.asarray(block._self_attention_layernorm(backbone.token_embedding(ids)))[0]  # (N, D)
    attention = block._self_attention_layer
    q = _rotary(np.einsum("nd,dhk->nhk", normed, np.asarray(attention._query_dense.kernel)))  # (N, 4, 4)
    k = _rotary(np.einsum("nd,dhk->nhk", normed, np.asarray(attention._key_dense.kernel)))  # (N, 2, 4)
    k = np.repeat(k, 2, axis=1)  # (N, 4, 4): head h reads key/value head h // 2
    logits = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(4)  # (H, N, N)
    logits = np.where(np.tril(np.ones((6, 6), bool)), logits, -np.inf)
    np.testing.assert_allclose(weights[0], _softmax(logits), atol=1e-5)


def test_a_preset_that_cannot_be_downloaded_says_so_and_how_to_serve_it_offline(tmp_path, monkeypatch):
    """A real failed download (a proxy on a closed loopback port, an empty cache), online or off."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("ATTENTION_LAB_PRESETS_DIR", raising=False)
    with pytest.raises(ValueError) as raised:
        load("bert_tiny_en_uncased")
    message = str(raised.value)
    assert "could not be downloaded" in message and "ATTENTION_LAB_PRESETS_DIR" in message
    assert "cache" in message
    assert not any(word in message for word in ("Error", "HTTPS", "kaggle", "http"))


def test_a_preset_name_is_served_from_the_presets_folder_first(tmp_path, monkeypatch):
    bert_preset(tmp_path / "bert_tiny_en_uncased")
    monkeypatch.setenv("ATTENTION_LAB_PRESETS_DIR", str(tmp_path))
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # nothing may download
    tokens, weights = load("bert_tiny_en_uncased").attention("the cat sat")
    assert tokens == ["the", "cat", "sat"] and weights.shape == (2, 2, 3, 3)


def test_a_preset_name_is_only_a_name_never_a_path_in_the_servers_folder(tmp_path, monkeypatch):
    from transformer.external.registry import ExternalRegistry  # hub:<name> as the pages open it

    functional_model().save(tmp_path / "foo.keras")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "config.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTENTION_LAB_PRESETS_DIR", raising=False)
    registry = ExternalRegistry(budget_bytes=2**30, upload_dir=tmp_path / "uploads")
    for name in ("foo.keras", "static", "no_such_preset"):
        with pytest.raises(ValueError, match=f"{name!r} is not a keras-hub preset") as refused:
            registry.get(f"hub:{name}")
        assert "config.json" not in str(refused.value) and "Unknown preset" not in str(refused.value)
    served = tmp_path / "served"
    bert_preset(served / "tiny_bert")
    monkeypatch.setenv("ATTENTION_LAB_PRESETS_DIR", str(served))
    assert registry.get("hub:tiny_bert").num_layers == 2  # a folder inside the presets folder, by name
    with pytest.raises(ValueError, match="is not a keras-hub preset"):
        registry.get("hub:static")
